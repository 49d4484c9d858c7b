/*
 * netfault in front of the server, for the integrity exerciser: started on
 * two free loopback ports (NFS and MOUNT), driven through its control
 * socket, and the seeded menu of random rules the run adds and removes.
 * This file owns struct nf: the netfault process, its ports and paths, the
 * rules in force and the random stream they are drawn from (apart from the
 * signals' stream, so that the Nth rule of a seed is the same in every run).
 * It never stops netfault but through nf_stop(), by its pid.
 */
#include "exercise_i.h"
#include "mntrig.h"
#include "netrig.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NF_START_DEADLINE_MS 15000
/* An answer of netfault's control socket. */
#define NF_CTL_DEADLINE_MS 10000

/* The kinds --fault-kinds names, and the kind of each case of the menu. */
static const char *const kind_names[NF_KIND_N] = { "delay",	"drop",
						   "duplicate", "reorder",
						   "reset",	"slice" };
#define MENU 10
static const unsigned kind_of[MENU] = { NF_KIND_DELAY,	   NF_KIND_DELAY,
					NF_KIND_DROP,	   NF_KIND_DROP,
					NF_KIND_DUPLICATE, NF_KIND_REORDER,
					NF_KIND_RESET,	   NF_KIND_RESET,
					NF_KIND_SLICE,	   NF_KIND_DELAY };

unsigned nf_parse_kinds(const char *list, char *bad, size_t len)
{
	char buf[256], *save = NULL;
	unsigned kinds = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		unsigned k = 0;

		while (k < NF_KIND_N && strcmp(t, kind_names[k]) != 0)
			k++;
		if (k == NF_KIND_N) {
			snprintf(bad, len, "%s", t);
			return 0;
		}
		kinds |= 1u << k;
	}
	if (!kinds)
		snprintf(bad, len, "(none)");
	return kinds;
}

