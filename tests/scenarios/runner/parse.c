/*
 * Scenario files: one directive a line (tests/scenarios/README.md).  A
 * mistake is reported as FILE:LINE:COL: message, the line, and a caret
 * under the token at fault; nothing is half parsed.  A netfault rule is
 * checked by netfault's own parser (rule.c), so --check refuses what
 * netfault would; a NUL byte in a file is a mistake too, not the end of
 * its line.
 */
#include "scenario.h"
#include "netfault_i.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SIZE (1u << 20)
#define DEFAULT_ENTRIES 100
#define DEFAULT_HOLD_NS 1000000000ull
#define DEFAULT_SIG_AT_NS 300000000ull
#define DEFAULT_TIMEOUT_NS 60000000000ull
#define TOKENS_MAX 32
#define DEFAULT_REGION_REASON "scenario"

static const char *const op_names[] = {
	[OP_READ] = "read",	  [OP_WRITE] = "write",
	[OP_FSYNC] = "fsync",	  [OP_CREATE] = "create",
	[OP_REMOVE] = "remove",	  [OP_RENAME] = "rename",
	[OP_READDIR] = "readdir", [OP_MKDIR] = "mkdir",
	[OP_STAT] = "stat",	  [OP_LOCK] = "lock",
	[OP_COPYUP] = "copyup",
};

static const char *const call_names[] = {
	[CALL_OPEN] = "open",	    [CALL_READ] = "read",
	[CALL_WRITE] = "write",	    [CALL_FSYNC] = "fsync",
	[CALL_CLOSE] = "close",	    [CALL_UNLINK] = "unlink",
	[CALL_RENAME] = "rename",   [CALL_OPENDIR] = "opendir",
	[CALL_READDIR] = "readdir", [CALL_CLOSEDIR] = "closedir",
	[CALL_MKDIR] = "mkdir",	    [CALL_STAT] = "stat",
	[CALL_FLOCK] = "flock",	    [CALL_FCNTL] = "fcntl",
	[CALL_REGION] = "region",   [CALL_HOLDER] = "holder",
	[CALL_CHECK] = "check",
};

static const char *const state_names[] = {
	[ST_AUTO] = "auto",
	[ST_NEW] = "new",
	[ST_OLD] = "old",
	[ST_ANY] = "any",
};

static const char *const action_names[] = {
	[ACT_HANDLER] = "handler",
	[ACT_RESTART] = "restart",
	[ACT_DEFAULT] = "default",
};

/* The errnos a result may name. */
static const struct {
	const char *name;
	int err;
} errnos[] = {
	{ "EINTR", EINTR },
	{ "EIO", EIO },
	{ "ETIMEDOUT", ETIMEDOUT },
	{ "ENOENT", ENOENT },
	{ "EEXIST", EEXIST },
	{ "EACCES", EACCES },
	{ "EPERM", EPERM },
	{ "ENOTDIR", ENOTDIR },
	{ "EISDIR", EISDIR },
	{ "ENOSPC", ENOSPC },
	{ "ESTALE", ESTALE },
	{ "EAGAIN", EAGAIN },
	{ "EBADF", EBADF },
	{ "EINVAL", EINVAL },
	{ "ENOTEMPTY", ENOTEMPTY },
	{ "EREMOTEIO", EREMOTEIO },
	{ "ECONNREFUSED", ECONNREFUSED },
	{ "ENOTCONN", ENOTCONN },
	{ "ECONNRESET", ECONNRESET },
	{ "EPROTO", EPROTO },
	{ "EBADMSG", EBADMSG },
	{ "EOVERFLOW", EOVERFLOW },
	{ "ENAMETOOLONG", ENAMETOOLONG },
	{ "EROFS", EROFS },
	{ "EDQUOT", EDQUOT },
	{ "EFBIG", EFBIG },
	{ "ENXIO", ENXIO },
	{ "ENOTTY", ENOTTY },
	{ "ENOSYS", ENOSYS },
	{ "EOPNOTSUPP", EOPNOTSUPP },
};

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "SIGHUP", SIGHUP },	    { "SIGINT", SIGINT },
	{ "SIGQUIT", SIGQUIT },	    { "SIGKILL", SIGKILL },
	{ "SIGUSR1", SIGUSR1 },	    { "SIGUSR2", SIGUSR2 },
	{ "SIGALRM", SIGALRM },	    { "SIGTERM", SIGTERM },
	{ "SIGURG", SIGURG },	    { "SIGCHLD", SIGCHLD },
	{ "SIGWINCH", SIGWINCH },   { "SIGPROF", SIGPROF },
	{ "SIGVTALRM", SIGVTALRM }, { "SIGIO", SIGIO },
	{ "SIGPIPE", SIGPIPE },
};

