/*
 * The rule language of netfault: a rule's text parsed into a struct
 * nf_rule (or an error that quotes the rule and marks the column of the
 * mistake), the decision whether a record gets the rule's fault now, and
 * the rule written back as canonical text that parses to an equal rule.
 * It owns each rule's state: its event and match counters and its two
 * seeded random streams.  It never does I/O, never reads a clock (the time
 * comes in as now_ns, nanoseconds since the proxy started) and never looks
 * inside a record: it sees only the header rpc.c decoded.  It has no global
 * state and no locks; a rule belongs to the one loop thread that uses it.
 *
 * Grammar (netfault/RULES.md has the examples): one rule per string,
 * tokens separated by blanks,
 *
 *   rule   := FAULT ARG* KEY=VALUE*
 *   FAULT  := delay MS [JITTER_MS] | stall | throttle KIBPS | drop
 *           | duplicate | reorder N | reset [after=BYTES] | slice BYTES
 *           | corrupt [header|body] [bytes=N] | blackhole | refuse
 *           | close-after BYTES | short-read BYTES
 *   KEY    := dir=call|reply          prog=NAME|NUMBER
 *           | proc=NAME|NUMBER        xid=0xHEX|NUMBER
 *           | nth=N      count=N|all  prob=P       seed=N
 *           | from=DUR   until=DUR    at=DUR       for=DUR
 *           | after=N:PROC[:call|reply]            flip=DUR/DUR
 *   DUR    := NUMBER (ms|s|m)
 *
 * Positional arguments come before the keys; each key is given at most
 * once.  Names of faults, keys and directions are lower case; program and
 * procedure names are matched without regard to case.
 *
 * Record faults (delay, drop, duplicate, reorder, reset, slice, corrupt,
 * short-read) are decided record by record by nf_rule_match(); stream
 * faults (stall, throttle, blackhole, refuse, close-after) are on or off
 * as a whole, asked with nf_rule_active(), and take only dir= (not refuse)
 * and the time keys.  short-read aims at NFS READ replies alone: its rule
 * says dir=reply proc=READ, whether written or not.
 *
 * A record gets a record fault when, in this order: its header matches
 * the target (dir, prog, proc, xid: each given key must be equal; prog,
 * proc and xid never match a record that did not decode as RPC, nor
 * prog and proc a reply whose call was not seen); the schedule is active
 * now; it is at least the nth such record (nth counts only records seen
 * while the schedule is active); fewer than count faults were applied; and
 * the probability draw says yes.  count defaults to 1 when nth is given
 * (the Nth record alone) and to unlimited otherwise.
 *
 * The schedule: the window [from, until) since the proxy started, if given,
 * and a span that starts at at= (default 0) or when the event of after=
 * happened, lasts for= (default: forever), and within it, with flip=ON/OFF,
 * is on for ON, off for OFF, on again, from the span's start.  after=N:PROC:DIR
 * counts every record of that procedure and direction (DIR defaults to
 * call), whether or not the rule is active or the record is its target;
 * the span starts when the Nth such record is seen, and that record itself
 * comes before the span ("after").
 */
#include "netfault_i.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NS_PER_MS 1000000ull
#define NS_PER_S (1000ull * NS_PER_MS)
#define NS_PER_MIN (60ull * NS_PER_S)
/* A probability is kept in parts per billion: exact in text and back. */
#define PPB 1000000000u
/* Durations and byte counts stay far from overflow when added. */
#define VALUE_MAX (UINT64_MAX / 4)
/* A rule is one line: longer text is refused before it is read. */
#define RULE_TEXT_MAX 1024

/* What the user wrote, resolved; two rules are equal when these are. */
struct nf_spec {
	enum nf_fault fault;
	uint64_t arg[2];
	bool header;
	bool has_dir, has_prog, has_proc, has_xid;
	enum nf_dir dir;
	uint32_t prog, proc, xid;
	uint64_t nth; /* 0: every match */
	uint64_t count; /* 0: unlimited */
	uint32_t prob_ppb;
	uint64_t seed;
	bool has_from, has_until, has_at, has_for, has_flip, has_event;
	uint64_t from_ns, until_ns, at_ns, for_ns, on_ns, off_ns;
	uint64_t ev_n;
	uint32_t ev_prog, ev_proc;
	enum nf_dir ev_dir;
};

struct nf_rule {
	struct nf_spec s;
	uint64_t events; /* records of after='s procedure seen */
	bool started;
	uint64_t start_ns; /* when the event happened */
	uint64_t matched; /* target matched while active */
	uint64_t applied;
	uint64_t rng_prob; /* splitmix64 states */
	uint64_t rng_aux;
};

/* ---- the faults ------------------------------------------------------- */

struct fault_info {
	const char *name;
	bool stream;
	unsigned nargs; /* required positional numbers */
	unsigned nopt; /* optional ones after them */
	uint64_t min; /* the smallest first argument */
	uint64_t max; /* the largest of each */
	const char *argname[2];
};

