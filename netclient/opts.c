/*
 * Mount options as nfs(5) names them, parsed from and written back to
 * "a,b=c,..." strings, what they mean to a transport (its timeout strategy
 * and wait mode), and the calling process's AUTH_SYS credentials.  policy=
 * (how the region API enforces the caller's regions) is parsed here too, so
 * that the daemon and intrfs-client take it the same way.  Nothing here
 * waits, talks to the network or prints; there are no locks.
 *
 * One table says what every option is, and both the parser and the
 * formatter walk it.  An option the table does not know is offered to the
 * caller (the daemon has options of its own) and refused if nobody takes
 * it.  Later options win over earlier ones, as with mount(8): "hard,soft"
 * is soft.  Parsing is all or nothing: on an error the options are left as
 * they were.
 */
#include "netclient_i.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The ranges this client accepts (the defaults, nfs(5)'s for TCP, are in
 * the table below, where --help and nc_opts_init() find them).
 */
#define TIMEO_MIN 1
#define TIMEO_MAX 6000
#define RETRANS_MAX 100
#define RETRY_MAX 10000
#define SLOTS_MIN 1
#define SLOTS_MAX 1024
/* Linux's NFS_MAX_CONNECTIONS. */
#define NCONNECT_MAX NC_NCONNECT_MAX
/* nfs(5): rsize and wsize are rounded down to a multiple of 1024. */
#define IO_GRANULE 1024
#define PORT_MAX 65535 /* 0 means "ask rpcbind" */

/*
 * nfs(5) on TCP: the timeout grows linearly by timeo at each
 * retransmission, up to 600 seconds.
 */
#define DECISECOND_NS 100000000ull
#define TIMEOUT_MAX_NS (600ull * 1000000000ull)

/* The only protocol version and transport this client speaks. */
#define ONLY_VERS "3"
#define ONLY_PROTO "tcp"

enum opt_kind {
	OPT_TIMEO_MODE, /* a flag: sets timeo_mode to value */
	OPT_INTR_MODE, /* a flag: sets intr_mode to value */
	OPT_NUMBER, /* key=N: an unsigned field in [min, max] */
	OPT_ONLY, /* key=only: accepted, any other value refused */
	OPT_POLICY, /* policy=percall|region|sigmask; not written back */
	OPT_SEND, /* send=interruptible|killable|uninterruptible */
	OPT_SAME, /* what this client does anyway: accepted, no effect */
	OPT_NO, /* means what this client cannot do: refused, saying why */
};

struct opt_def {
	const char *name;
	enum opt_kind kind;
	unsigned value; /* the mode flags set */
	size_t off; /* OPT_NUMBER: offsetof the unsigned field */
	unsigned min, max; /* OPT_NUMBER: the accepted range */
	unsigned granule; /* OPT_NUMBER: rounded down to a multiple */
	unsigned def; /* OPT_NUMBER: the default */
	bool omit; /* OPT_NUMBER: not written back when it has its default */
	const char *only; /* OPT_ONLY: the one value accepted */
	const char *why; /* OPT_ONLY, OPT_NO: why it is refused */
	bool value_any; /* OPT_SAME: takes a value (any), else none */
	bool format; /* OPT_ONLY: written by nc_opts_format() */
};

#define TIMEO_MODE(n, v)                                      \
	{                                                     \
		.name = n, .kind = OPT_TIMEO_MODE, .value = v \
	}
#define INTR_MODE(n, v)                                      \
	{                                                    \
		.name = n, .kind = OPT_INTR_MODE, .value = v \
	}
/* A number in [lo, hi], a multiple of g, d by default. */
#define NUMBER(n, field, lo, hi, g, d)                                        \
	{                                                                     \
		.name = n, .kind = OPT_NUMBER,                                \
		.off = offsetof(struct nc_opts, field), .min = lo, .max = hi, \
		.granule = g, .def = d                                        \
	}
