/*
 * The rules netfault has in force and the log of the faults it applied.
 * This file owns the ruleset (each rule with its id, in the order added)
 * and the event ring (the last events, numbered from 1).  Both are
 * bounded: at most NF_RULES_MAX rules, and the ring keeps the number of
 * events it was made for, dropping the oldest.
 *
 * It never does I/O, never reads a clock and never uses libuv; the proxy
 * and the control socket call it from the one loop thread, so it has no
 * locks.  An id is never reused within a run, so a `clear ID` sent after
 * the rule was replaced cannot remove the wrong one.
 */
#include "netfault_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	unsigned id;
	struct nf_rule *rule;
};

/*
 * A plain array in the order the rules were added: the proxy walks it for
 * every record and rules are few, so finding prev in nf_ruleset_next()
 * by a scan costs less than keeping links beside each rule.
 */
struct nf_ruleset {
	struct entry rules[NF_RULES_MAX];
	unsigned n;
	unsigned next_id;
	void (*changed)(void *arg);
	void *changed_arg;
};

void nf_ruleset_on_change(struct nf_ruleset *rs, void (*fn)(void *arg),
			  void *arg)
{
	rs->changed = fn;
	rs->changed_arg = arg;
}

static void changed(struct nf_ruleset *rs)
{
	if (rs->changed)
		rs->changed(rs->changed_arg);
}

struct nf_ruleset *nf_ruleset_new(void)
{
	struct nf_ruleset *rs = calloc(1, sizeof(*rs));

	if (rs)
		rs->next_id = 1;
	return rs;
}

void nf_ruleset_free(struct nf_ruleset *rs)
{
	if (!rs)
		return;
	nf_ruleset_remove(rs, 0);
	free(rs);
}

int nf_ruleset_add(struct nf_ruleset *rs, const char *text, unsigned *id,
		   char *err, size_t errlen)
{
	struct nf_rule *r;
	int rc;

	if (rs->n == NF_RULES_MAX) {
		if (errlen)
			snprintf(err, errlen, "too many rules (at most %u)",
				 NF_RULES_MAX);
		return -ENOSPC;
	}
	rc = nf_rule_parse(text, &r, err, errlen);
	if (rc)
		return rc;
	rs->rules[rs->n].id = rs->next_id++;
	rs->rules[rs->n].rule = r;
	*id = rs->rules[rs->n].id;
	rs->n++;
	changed(rs);
	return 0;
}

int nf_ruleset_remove(struct nf_ruleset *rs, unsigned id)
{
	unsigned i;

	if (id == 0) {
		for (i = 0; i < rs->n; i++)
			nf_rule_free(rs->rules[i].rule);
		rs->n = 0;
		changed(rs);
		return 0;
	}
	for (i = 0; i < rs->n; i++) {
		if (rs->rules[i].id != id)
			continue;
		nf_rule_free(rs->rules[i].rule);
		memmove(&rs->rules[i], &rs->rules[i + 1],
			(rs->n - i - 1) * sizeof(rs->rules[0]));
		rs->n--;
		changed(rs);
		return 0;
	}
	return -ENOENT;
}

struct nf_rule *nf_ruleset_next(const struct nf_ruleset *rs,
				const struct nf_rule *prev, unsigned *id)
{
	unsigned i = 0;

	if (prev) {
		while (i < rs->n && rs->rules[i].rule != prev)
			i++;
		/* A prev that is not in the set ends the walk. */
		i++;
	}
	if (i >= rs->n)
		return NULL;
	if (id)
		*id = rs->rules[i].id;
	return rs->rules[i].rule;
}

unsigned nf_ruleset_count(const struct nf_ruleset *rs)
{
	return rs->n;
}

/*
 * The ring: ring[(seq - 1) % max] holds event seq; the events held are
 * the last min(next_seq - 1, max) ones.
 */
struct nf_events {
	unsigned max;
	uint64_t next_seq;
	struct nf_event ring[];
};

struct nf_events *nf_events_new(unsigned max)
{
	struct nf_events *ev;

	if (max == 0) {
		errno = EINVAL;
		return NULL;
	}
	ev = calloc(1, sizeof(*ev) + (size_t)max * sizeof(ev->ring[0]));
	if (!ev)
		return NULL;
	ev->max = max;
	ev->next_seq = 1;
	return ev;
}

void nf_events_free(struct nf_events *ev)
{
	free(ev);
}

void nf_events_push(struct nf_events *ev, struct nf_event *e)
{
	e->seq = ev->next_seq++;
	ev->ring[(e->seq - 1) % ev->max] = *e;
}

size_t nf_events_since(const struct nf_events *ev, uint64_t after,
		       struct nf_event *out, size_t max)
{
	uint64_t first = ev->next_seq > ev->max ? ev->next_seq - ev->max : 1;
	uint64_t seq = after + 1 > first ? after + 1 : first;
	size_t n = 0;

	for (; seq < ev->next_seq && n < max; seq++)
		out[n++] = ev->ring[(seq - 1) % ev->max];
	return n;
}

uint64_t nf_events_last(const struct nf_events *ev)
{
	return ev->next_seq - 1;
}
