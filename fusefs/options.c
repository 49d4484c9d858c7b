/*
 * The daemon's mount options and its --help text.  nfs(5)'s options and
 * policy= are netclient's (netclient/opts.c parses them into struct
 * nc_opts); what netclient does not know comes here: the daemon's own
 * options (into struct fs_opts), FUSE's, which are passed on to libfuse,
 * and mount(8)'s, which are ignored.
 *
 * One table says what every option is: its name, its kind, the field it
 * sets, the range it takes and its line of --help.  The parser, the
 * defaults, the checks and the help walk it, and a name it does not know
 * is netclient's "unknown option".  netclient's options have rows here
 * too, naming them, for their place in --help: what the line says comes
 * from netclient's own table (nc_opt_help()), defaults and all.
 *
 * Parsing happens once, before any thread starts; nothing here locks, and
 * nothing here may be called once the session runs.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "intrfs"

/* nfs(5)'s attribute cache defaults, in seconds. */
#define AC_REGMIN 3
#define AC_DIRMIN 30
/* A default as --help prints it. */
#define STR_(x) #x
#define STR(x) STR_(x)
#define SECONDS_MAX 86400
/* The --help text: where the help of an option starts, how wide it is. */
#define HELP_COLUMN 17
#define HELP_WIDTH 79

enum opt_kind {
	OPT_SECTION, /* a heading of --help; no option */
	OPT_NETCLIENT, /* netclient's, help names it: its line of --help */
	OPT_FLAG, /* name: sets a bool field */
	OPT_UNFLAG, /* name: clears a bool field (cto beside nocto) */
	OPT_SECONDS, /* name=S: a double field in [0, SECONDS_MAX] */
	OPT_ACTIMEO, /* actimeo=S: every attribute cache time */
	OPT_NOAC, /* noac: no attribute cache, no negative entries */
	OPT_AC, /* ac: the attribute cache's default times again */
	OPT_LOOKUPCACHE, /* lookupcache=all|positive|pos|none */
	OPT_LOCK, /* lock: locks to the server's lock manager */
	OPT_NOLOCK, /* nolock: every lock local */
	OPT_LOCAL_LOCK, /* local_lock=none|all|flock|posix */
	OPT_COUNT, /* name=N: an unsigned field in [min, max] */
	OPT_PATH, /* name=PATH: a string field */
	OPT_REFUSED, /* refused; help says why */
	OPT_FUSE_FLAG, /* passed on to FUSE; takes no value */
	OPT_FUSE_VALUE, /* name=VALUE, passed on to FUSE */
	OPT_IGNORED, /* mount(8)'s, or what fstab carries: no effect */
	OPT_IGNORED_FLAG, /* no effect, and takes no value */
	OPT_IGNORED_PREFIX, /* every name starting with name: no effect */
};

/* No field: an option checked and accepted, with nothing to keep. */
#define NO_FIELD SIZE_MAX

struct opt_def {
	const char *name;
	enum opt_kind kind;
	size_t off; /* offsetof the field in struct fs_opts, or NO_FIELD */
	unsigned min, max; /* OPT_COUNT: the range */
	unsigned def; /* OPT_COUNT: the default */
	/*
	 * --help: the left column (what to type), or, for the options
	 * passed on or ignored, how the closing list names it; NULL when
	 * another row says it.
	 */
	const char *syntax;
	/*
	 * --help: the right column, a line per '\n' (one that starts with
	 * '\n' puts it under the left column); for OPT_COUNT a format with
	 * the default as its %u; for OPT_SECTION the heading; for
	 * OPT_REFUSED why.
	 */
	const char *help;
};

#define SECTION(title)                             \
	{                                          \
		.kind = OPT_SECTION, .help = title \
	}
/* netclient's option key: its line of --help, from nc_opt_help(). */
#define NETCLIENT(key)                             \
	{                                          \
		.kind = OPT_NETCLIENT, .help = key \
	}
#define FLAG(n, field, syn, h)                                         \
	{                                                              \
		.name = n, .kind = OPT_FLAG,                           \
		.off = offsetof(struct fs_opts, field), .syntax = syn, \
		.help = h                                              \
	}
#define UNFLAG(n, field)                                \
	{                                               \
		.name = n, .kind = OPT_UNFLAG,          \
		.off = offsetof(struct fs_opts, field), \
	}
#define SECONDS(n, field)                              \
	{                                              \
		.name = n, .kind = OPT_SECONDS,        \
		.off = offsetof(struct fs_opts, field) \
	}