/* The same, not written back when it has its default. */
#define NUMBER_QUIET(n, field, lo, hi, g, d)                                  \
	{                                                                     \
		.name = n, .kind = OPT_NUMBER,                                \
		.off = offsetof(struct nc_opts, field), .min = lo, .max = hi, \
		.granule = g, .def = d, .omit = true                          \
	}
#define POLICY(n)                             \
	{                                     \
		.name = n, .kind = OPT_POLICY \
	}
#define SEND(n)                             \
	{                                   \
		.name = n, .kind = OPT_SEND \
	}
#define SAME(n, anyval)                                          \
	{                                                        \
		.name = n, .kind = OPT_SAME, .value_any = anyval \
	}
#define NO(n, w)                                    \
	{                                           \
		.name = n, .kind = OPT_NO, .why = w \
	}
#define ONLY(n, v, w, f)                                                      \
	{                                                                     \
		.name = n, .kind = OPT_ONLY, .only = v, .why = w, .format = f \
	}

/*
 * intr and nointr keep their historic meaning here (Linux has ignored them
 * since 2.6.25 and is always killable): reply waits interruptible by any
 * signal, or by none.  The first name of each mode is the one written back.
 */
static const struct opt_def opt_defs[] = {
	TIMEO_MODE("hard", NC_HARD),
	TIMEO_MODE("soft", NC_SOFT),
	TIMEO_MODE("softerr", NC_SOFTERR),
	INTR_MODE("killable", NC_KILLABLE),
	INTR_MODE("intr", NC_INTR),
	INTR_MODE("nointr", NC_NOINTR),
	NUMBER("timeo", timeo, TIMEO_MIN, TIMEO_MAX, 1, 600),
	NUMBER("retrans", retrans, 0, RETRANS_MAX, 1, 2),
	/* 0, the defaults below: the server's choice, or ask rpcbind. */
	NUMBER_QUIET("rsize", rsize, IO_GRANULE, NC_MAX_IO, IO_GRANULE, 0),
	NUMBER_QUIET("wsize", wsize, IO_GRANULE, NC_MAX_IO, IO_GRANULE, 0),
	NUMBER_QUIET("port", port, 0, PORT_MAX, 1, 0),
	NUMBER_QUIET("mountport", mountport, 0, PORT_MAX, 1, 0),
	NUMBER_QUIET("nlmport", nlmport, 0, PORT_MAX, 1, 0),
	NUMBER("retry", retry, 0, RETRY_MAX, 1, 2), /* minutes */
	NUMBER("slots", slots, SLOTS_MIN, SLOTS_MAX, 1, 64),
	ONLY("vers", ONLY_VERS, "intrfs speaks NFS version 3 only", true),
	ONLY("nfsvers", ONLY_VERS, "intrfs speaks NFS version 3 only", false),
	ONLY("proto", ONLY_PROTO, "intrfs uses TCP only", true),
	ONLY("mountproto", ONLY_PROTO, "intrfs uses TCP only", false),
	ONLY("mountvers", ONLY_VERS, "intrfs speaks MOUNT version 3 only",
	     false),
	ONLY("sec", "sys", "intrfs speaks AUTH_SYS only", false),
	/* As Linux shows it: only when more than one. */
	NUMBER_QUIET("nconnect", nconnect, 1, NCONNECT_MAX, 1, 1),
	/*
	 * nfs(5) options an fstab line for an NFSv3 mount may carry: what
	 * this client does anyway is accepted, what it cannot do is refused
	 * with the reason.
	 */
	SAME("tcp", false),
	SAME("v3", false),
	SAME("noacl", false),
	SAME("nofsc", false),
	SAME("sharecache", false), /* each mount is a client of its own */
	SAME("nosharecache", false),
	SAME("rdirplus", false),
	SAME("noresvport", false),
	SAME("namlen", true), /* NFSv2's; v3 asks PATHCONF */
	NO("udp", "intrfs uses TCP only (proto=tcp)"),
	NO("rdma", "intrfs uses TCP only (proto=tcp)"),
	NO("v2", "intrfs speaks NFS version 3 only (vers=3)"),
	NO("v4", "intrfs speaks NFS version 3 only (vers=3)"),
	NO("acl", "intrfs has no NFSACL side protocol (noacl)"),
	NO("fsc", "intrfs has no FS-Cache (nofsc)"),
	NO("nordirplus", "intrfs always reads directories with READDIRPLUS"),
	NO("resvport", "intrfs connects from unreserved ports (noresvport)"),
	NO("addr", "the server is the one in SERVER:/PATH"),
	NO("mountaddr", "the server is the one in SERVER:/PATH"),
	NO("clientaddr", "it is NFSv4's; intrfs speaks NFS version 3"),
	NO("minorversion", "it is NFSv4's; intrfs speaks NFS version 3"),
	NO("migration", "it is NFSv4's; intrfs speaks NFS version 3"),
	NO("nomigration", "it is NFSv4's; intrfs speaks NFS version 3"),
	POLICY("policy"),
	SEND("send"),
};