/*
 * A delay, and its jitter, of at most a day: the proxy counts in
 * nanoseconds.  A record reordered behind at most NF_REORDER_MAX others:
 * more is a record held back for good, which stall and delay say plainly.
 */
#define DELAY_MS_MAX (24ull * 3600 * 1000)

/* clang-format off */
static const struct fault_info faults[] = {
	[NF_DELAY]       = { "delay",       false, 1, 1, 0, DELAY_MS_MAX, { "MS", "JITTER_MS" } },
	[NF_STALL]       = { "stall",       true,  0, 0, 0, 0, { NULL, NULL } },
	[NF_THROTTLE]    = { "throttle",    true,  1, 0, 1, VALUE_MAX, { "KIBPS", NULL } },
	[NF_DROP]        = { "drop",        false, 0, 0, 0, 0, { NULL, NULL } },
	[NF_DUPLICATE]   = { "duplicate",   false, 0, 0, 0, 0, { NULL, NULL } },
	[NF_REORDER]     = { "reorder",     false, 1, 0, 1, NF_REORDER_MAX, { "N", NULL } },
	[NF_RESET]       = { "reset",       false, 0, 0, 0, 0, { NULL, NULL } },
	[NF_SLICE]       = { "slice",       false, 1, 0, 1, VALUE_MAX, { "BYTES", NULL } },
	[NF_CORRUPT]     = { "corrupt",     false, 0, 0, 0, 0, { NULL, NULL } },
	[NF_BLACKHOLE]   = { "blackhole",   true,  0, 0, 0, 0, { NULL, NULL } },
	[NF_REFUSE]      = { "refuse",      true,  0, 0, 0, 0, { NULL, NULL } },
	[NF_CLOSE_AFTER] = { "close-after", true,  1, 0, 0, VALUE_MAX, { "BYTES", NULL } },
	[NF_SHORT_READ]  = { "short-read",  false, 1, 0, 0, UINT32_MAX, { "BYTES", NULL } },
};
/* clang-format on */

#define NFAULTS (ARRAY_SIZE(faults))

const char *nf_fault_name(enum nf_fault fault)
{
	return (unsigned)fault < NFAULTS ? faults[fault].name : "unknown";
}

/* ---- the keys --------------------------------------------------------- */

enum key {
	K_DIR,
	K_PROG,
	K_PROC,
	K_XID,
	K_NTH,
	K_COUNT,
	K_PROB,
	K_SEED,
	K_FROM,
	K_UNTIL,
	K_AT,
	K_FOR,
	K_FLIP,
	K_EVENT, /* after=N:PROC[:DIR] */
	K_AFTER_BYTES, /* reset's after=BYTES */
	K_BYTES, /* corrupt's bytes=N */
	K_NKEYS,
};

static const char *const key_names[K_NKEYS] = {
	[K_DIR] = "dir",     [K_PROG] = "prog",	  [K_PROC] = "proc",
	[K_XID] = "xid",     [K_NTH] = "nth",	  [K_COUNT] = "count",
	[K_PROB] = "prob",   [K_SEED] = "seed",	  [K_FROM] = "from",
	[K_UNTIL] = "until", [K_AT] = "at",	  [K_FOR] = "for",
	[K_FLIP] = "flip",   [K_EVENT] = "after", [K_AFTER_BYTES] = "after",
	[K_BYTES] = "bytes",
};

/* Keys that choose records one by one: no use to a stream fault. */
static bool key_per_record(enum key k)
{
	return k == K_PROG || k == K_PROC || k == K_XID || k == K_NTH ||
	       k == K_COUNT || k == K_PROB || k == K_SEED;
}

/* ---- parsing ---------------------------------------------------------- */

struct parser {
	const char *text;
	char *err;
	size_t errlen;
	struct nf_spec *s;
	size_t col[K_NKEYS]; /* where each key was given; 0: not given */
	/* A procedure name is resolved once prog= is known. */
	const char *proc_name;
	size_t proc_len;
	bool proc_is_name;
	const char *ev_name;
	size_t ev_len;
};

/* A token of the text: not NUL-terminated; col counts from 1. */
struct tok {
	const char *p;
	size_t len;
	size_t col;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * Writes the message "rule 'TEXT': WHAT at column COL", then the rule and a
 * caret under the column (tabs copied so that the caret lines up).
 */
static int __attribute__((format(printf, 3, 4)))
fail(struct parser *p, size_t col, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	size_t n, i;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!p->err || p->errlen == 0)
		return -EINVAL;
	snprintf(p->err, p->errlen, "rule '%s': %s at column %zu\n  %s\n  ",
		 p->text, what, col, p->text);
	n = strlen(p->err);
	for (i = 0; i + 1 < col && p->text[i] && n + 2 < p->errlen; i++)
		p->err[n++] = p->text[i] == '\t' ? '\t' : ' ';
	if (n + 1 < p->errlen)
		p->err[n++] = '^';
	p->err[n] = '\0';
	return -EINVAL;
}