void scn_copy(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

const char *scn_op_name(enum scn_op op)
{
	return op_names[op];
}

const char *scn_call_name(enum scn_call call)
{
	return call_names[call];
}

const char *scn_region_kind_name(enum region_kind kind)
{
	return kind == REGION_KILLABLE ? "killable" : "uninterruptible";
}

const char *scn_state_name(enum scn_state st)
{
	return state_names[st];
}

const char *scn_result_name(int res)
{
	static char buf[32];

	if (res == RES_OK)
		return "ok";
	if (res == RES_KILLED)
		return "killed";
	if (res == RES_HUNG)
		return "hung";
	for (size_t i = 0; i < ARRAY_SIZE(errnos); i++)
		if (errnos[i].err == res)
			return errnos[i].name;
	snprintf(buf, sizeof(buf), "errno%d", res);
	return buf;
}

int scn_errno_of(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(errnos); i++)
		if (strcmp(errnos[i].name, name) == 0)
			return errnos[i].err;
	return 0;
}

const char *scn_signal_name(int sig)
{
	static char buf[16];

	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (signals[i].sig == sig)
			return signals[i].name;
	snprintf(buf, sizeof(buf), "SIG%d", sig);
	return buf;
}

void scn_format_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000000000ull)
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.3fs", (double)ns / 1e9);
}

/* The line being parsed, for the messages. */
struct cursor {
	const char *path;
	unsigned lineno;
	const char *line;
	size_t line_len;
	FILE *err;
};

struct token {
	const char *p; /* into the line */
	size_t len;
};