#define SECONDS_UNKEPT(n)                                       \
	{                                                       \
		.name = n, .kind = OPT_SECONDS, .off = NO_FIELD \
	}
#define COUNT(n, field, lo, hi, d, syn, h)                                    \
	{                                                                     \
		.name = n, .kind = OPT_COUNT,                                 \
		.off = offsetof(struct fs_opts, field), .min = lo, .max = hi, \
		.def = d, .syntax = syn, .help = h                            \
	}
#define PATH(n, field, syn, h)                                         \
	{                                                              \
		.name = n, .kind = OPT_PATH,                           \
		.off = offsetof(struct fs_opts, field), .syntax = syn, \
		.help = h                                              \
	}
#define KIND(n, k, syn, h)                                     \
	{                                                      \
		.name = n, .kind = k, .syntax = syn, .help = h \
	}
#define FUSE_FLAG(n, listed) KIND(n, OPT_FUSE_FLAG, listed, NULL)
#define FUSE_VALUE(n, listed) KIND(n, OPT_FUSE_VALUE, listed, NULL)
#define IGNORED(n, listed) KIND(n, OPT_IGNORED, listed, NULL)
#define IGNORED_FLAG(n, listed) KIND(n, OPT_IGNORED_FLAG, listed, NULL)

/*
 * In the order of --help.  acregmax and acdirmax are checked and accepted,
 * as fstab lines for nfs carry them, but change nothing: FUSE gives an
 * attribute one timeout, not one that grows from min to max.
 */
