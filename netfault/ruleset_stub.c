/*
 * TEMPORARY, for the proxy's branch only: the coordinator deletes this file
 * (and its line in netfault/meson.build) when ruleset.c and control.c land.
 * The least of nf_ruleset_*, nf_events_* and nf_control_* that proxy.c,
 * main.c and their tests call, so that the branch builds and its tests run:
 * a list of rules, a ring of events, and a control socket that is not there.
 */
#include "netfault_i.h"

#include <errno.h>
#include <stdlib.h>

#define STUB_RULES 64

struct nf_ruleset {
	struct nf_rule *rule[STUB_RULES];
	unsigned id[STUB_RULES];
	unsigned n, next_id;
};

struct nf_ruleset *nf_ruleset_new(void)
{
	return calloc(1, sizeof(struct nf_ruleset));
}

void nf_ruleset_free(struct nf_ruleset *rs)
{
	if (rs)
		nf_ruleset_remove(rs, 0);
	free(rs);
}

int nf_ruleset_add(struct nf_ruleset *rs, const char *text, unsigned *id,
		   char *err, size_t errlen)
{
	struct nf_rule *r;
	int rc;

	if (rs->n == STUB_RULES)
		return -ENOSPC;
	rc = nf_rule_parse(text, &r, err, errlen);
	if (rc)
		return rc;
	rs->rule[rs->n] = r;
	rs->id[rs->n++] = *id = ++rs->next_id;
	return 0;
}

int nf_ruleset_remove(struct nf_ruleset *rs, unsigned id)
{
	unsigned j = 0, gone = 0;

	for (unsigned i = 0; i < rs->n; i++) {
		if (id == 0 || rs->id[i] == id) {
			nf_rule_free(rs->rule[i]);
			gone++;
			continue;
		}
		rs->rule[j] = rs->rule[i];
		rs->id[j++] = rs->id[i];
	}
	rs->n = j;
	return gone || id == 0 ? 0 : -ENOENT;
}

struct nf_rule *nf_ruleset_next(const struct nf_ruleset *rs,
				const struct nf_rule *prev, unsigned *id)
{
	unsigned i = 0;

	while (prev && i < rs->n && rs->rule[i++] != prev)
		;
	if (i >= rs->n)
		return NULL;
	*id = rs->id[i];
	return rs->rule[i];
}

unsigned nf_ruleset_count(const struct nf_ruleset *rs)
{
	return rs->n;
}

struct nf_events {
	unsigned max;
	uint64_t seq;
	struct nf_event e[];
};

struct nf_events *nf_events_new(unsigned max)
{
	struct nf_events *ev;

	ev = calloc(1, sizeof(*ev) + (size_t)max * sizeof(ev->e[0]));
	if (ev)
		ev->max = max;
	return ev;
}

void nf_events_free(struct nf_events *ev)
{
	free(ev);
}

void nf_events_push(struct nf_events *ev, struct nf_event *e)
{
	e->seq = ++ev->seq;
	ev->e[(e->seq - 1) % ev->max] = *e;
}

size_t nf_events_since(const struct nf_events *ev, uint64_t after,
		       struct nf_event *out, size_t max)
{
	uint64_t first = ev->seq > ev->max ? ev->seq - ev->max + 1 : 1;
	size_t n = 0;

	if (after + 1 > first)
		first = after + 1;
	for (uint64_t s = first; s <= ev->seq && n < max; s++)
		out[n++] = ev->e[(s - 1) % ev->max];
	return n;
}

int nf_control_start(struct uv_loop_s *loop, const char *path,
		     struct nf_ruleset *rs, struct nf_events *ev,
		     const struct nf_stats *st, struct nf_control **out)
{
	(void)loop, (void)path, (void)rs, (void)ev, (void)st, (void)out;
	return -ENOSYS;
}

void nf_control_stop(struct nf_control *c)
{
	(void)c;
}