static int fail_at(const struct cursor *c, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(const struct cursor *c, const char *at, const char *fmt, ...)
{
	size_t col = at ? (size_t)(at - c->line) : 0;
	va_list ap;

	fprintf(c->err, "%s:%u:%zu: ", c->path, c->lineno, col + 1);
	va_start(ap, fmt);
	vfprintf(c->err, fmt, ap);
	va_end(ap);
	fprintf(c->err, "\n  %.*s\n  %*s^\n", (int)c->line_len, c->line,
		(int)col, "");
	return -1;
}

static bool tok_is(const struct token *t, const char *word)
{
	return t->len == strlen(word) && memcmp(t->p, word, t->len) == 0;
}

static bool tok_prefix(const struct token *t, const char *prefix)
{
	size_t n = strlen(prefix);

	return t->len >= n && memcmp(t->p, prefix, n) == 0;
}

/* Copies a token into buf (NUL-terminated, cut at len). */
static const char *tok_str(const struct token *t, char *buf, size_t len)
{
	size_t n = t->len < len - 1 ? t->len : len - 1;

	memcpy(buf, t->p, n);
	buf[n] = '\0';
	return buf;
}

/* Splits "key=value": the value's token, or false when there is no '='. */
static bool tok_kv(const struct token *t, struct token *key, struct token *val)
{
	const char *eq = memchr(t->p, '=', t->len);

	if (!eq)
		return false;
	*key = (struct token){ t->p, (size_t)(eq - t->p) };
	*val = (struct token){ eq + 1, t->len - (size_t)(eq - t->p) - 1 };
	return true;
}

static int parse_u64(const struct cursor *c, const struct token *t,
		     uint64_t *out)
{
	uint64_t v = 0;

	if (t->len == 0)
		return fail_at(c, t->p, "a number is missing");
	for (size_t i = 0; i < t->len; i++) {
		if (!isdigit((unsigned char)t->p[i]))
			return fail_at(c, t->p + i, "'%.*s' is not a number",
				       (int)t->len, t->p);
		if (v > (UINT64_MAX - 9) / 10)
			return fail_at(c, t->p, "%.*s is too large",
				       (int)t->len, t->p);
		v = v * 10 + (uint64_t)(t->p[i] - '0');
	}
	*out = v;
	return 0;
}

/* "250ms", "2s", "1m"; "0" alone is zero. */
static int parse_duration(const struct cursor *c, const struct token *t,
			  uint64_t *ns)
{
	size_t n = 0;
	uint64_t v, unit;
	struct token num;

	while (n < t->len && isdigit((unsigned char)t->p[n]))
		n++;
	num = (struct token){ t->p, n };
	if (n == 0)
		return fail_at(c, t->p,
			       "'%.*s' is not a duration (a number and ms, s "
			       "or m: 250ms, 2s)",
			       (int)t->len, t->p);
	if (parse_u64(c, &num, &v) < 0)
		return -1;
	if (n == t->len && v == 0) {
		*ns = 0;
		return 0;
	}
	if (t->len - n == 2 && memcmp(t->p + n, "ms", 2) == 0)
		unit = 1000000ull;
	else if (t->len - n == 1 && t->p[n] == 's')
		unit = 1000000000ull;
	else if (t->len - n == 1 && t->p[n] == 'm')
		unit = 60000000000ull;
	else
		return fail_at(c, t->p + n,
			       "'%.*s' needs a unit: ms, s or m (250ms, 2s)",
			       (int)t->len, t->p);
	if (v > UINT64_MAX / unit / 2)
		return fail_at(c, t->p, "%.*s is too long", (int)t->len, t->p);
	*ns = v * unit;
	return 0;
}

/* "4096", "64K", "16M". */
static int parse_size(const struct cursor *c, const struct token *t,
		      uint64_t *out)
{
	struct token num = *t;
	uint64_t mult = 1, v;

	if (t->len && (t->p[t->len - 1] == 'K' || t->p[t->len - 1] == 'M')) {
		mult = t->p[t->len - 1] == 'K' ? 1024 : 1024 * 1024;
		num.len--;
	}
	if (parse_u64(c, &num, &v) < 0)
		return -1;
	if (v > (1ull << 40) / mult)
		return fail_at(c, t->p, "%.*s is too large (at most 1T)",
			       (int)t->len, t->p);
	*out = v * mult;
	return 0;
}

static int parse_signal(const struct cursor *c, const struct token *t, int *sig)
{
	char name[32], full[40];

	tok_str(t, name, sizeof(name));
	snprintf(full, sizeof(full), "%s%s",
		 strncmp(name, "SIG", 3) ? "SIG" : "", name);
	for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
		if (strcmp(signals[i].name, full) == 0) {
			*sig = signals[i].sig;
			return 0;
		}
	return fail_at(c, t->p, "unknown signal '%s' (SIGINT, SIGKILL, ...)",
		       name);
}

/* The rest of the line from token i on, as one string. */
static const char *rest_of(const struct cursor *c, const struct token *t,
			   char *buf, size_t len)
{
	size_t n = c->line_len - (size_t)(t->p - c->line);

	while (n && isspace((unsigned char)t->p[n - 1]))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(buf, t->p, n);
	buf[n] = '\0';
	return buf;
}

static int d_workload(const struct cursor *c, struct scenario *s,
		      const struct token *tk, unsigned n)
{
	bool found = false;
	uint64_t v;

	if (n < 2)
		return fail_at(c, tk[0].p + tk[0].len,
			       "workload needs an operation (read, write, "
			       "fsync, create, remove, rename, readdir, "
			       "mkdir, stat, lock, copyup)");
	for (size_t i = 0; i < ARRAY_SIZE(op_names); i++)
		if (tok_is(&tk[1], op_names[i])) {
			s->op = (enum scn_op)i;
			found = true;
		}
	if (!found)
		return fail_at(c, tk[1].p,
			       "unknown operation '%.*s' (read, write, fsync, "
			       "create, remove, rename, readdir, mkdir, stat, "
			       "lock, copyup)",
			       (int)tk[1].len, tk[1].p);
	if (s->op == OP_COPYUP && s->overlay)
		return fail_at(c, tk[1].p,
			       "copyup is the copy-up itself; overlay is the "
			       "kernel's: not both");
	for (unsigned i = 2; i < n; i++) {
		struct token k, val;

		if (tok_is(&tk[i], "direct")) {
			s->direct = true;
			continue;
		}
		if (tok_is(&tk[i], "buffered")) {
			s->direct = false;
			continue;
		}
		if (tok_is(&tk[i], "flock")) {
			s->flock = true;
			continue;
		}
		if (!tok_kv(&tk[i], &k, &val))
			return fail_at(c, tk[i].p,
				       "unknown word '%.*s' (size=, chunk=, "
				       "entries=, procs=, hold=, upper=, "
				       "direct, buffered, flock)",
				       (int)tk[i].len, tk[i].p);
		if (tok_is(&k, "size")) {
			if (parse_size(c, &val, &s->size) < 0)
				return -1;
		} else if (tok_is(&k, "chunk")) {
			if (parse_size(c, &val, &s->chunk) < 0)
				return -1;
			if (s->chunk == 0)
				return fail_at(c, val.p, "chunk= must be > 0");
		} else if (tok_is(&k, "entries")) {
			if (parse_u64(c, &val, &v) < 0)
				return -1;
			if (v == 0 || v > 100000)
				return fail_at(c, val.p,
					       "entries= is 1 to 100000");
			s->entries = (unsigned)v;
		} else if (tok_is(&k, "procs")) {
			if (parse_u64(c, &val, &v) < 0)
				return -1;
			if (v == 0 || v > SCN_PROCS_MAX)
				return fail_at(c, val.p, "procs= is 1 to %d",
					       SCN_PROCS_MAX);
			s->procs = (unsigned)v;
		} else if (tok_is(&k, "hold")) {
			if (parse_duration(c, &val, &s->hold_ns) < 0)
				return -1;
		} else if (tok_is(&k, "upper")) {
			if (s->op != OP_COPYUP)
				return fail_at(c, k.p,
					       "upper= is copyup's (where the "
					       "copy goes)");
			if (tok_is(&val, "intrfs"))
				s->upper_intrfs = true;
			else if (tok_is(&val, "local"))
				s->upper_intrfs = false;
			else
				return fail_at(c, val.p,
					       "upper= is local or intrfs");
		} else {
			return fail_at(c, k.p,
				       "unknown key '%.*s' (size=, chunk=, "
				       "entries=, procs=, hold=, upper=)",
				       (int)k.len, k.p);
		}
	}
	return 0;
}

/*
 * The rule as netfault will take it, parsed by netfault's own parser now,
 * so that a rule it refuses is a mistake of the file, not a failure after
 * the mount: its message and column, under the rule's token t.
 */
static int rule_check(const struct cursor *c, const struct token *t,
		      const char *rule)
{
	char err[1024], *what, *at;
	struct nf_rule *r;
	unsigned long col = 1;
	int rc = nf_rule_parse(rule, &r, err, sizeof(err));

	if (rc == 0) {
		nf_rule_free(r);
		return 0;
	}
	if (rc != -EINVAL)
		return fail_at(c, t->p, "netfault's rule parser: %s",
			       strerror(-rc));
	/* "rule 'RULE': WHAT at column COL\n..." */
	err[strcspn(err, "\n")] = '\0';
	what = err + strlen("rule '") + strlen(rule) + strlen("': ");
	if (what > err + strlen(err))
		what = err;
	at = strstr(what, " at column ");
	if (at) {
		col = strtoul(at + strlen(" at column "), NULL, 10);
		*at = '\0';
	}
	if (col < 1 || col > strlen(rule) + 1)
		col = 1;
	return fail_at(c, t->p + col - 1, "netfault refuses the rule: %s",
		       what);
}

static int d_fault(const struct cursor *c, struct scenario *s,
		   const struct token *tk, unsigned n)
{
	struct scn_fault *f;
	bool has_at = false;
	unsigned i;

	if (s->nfaults == SCN_FAULTS_MAX)
		return fail_at(c, tk[0].p, "more than %d faults",
			       SCN_FAULTS_MAX);
	f = &s->faults[s->nfaults];
	memset(f, 0, sizeof(*f));
	for (i = 1; i < n; i++) {
		struct token k, val;

		if (!tok_kv(&tk[i], &k, &val))
			break;
		if (tok_is(&k, "at")) {
			if (parse_duration(c, &val, &f->at_ns) < 0)
				return -1;
			has_at = true;
		} else if (tok_is(&k, "for")) {
			if (parse_duration(c, &val, &f->for_ns) < 0)
				return -1;
			f->has_for = true;
		} else {
			return fail_at(c, k.p,
				       "unknown key '%.*s' (at=, for=, then "
				       "the fault)",
				       (int)k.len, k.p);
		}
	}
	if (!has_at)
		return fail_at(c, tk[0].p + tk[0].len,
			       "fault needs at= (at=0 for the start)");
	if (i == n)
		return fail_at(c, tk[n - 1].p + tk[n - 1].len,
			       "fault needs a kind: netfault RULE, pause, "
			       "restart, partition drop|reject");
	if (tok_is(&tk[i], "netfault")) {
		if (i + 1 == n)
			return fail_at(c, tk[i].p + tk[i].len,
				       "netfault needs a rule "
				       "(netfault/RULES.md)");
		f->kind = FK_NETFAULT;
		rest_of(c, &tk[i + 1], f->rule, sizeof(f->rule));
		if (rule_check(c, &tk[i + 1], f->rule) < 0)
			return -1;
		for (unsigned j = i + 1; j < n; j++)
			if (tok_prefix(&tk[j], "at=") ||
			    tok_prefix(&tk[j], "for=") ||
			    tok_prefix(&tk[j], "from=") ||
			    tok_prefix(&tk[j], "until="))
				return fail_at(
					c, tk[j].p,
					"in a rule, at=, for=, from= and "
					"until= count from netfault's start: "
					"give at= and for= to the fault line");
	} else if (tok_is(&tk[i], "pause")) {
		f->kind = FK_PAUSE;
	} else if (tok_is(&tk[i], "restart")) {
		f->kind = FK_RESTART;
	} else if (tok_is(&tk[i], "partition")) {
		if (i + 1 == n || !(tok_is(&tk[i + 1], "drop") ||
				    tok_is(&tk[i + 1], "reject")))
			return fail_at(c,
				       i + 1 == n ? tk[i].p + tk[i].len :
						    tk[i + 1].p,
				       "partition is 'partition drop' or "
				       "'partition reject'");
		f->kind = tok_is(&tk[i + 1], "drop") ? FK_PARTITION_DROP :
						       FK_PARTITION_REJECT;
		i++;
	} else {
		return fail_at(c, tk[i].p,
			       "unknown fault '%.*s' (netfault RULE, pause, "
			       "restart, partition drop|reject)",
			       (int)tk[i].len, tk[i].p);
	}
	if (f->kind != FK_NETFAULT && i + 1 < n)
		return fail_at(c, tk[i + 1].p, "unexpected '%.*s'",
			       (int)tk[i + 1].len, tk[i + 1].p);
	s->nfaults++;
	return 0;
}

static int d_signal(const struct cursor *c, struct scenario *s,
		    const struct token *tk, unsigned n)
{
	unsigned i = 2;

	if (n < 2)
		return fail_at(c, tk[0].p + tk[0].len,
			       "signal needs a signal (SIGINT...) or none");
	if (tok_is(&tk[1], "none")) {
		if (n > 2)
			return fail_at(c, tk[2].p, "nothing follows none");
		s->sig = 0;
		return 0;
	}
	if (parse_signal(c, &tk[1], &s->sig) < 0)
		return -1;
	s->action = ACT_HANDLER;
	if (i < n && !memchr(tk[i].p, '=', tk[i].len) &&
	    !tok_is(&tk[i], "when=blocked")) {
		bool found = false;

		for (size_t a = 0; a < 3; a++)
			if (tok_is(&tk[i], action_names[a])) {
				s->action = (enum scn_action)a;
				found = true;
			}
		if (!found)
			return fail_at(c, tk[i].p,
				       "unknown action '%.*s' (handler, "
				       "restart, default)",
				       (int)tk[i].len, tk[i].p);
		if (s->sig == SIGKILL)
			return fail_at(c, tk[i].p, "SIGKILL takes no action");
		i++;
	}
	for (; i < n; i++) {
		struct token k, val;

		if (!tok_kv(&tk[i], &k, &val))
			return fail_at(c, tk[i].p,
				       "unexpected '%.*s' (at=, every=, "
				       "when=blocked)",
				       (int)tk[i].len, tk[i].p);
		if (tok_is(&k, "at")) {
			if (parse_duration(c, &val, &s->sig_at_ns) < 0)
				return -1;
		} else if (tok_is(&k, "every")) {
			if (parse_duration(c, &val, &s->every_ns) < 0)
				return -1;
			if (s->every_ns < 1000000)
				return fail_at(c, val.p,
					       "every= is at least 1ms");
		} else if (tok_is(&k, "when")) {
			if (!tok_is(&val, "blocked"))
				return fail_at(c, val.p,
					       "when= takes 'blocked'");
			s->when_blocked = true;
		} else {
			return fail_at(c, k.p,
				       "unknown key '%.*s' (at=, every=, "
				       "when=)",
				       (int)k.len, k.p);
		}
	}
	return 0;
}

/*
 * region KIND [REASON]: the reason is the rest of the line's words, as
 * written between them, so that it prints back the same.
 */
static int d_region(const struct cursor *c, struct scenario *s,
		    const struct token *tk, unsigned n)
{
	size_t len;

	if (s->has_region)
		return fail_at(c, tk[0].p,
			       "a second region line (a process declares "
			       "one)");
	if (n < 2)
		return fail_at(c, tk[0].p + tk[0].len,
			       "region needs a kind: killable or "
			       "uninterruptible");
	if (tok_is(&tk[1], "killable"))
		s->region_kind = REGION_KILLABLE;
	else if (tok_is(&tk[1], "uninterruptible"))
		s->region_kind = REGION_UNINTERRUPTIBLE;
	else
		return fail_at(c, tk[1].p,
			       "unknown region kind '%.*s' (killable, "
			       "uninterruptible)",
			       (int)tk[1].len, tk[1].p);
	if (n == 2) {
		scn_copy(s->region_reason, sizeof(s->region_reason),
			 DEFAULT_REGION_REASON);
	} else {
		len = (size_t)(tk[n - 1].p + tk[n - 1].len - tk[2].p);
		/* The mount would cut it: a reason it shows must be whole. */
		if (len >= sizeof(s->region_reason))
			return fail_at(c, tk[2].p,
				       "the reason is %zu bytes; a region's "
				       "is at most %zu",
				       len, sizeof(s->region_reason) - 1);
		memcpy(s->region_reason, tk[2].p, len);
		s->region_reason[len] = '\0';
	}
	s->has_region = true;
	return 0;
}

/* call=: a call a workload makes, none, or the signal that killed it. */
static int parse_calls(const struct cursor *c, const struct token *val,
		       struct scenario *s)
{
	const char *p = val->p, *end = val->p + val->len;

	s->ncalls = 0;
	for (;;) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		struct token one = { p, (size_t)((bar ? bar : end) - p) };
		bool known = tok_is(&one, "none");
		char name[16], list[256] = "";

		for (size_t i = 0; i < ARRAY_SIZE(call_names) && !known; i++)
			known = tok_is(&one, call_names[i]);
		for (size_t i = 0; i < ARRAY_SIZE(signals) && !known; i++)
			known = tok_is(&one, signals[i].name);
		if (!known) {
			for (size_t i = 0; i < ARRAY_SIZE(call_names); i++)
				snprintf(list + strlen(list),
					 sizeof(list) - strlen(list), ", %s",
					 call_names[i]);
			return fail_at(c, one.p,
				       "unknown call '%.*s' (none%s, or the "
				       "signal that killed it: SIGKILL...)",
				       (int)one.len, one.p, list);
		}
		if (s->ncalls == SCN_ALTS_MAX)
			return fail_at(c, one.p, "more than %d calls",
				       SCN_ALTS_MAX);
		scn_copy(s->calls[s->ncalls++], sizeof(s->calls[0]),
			 tok_str(&one, name, sizeof(name)));
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

static int parse_results(const struct cursor *c, const struct token *val,
			 struct scenario *s)
{
	const char *p = val->p, *end = val->p + val->len;

	s->nresults = 0;
	while (p <= end) {
		const char *bar = memchr(p, '|', (size_t)(end - p));
		struct token one = { p, (size_t)((bar ? bar : end) - p) };
		char name[32];
		int res;

		tok_str(&one, name, sizeof(name));
		if (strcmp(name, "ok") == 0)
			res = RES_OK;
		else if (strcmp(name, "killed") == 0)
			res = RES_KILLED;
		else if (!(res = scn_errno_of(name)))
			return fail_at(c, one.p,
				       "unknown result '%s' (ok, killed or an "
				       "errno name: EINTR, EIO...)",
				       name);
		if (s->nresults == SCN_ALTS_MAX)
			return fail_at(c, one.p, "more than %d results",
				       SCN_ALTS_MAX);
		s->results[s->nresults++] = res;
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

static int parse_count(const struct cursor *c, const struct token *val,
		       unsigned *out)
{
	uint64_t v;

	if (parse_u64(c, val, &v) < 0)
		return -1;
	if (v > 1000000)
		return fail_at(c, val->p, "%.*s is too large", (int)val->len,
			       val->p);
	*out = (unsigned)v;
	return 0;
}

static int d_expect(const struct cursor *c, struct scenario *s,
		    const struct token *tk, unsigned n)
{
	if (n < 2)
		return fail_at(c, tk[0].p + tk[0].len,
			       "expect needs something to check (result=, "
			       "latency<=, ...)");
	for (unsigned i = 1; i < n; i++) {
		const struct token *t = &tk[i];
		static const char *const ops[] = { "<=", ">=", "=" };
		const char *op = NULL, *at = NULL;
		struct token key, val;

		for (size_t o = 0; o < 3 && !op; o++) {
			at = memmem(t->p, t->len, ops[o], strlen(ops[o]));
			if (at)
				op = ops[o];
		}
		if (!op)
			return fail_at(c, t->p,
				       "'%.*s' is not KEY=VALUE (result=ok, "
				       "latency<=2s...)",
				       (int)t->len, t->p);
		key = (struct token){ t->p, (size_t)(at - t->p) };
		val = (struct token){ at + strlen(op),
				      t->len - key.len - strlen(op) };
		if (tok_is(&key, "result") && op[0] == '=') {
			if (parse_results(c, &val, s) < 0)
				return -1;
		} else if (tok_is(&key, "call") && op[0] == '=') {
			if (parse_calls(c, &val, s) < 0)
				return -1;
		} else if ((tok_is(&key, "latency") ||
			    tok_is(&key, "elapsed")) &&
			   op[0] != '=') {
			bool lat = tok_is(&key, "latency");
			struct scn_bound *b = op[0] == '<' ?
						      (lat ? &s->latency_max :
							     &s->elapsed_max) :
						      (lat ? &s->latency_min :
							     &s->elapsed_min);

			if (parse_duration(c, &val, &b->ns) < 0)
				return -1;
			b->set = true;
		} else if (tok_is(&key, "resets")) {
			unsigned *v = op[0] == '=' ? &s->resets_eq :
				      op[0] == '<' ? &s->resets_max :
						     &s->resets_min;

			if (parse_count(c, &val, v) < 0)
				return -1;
			if (op[0] == '=')
				s->resets_eq_set = true;
			else if (op[0] == '<')
				s->resets_max_set = true;
			else
				s->resets_min_set = true;
		} else if (tok_is(&key, "export") && op[0] == '=') {
			bool found = false;

			for (size_t st = 0; st < 4; st++)
				if (tok_is(&val, state_names[st])) {
					s->export_state = (enum scn_state)st;
					found = true;
				}
			if (!found)
				return fail_at(c, val.p,
					       "export= is new, old, any or "
					       "auto");
		} else if (tok_is(&key, "data") && op[0] == '=') {
			if (tok_is(&val, "intact"))
				s->data_any = false;
			else if (tok_is(&val, "any"))
				s->data_any = true;
			else
				return fail_at(c, val.p,
					       "data= is intact or any");
		} else {
			return fail_at(c, t->p,
				       "unknown check '%.*s' (result=, call=, "
				       "latency<= >=, elapsed<= >=, resets= "
				       "<= >=, export=, data=)",
				       (int)t->len, t->p);
		}
	}
	return 0;
}

static bool valid_name(const char *name)
{
	if (!*name)
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_./", *p))
			return false;
	return true;
}

static int parse_line(const struct cursor *c, struct scenario *s,
		      bool *seen_workload)
{
	struct token tk[TOKENS_MAX];
	unsigned n = 0;
	const char *p = c->line, *end = c->line + c->line_len;
	char buf[SCN_TEXT_MAX];

	while (p < end) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (p == end || *p == '#')
			break;
		if (n == TOKENS_MAX)
			return fail_at(c, p, "more than %d words on a line",
				       TOKENS_MAX);
		tk[n].p = p;
		while (p < end && !isspace((unsigned char)*p))
			p++;
		tk[n].len = (size_t)(p - tk[n].p);
		n++;
	}
	if (n == 0)
		return 0;
	if (tok_is(&tk[0], "name")) {
		if (n != 2 || !valid_name(tok_str(&tk[1], buf, sizeof(buf))))
			return fail_at(c, n > 1 ? tk[1].p : tk[0].p,
				       "name is one word of letters, digits, "
				       "- _ . /");
		scn_copy(s->name, sizeof(s->name), buf);
	} else if (tok_is(&tk[0], "about")) {
		if (n < 2)
			return fail_at(c, tk[0].p, "about needs a text");
		rest_of(c, &tk[1], s->about, sizeof(s->about));
	} else if (tok_is(&tk[0], "mount")) {
		if (n != 2)
			return fail_at(c, n > 2 ? tk[2].p : tk[0].p,
				       "mount takes one comma-separated list "
				       "of options");
		if (memmem(tk[1].p, tk[1].len, "port=", 5))
			return fail_at(c, tk[1].p,
				       "port= and mountport= are netfault's: "
				       "the runner sets them");
		tok_str(&tk[1], s->mount, sizeof(s->mount));
	} else if (tok_is(&tk[0], "workload")) {
		if (*seen_workload)
			return fail_at(c, tk[0].p, "a second workload line");
		*seen_workload = true;
		return d_workload(c, s, tk, n);
	} else if (tok_is(&tk[0], "fault")) {
		return d_fault(c, s, tk, n);
	} else if (tok_is(&tk[0], "signal")) {
		return d_signal(c, s, tk, n);
	} else if (tok_is(&tk[0], "expect")) {
		return d_expect(c, s, tk, n);
	} else if (tok_is(&tk[0], "overlay")) {
		if (n != 1)
			return fail_at(c, tk[1].p, "overlay takes nothing");
		if (*seen_workload && s->op == OP_COPYUP)
			return fail_at(c, tk[0].p,
				       "copyup is the copy-up itself; overlay "
				       "is the kernel's: not both");
		s->overlay = true;
	} else if (tok_is(&tk[0], "region")) {
		return d_region(c, s, tk, n);
	} else if (tok_is(&tk[0], "timeout")) {
		if (n != 2)
			return fail_at(c, tk[0].p, "timeout takes a duration");
		if (parse_duration(c, &tk[1], &s->timeout_ns) < 0)
			return -1;
		if (s->timeout_ns == 0)
			return fail_at(c, tk[1].p, "timeout must be > 0");
	} else {
		return fail_at(c, tk[0].p,
			       "unknown directive '%.*s' (name, about, mount, "
			       "overlay, region, workload, fault, signal, "
			       "expect, timeout)",
			       (int)tk[0].len, tk[0].p);
	}
	return 0;
}

static void defaults(struct scenario *s, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	memset(s, 0, sizeof(*s));
	scn_copy(s->file, sizeof(s->file), path);
	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 4 && strcmp(base + n - 4, ".scn") == 0)
		n -= 4;
	scn_copy(s->name, sizeof(s->name), base);
	if (n < sizeof(s->name))
		s->name[n] = '\0';
	s->size = DEFAULT_SIZE;
	s->chunk = DEFAULT_SIZE;
	s->entries = DEFAULT_ENTRIES;
	s->hold_ns = DEFAULT_HOLD_NS;
	s->procs = 1;
	s->sig_at_ns = DEFAULT_SIG_AT_NS;
	s->timeout_ns = DEFAULT_TIMEOUT_NS;
	s->export_state = ST_AUTO;
}

int scn_parse_text(const char *path, const char *text, struct scenario *s,
		   FILE *err)
{
	struct cursor c = { .path = path, .err = err };
	bool seen_workload = false;
	const char *p = text;

	defaults(s, path);
	while (*p) {
		const char *nl = strchr(p, '\n');

		c.lineno++;
		c.line = p;
		c.line_len = nl ? (size_t)(nl - p) : strlen(p);
		if (parse_line(&c, s, &seen_workload) < 0)
			return -1;
		if (!nl)
			break;
		p = nl + 1;
	}
	if (!seen_workload) {
		fprintf(err,
			"%s: no workload line (workload read, workload write "
			"size=16M...)\n",
			path);
		return -1;
	}
	if (!s->nresults) {
		s->results[0] = RES_OK;
		s->nresults = 1;
	}
	if (s->chunk > s->size && s->size)
		s->chunk = s->size;
	return 0;
}

int scn_parse_file(const char *path, struct scenario *s, FILE *err)
{
	FILE *f = fopen(path, "r");
	char *text;
	long len;
	int rc;

	if (!f) {
		fprintf(err, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 ||
	    len > 1 << 20 || fseek(f, 0, SEEK_SET) < 0) {
		fprintf(err,
			"%s: not a readable scenario file (at most 1 MiB)\n",
			path);
		fclose(f);
		return -1;
	}
	text = malloc((size_t)len + 1);
	if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
		fprintf(err, "%s: %s\n", path, strerror(errno));
		free(text);
		fclose(f);
		return -1;
	}
	text[len] = '\0';
	fclose(f);
	if (memchr(text, '\0', (size_t)len)) {
		/* Not the end of the text: a mistake, where it is. */
		const char *nul = text + strlen(text), *line = text;
		struct cursor c = { .path = path, .lineno = 1, .err = err };

		for (const char *p = text; p < nul; p++)
			if (*p == '\n') {
				c.lineno++;
				line = p + 1;
			}
		c.line = line;
		c.line_len = (size_t)(nul - line);
		fail_at(&c, nul, "a NUL byte: a scenario file is text");
		free(text);
		return -1;
	}
	rc = scn_parse_text(path, text, s, err);
	free(text);
	return rc;
}

/* Durations back in the largest unit that is exact. */
static const char *dur(uint64_t ns, char *buf, size_t len)
{
	if (ns == 0)
		snprintf(buf, len, "0");
	else if (ns % 60000000000ull == 0)
		snprintf(buf, len, "%llum",
			 (unsigned long long)(ns / 60000000000ull));
	else if (ns % 1000000000ull == 0)
		snprintf(buf, len, "%llus",
			 (unsigned long long)(ns / 1000000000ull));
	else
		snprintf(buf, len, "%llums",
			 (unsigned long long)(ns / 1000000ull));
	return buf;
}

static const char *size_str(uint64_t v, char *buf, size_t len)
{
	if (v && v % (1024 * 1024) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
	else if (v && v % 1024 == 0)
		snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

void scn_print(const struct scenario *s, FILE *out)
{
	static const char *const kinds[] = {
		[FK_NETFAULT] = "netfault",
		[FK_PAUSE] = "pause",
		[FK_RESTART] = "restart",
		[FK_PARTITION_DROP] = "partition drop",
		[FK_PARTITION_REJECT] = "partition reject",
	};
	char a[32], b[32];

	fprintf(out, "name %s\n", s->name);
	if (s->about[0])
		fprintf(out, "about %s\n", s->about);
	if (s->mount[0])
		fprintf(out, "mount %s\n", s->mount);
	if (s->overlay)
		fprintf(out, "overlay\n");
	if (s->has_region)
		fprintf(out, "region %s %s\n",
			scn_region_kind_name(s->region_kind), s->region_reason);
	fprintf(out, "workload %s size=%s chunk=%s entries=%u procs=%u %s",
		scn_op_name(s->op), size_str(s->size, a, sizeof(a)),
		size_str(s->chunk, b, sizeof(b)), s->entries, s->procs,
		s->direct ? "direct" : "buffered");
	if (s->op == OP_LOCK)
		fprintf(out, " hold=%s%s", dur(s->hold_ns, a, sizeof(a)),
			s->flock ? " flock" : "");
	if (s->op == OP_COPYUP)
		fprintf(out, " upper=%s", s->upper_intrfs ? "intrfs" : "local");
	fputc('\n', out);
	for (unsigned i = 0; i < s->nfaults; i++) {
		const struct scn_fault *f = &s->faults[i];

		fprintf(out, "fault at=%s", dur(f->at_ns, a, sizeof(a)));
		if (f->has_for)
			fprintf(out, " for=%s", dur(f->for_ns, a, sizeof(a)));
		fprintf(out, " %s%s%s\n", kinds[f->kind],
			f->kind == FK_NETFAULT ? " " : "",
			f->kind == FK_NETFAULT ? f->rule : "");
	}
	if (!s->sig) {
		fprintf(out, "signal none\n");
	} else {
		fprintf(out, "signal %s", scn_signal_name(s->sig));
		if (s->sig != SIGKILL)
			fprintf(out, " %s", action_names[s->action]);
		fprintf(out, " at=%s", dur(s->sig_at_ns, a, sizeof(a)));
		if (s->every_ns)
			fprintf(out, " every=%s",
				dur(s->every_ns, a, sizeof(a)));
		if (s->when_blocked)
			fprintf(out, " when=blocked");
		fprintf(out, "\n");
	}
	fprintf(out, "expect result=");
	for (unsigned i = 0; i < s->nresults; i++)
		fprintf(out, "%s%s", i ? "|" : "",
			scn_result_name(s->results[i]));
	for (unsigned i = 0; i < s->ncalls; i++)
		fprintf(out, "%s%s", i ? "|" : " call=", s->calls[i]);
	if (s->latency_min.set)
		fprintf(out, " latency>=%s",
			dur(s->latency_min.ns, a, sizeof(a)));
	if (s->latency_max.set)
		fprintf(out, " latency<=%s",
			dur(s->latency_max.ns, a, sizeof(a)));
	if (s->elapsed_min.set)
		fprintf(out, " elapsed>=%s",
			dur(s->elapsed_min.ns, a, sizeof(a)));
	if (s->elapsed_max.set)
		fprintf(out, " elapsed<=%s",
			dur(s->elapsed_max.ns, a, sizeof(a)));
	if (s->resets_eq_set)
		fprintf(out, " resets=%u", s->resets_eq);
	if (s->resets_min_set)
		fprintf(out, " resets>=%u", s->resets_min);
	if (s->resets_max_set)
		fprintf(out, " resets<=%u", s->resets_max);
	fprintf(out, " export=%s data=%s\n", scn_state_name(s->export_state),
		s->data_any ? "any" : "intact");
	fprintf(out, "timeout %s\n", dur(s->timeout_ns, a, sizeof(a)));
}