/* clang-format off */
static const struct opt_def opt_defs[] = {
	SECTION("NFS options (nfs(5) names):"),
	NETCLIENT("hard"),
	NETCLIENT("timeo"),
	NETCLIENT("retrans"),
	NETCLIENT("rsize"),
	NETCLIENT("port"),
	NETCLIENT("nlmport"),
	NETCLIENT("retry"),
	KIND("actimeo", OPT_ACTIMEO,
	     "actimeo=N, acregmin=N, acregmax=N, acdirmin=N, acdirmax=N, noac, ac",
	     "\nattribute cache seconds, files " STR(AC_REGMIN) ", directories "
	     STR(AC_DIRMIN) "; FUSE keeps\n"
	     "one time per file: the *max ones are accepted, the *min used"),
	SECONDS("acregmin", acregmin),
	SECONDS_UNKEPT("acregmax"),
	SECONDS("acdirmin", acdirmin),
	SECONDS_UNKEPT("acdirmax"),
	KIND("noac", OPT_NOAC, NULL, NULL),
	KIND("ac", OPT_AC, NULL, NULL),
	KIND("lookupcache", OPT_LOOKUPCACHE, "lookupcache=all|positive|none",
	     "cache negative lookups or not"),
	FLAG("nocto", nocto, "cto (default) | nocto",
	     "\nclose-to-open: every open asks the server for the file's\n"
	     "attributes and drops what the kernel cached if another\n"
	     "client changed it; nocto trusts the cache"),
	UNFLAG("cto", nocto),
	KIND("lock", OPT_LOCK, "lock (default) | nolock",
	     "\nfcntl(), lockf() and flock() locks go to the server's lock\n"
	     "manager (NLM), so that other clients see them; nolock\n"
	     "keeps them in this kernel (local_lock=all)"),
	KIND("nolock", OPT_NOLOCK, NULL, NULL),
	KIND("local_lock", OPT_LOCAL_LOCK, "local_lock=none|all|flock|posix",
	     "\nthe kinds of lock kept in this kernel (none)"),
	NETCLIENT("vers"),

	SECTION("Interruptibility (intrfs gives them their historic meaning):"),
	NETCLIENT("killable"),
	NETCLIENT("intr"),
	NETCLIENT("nointr"),
	NETCLIENT("policy"),
	NETCLIENT("send"),
	COUNT("hung_timeout", hung_timeout, 0, SECONDS_MAX, 120, "hung_timeout=N",
	      "seconds before the watchdog reports a task blocked\n"
	      "uninterruptibly (%u; 0: off)"),
	COUNT("caller_hold_max", caller_hold_max, 0, SECONDS_MAX,
	      CALLER_HOLD_UNSET, "caller_hold_max=N",
	      "seconds a caller's uninterruptible region may hold a\n"
	      "fatal signal back (default: the major timeout)"),
	FLAG("caller_hold_any", caller_hold_any, "caller_hold_any",
	     "a caller without CAP_SYS_ADMIN may hold a fatal signal\n"
	     "back in an uninterruptible region too (default: its\n"
	     "region is held as killable)"),
	FLAG("direct_io", direct_io, "direct_io",
	     "every open bypasses the page cache (reads become\n"
	     "interruptible; O_DIRECT does it per open)"),

	SECTION("Daemon:"),
	NETCLIENT("slots"),
	NETCLIENT("nconnect"),
	COUNT("max_workers", max_workers, 1, 65536, 512, "max_workers=N",
	      "requests served at once (%u)"),
	COUNT("wbuf", wbuf_mb, 1, 4096, 4, "wbuf=N",
	      "MiB of uncommitted writes kept per file before a COMMIT; four\n"
	      "times that for the whole mount (%u)"),
	PATH("logfile", logfile, "logfile=PATH",
	     "where the daemon logs (see Logs below)"),
	PATH("trace", trace, "trace=PATH",
	     "an event trace, one JSON object a line: regions,\n"
	     "interrupts, retransmits, resets, replies (intrfsctl\n"
	     "trace on|off switches it live)"),
	KIND("bg", OPT_REFUSED, NULL,
	     "the mount retries in the foreground for retry= minutes"),
	KIND("fg", OPT_IGNORED_FLAG, NULL, NULL),

	FUSE_FLAG("allow_other", "allow_other"),
	FUSE_FLAG("default_permissions", "default_permissions"),
	FUSE_FLAG("auto_unmount", "auto_unmount"),
	FUSE_FLAG("ro", "ro"),
	FUSE_FLAG("rw", "rw"),
	FUSE_FLAG("suid", "[no]suid"),
	FUSE_FLAG("nosuid", NULL),
	FUSE_FLAG("dev", "[no]dev"),
	FUSE_FLAG("nodev", NULL),
	FUSE_FLAG("exec", "[no]exec"),
	FUSE_FLAG("noexec", NULL),
	FUSE_FLAG("atime", "[no]atime"),
	FUSE_FLAG("noatime", NULL),
	FUSE_FLAG("sync", "sync"),
	FUSE_FLAG("async", "async"),
	FUSE_FLAG("dirsync", "dirsync"),
	FUSE_VALUE("fsname", "fsname="),
	FUSE_VALUE("subtype", "subtype="),
	FUSE_VALUE("max_read", NULL),

	/*
	 * The access time flags libfuse 3.14 does not know (it fails the
	 * mount on them) and mount(8) passes from fstab, as Linux's NFS
	 * client takes them.  Nothing for them to do: FUSE marks every
	 * inode S_NOATIME, so the kernel never updates an access time on
	 * the mount (the server sets it when it serves a READ), and it keeps
	 * no timestamps for lazytime to defer (no writeback cache).
	 */
	IGNORED_FLAG("relatime", "[no]relatime"),
	IGNORED_FLAG("norelatime", NULL),
	IGNORED_FLAG("strictatime", "[no]strictatime"),
	IGNORED_FLAG("nostrictatime", NULL),
	IGNORED_FLAG("diratime", "[no]diratime"),
	IGNORED_FLAG("nodiratime", NULL),
	IGNORED_FLAG("lazytime", "[no]lazytime"),
	IGNORED_FLAG("nolazytime", NULL),
	IGNORED("defaults", "defaults"),
	IGNORED("auto", "[no]auto"),
	IGNORED("noauto", NULL),
	IGNORED("user", "[no]user"),
	IGNORED("nouser", NULL),
	IGNORED("users", "users"),
	IGNORED("_netdev", "_netdev"),
	IGNORED("nofail", "nofail"),
	IGNORED("owner", NULL),
	IGNORED("comment", NULL),
	KIND("x-", OPT_IGNORED_PREFIX, "x-*", NULL),
};
/* clang-format on */

#define OPT_NDEFS (ARRAY_SIZE(opt_defs))

static const struct opt_def *opt_find(const char *key)
{
	for (size_t i = 0; i < OPT_NDEFS; i++) {
		const struct opt_def *d = &opt_defs[i];

		if (!d->name)
			continue;
		if (d->kind == OPT_IGNORED_PREFIX ?
			    strncmp(key, d->name, strlen(d->name)) == 0 :
			    strcmp(key, d->name) == 0)
			return d;
	}
	return NULL;
}

static void *opt_field(struct fs_opts *o, const struct opt_def *d)
{
	return (char *)o + d->off;
}