#define OPT_NDEFS (ARRAY_SIZE(opt_defs))

const char *nc_intr_mode_name(enum nc_intr_mode m)
{
	for (size_t i = 0; i < OPT_NDEFS; i++)
		if (opt_defs[i].kind == OPT_INTR_MODE &&
		    opt_defs[i].value == (unsigned)m)
			return opt_defs[i].name;
	return "?";
}

int nc_intr_mode_parse(const char *name, enum nc_intr_mode *m)
{
	for (size_t i = 0; name && i < OPT_NDEFS; i++)
		if (opt_defs[i].kind == OPT_INTR_MODE &&
		    strcmp(opt_defs[i].name, name) == 0) {
			*m = (enum nc_intr_mode)opt_defs[i].value;
			return 0;
		}
	return -EINVAL;
}

static const struct opt_def *opt_find(const char *key)
{
	for (size_t i = 0; i < OPT_NDEFS; i++)
		if (strcmp(opt_defs[i].name, key) == 0)
			return &opt_defs[i];
	return NULL;
}

static unsigned *opt_field(struct nc_opts *o, const struct opt_def *d)
{
	return (unsigned *)((char *)o + d->off);
}

static unsigned opt_get(const struct nc_opts *o, const struct opt_def *d)
{
	return *(const unsigned *)((const char *)o + d->off);
}

void nc_opts_init(struct nc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->timeo_mode = NC_HARD;
	o->intr_mode = NC_KILLABLE;
	o->policy = REGION_POLICY_REGION;
	o->send_mode = TASK_INTERRUPTIBLE;
	/* rsize, wsize 0: the server's choice; port, mountport 0: rpcbind. */
	for (size_t i = 0; i < OPT_NDEFS; i++)
		if (opt_defs[i].kind == OPT_NUMBER)
			*opt_field(o, &opt_defs[i]) = opt_defs[i].def;
}

/* Appends to buf[*pos..len), which stays terminated when it is too short. */
static void __attribute__((format(printf, 4, 5)))
append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, len - *pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*pos = (size_t)n < len - *pos ? *pos + (size_t)n : len;
}

/*
 * What --help says of each option, for the daemon's help and
 * intrfs-client's alike, in the order they list them.  In help, %d is the
 * option key's default and %r its range ("1 to 16"), both from opt_defs;
 * lines are split by '\n' and at most NC_OPT_HELP_WIDTH wide, to fit
 * both helps' right-hand column (test_opts checks it).
 */
struct opt_help {
	const char *key, *syntax, *help;
};