int nf_start(struct nf *nf, const struct xopts *o, volatile sig_atomic_t *stop)
{
	char seed[32], err[1200];

	(void)stop; /* the start is bounded: NF_START_DEADLINE_MS */
	if (strlen(nf->sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	snprintf(seed, sizeof(seed), "%" PRIu64, o->seed);
	nf->pid = proc_netfault_start(
		o->netfault, o->server, o->nfs_port, o->mount_port,
		(const char *const[]){ "--control", nf->sock, "--log", nf->log,
				       "--seed", seed, NULL },
		nf->err, NF_START_DEADLINE_MS, &nf->nfs_port, &nf->mount_port,
		err, sizeof(err));
	if (nf->pid < 0) {
		nf->pid = 0;
		/* A port taken since proc_free_port(), most likely: again. */
		fprintf(stderr, "intrfs-exercise: %s\n", err);
		return -EAGAIN;
	}
	nf->start_ns = xnow_ns();
	return 0;
}

void nf_stop(struct nf *nf)
{
	mntrig_end_child(nf->pid, 5000);
	nf->pid = 0;
}

int nf_ctl(const struct nf *nf, const char *req, char *ans, size_t len)
{
	return netrig_ask(nf->sock, req, ans, len, NF_CTL_DEADLINE_MS);
}

static double prob(struct nf *nf, unsigned lo, unsigned hi)
{
	return (lo + xrand_below(&nf->r, hi - lo + 1)) / 1000.0;
}

static unsigned below(struct nf *nf, unsigned n)
{
	return (unsigned)xrand_below(&nf->r, n);
}

/*
 * A random rule from the menu (only the kinds allowed), with a seed of its
 * own for netfault's draws, and maybe a schedule: flip= or a for= window
 * from now.
 */
static void random_rule(struct nf *nf, char *buf, size_t len)
{
	static const char *const dirs[] = { "call", "reply" };
	static const char *const procs[] = { "WRITE",	"COMMIT",  "READ",
					     "GETATTR", "SETATTR", "CREATE",
					     "REMOVE",	"RENAME",  "LOOKUP" };
	const char *dir = dirs[below(nf, 2)];
	unsigned kind, ms;
	size_t n = 0;

	do
		kind = below(nf, MENU);
	while (!(nf->kinds & (1u << kind_of[kind])));
	switch (kind) {
	case 0:
	case 1:
		ms = 2 + below(nf, 60);
		n = (size_t)snprintf(buf, len, "delay %u %u dir=%s prob=%.3f",
				     ms, below(nf, ms / 2 + 1), dir,
				     prob(nf, 50, 400));
		break;
	case 2:
		n = (size_t)snprintf(buf, len, "drop dir=%s prob=%.3f", dir,
				     prob(nf, 5, 30));
		break;
	case 3:
		n = (size_t)snprintf(buf, len, "drop dir=%s proc=%s prob=%.3f",
				     dir, procs[below(nf, 9)],
				     prob(nf, 20, 100));
		break;
	case 4:
		n = (size_t)snprintf(buf, len, "duplicate dir=%s prob=%.3f",
				     dir, prob(nf, 20, 150));
		break;
	case 5:
		/*
		 * Replies only.  A server answers calls in any order, but on
		 * one TCP connection its calls arrive in the order sent: a
		 * call held back past its own retransmission reaches the
		 * server after the copy that was answered and after newer
		 * calls, which no network does, and ganesha runs it again
		 * (an O_TRUNC's SETATTR undid a later truncate that way).
		 */
		n = (size_t)snprintf(buf, len, "reorder %u dir=reply prob=%.3f",
				     1 + below(nf, 3), prob(nf, 20, 100));
		break;
	case 6:
		n = (size_t)snprintf(buf, len, "reset prob=%.3f",
				     prob(nf, 1, 8));
		break;
	case 7: /* mid-record: part of a WRITE went, then the RST */
		n = (size_t)snprintf(buf, len,
				     "reset after=%u dir=call proc=WRITE "
				     "prob=%.3f",
				     40 + below(nf, 4000), prob(nf, 5, 40));
		break;
	case 8:
		n = (size_t)snprintf(buf, len, "slice %u prob=%.3f",
				     3 + below(nf, 200), prob(nf, 20, 200));
		break;
	default: /* long enough for a retransmission */
		n = (size_t)snprintf(buf, len, "delay %u dir=%s prob=%.3f",
				     100 + below(nf, 700), dir,
				     prob(nf, 5, 30));
		break;
	}
	n += (size_t)snprintf(buf + n, len - n, " seed=%" PRIu64,
			      xrand_next(&nf->r) % 1000000000u);
	switch (below(nf, 3)) {
	case 0:
		snprintf(buf + n, len - n, " flip=%ums/%ums",
			 100 + below(nf, 2000), 100 + below(nf, 3000));
		break;
	case 1:
		snprintf(buf + n, len - n, " at=%" PRIu64 "ms for=%ums",
			 (xnow_ns() - nf->start_ns) / 1000000u,
			 200 + below(nf, 4000));
		break;
	default:
		break;
	}
}

int nf_add_random(struct nf *nf, char *rule, size_t rlen, char *ans,
		  size_t alen)
{
	char req[400];

	if (nf->nrules == NF_MAX_RULES) {
		snprintf(req, sizeof(req), "clear %d", nf->ids[0]);
		snprintf(rule, rlen, "%s", req);
		if (nf_ctl(nf, req, ans, alen) < 0)
			return -1;
		memmove(nf->ids, nf->ids + 1,
			sizeof(nf->ids[0]) * (NF_MAX_RULES - 1));
		nf->nrules--;
	}
	random_rule(nf, rule, rlen);
	snprintf(req, sizeof(req), "add %s", rule);
	if (nf_ctl(nf, req, ans, alen) < 0)
		return -1;
	nf->ids[nf->nrules++] = (int)netrig_json_long(ans, "id");
	nf->added++;
	return 0;
}

int nf_clear(struct nf *nf, char *ans, size_t len)
{
	nf->nrules = 0;
	return nf_ctl(nf, "clear", ans, len);
}