void fs_opts_init(struct fs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->acregmin = AC_REGMIN;
	o->acdirmin = AC_DIRMIN;
	o->neg_cache = true;
	for (size_t i = 0; i < OPT_NDEFS; i++)
		if (opt_defs[i].kind == OPT_COUNT)
			*(unsigned *)opt_field(o, &opt_defs[i]) =
				opt_defs[i].def;
}

/* Parsing. */

static int add_fuse_opt(struct fs_fuse_opts *fo, const char *key,
			const char *val, char *err, size_t errlen)
{
	size_t len = strlen(fo->opts);
	int n = snprintf(fo->opts + len, sizeof(fo->opts) - len, "%s%s%s%s",
			 len ? "," : "", key, val ? "=" : "", val ? val : "");

	if (n < 0 || (size_t)n >= sizeof(fo->opts) - len) {
		snprintf(err, errlen, "too many FUSE options");
		return -EINVAL;
	}
	return 0;
}

static int parse_seconds(const char *key, const char *val, double *out,
			 char *err, size_t errlen)
{
	char *end;
	double v;

	if (!val || !*val) {
		snprintf(err, errlen, "option '%s' needs a number of seconds",
			 key);
		return -EINVAL;
	}
	errno = 0;
	v = strtod(val, &end);
	if (errno || *end || v < 0 || v > SECONDS_MAX) {
		snprintf(err, errlen,
			 "option '%s' needs a number of seconds between 0 and "
			 "%u, not '%s'",
			 key, (unsigned)SECONDS_MAX, val);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_count(const struct opt_def *d, const char *val, unsigned *out,
		       char *err, size_t errlen)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = val && *val ? strtoul(val, &end, 10) : 0;
	if (!val || !*val || errno || *end || v < d->min || v > d->max) {
		snprintf(err, errlen,
			 "option '%s' needs a number between %u and %u, not "
			 "'%s'",
			 d->name, d->min, d->max, val ? val : "");
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

/* Sets one option of the table; val is NULL when there was no '='. */
static int opt_set(struct intrfs *fs, struct fs_fuse_opts *fo,
		   const struct opt_def *d, const char *key, const char *val,
		   char *err, size_t errlen)
{
	struct fs_opts *o = &fs->o;
	double secs;
	int rc;

	switch (d->kind) {
	case OPT_FLAG:
	case OPT_UNFLAG:
	case OPT_NOAC:
	case OPT_AC:
	case OPT_LOCK:
	case OPT_NOLOCK:
	case OPT_FUSE_FLAG:
	case OPT_IGNORED_FLAG:
		if (val) {
			snprintf(err, errlen, "option '%s' takes no value",
				 key);
			return -EINVAL;
		}
		break;
	case OPT_FUSE_VALUE:
		if (!val || !*val) {
			snprintf(err, errlen, "option '%s' needs a value", key);
			return -EINVAL;
		}
		break;
	default:
		break;
	}

	switch (d->kind) {
	case OPT_SECTION:
	case OPT_NETCLIENT:
	case OPT_IGNORED:
	case OPT_IGNORED_FLAG:
	case OPT_IGNORED_PREFIX:
		return 0;
	case OPT_FLAG:
		*(bool *)opt_field(o, d) = true;
		return 0;
	case OPT_UNFLAG:
		*(bool *)opt_field(o, d) = false;
		return 0;
	case OPT_SECONDS:
		rc = parse_seconds(key, val, &secs, err, errlen);
		if (rc == 0 && d->off != NO_FIELD)
			*(double *)opt_field(o, d) = secs;
		return rc;
	case OPT_ACTIMEO:
		rc = parse_seconds(key, val, &secs, err, errlen);
		if (rc == 0)
			o->acregmin = o->acdirmin = secs;
		return rc;
	case OPT_NOAC:
		o->acregmin = o->acdirmin = 0;
		return 0;
	case OPT_AC:
		o->acregmin = AC_REGMIN;
		o->acdirmin = AC_DIRMIN;
		return 0;
	case OPT_LOOKUPCACHE:
		if (val && strcmp(val, "all") == 0) {
			o->neg_cache = true;
		} else if (val && (strcmp(val, "positive") == 0 ||
				   strcmp(val, "pos") == 0 ||
				   strcmp(val, "none") == 0)) {
			o->neg_cache = false;
		} else {
			snprintf(err, errlen,
				 "option '%s' is all, positive or none, not "
				 "'%s'",
				 key, val ? val : "");
			return -EINVAL;
		}
		return 0;
	case OPT_LOCK:
		/* As Linux's: back to the lock manager, nothing local. */
		o->nolock = o->local_posix = o->local_flock = false;
		return 0;
	case OPT_NOLOCK:
		o->nolock = o->local_posix = o->local_flock = true;
		return 0;
	case OPT_LOCAL_LOCK:
		if (!val || (strcmp(val, "none") && strcmp(val, "all") &&
			     strcmp(val, "flock") && strcmp(val, "posix"))) {
			snprintf(err, errlen,
				 "option '%s' is none, all, flock or posix, "
				 "not '%s'",
				 key, val ? val : "");
			return -EINVAL;
		}
		o->local_posix = !strcmp(val, "all") || !strcmp(val, "posix");
		o->local_flock = !strcmp(val, "all") || !strcmp(val, "flock");
		return 0;
	case OPT_COUNT:
		return parse_count(d, val, opt_field(o, d), err, errlen);
	case OPT_PATH: {
		char **field = opt_field(o, d);

		if (!val || !*val) {
			snprintf(err, errlen, "option '%s' needs a path", key);
			return -EINVAL;
		}
		free(*field);
		*field = strdup(val);
		return *field ? 0 : -ENOMEM;
	}
	case OPT_REFUSED:
		snprintf(err, errlen, "option '%s' is not supported: %s", key,
			 d->help);
		return -EINVAL;
	case OPT_FUSE_FLAG:
		if (strcmp(key, "allow_other") == 0)
			o->allow_other = true;
		return add_fuse_opt(fo, key, NULL, err, errlen);
	case OPT_FUSE_VALUE:
		if (strcmp(key, "fsname") == 0)
			fo->fsname_set = true;
		if (strcmp(key, "max_read") == 0) {
			/* init() must ask the kernel for the same (ops.c). */
			static const struct opt_def bytes = {
				.name = "max_read", .min = 1, .max = UINT_MAX
			};

			rc = parse_count(&bytes, val, &o->max_read, err,
					 errlen);
			if (rc)
				return rc;
		}
		return add_fuse_opt(fo, key, val, err, errlen);
	}
	return -EINVAL;
}

struct parse_ctx {
	struct intrfs *fs;
	struct fs_fuse_opts *fo;
};

/* netclient's callback: 0 taken, 1 unknown, -errno with err set. */
static int fs_option(const char *key, const char *val, void *arg, char *err,
		     size_t errlen)
{
	struct parse_ctx *c = arg;
	const struct opt_def *d = opt_find(key);

	if (!d)
		return 1;
	return opt_set(c->fs, c->fo, d, key, val, err, errlen);
}

int fs_opts_parse(struct intrfs *fs, const char *str, struct fs_fuse_opts *fo,
		  char *err, size_t errlen)
{
	struct parse_ctx c = { fs, fo };

	return nc_opts_parse(&fs->nco, str, fs_option, &c, err, errlen);
}

/* --help. */

/*
 * Prints s, its lines after the first indented to the help column; with
 * is_format, its "%u" is the default.
 */
static void put_help(FILE *f, const char *s, unsigned def, bool is_format)
{
	for (;;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		const char *u = is_format ? strstr(s, "%u") : NULL;

		if (u && u < s + len) {
			fprintf(f, "%.*s%u%.*s", (int)(u - s), s, def,
				(int)(len - (size_t)(u - s) - 2), u + 2);
		} else {
			fprintf(f, "%.*s", (int)len, s);
		}
		fputc('\n', f);
		if (!nl)
			return;
		s = nl + 1;
		fprintf(f, "%*s", HELP_COLUMN, "");
	}
}

static void put_row(FILE *f, const char *syntax, const struct opt_def *d)
{
	const char *help = d ? d->help : NULL;
	bool is_format = d && d->kind == OPT_COUNT;

	if (help && help[0] == '\n') {
		fprintf(f, "  %s\n%*s", syntax, HELP_COLUMN, "");
		help++;
	} else if (strlen(syntax) < HELP_COLUMN - 2) {
		fprintf(f, "  %-*s", HELP_COLUMN - 2, syntax);
	} else {
		fprintf(f, "  %s  ", syntax);
	}
	put_help(f, help, d ? d->def : 0, is_format);
}

/* netclient's option key, as netclient's table says it. */
static void put_netclient_row(FILE *f, const char *key)
{
	struct opt_def row = { .kind = OPT_NETCLIENT };
	char help[512];

	size_t first;

	/*
	 * A syntax wider than the left column: its help after it when the
	 * first line fits there, else under it.
	 */
	help[0] = '\n';
	if (nc_opt_help(key, &row.syntax, help + 1, sizeof(help) - 1) <= 0)
		return; /* check-options: every row is in --help */
	first = strcspn(help + 1, "\n");
	row.help = help + 1;
	if (strlen(row.syntax) >= HELP_COLUMN - 2 &&
	    2 + strlen(row.syntax) + 2 + first > HELP_WIDTH)
		row.help = help;
	put_row(f, row.syntax, &row);
}

/* Appends word to a paragraph wrapped at HELP_WIDTH. */
static void put_word(FILE *f, const char *word, const char *sep, size_t *col)
{
	size_t len = strlen(word) + strlen(sep);

	if (*col && *col + 1 + len > HELP_WIDTH) {
		fputc('\n', f);
		*col = 0;
	} else if (*col) {
		fputc(' ', f);
		(*col)++;
	}
	fprintf(f, "%s%s", word, sep);
	*col += len;
}

static bool is_ignored(const struct opt_def *d)
{
	return d->kind == OPT_IGNORED || d->kind == OPT_IGNORED_FLAG ||
	       d->kind == OPT_IGNORED_PREFIX;
}

/* The options passed on to FUSE and those ignored, as one paragraph. */
static void put_passed_on(FILE *f)
{
	static const char *const intro[] = { "FUSE",	"and",	  "mount",
					     "options", "passed", "on:" };
	const struct opt_def *last_fuse = NULL, *last = NULL;
	size_t col = 0;
	bool ignored = false;

	for (size_t i = 0; i < OPT_NDEFS; i++) {
		const struct opt_def *d = &opt_defs[i];

		if (!d->syntax)
			continue;
		if (d->kind == OPT_FUSE_FLAG || d->kind == OPT_FUSE_VALUE)
			last_fuse = d;
		else if (is_ignored(d))
			last = d;
	}
	for (size_t i = 0; i < ARRAY_SIZE(intro); i++)
		put_word(f, intro[i], "", &col);
	for (size_t i = 0; i < OPT_NDEFS; i++) {
		const struct opt_def *d = &opt_defs[i];
		bool fuse = d->kind == OPT_FUSE_FLAG ||
			    d->kind == OPT_FUSE_VALUE;

		if (!d->syntax || (!fuse && !is_ignored(d)))
			continue;
		if (!fuse && !ignored) {
			put_word(f, "ignored:", "", &col);
			ignored = true;
		}
		put_word(f, d->syntax,
			 d == last_fuse ? ";" :
			 d == last	? "." :
					  ",",
			 &col);
	}
	fputc('\n', f);
}

void fs_usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG
		" SERVER:/PATH MOUNTPOINT [-o OPTIONS] [-f] [-d]\n"
		"\n"
		"Mounts the NFSv3 export PATH of SERVER on MOUNTPOINT through "
		"FUSE.  Each request\nruns as a task in the region its mount "
		"mode asks for; signals become interrupts.\n"
		"\n"
		"  -o OPTIONS     comma-separated, as below (may be repeated)\n"
		"  -f             stay in the foreground, log to stderr\n"
		"  -d             debug: foreground, and libfuse prints every "
		"request\n"
		"  -h, --help     this help\n"
		"  -V, --version  the version\n");
	for (size_t i = 0; i < OPT_NDEFS; i++) {
		const struct opt_def *d = &opt_defs[i];

		if (d->kind == OPT_SECTION)
			fprintf(f, "\n%s\n", d->help);
		else if (d->kind == OPT_NETCLIENT)
			put_netclient_row(f, d->help);
		else if (d->syntax && d->help)
			put_row(f, d->syntax, d);
	}
	fputc('\n', f);
	put_passed_on(f);
	fprintf(f,
		"\n"
		"intrfsctl MOUNTPOINT tasks|stats|policy|mode|watchdog|trace "
		"looks inside a live\nmount; kill -USR1 on the daemon logs "
		"its tasks and stats tables.\n"
		"\n"
		"Logs: with -f or -d, stderr.  Otherwise logfile=PATH; else "
		"syslog (daemon\nfacility) when /dev/log takes messages; else "
		"the stderr intrfs was started\nwith (mount's, or the "
		"terminal's).\n");
}