static const struct opt_help opt_helps[] = {
	{ "hard", "hard (default) | soft | softerr",
	  "retry forever, or fail with EIO / ETIMEDOUT after\n"
	  "retrans retransmissions" },
	{ "killable", "killable (default)",
	  "Ctrl-C waits for the server, kill -9 ends the call" },
	{ "intr", "intr", "any signal ends the call with EINTR" },
	{ "nointr", "nointr", "nothing ends the call, kill -9 neither" },
	{ "timeo", "timeo=N",
	  "deciseconds before the first retransmission (%d)" },
	{ "retrans", "retrans=N",
	  "retransmissions before a major timeout (%d)" },
	{ "rsize", "rsize=N, wsize=N",
	  "caps on READ/WRITE size (the server's choice, at\n"
	  "most 1 MiB)" },
	{ "port", "port=N, mountport=N",
	  "NFS and MOUNT ports (0: ask rpcbind)" },
	{ "nlmport", "nlmport=N",
	  "the lock manager's (NLM) port (0: ask rpcbind at\n"
	  "the first lock)" },
	{ "retry", "retry=N",
	  "minutes a hard mount keeps trying to reach the\n"
	  "server (%d)" },
	{ "slots", "slots=N", "NFS calls in flight on each connection (%d)" },
	{ "nconnect", "nconnect=N",
	  "TCP connections to the server, %r (%d); each call\n"
	  "goes on the least busy and is retransmitted on its own" },
	{ "policy", "policy=P",
	  "how regions are enforced: region (default),\n"
	  "percall, sigmask, or linux: percall with Linux's\n"
	  "own per-call choices (intr and nointr ignored,\n"
	  "killable waits, writes on their way waited for\n"
	  "uninterruptibly)" },
	{ "send", "send=MODE",
	  "the send's own waits: interruptible (default, as\n"
	  "the kernel's sendmsg()), killable or uninterruptible,\n"
	  "the per-call fix proposed instead of regions" },
	{ "vers", "vers=3, proto=tcp, sec=sys",
	  "the only ones there are; nfs(5)'s others that mean the\n"
	  "same here are accepted (nfsvers=3, tcp, mountvers=3,\n"
	  "noacl, nofsc, rdirplus, noresvport, [no]sharecache,\n"
	  "namlen=), the rest refused saying why" },
};

const char *nc_opt_help_key(unsigned i)
{
	return i < ARRAY_SIZE(opt_helps) ? opt_helps[i].key : NULL;
}

int nc_opt_help(const char *key, const char **syntax, char *help, size_t len)
{
	const struct opt_help *h = NULL;
	const struct opt_def *d = opt_find(key);
	size_t pos = 0;

	for (size_t i = 0; i < ARRAY_SIZE(opt_helps); i++)
		if (strcmp(opt_helps[i].key, key) == 0)
			h = &opt_helps[i];
	if (!h || !len)
		return -ENOENT;
	help[0] = '\0';
	for (const char *c = h->help; *c; c++) {
		if (c[0] == '%' && (c[1] == 'd' || c[1] == 'r') && d &&
		    d->kind == OPT_NUMBER) {
			if (*++c == 'd')
				append(help, len, &pos, "%u", d->def);
			else
				append(help, len, &pos, "%u to %u", d->min,
				       d->max);
		} else {
			append(help, len, &pos, "%c", *c);
		}
	}
	*syntax = h->syntax;
	return (int)pos;
}

/*
 * A whole decimal number: digits only (strtoul alone would also take
 * leading blanks, a sign, and a negative number wrapped around), and no
 * overflow.
 */