static bool tok_is(const struct tok *t, const char *word)
{
	return t->len == strlen(word) && memcmp(t->p, word, t->len) == 0;
}

/* Decimal digits (or 0x and hex digits when hex) up to max; all of t. */
static bool parse_number(const struct tok *t, bool hex, uint64_t max,
			 uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;
	size_t i = 0;

	if (hex && t->len > 2 && t->p[0] == '0' &&
	    (t->p[1] == 'x' || t->p[1] == 'X')) {
		base = 16;
		i = 2;
	}
	if (i == t->len)
		return false;
	for (; i < t->len; i++) {
		char c = t->p[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		if (v > (max - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

static int number(struct parser *p, const struct tok *t, uint64_t min,
		  const char *what, uint64_t *out)
{
	if (!parse_number(t, false, VALUE_MAX, out))
		return fail(p, t->col, "bad number '%.*s' for %s", (int)t->len,
			    t->p, what);
	if (*out < min)
		return fail(p, t->col, "%s must be at least %llu", what,
			    (unsigned long long)min);
	return 0;
}

/* NUMBER followed by ms, s or m, to nanoseconds. */
static int duration(struct parser *p, const struct tok *t, uint64_t min_ns,
		    const char *what, uint64_t *out)
{
	struct tok digits = *t, unit;
	uint64_t v, scale;
	size_t i = 0;

	while (i < t->len && t->p[i] >= '0' && t->p[i] <= '9')
		i++;
	digits.len = i;
	unit.p = t->p + i;
	unit.len = t->len - i;
	unit.col = t->col + i;
	if (i == 0)
		return fail(p, t->col, "bad duration '%.*s' for %s",
			    (int)t->len, t->p, what);
	if (tok_is(&unit, "ms"))
		scale = NS_PER_MS;
	else if (tok_is(&unit, "s"))
		scale = NS_PER_S;
	else if (tok_is(&unit, "m"))
		scale = NS_PER_MIN;
	else
		return fail(p, unit.col,
			    "bad unit in '%.*s' for %s (ms, s or m)",
			    (int)t->len, t->p, what);
	if (!parse_number(&digits, false, VALUE_MAX / scale, &v))
		return fail(p, t->col, "bad duration '%.*s' for %s",
			    (int)t->len, t->p, what);
	*out = v * scale;
	if (*out < min_ns)
		return fail(p, t->col, "%s must not be 0", what);
	return 0;
}

/* 0 < P <= 1, at most nine decimals, to parts per billion. */
static int probability(struct parser *p, const struct tok *t, uint32_t *out)
{
	uint64_t v = 0, scale = PPB;
	size_t i = 0;
	bool ok = t->len > 0 && t->p[0] >= '0' && t->p[0] <= '9';

	while (ok && i < t->len && t->p[i] >= '0' && t->p[i] <= '9') {
		v = v * 10 + (uint64_t)(t->p[i] - '0') * PPB;
		if (v > PPB)
			ok = false;
		i++;
	}
	if (ok && i < t->len && t->p[i] == '.') {
		i++;
		ok = i < t->len;
		for (; ok && i < t->len; i++) {
			scale /= 10;
			ok = t->p[i] >= '0' && t->p[i] <= '9' && scale > 0;
			if (ok)
				v += (uint64_t)(t->p[i] - '0') * scale;
		}
	}
	if (!ok || i != t->len || v == 0 || v > PPB)
		return fail(p, t->col, "bad probability '%.*s' (0 < P <= 1)",
			    (int)t->len, t->p);
	*out = (uint32_t)v;
	return 0;
}

static int direction(struct parser *p, const struct tok *t, enum nf_dir *out)
{
	if (tok_is(t, "call"))
		*out = NF_CALL;
	else if (tok_is(t, "reply"))
		*out = NF_REPLY;
	else
		return fail(p, t->col, "bad direction '%.*s' (call or reply)",
			    (int)t->len, t->p);
	return 0;
}

/* A program by name (any case), as rpc.c knows it: NFS, PORTMAP, ... */
static bool prog_by_name(const struct tok *t, uint32_t *prog)
{
	char buf[32];

	if (t->len >= sizeof(buf))
		return false;
	memcpy(buf, t->p, t->len);
	buf[t->len] = '\0';
	return nf_prog_lookup(buf, prog) == 0;
}

/* The program's name, or its number in buf. */
static const char *prog_text(uint32_t prog, char buf[16])
{
	const char *name = nf_prog_name(prog);

	if (name)
		return name;
	snprintf(buf, 16, "%u", prog);
	return buf;
}

/* The versions tried when a procedure is named in a given program. */
static const uint32_t name_vers[] = { 3, 4, 2, 1 };
#define PROC_NUMBER_MAX 255u

static bool proc_in_prog(const char *name, size_t len, uint32_t prog,
			 uint32_t *proc)
{
	uint32_t n;
	size_t v;

	for (v = 0; v < ARRAY_SIZE(name_vers); v++) {
		for (n = 0; n <= PROC_NUMBER_MAX; n++) {
			const char *s = nf_proc_name(prog, name_vers[v], n);

			if (s && strlen(s) == len &&
			    strncasecmp(s, name, len) == 0) {
				*proc = n;
				return true;
			}
		}
	}
	return false;
}

/* A name for (prog, proc) in any version, or NULL. */
static const char *proc_name_of(uint32_t prog, uint32_t proc)
{
	size_t v;

	for (v = 0; v < ARRAY_SIZE(name_vers); v++) {
		const char *s = nf_proc_name(prog, name_vers[v], proc);

		if (s)
			return s;
	}
	return NULL;
}

static int lookup_proc(const char *name, size_t len, uint32_t *prog,
		       uint32_t *proc)
{
	char buf[64];

	if (len >= sizeof(buf))
		return -ENOENT;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return nf_proc_lookup(buf, prog, proc);
}

/* after=N:PROC[:DIR] */
static int event(struct parser *p, const struct tok *t)
{
	const char *c1 = memchr(t->p, ':', t->len), *c2;
	struct tok n, name, dir;

	n.p = t->p;
	n.len = c1 - t->p;
	n.col = t->col;
	name.p = c1 + 1;
	name.col = n.col + n.len + 1;
	c2 = memchr(name.p, ':', t->p + t->len - name.p);
	name.len = (c2 ? c2 : t->p + t->len) - name.p;
	if (number(p, &n, 1, "after=N", &p->s->ev_n))
		return -EINVAL;
	if (name.len == 0)
		return fail(p, name.col, "missing procedure in after=");
	p->s->ev_dir = NF_CALL;
	if (c2) {
		dir.p = c2 + 1;
		dir.len = t->p + t->len - dir.p;
		dir.col = name.col + name.len + 1;
		if (direction(p, &dir, &p->s->ev_dir))
			return -EINVAL;
	}
	if (lookup_proc(name.p, name.len, &p->s->ev_prog, &p->s->ev_proc))
		return fail(p, name.col, "unknown procedure '%.*s'",
			    (int)name.len, name.p);
	p->s->has_event = true;
	return 0;
}

static int key_value(struct parser *p, enum key k, const struct tok *v)
{
	struct nf_spec *s = p->s;
	uint64_t n;
	const char *slash;
	struct tok on, off;

	switch (k) {
	case K_DIR:
		s->has_dir = true;
		return direction(p, v, &s->dir);
	case K_PROG:
		s->has_prog = true;
		if (prog_by_name(v, &s->prog))
			return 0;
		if (v->len > 0 && v->p[0] >= '0' && v->p[0] <= '9') {
			if (!parse_number(v, false, UINT32_MAX, &n))
				return fail(p, v->col, "bad number '%.*s'",
					    (int)v->len, v->p);
			s->prog = (uint32_t)n;
			return 0;
		}
		return fail(p, v->col, "unknown program '%.*s'", (int)v->len,
			    v->p);
	case K_PROC:
		s->has_proc = true;
		if (v->len > 0 && v->p[0] >= '0' && v->p[0] <= '9') {
			if (!parse_number(v, false, UINT32_MAX, &n))
				return fail(p, v->col, "bad number '%.*s'",
					    (int)v->len, v->p);
			s->proc = (uint32_t)n;
			return 0;
		}
		p->proc_is_name = true;
		p->proc_name = v->p;
		p->proc_len = v->len;
		return 0;
	case K_XID:
		s->has_xid = true;
		if (!parse_number(v, true, UINT32_MAX, &n))
			return fail(p, v->col, "bad number '%.*s' for xid",
				    (int)v->len, v->p);
		s->xid = (uint32_t)n;
		return 0;
	case K_NTH:
		return number(p, v, 1, "nth", &s->nth);
	case K_COUNT:
		if (tok_is(v, "all")) {
			s->count = 0;
			return 0;
		}
		return number(p, v, 1, "count", &s->count);
	case K_PROB:
		return probability(p, v, &s->prob_ppb);
	case K_SEED:
		if (!parse_number(v, true, UINT64_MAX, &s->seed))
			return fail(p, v->col, "bad number '%.*s' for seed",
				    (int)v->len, v->p);
		return 0;
	case K_FROM:
		s->has_from = true;
		return duration(p, v, 0, "from", &s->from_ns);
	case K_UNTIL:
		s->has_until = true;
		return duration(p, v, 0, "until", &s->until_ns);
	case K_AT:
		s->has_at = true;
		return duration(p, v, 0, "at", &s->at_ns);
	case K_FOR:
		s->has_for = true;
		return duration(p, v, 1, "for", &s->for_ns);
	case K_FLIP:
		slash = memchr(v->p, '/', v->len);
		if (!slash)
			return fail(p, v->col,
				    "flip= takes ON/OFF durations, not '%.*s'",
				    (int)v->len, v->p);
		on.p = v->p;
		on.len = slash - v->p;
		on.col = v->col;
		off.p = slash + 1;
		off.len = v->p + v->len - off.p;
		off.col = on.col + on.len + 1;
		s->has_flip = true;
		if (duration(p, &on, 1, "flip's ON", &s->on_ns) ||
		    duration(p, &off, 1, "flip's OFF", &s->off_ns))
			return -EINVAL;
		return 0;
	case K_EVENT:
		return event(p, v);
	case K_AFTER_BYTES:
		return number(p, v, 0, "after", &s->arg[0]);
	case K_BYTES:
		return number(p, v, 1, "bytes", &s->arg[0]);
	case K_NKEYS:
		break;
	}
	return -EINVAL;
}

static int keyword(struct parser *p, const struct tok *t)
{
	const char *eq = memchr(t->p, '=', t->len);
	struct tok name = { t->p, (size_t)(eq - t->p), t->col };
	struct tok v = { eq + 1, t->len - name.len - 1, t->col + name.len + 1 };
	enum nf_fault f = p->s->fault;
	unsigned k;

	for (k = 0; k < K_NKEYS; k++)
		if (tok_is(&name, key_names[k]))
			break;
	if (k == K_NKEYS)
		return fail(p, t->col, "unknown key '%.*s'", (int)name.len,
			    name.p);
	/* after= is a schedule with a ':', else reset's byte count. */
	if (k == K_EVENT && !memchr(v.p, ':', v.len)) {
		k = K_AFTER_BYTES;
		if (f != NF_RESET)
			return fail(p, v.col,
				    "after=BYTES is only for reset; a schedule "
				    "is after=N:PROC[:DIR]");
	}
	if (k == K_BYTES && f != NF_CORRUPT)
		return fail(p, t->col, "key 'bytes' is only for corrupt");
	if (faults[f].stream &&
	    (key_per_record(k) || (k == K_DIR && f == NF_REFUSE)))
		return fail(p, t->col,
			    "key '%s' does not apply to stream fault '%s'",
			    key_names[k], faults[f].name);
	if (p->col[k])
		return fail(p, t->col, "key '%s' given twice", key_names[k]);
	p->col[k] = t->col;
	if (v.len == 0)
		return fail(p, v.col, "missing value for '%s'", key_names[k]);
	return key_value(p, k, &v);
}

/* A positional argument: a number of the fault, or corrupt's part. */
static int argument(struct parser *p, const struct tok *t, unsigned i)
{
	const struct fault_info *fi = &faults[p->s->fault];

	if (p->s->fault == NF_CORRUPT && i == 0) {
		if (tok_is(t, "header"))
			p->s->header = true;
		else if (!tok_is(t, "body"))
			return fail(p, t->col,
				    "corrupt takes header or body, not '%.*s'",
				    (int)t->len, t->p);
		return 0;
	}
	if (i >= fi->nargs + fi->nopt)
		return fail(p, t->col, "unexpected argument '%.*s'",
			    (int)t->len, t->p);
	if (number(p, t, i == 0 ? fi->min : 0, fi->argname[i], &p->s->arg[i]))
		return -EINVAL;
	if (p->s->arg[i] > fi->max)
		return fail(p, t->col, "%s must be at most %llu",
			    fi->argname[i], (unsigned long long)fi->max);
	return 0;
}

/* short-read's target, NFS READ replies, given or not. */
static int short_read_target(struct parser *p)
{
	struct nf_spec *s = p->s;
	uint32_t prog, proc;

	if (nf_proc_lookup("READ", &prog, &proc))
		return fail(p, 1, "no NFS READ procedure to aim at");
	if (s->has_dir && s->dir != NF_REPLY)
		return fail(p, p->col[K_DIR],
			    "short-read cuts replies: dir=reply or no dir=");
	if ((s->has_prog && s->prog != prog) ||
	    (s->has_proc && s->proc != proc))
		return fail(p, p->col[K_PROC] ? p->col[K_PROC] : p->col[K_PROG],
			    "short-read cuts NFS READ replies: proc=READ or "
			    "no proc=");
	s->has_dir = s->has_prog = s->has_proc = true;
	s->dir = NF_REPLY;
	s->prog = prog;
	s->proc = proc;
	return 0;
}

/* What can only be checked once every key is known. */
static int finish(struct parser *p)
{
	struct nf_spec *s = p->s;
	size_t *col = p->col;
	char num[16];

	if (col[K_AT] && col[K_EVENT])
		return fail(p,
			    col[K_AT] > col[K_EVENT] ? col[K_AT] : col[K_EVENT],
			    "at= and after= both say when the rule starts");
	if (col[K_SEED] && !col[K_PROB] && !s->arg[1])
		return fail(p, col[K_SEED],
			    "seed= without prob= or a delay's jitter");
	if (s->has_from && s->has_until && s->until_ns <= s->from_ns)
		return fail(p, col[K_UNTIL], "until= is not after from=");
	if (col[K_NTH] && !col[K_COUNT])
		s->count = 1;
	if (p->proc_is_name) {
		size_t c = col[K_PROC] + strlen("proc=");

		if (s->has_prog) {
			if (!proc_in_prog(p->proc_name, p->proc_len, s->prog,
					  &s->proc))
				return fail(p, c,
					    "procedure '%.*s' is not in "
					    "program %s",
					    (int)p->proc_len, p->proc_name,
					    prog_text(s->prog, num));
		} else if (lookup_proc(p->proc_name, p->proc_len, &s->prog,
				       &s->proc)) {
			return fail(p, c, "unknown procedure '%.*s'",
				    (int)p->proc_len, p->proc_name);
		}
		s->has_prog = true;
	} else if (s->has_proc && !s->has_prog) {
		return fail(p, col[K_PROC], "a procedure number needs prog=");
	}
	if (s->fault == NF_SHORT_READ && short_read_target(p))
		return -EINVAL;
	if (s->prob_ppb == PPB)
		s->seed = col[K_SEED] && s->arg[1] ? s->seed : 0;
	return 0;
}

static int parse(struct parser *p)
{
	const char *text = p->text;
	size_t i = 0, nargs = 0;
	bool keys = false, first = true;
	unsigned f;

	for (;;) {
		struct tok t;

		while (text[i] && is_blank(text[i]))
			i++;
		if (!text[i])
			break;
		t.p = text + i;
		t.col = i + 1;
		while (text[i] && !is_blank(text[i]))
			i++;
		t.len = text + i - t.p;
		if (first) {
			for (f = 0; f < NFAULTS; f++)
				if (tok_is(&t, faults[f].name))
					break;
			if (f == NFAULTS)
				return fail(p, t.col, "unknown fault '%.*s'",
					    (int)t.len, t.p);
			p->s->fault = f;
			first = false;
		} else if (memchr(t.p, '=', t.len)) {
			/* The arguments end at the first key. */
			if (!keys && nargs < faults[p->s->fault].nargs)
				return fail(p, t.col,
					    "missing argument %s for '%s'",
					    faults[p->s->fault].argname[nargs],
					    faults[p->s->fault].name);
			keys = true;
			if (keyword(p, &t))
				return -EINVAL;
		} else if (keys) {
			return fail(p, t.col, "argument '%.*s' after the keys",
				    (int)t.len, t.p);
		} else {
			if (argument(p, &t, nargs))
				return -EINVAL;
			nargs++;
		}
	}
	if (first)
		return fail(p, i + 1, "missing fault");
	if (!keys && nargs < faults[p->s->fault].nargs)
		return fail(p, i + 1, "missing argument %s for '%s'",
			    faults[p->s->fault].argname[nargs],
			    faults[p->s->fault].name);
	return finish(p);
}

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int nf_rule_parse(const char *text, struct nf_rule **out, char *err,
		  size_t errlen)
{
	struct parser p;
	struct nf_rule *r;
	int rc;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	memset(&p, 0, sizeof(p));
	p.text = text;
	p.err = err;
	p.errlen = errlen;
	if (strlen(text) > RULE_TEXT_MAX)
		return fail(&p, RULE_TEXT_MAX + 1,
			    "rule longer than %d characters", RULE_TEXT_MAX);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->s.prob_ppb = PPB;
	p.s = &r->s;
	rc = parse(&p);
	if (rc) {
		free(r);
		return rc;
	}
	if (r->s.fault == NF_CORRUPT && !p.col[K_BYTES])
		r->s.arg[0] = 1;
	/* Two streams, so that jitter draws never shift the prob draws. */
	r->rng_prob = r->s.seed;
	r->rng_aux = r->s.seed ^ 0x6a09e667f3bcc909ull;
	*out = r;
	return 0;
}

void nf_rule_free(struct nf_rule *r)
{
	free(r);
}

/* ---- formatting ------------------------------------------------------- */

struct out {
	char *buf;
	size_t len, n;
};

static void __attribute__((format(printf, 2, 3)))
put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (o->n >= o->len)
		return;
	va_start(ap, fmt);
	w = vsnprintf(o->buf + o->n, o->len - o->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		o->n += (size_t)w < o->len - o->n ? (size_t)w : o->len - o->n;
}

/* In the largest unit that says it exactly. */
static void put_duration(struct out *o, const char *key, uint64_t ns)
{
	if (ns != 0 && ns % NS_PER_MIN == 0)
		put(o, " %s%llum", key, (unsigned long long)(ns / NS_PER_MIN));
	else if (ns % NS_PER_S == 0)
		put(o, " %s%llus", key, (unsigned long long)(ns / NS_PER_S));
	else
		put(o, " %s%llums", key, (unsigned long long)(ns / NS_PER_MS));
}

static const char *dir_name(enum nf_dir d)
{
	return d == NF_CALL ? "call" : "reply";
}

static void put_prog(struct out *o, uint32_t prog)
{
	const char *name = nf_prog_name(prog);

	if (name)
		put(o, " prog=%s", name);
	else
		put(o, " prog=%u", prog);
}

static void put_target(struct out *o, const struct nf_spec *s)
{
	const char *name = s->has_proc ? proc_name_of(s->prog, s->proc) : NULL;
	uint32_t prog, proc;

	if (s->has_dir)
		put(o, " dir=%s", dir_name(s->dir));
	/* A procedure name says its program when the lookup agrees. */
	if (name && nf_proc_lookup(name, &prog, &proc) == 0 &&
	    prog == s->prog && proc == s->proc)
		put(o, " proc=%s", name);
	else if (s->has_prog) {
		put_prog(o, s->prog);
		if (name)
			put(o, " proc=%s", name);
		else if (s->has_proc)
			put(o, " proc=%u", s->proc);
	}
	if (s->has_xid)
		put(o, " xid=0x%08x", s->xid);
}

static void put_prob(struct out *o, uint32_t ppb)
{
	char frac[16];
	int n;

	n = snprintf(frac, sizeof(frac), "%09u", ppb);
	while (n > 1 && frac[n - 1] == '0')
		frac[--n] = '\0';
	put(o, " prob=0.%s", frac);
}

void nf_rule_format(const struct nf_rule *r, char *buf, size_t len)
{
	const struct nf_spec *s = &r->s;
	const struct fault_info *fi = &faults[s->fault];
	struct out o = { buf, len, 0 };
	unsigned i;

	if (len == 0)
		return;
	buf[0] = '\0';
	put(&o, "%s", fi->name);
	for (i = 0; i < fi->nargs; i++)
		put(&o, " %llu", (unsigned long long)s->arg[i]);
	if (fi->nopt && s->arg[1])
		put(&o, " %llu", (unsigned long long)s->arg[1]);
	if (s->fault == NF_RESET && s->arg[0])
		put(&o, " after=%llu", (unsigned long long)s->arg[0]);
	if (s->fault == NF_CORRUPT) {
		if (s->header)
			put(&o, " header");
		if (s->arg[0] != 1)
			put(&o, " bytes=%llu", (unsigned long long)s->arg[0]);
	}
	put_target(&o, s);
	if (s->nth)
		put(&o, " nth=%llu", (unsigned long long)s->nth);
	if (s->nth && s->count != 1) {
		if (s->count)
			put(&o, " count=%llu", (unsigned long long)s->count);
		else
			put(&o, " count=all");
	} else if (!s->nth && s->count) {
		put(&o, " count=%llu", (unsigned long long)s->count);
	}
	if (s->prob_ppb != PPB)
		put_prob(&o, s->prob_ppb);
	if (s->seed)
		put(&o, " seed=%llu", (unsigned long long)s->seed);
	if (s->has_from)
		put_duration(&o, "from=", s->from_ns);
	if (s->has_until)
		put_duration(&o, "until=", s->until_ns);
	if (s->has_at)
		put_duration(&o, "at=", s->at_ns);
	if (s->has_event) {
		const char *name = proc_name_of(s->ev_prog, s->ev_proc);
		uint32_t prog, proc;

		put(&o, " after=%llu:", (unsigned long long)s->ev_n);
		/* A bare name means NFS, then MOUNT: else say the program. */
		if (name && (nf_proc_lookup(name, &prog, &proc) != 0 ||
			     prog != s->ev_prog || proc != s->ev_proc))
			put(&o, "%s.", nf_prog_name(s->ev_prog));
		put(&o, "%s:%s", name ? name : "?", dir_name(s->ev_dir));
	}
	if (s->has_for)
		put_duration(&o, "for=", s->for_ns);
	if (s->has_flip) {
		put_duration(&o, "flip=", s->on_ns);
		/* The OFF half follows the ON half without a blank. */
		if (o.n < o.len) {
			size_t at = o.n;

			put_duration(&o, "", s->off_ns);
			if (at < o.n)
				o.buf[at] = '/';
		}
	}
}

bool nf_rule_equal(const struct nf_rule *a, const struct nf_rule *b)
{
	const struct nf_spec *x = &a->s, *y = &b->s;

	return x->fault == y->fault && x->arg[0] == y->arg[0] &&
	       x->arg[1] == y->arg[1] && x->header == y->header &&
	       x->has_dir == y->has_dir && (!x->has_dir || x->dir == y->dir) &&
	       x->has_prog == y->has_prog && x->prog == y->prog &&
	       x->has_proc == y->has_proc && x->proc == y->proc &&
	       x->has_xid == y->has_xid && x->xid == y->xid &&
	       x->nth == y->nth && x->count == y->count &&
	       x->prob_ppb == y->prob_ppb && x->seed == y->seed &&
	       x->has_from == y->has_from && x->from_ns == y->from_ns &&
	       x->has_until == y->has_until && x->until_ns == y->until_ns &&
	       x->has_at == y->has_at && x->at_ns == y->at_ns &&
	       x->has_for == y->has_for && x->for_ns == y->for_ns &&
	       x->has_flip == y->has_flip && x->on_ns == y->on_ns &&
	       x->off_ns == y->off_ns && x->has_event == y->has_event &&
	       x->ev_n == y->ev_n && x->ev_prog == y->ev_prog &&
	       x->ev_proc == y->ev_proc &&
	       (!x->has_event || x->ev_dir == y->ev_dir);
}

/* ---- accessors -------------------------------------------------------- */

enum nf_fault nf_rule_fault(const struct nf_rule *r)
{
	return r->s.fault;
}

uint64_t nf_rule_arg(const struct nf_rule *r, unsigned i)
{
	return i < 2 ? r->s.arg[i] : 0;
}

bool nf_rule_header(const struct nf_rule *r)
{
	return r->s.header;
}

bool nf_rule_stream(const struct nf_rule *r)
{
	return faults[r->s.fault].stream;
}

bool nf_rule_on_dir(const struct nf_rule *r, enum nf_dir dir)
{
	return !r->s.has_dir || r->s.dir == dir;
}

uint64_t nf_rule_hits(const struct nf_rule *r)
{
	return r->applied;
}

uint64_t nf_rule_matched(const struct nf_rule *r)
{
	return r->matched;
}

uint64_t nf_rule_random(struct nf_rule *r)
{
	return splitmix64(&r->rng_aux);
}

uint64_t nf_rule_delay_ms(struct nf_rule *r)
{
	uint64_t ms = r->s.arg[0], j = r->s.arg[1], d;

	if (r->s.fault != NF_DELAY)
		return 0;
	if (!j)
		return ms;
	/* Uniform in [ms - j, ms + j], never below 0. */
	d = nf_rule_random(r) % (2 * j + 1);
	return ms + d < j ? 0 : ms + d - j;
}

/* ---- the decision ----------------------------------------------------- */

void nf_rule_observe(struct nf_rule *r, const struct nf_msg *msg,
		     uint64_t now_ns)
{
	const struct nf_spec *s = &r->s;

	if (!s->has_event || r->started || !msg->rpc || msg->dir != s->ev_dir)
		return;
	if (msg->dir == NF_REPLY && !msg->matched)
		return;
	if (msg->prog != s->ev_prog || msg->proc != s->ev_proc)
		return;
	if (++r->events == s->ev_n) {
		r->started = true;
		r->start_ns = now_ns;
	}
}

bool nf_rule_active(const struct nf_rule *r, uint64_t now_ns)
{
	const struct nf_spec *s = &r->s;
	uint64_t start, t;

	if (s->has_from && now_ns < s->from_ns)
		return false;
	if (s->has_until && now_ns >= s->until_ns)
		return false;
	if (s->has_event) {
		if (!r->started)
			return false;
		start = r->start_ns;
	} else {
		start = s->at_ns;
	}
	if (now_ns < start)
		return false;
	t = now_ns - start;
	if (s->has_for && t >= s->for_ns)
		return false;
	if (s->has_flip && t % (s->on_ns + s->off_ns) >= s->on_ns)
		return false;
	return true;
}

static bool target(const struct nf_spec *s, const struct nf_msg *msg)
{
	bool known = msg->rpc && (msg->dir == NF_CALL || msg->matched);

	if (s->has_dir && msg->dir != s->dir)
		return false;
	if (s->has_prog && (!known || msg->prog != s->prog))
		return false;
	if (s->has_proc && (!known || msg->proc != s->proc))
		return false;
	if (s->has_xid && (!msg->rpc || msg->xid != s->xid))
		return false;
	return true;
}

bool nf_rule_match(struct nf_rule *r, const struct nf_msg *msg, uint64_t now_ns)
{
	const struct nf_spec *s = &r->s;
	/* The record that completes after='s event is not yet after it. */
	bool active = nf_rule_active(r, now_ns);

	nf_rule_observe(r, msg, now_ns);
	if (faults[s->fault].stream || !active || !target(s, msg))
		return false;
	r->matched++;
	if (s->nth && r->matched < s->nth)
		return false;
	if (s->count && r->applied >= s->count)
		return false;
	if (s->prob_ppb != PPB && splitmix64(&r->rng_prob) % PPB >= s->prob_ppb)
		return false;
	r->applied++;
	return true;
}