static bool parse_number(const char *s, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static int opt_number(struct nc_opts *o, const struct opt_def *d,
		      const char *val, char *err, size_t errlen)
{
	unsigned long v;

	if (!val) {
		snprintf(err, errlen,
			 "option '%s' needs a value: %s=N with N between %u "
			 "and %u",
			 d->name, d->name, d->min, d->max);
		return -EINVAL;
	}
	if (!parse_number(val, &v) || v < d->min || v > d->max) {
		snprintf(err, errlen,
			 "option '%s' needs a number between %u and %u, not "
			 "'%s'",
			 d->name, d->min, d->max, val);
		return -EINVAL;
	}
	*opt_field(o, d) = (unsigned)(v - v % d->granule);
	return 0;
}

/* Sets one option of the table; val is NULL when there was no '='. */
static int opt_set(struct nc_opts *o, const struct opt_def *d, const char *val,
		   char *err, size_t errlen)
{
	switch (d->kind) {
	case OPT_TIMEO_MODE:
	case OPT_INTR_MODE:
		if (val) {
			snprintf(err, errlen,
				 "option '%s' takes no value, not '%s=%s'",
				 d->name, d->name, val);
			return -EINVAL;
		}
		if (d->kind == OPT_TIMEO_MODE)
			o->timeo_mode = (enum nc_timeo_mode)d->value;
		else
			o->intr_mode = (enum nc_intr_mode)d->value;
		return 0;
	case OPT_NUMBER:
		return opt_number(o, d, val, err, errlen);
	case OPT_ONLY:
		if (!val) {
			snprintf(err, errlen,
				 "option '%s' needs a value: %s=%s", d->name,
				 d->name, d->only);
			return -EINVAL;
		}
		if (strcmp(val, d->only) != 0) {
			snprintf(err, errlen,
				 "option '%s=%s' is not supported: %s (%s=%s)",
				 d->name, val, d->why, d->name, d->only);
			return -EINVAL;
		}
		return 0;
	case OPT_POLICY:
		if (val && strcmp(val, "linux") == 0) {
			o->policy = REGION_POLICY_PERCALL;
			o->linux_waits = true;
			return 0;
		}
		if (!val || region_policy_parse(val, &o->policy) < 0) {
			snprintf(err, errlen,
				 "option '%s' is " NC_POLICY_NAMES ", not '%s'",
				 d->name, val ? val : "");
			return -EINVAL;
		}
		o->linux_waits = false;
		return 0;
	case OPT_SAME:
		if (!d->value_any && val) {
			snprintf(err, errlen,
				 "option '%s' takes no value, not '%s=%s'",
				 d->name, d->name, val);
			return -EINVAL;
		}
		return 0;
	case OPT_NO:
		snprintf(err, errlen, "option '%s' is not supported: %s",
			 d->name, d->why);
		return -EINVAL;
	case OPT_SEND:
		for (int m = TASK_INTERRUPTIBLE; m <= TASK_UNINTERRUPTIBLE; m++)
			if (val && strcmp(val, region_task_mode_name(m)) == 0) {
				o->send_mode = (enum task_mode)m;
				return 0;
			}
		snprintf(err, errlen,
			 "option '%s' is interruptible, killable or "
			 "uninterruptible, not '%s'",
			 d->name, val ? val : "");
		return -EINVAL;
	}
	return -EINVAL;
}

int nc_opts_parse(struct nc_opts *o, const char *str,
		  int (*unknown)(const char *key, const char *val, void *arg,
				 char *err, size_t errlen),
		  void *arg, char *err, size_t errlen)
{
	struct nc_opts next = *o;
	char *copy, *save = NULL;
	int rc = 0;

	if (errlen)
		err[0] = '\0';
	if (!str || !*str)
		return 0;
	copy = strdup(str);
	if (!copy) {
		snprintf(err, errlen, "out of memory parsing options");
		return -ENOMEM;
	}
	/* strtok_r() skips empty items, so "hard,,soft" is two options. */
	for (char *key = strtok_r(copy, ",", &save); key && rc == 0;
	     key = strtok_r(NULL, ",", &save)) {
		char *val = strchr(key, '=');
		const struct opt_def *d;

		if (val)
			*val++ = '\0';
		if (!*key) {
			snprintf(err, errlen, "empty option name in '=%s'",
				 val);
			rc = -EINVAL;
			break;
		}
		d = opt_find(key);
		if (d) {
			rc = opt_set(&next, d, val, err, errlen);
			continue;
		}
		rc = unknown ? unknown(key, val, arg, err, errlen) : 1;
		if (rc > 0) {
			snprintf(err, errlen, "unknown option '%s'", key);
			rc = -EINVAL;
		} else if (rc < 0 && errlen && !err[0]) {
			/* The callback failed without saying why. */
			snprintf(err, errlen, "option '%s' is invalid", key);
		}
	}
	free(copy);
	if (rc == 0 && next.linux_waits) {
		/* Whatever came before or after: Linux's own choices. */
		next.intr_mode = NC_KILLABLE;
		next.send_mode = TASK_KILLABLE;
	}
	if (rc == 0)
		*o = next;
	return rc;
}

void nc_opts_format(const struct nc_opts *o, char *buf, size_t len)
{
	size_t pos = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < OPT_NDEFS; i++) {
		const struct opt_def *d = &opt_defs[i];
		const char *sep = pos ? "," : "";
		unsigned v;

		switch (d->kind) {
		case OPT_TIMEO_MODE:
			if (d->value == (unsigned)o->timeo_mode)
				append(buf, len, &pos, "%s%s", sep, d->name);
			break;
		case OPT_INTR_MODE:
			if (d->value == (unsigned)o->intr_mode)
				append(buf, len, &pos, "%s%s", sep, d->name);
			break;
		case OPT_NUMBER:
			v = opt_get(o, d);
			if (!d->omit || v != d->def)
				append(buf, len, &pos, "%s%s=%u", sep, d->name,
				       v);
			break;
		case OPT_ONLY:
			if (d->format)
				append(buf, len, &pos, "%s%s=%s", sep, d->name,
				       d->only);
			break;
		case OPT_POLICY:
		case OPT_SAME:
		case OPT_NO:
			break;
		case OPT_SEND:
			/* Only a variant: the default is not written. */
			if (o->send_mode != TASK_INTERRUPTIBLE)
				append(buf, len, &pos, "%s%s=%s", sep, d->name,
				       region_task_mode_name(o->send_mode));
			break;
		}
	}
}

/*
 * As Linux's nfs_init_timeout_values() for TCP: the first timeout is timeo
 * (capped at the maximum), each retransmission adds as much again, and
 * retrans retransmissions make a major timeout.  timeo 0 (no option parsed
 * gives it) is taken as the smallest timeo.
 */
struct nc__timeout nc__timeout_of(enum nc_timeo_mode mode, unsigned timeo,
				  unsigned retrans)
{
	uint64_t initial =
		(uint64_t)(timeo ? timeo : TIMEO_MIN) * DECISECOND_NS;
	struct nc__timeout to;

	if (initial > TIMEOUT_MAX_NS)
		initial = TIMEOUT_MAX_NS;
	to.initial_ns = initial;
	to.increment_ns = initial;
	to.max_ns = TIMEOUT_MAX_NS;
	to.retries = retrans;
	to.mode = mode;
	return to;
}

enum task_mode nc__wait_mode(enum nc_intr_mode m)
{
	switch (m) {
	case NC_INTR:
		return TASK_INTERRUPTIBLE;
	case NC_NOINTR:
		return TASK_UNINTERRUPTIBLE;
	case NC_KILLABLE:
		break;
	}
	return TASK_KILLABLE;
}

void nc_cred_self(struct nc_cred *cred)
{
	gid_t few[NC_MAX_GROUPS], *gids = few;
	int n;

	memset(cred, 0, sizeof(*cred));
	cred->uid = (uint32_t)getuid();
	cred->gid = (uint32_t)getgid();
	n = getgroups(NC_MAX_GROUPS, few);
	if (n < 0 && errno == EINVAL) {
		/*
		 * More groups than AUTH_SYS carries: fetch them all and send
		 * the first NC_MAX_GROUPS, as the Linux client does.
		 */
		n = getgroups(0, NULL);
		gids = n > 0 ? calloc((size_t)n, sizeof(*gids)) : NULL;
		n = gids ? getgroups(n, gids) : -1;
	}
	if (n > NC_MAX_GROUPS)
		n = NC_MAX_GROUPS;
	for (int i = 0; i < n; i++)
		cred->groups[i] = (uint32_t)gids[i];
	cred->ngroups = n > 0 ? (unsigned)n : 0;
	if (gids != few)
		free(gids);
}
