/*
 * The control endpoint: what intrfsctl asks a live mount (ctl.h has the
 * address and the protocol).  One thread accepts on a Unix socket and
 * answers one request per connection.  Who connects is checked at accept
 * (SO_PEERCRED): root and the user that mounted are served, anyone else is
 * told so and closed at once, before a byte of theirs is read.  Clients
 * are served side by side on one poll() loop, without blocking: each has
 * CTL_CLIENT_NS to send its line and take its answer, and when all
 * CTL_CLIENTS slots are taken the one nearest its deadline makes room, so
 * no client holds the others.
 *
 *   tasks   every request in flight: its op, caller, age, the wait its
 *           task is in (per-call mode and what the regions and the policy
 *           made of it), its pending interrupt and how long it has been
 *           deferred, and its region stack (kind, reason, call site, age;
 *           a caller's region (callers.c) with the caller's thread)
 *   mountstats  the mount as a /proc/self/mountstats entry (mountstats.c)
 *   stats   the transport's counters, the daemon's, and the region API's
 *           (interrupts raised, delivered, deferred, dropped, overall and
 *           by policy; deferral times), and per NFS procedure the
 *           fields of mountstats' per-op lines
 *   policy P  the policy of requests from now on (those in flight keep
 *           theirs, and the table and the log say how many there are):
 *           percall, region, sigmask, or linux as -o policy=
 *   mode M  killable, intr or nointr for requests from now on
 *   watchdog N  the hung-task watchdog's threshold, seconds (0: off)
 *   trace on FILE | trace off  the event trace (trace.c), to a file the
 *           client opened and sent (SCM_RIGHTS)
 *
 * It reads the jobs in flight under watch.lock (interrupt.c) and snapshots
 * their tasks, which the region API allows from any thread.  The socket is
 * made at mount and removed at unmount; sockets that daemons which died
 * left are removed by the next mount that starts.
 */
#include "ctl.h"
#include "fusefs_i.h"
#include "termesc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

/* Clients served at once; each has this long to ask and be answered. */
#define CTL_CLIENTS 16
#define CTL_CLIENT_NS 2000000000ull
/* Connections the kernel queues before accept(): a flood waits there. */
#define CTL_BACKLOG 64

/* A reply being written: a memstream. */
struct out {
	FILE *f;
	char *buf;
	size_t len;
};

/* s as a JSON string (paths, names: at most PATH_MAX). */
static void jstr(FILE *f, const char *s)
{
	char buf[6 * 4096 + 1];

	json_escape(buf, sizeof(buf), s);
	fprintf(f, "\"%s\"", buf);
}

static const char *intr_names(unsigned bits)
{
	if ((bits & TASK_INTR_FATAL) && (bits & TASK_INTR_NORMAL))
		return "fatal+normal";
	if (bits & TASK_INTR_FATAL)
		return "fatal";
	if (bits & TASK_INTR_NORMAL)
		return "normal";
	return "none";
}

/* The policy new requests get, by name: "linux" for policy=linux. */
const char *control_policy_name(struct intrfs *fs)
{
	/* relaxed: see req_policy. */
	if (atomic_load_explicit(&fs->req_linux, memory_order_relaxed))
		return "linux";
	return region_policy_name((enum region_policy)atomic_load_explicit(
		&fs->req_policy, memory_order_relaxed));
}

/* The caller's command name, from /proc. */
static void comm_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

#define CALLS_SHOWN 8

/* One request in flight, as seen now. */
struct seen {
	pid_t pid;
	uint64_t age_ns;
	struct task_info ti;
	struct nc_call_info calls[CALLS_SHOWN];
	unsigned ncalls;
};

/* Snapshots of the jobs in flight; *n of them, malloc'ed. */
static struct seen *jobs_seen(struct intrfs *fs, size_t *n)
{
	struct intr_watch *w = &fs->watch;
	uint64_t now = region_now_ns();
	struct seen *v = NULL;
	size_t cap = 0;

	*n = 0;
	pthread_mutex_lock(&w->lock);
	for (struct job *j = w->jobs; j; j = j->inext) {
		if (*n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct seen *nv = realloc(v, ncap * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = ncap;
		}
		v[*n].pid = j->tid;
		v[*n].age_ns = now - j->start_ns;
		region_task_snapshot(j->task, &v[*n].ti);
		/* The transport's lock is a leaf: fine under watch.lock. */
		v[*n].ncalls = nc_client_task_calls(fs->nc, j->task,
						    v[*n].calls, CALLS_SHOWN);
		(*n)++;
	}
	pthread_mutex_unlock(&w->lock);
	return v;
}

static void tasks_json(struct intrfs *fs, FILE *f)
{
	size_t n;
	struct seen *v = jobs_seen(fs, &n);

	fprintf(f, "{\"mountpoint\":");
	jstr(f, fs->mountpoint);
	fprintf(f, ",\"policy\":\"%s\",\"mode\":\"%s\",\"tasks\":[",
		control_policy_name(fs),
		nc_intr_mode_name((enum nc_intr_mode)atomic_load_explicit(
			&fs->req_mode, memory_order_relaxed)));
	for (size_t i = 0; i < n; i++) {
		const struct task_info *ti = &v[i].ti;
		char comm[64];

		comm_of(v[i].pid, comm, sizeof(comm));
		fprintf(f, "%s{\"op\":", i ? "," : "");
		jstr(f, ti->name);
		fprintf(f, ",\"pid\":%d,\"comm\":", (int)v[i].pid);
		jstr(f, comm);
		fprintf(f,
			",\"age_ms\":%" PRIu64 ",\"task\":%" PRIu64
			",\"policy\":\"%s\",\"waiting\":%s",
			v[i].age_ns / 1000000, ti->id,
			region_policy_name(ti->policy),
			ti->waiting ? "true" : "false");
		if (ti->waiting) {
			fprintf(f, ",\"wait\":{\"on\":");
			jstr(f, ti->wait_what);
			fprintf(f,
				",\"mode\":\"%s\",\"effective\":\"%s\","
				"\"ms\":%" PRIu64 "}",
				region_task_mode_name(ti->wait_mode),
				region_task_mode_name(ti->wait_eff),
				ti->wait_ns / 1000000);
		}
		fprintf(f, ",\"rpcs\":[");
		for (unsigned c = 0; c < v[i].ncalls; c++)
			fprintf(f,
				"%s{\"xid\":\"0x%08" PRIx32
				"\",\"proc\":\"%s\","
				"\"transmissions\":%u,\"awaiting_reply\":%s}",
				c ? "," : "", v[i].calls[c].xid,
				nc_proc_name(v[i].calls[c].proc),
				v[i].calls[c].transmissions,
				v[i].calls[c].awaiting ? "true" : "false");
		fprintf(f, "]");
		fprintf(f,
			",\"pending\":\"%s\",\"deferred\":\"%s\","
			"\"pending_ms\":%" PRIu64 ",\"regions\":[",
			intr_names(ti->pending), intr_names(ti->deferred),
			ti->pending ? ti->raised_age_ns / 1000000 : 0);
		for (unsigned d = ti->depth; d-- > 0;) {
			const struct region_site *rs = ti->stack[d].site;

			fprintf(f, "%s{\"kind\":\"%s\",\"reason\":",
				d + 1 < ti->depth ? "," : "",
				region_kind_name(rs->kind));
			jstr(f, rs->reason);
			fprintf(f, ",\"file\":");
			jstr(f, rs->file);
			fprintf(f, ",\"line\":%d,\"func\":", rs->line);
			jstr(f, rs->func);
			/* The caller's: declared by thread pid, by func. */
			if (caller_site(rs))
				fprintf(f, ",\"caller\":true,\"tid\":%d",
					(int)v[i].pid);
			fprintf(f, ",\"age_ms\":%" PRIu64 "}",
				ti->stack[d].age_ms);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	free(v);
}

static void tasks_table(struct intrfs *fs, FILE *f)
{
	size_t n;
	struct seen *v = jobs_seen(fs, &n);

	fprintf(f, "%zu request%s in flight on %s\n", n, n == 1 ? "" : "s",
		fs->mountpoint);
	if (n)
		fprintf(f, "%-10s %7s %-15s %8s  %-34s %s\n", "OP", "PID",
			"COMMAND", "AGE", "WAIT (MODE AS EFFECTIVE)",
			"INTERRUPT");
	for (size_t i = 0; i < n; i++) {
		const struct task_info *ti = &v[i].ti;
		char comm[64], shown[4 * 64], wait[64], intr[64];

		/* A caller names itself: escaped for the terminal. */
		comm_of(v[i].pid, comm, sizeof(comm));
		termesc(shown, sizeof(shown), comm, strlen(comm), 0);
		if (ti->waiting)
			snprintf(wait, sizeof(wait),
				 "%s %s as %s %" PRIu64 "ms", ti->wait_what,
				 region_task_mode_name(ti->wait_mode),
				 region_task_mode_name(ti->wait_eff),
				 ti->wait_ns / 1000000);
		else
			snprintf(wait, sizeof(wait), "%s",
				 ti->running ? "running" : "-");
		if (ti->pending)
			snprintf(intr, sizeof(intr), "%s%s %" PRIu64 "ms",
				 intr_names(ti->pending),
				 ti->deferred ? " deferred" : "",
				 ti->raised_age_ns / 1000000);
		else
			snprintf(intr, sizeof(intr), "-");
		fprintf(f, "%-10s %7d %-15s %6" PRIu64 "ms  %-34s %s\n",
			ti->name, (int)v[i].pid, shown, v[i].age_ns / 1000000,
			wait, intr);
		for (unsigned c = 0; c < v[i].ncalls; c++)
			fprintf(f,
				"    rpc xid 0x%08" PRIx32
				" %s, sent %u time%s%s\n",
				v[i].calls[c].xid,
				nc_proc_name(v[i].calls[c].proc),
				v[i].calls[c].transmissions,
				v[i].calls[c].transmissions == 1 ? "" : "s",
				v[i].calls[c].awaiting ?
					", awaiting its reply" :
					"");
		for (unsigned d = ti->depth; d-- > 0;) {
			const struct region_site *rs = ti->stack[d].site;
			char reason[4 * 200];

			/* A caller's reason is the caller's text. */
			termesc(reason, sizeof(reason), rs->reason,
				strlen(rs->reason), 0);
			if (caller_site(rs))
				fprintf(f,
					"    %s region \"%s\" of the caller, "
					"thread %d (%s), %" PRIu64 " ms\n",
					region_kind_name(rs->kind), reason,
					(int)v[i].pid, rs->func,
					ti->stack[d].age_ms);
			else
				fprintf(f,
					"    %s region \"%s\" at %s:%d (%s), "
					"%" PRIu64 " ms\n",
					region_kind_name(rs->kind), reason,
					rs->file, rs->line, rs->func,
					ti->stack[d].age_ms);
		}
	}
	free(v);
}

/*
 * Per procedure, as Linux's mountstats per-op lines (times in ms): the NFS
 * connection's ("procedures", "per procedure") or the lock manager's.
 */
static void procs_out(FILE *f, bool table, const char *key, const char *title,
		      const struct nc_proc_stats *ps,
		      const char *(*proc_name)(unsigned))
{
	const char *sep = "", *fsep;

	if (table)
		fprintf(f,
			"%s (times in ms, cumulative):\n"
			"  %-12s %8s %8s %6s %12s %12s %9s %9s %9s %6s\n",
			title, "", "ops", "trans", "majto", "bytes sent",
			"bytes recv", "queue", "rtt", "execute", "errors");
	else
		fprintf(f, ",\"%s\":{", key);
	for (unsigned i = 0; i < NC_NPROCS; i++) {
		const struct nc_proc_stats *p = &ps[i];

		if (!p->ops)
			continue;
		if (table) {
			fprintf(f,
				"  %-12s %8" PRIu64 " %8" PRIu64 " %6" PRIu64
				" %12" PRIu64 " %12" PRIu64
				" %9.1f %9.1f %9.1f %6" PRIu64 "\n",
				proc_name(i), p->ops, p->transmissions,
				p->major_timeouts, p->bytes_sent, p->bytes_recv,
				p->queue_ns / 1e6, p->rtt_ns / 1e6,
				p->execute_ns / 1e6, p->errors);
			continue;
		}
		fprintf(f, "%s\"%s\":{", sep, proc_name(i));
		sep = ",";
		fsep = "";
#define J_P(name) \
	fprintf(f, "%s\"%s\":%" PRIu64, fsep, #name, p->name), fsep = ",";
		NC_PROC_STATS_FIELDS(J_P)
#undef J_P
		fputc('}', f);
	}
	if (!table)
		fputc('}', f);
}

static void all_procs_out(struct intrfs *fs, FILE *f, bool table)
{
	struct nc_proc_stats ps[NC_NPROCS];

	nc_client_proc_stats(fs->nc, ps);
	procs_out(f, table, "procedures", "per procedure", ps, nc_proc_name);
	nc_client_nlm_stats(fs->nc, ps);
	procs_out(f, table, "lock_procedures",
		  "per lock manager (NLM) procedure", ps, nc_nlm_proc_name);
}

/* The deferral histogram's buckets (REGION_DEFERRAL_BUCKETS). */
static const char *const decade[] = { "<1ms", "<10ms", "<100ms",
				      "<1s",  "<10s",  ">=10s" };

static void stats_out(struct intrfs *fs, FILE *f, bool table)
{
	uint64_t carried[NC_NCONNECT_MAX];
	struct nc_stats st;
	struct region_stats rs;
	uint64_t mean;
	const char *sep = "";
	unsigned nconn;

	nc_client_stats(fs->nc, &st);
	nconn = nc_client_connections(fs->nc, carried, NC_NCONNECT_MAX);
	region_stats_get(&rs);
	mean = rs.deferred_delivered ?
		       rs.deferral_ns_total / rs.deferred_delivered :
		       0;
	if (table) {
		fprintf(f, "transport (server %s):\n",
			nc_client_server(fs->nc));
#define T_NC(name, what) \
	fprintf(f, "  %-18s %12" PRIu64 "  %s\n", #name, st.name, what);
		NC_STATS_FIELDS(T_NC)
#undef T_NC
		fprintf(f,
			"  %-18s %12.1f  ms since the last record or reply\n",
			"idle", st.idle_ns / 1e6);
		fprintf(f, "  %-18s %12u  calls each carried:", "connections",
			nconn);
		for (unsigned i = 0; i < nconn && i < NC_NCONNECT_MAX; i++)
			fprintf(f, " %" PRIu64, carried[i]);
		fprintf(f, "\n");
		fprintf(f, "daemon:\n");
#define T_FS(name, what)                                                     \
	fprintf(f, "  %-18s %12" PRIu64 "  %s\n", #name,                     \
		atomic_load_explicit(&fs->stats.name, memory_order_relaxed), \
		what);
		FS_STATS_FIELDS(T_FS)
#undef T_FS
		fprintf(f,
			"  %-18s %12zu  bytes of I/O buffers in use\n"
			"  %-18s %12zu  the most in use at once\n",
			"io_buffers", buf_busy_bytes(&fs->bufs),
			"io_buffers_peak", buf_busy_peak(&fs->bufs));
		fprintf(f,
			"interrupts (every task of the daemon):\n"
			"  %-18s %12" PRIu64 "\n  %-18s %12" PRIu64
			"\n  %-18s %12" PRIu64 "\n  %-18s %12" PRIu64
			"\n  %-18s %9.3f ms\n  %-18s %9.3f ms\n",
			"raised", rs.raised, "delivered", rs.delivered,
			"deferred", rs.deferred, "deferred_delivered",
			rs.deferred_delivered, "deferral_mean", mean / 1e6,
			"deferral_max", rs.deferral_ns_max / 1e6);
		fprintf(f, "  deferral times    ");
		for (unsigned b = 0; b < REGION_DEFERRAL_BUCKETS; b++)
			fprintf(f, " %s:%" PRIu64, decade[b],
				rs.deferral_hist[b]);
		fprintf(f, "\n  %-18s %12" PRIu64 "  never delivered\n",
			"dropped", rs.dropped);
		fprintf(f, "  %-18s %9s %9s %9s %9s\n", "by policy", "raised",
			"delivered", "deferred", "dropped");
		for (unsigned p = 0; p < REGION_POLICIES; p++)
			fprintf(f,
				"  %-18s %9" PRIu64 " %9" PRIu64 " %9" PRIu64
				" %9" PRIu64 "\n",
				region_policy_name((enum region_policy)p),
				rs.per_policy[p].raised,
				rs.per_policy[p].delivered,
				rs.per_policy[p].deferred,
				rs.per_policy[p].dropped);
		all_procs_out(fs, f, true);
		return;
	}
	fprintf(f, "{\"mountpoint\":");
	jstr(f, fs->mountpoint);
	fprintf(f, ",\"server\":");
	jstr(f, nc_client_server(fs->nc));
	fprintf(f, ",\"transport\":{");
#define J_NC(name, what) \
	fprintf(f, "%s\"%s\":%" PRIu64, sep, #name, st.name), sep = ",";
	NC_STATS_FIELDS(J_NC)
#undef J_NC
	fprintf(f, ",\"idle_ns\":%" PRIu64 ",\"connections\":[", st.idle_ns);
	for (unsigned i = 0; i < nconn && i < NC_NCONNECT_MAX; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", carried[i]);
	fprintf(f, "]");
	fprintf(f, "},\"daemon\":{");
	sep = "";
#define J_FS(name, what)                                                      \
	fprintf(f, "%s\"%s\":%" PRIu64, sep, #name,                           \
		atomic_load_explicit(&fs->stats.name, memory_order_relaxed)), \
		sep = ",";
	FS_STATS_FIELDS(J_FS)
#undef J_FS
	fprintf(f, ",\"io_buffers\":%zu,\"io_buffers_peak\":%zu",
		buf_busy_bytes(&fs->bufs), buf_busy_peak(&fs->bufs));
	fprintf(f,
		"},\"interrupts\":{\"raised\":%" PRIu64
		",\"delivered\":%" PRIu64 ",\"deferred\":%" PRIu64
		",\"deferred_delivered\":%" PRIu64
		",\"deferral_ns_mean\":%" PRIu64
		",\"deferral_ns_max\":%" PRIu64,
		rs.raised, rs.delivered, rs.deferred, rs.deferred_delivered,
		mean, rs.deferral_ns_max);
	fprintf(f, ",\"deferral_hist\":{");
	for (unsigned b = 0; b < REGION_DEFERRAL_BUCKETS; b++)
		fprintf(f, "%s\"%s\":%" PRIu64, b ? "," : "", decade[b],
			rs.deferral_hist[b]);
	fprintf(f, "},\"dropped\":%" PRIu64 ",\"by_policy\":{", rs.dropped);
	for (unsigned p = 0; p < REGION_POLICIES; p++) {
		const struct region_policy_stats *ps = &rs.per_policy[p];

		fprintf(f,
			"%s\"%s\":{\"raised\":%" PRIu64
			",\"delivered\":%" PRIu64 ",\"deferred\":%" PRIu64
			",\"dropped\":%" PRIu64 "}",
			p ? "," : "", region_policy_name((enum region_policy)p),
			ps->raised, ps->delivered, ps->deferred, ps->dropped);
	}
	fprintf(f, "}}");
	all_procs_out(fs, f, false);
	fprintf(f, "}\n");
}

void control_dump(struct intrfs *fs, FILE *f)
{
	tasks_table(fs, f);
	stats_out(fs, f, true);
}

/* The hung-task watchdog's threshold from now on (0: no reports). */
static int watchdog_set(const char *arg, FILE *f, bool table)
{
	char *end;
	unsigned long s = arg ? strtoul(arg, &end, 10) : 0;
	int rc;

	if (!arg || !*arg || *end || s > 86400) {
		fprintf(f,
			"watchdog takes seconds, 0 to 86400 (0: no reports), "
			"not '%s'\n",
			arg ? arg : "");
		return -EINVAL;
	}
	rc = region_watchdog_start((uint64_t)s * 1000000000ull);
	if (rc) {
		fprintf(f, "cannot start the watchdog: %s\n", strerror(-rc));
		return rc;
	}
	fprintf(stderr, "intrfs: hung-task watchdog at %lu s, by intrfsctl\n",
		s);
	if (table)
		fprintf(f, "hung-task reports after %lu s blocked%s\n", s,
			s ? "" : " (off)");
	else
		fprintf(f, "{\"watchdog_s\":%lu}\n", s);
	return 0;
}

/*
 * The requests in flight now: a task's policy is set when it is made, so
 * a new policy is not theirs.
 */
static unsigned in_flight(struct intrfs *fs)
{
	struct intr_watch *w = &fs->watch;
	unsigned n = 0;

	pthread_mutex_lock(&w->lock);
	for (struct job *j = w->jobs; j; j = j->inext)
		n++;
	pthread_mutex_unlock(&w->lock);
	return n;
}

/*
 * policy P, P one of the region API's policies or linux, as -o policy=
 * takes them: linux is percall with Linux's own waits, killable for the
 * NFS calls and their sends whatever the mode says, uninterruptible for
 * writes on their way.  Leaving it brings back the mode and the send's
 * mode it replaced.  Requests in flight keep the policy they were made
 * with (a fatal signal ends a lock wait under any, and a caller's region
 * holds one no longer than callers_hold_ns()).
 */
static int policy_set(struct intrfs *fs, const char *name, FILE *f, bool table)
{
	struct ctl_state *c = &fs->ctl;
	bool linux_now = name && strcmp(name, "linux") == 0;
	bool linux_was;
	enum region_policy p = REGION_POLICY_PERCALL;
	unsigned kept;
	char was[16];

	if (!name || (!linux_now && region_policy_parse(name, &p) < 0)) {
		fprintf(f, "the policy is " NC_POLICY_NAMES ", not '%s'\n",
			name ? name : "");
		return -EINVAL;
	}
	snprintf(was, sizeof(was), "%s", control_policy_name(fs));
	/* Written only here, on the control thread. */
	linux_was = atomic_load_explicit(&fs->req_linux, memory_order_relaxed);
	if (linux_now && !linux_was) {
		c->mode_before_linux = (enum nc_intr_mode)atomic_load_explicit(
			&fs->req_mode, memory_order_relaxed);
		atomic_store_explicit(&fs->req_mode, (unsigned)NC_KILLABLE,
				      memory_order_relaxed);
		nc_client_set_intr_mode(fs->nc, NC_KILLABLE);
		nc_client_set_send_mode(fs->nc, TASK_KILLABLE);
		wb_set_wait_mode(fs, TASK_UNINTERRUPTIBLE);
	} else if (!linux_now && linux_was) {
		atomic_store_explicit(&fs->req_mode,
				      (unsigned)c->mode_before_linux,
				      memory_order_relaxed);
		nc_client_set_intr_mode(fs->nc, c->mode_before_linux);
		nc_client_set_send_mode(fs->nc, c->send_before_linux);
		wb_set_wait_mode(fs, TASK_INTERRUPTIBLE);
	}
	/* relaxed: a request made just after may still get the old one. */
	atomic_store_explicit(&fs->req_policy, (unsigned)p,
			      memory_order_relaxed);
	atomic_store_explicit(&fs->req_linux, linux_now, memory_order_relaxed);
	kept = in_flight(fs);
	fprintf(stderr,
		"intrfs: policy %s from now on (was %s), by intrfsctl; %u "
		"request%s in flight keep%s\n",
		control_policy_name(fs), was, kept, kept == 1 ? "" : "s",
		kept == 1 ? "s its" : " theirs");
	if (table)
		fprintf(f,
			"policy %s from now on (was %s); %u request%s in "
			"flight keep%s\n",
			control_policy_name(fs), was, kept,
			kept == 1 ? "" : "s", kept == 1 ? "s its" : " theirs");
	else
		fprintf(f, "{\"policy\":\"%s\",\"was\":\"%s\"}\n",
			control_policy_name(fs), was);
	return 0;
}

/* The mount's intr/killable/nointr mode for requests from now on. */
static int mode_set(struct intrfs *fs, const char *name, FILE *f, bool table)
{
	enum nc_intr_mode m, was;

	if (nc_intr_mode_parse(name, &m) < 0) {
		fprintf(f, "the mode is killable, intr or nointr, not '%s'\n",
			name ? name : "");
		return -EINVAL;
	}
	if (atomic_load_explicit(&fs->req_linux, memory_order_relaxed)) {
		fprintf(f, "policy linux waits as Linux does, killable "
			   "whatever the mode: switch the policy first\n");
		return -EINVAL;
	}
	/* relaxed: see req_policy. */
	was = (enum nc_intr_mode)atomic_exchange_explicit(
		&fs->req_mode, (unsigned)m, memory_order_relaxed);
	nc_client_set_intr_mode(fs->nc, m);
	fprintf(stderr, "intrfs: mode %s from now on (was %s), by intrfsctl\n",
		nc_intr_mode_name(m), nc_intr_mode_name(was));
	if (table)
		fprintf(f, "mode %s from now on (was %s)\n",
			nc_intr_mode_name(m), nc_intr_mode_name(was));
	else
		fprintf(f, "{\"mode\":\"%s\",\"was\":\"%s\"}\n",
			nc_intr_mode_name(m), nc_intr_mode_name(was));
	return 0;
}

/*
 * trace on NAME | trace off.  The file comes as a descriptor the client
 * opened (fd; -1: none came): the daemon opens no path a client names,
 * so a relative name is the client's and its rights are the client's.
 * NAME only says which file it is, in the answer and the log.
 */
static int trace_set(struct intrfs *fs, const char *what, const char *name,
		     int fd, FILE *f, bool table)
{
	int rc;

	if (what && strcmp(what, "off") == 0) {
		trace_off();
		fprintf(stderr, "intrfs: trace off, by intrfsctl\n");
		fprintf(f, table ? "trace off\n" : "{\"trace\":null}\n");
		return 0;
	}
	if (!what || strcmp(what, "on") != 0 || !name) {
		fprintf(f, "trace takes 'on FILE' or 'off'\n");
		return -EINVAL;
	}
	if (fd < 0) {
		fprintf(f, "trace on takes the file's descriptor with the "
			   "request (intrfsctl sends it): the daemon opens "
			   "no path it is given\n");
		return -EINVAL;
	}
	rc = trace_on_fd(fd, makedev(fs->ctl.major, fs->ctl.minor));
	if (rc) {
		fprintf(f, "cannot write the trace to %s: %s\n", name,
			rc == -EXDEV ?
				"it is on this mount (its lines would be "
				"requests to trace)" :
			rc == -EINVAL ? "not a regular file open for writing" :
					strerror(-rc));
		return rc;
	}
	fprintf(stderr, "intrfs: trace to %s, by intrfsctl\n", name);
	if (table)
		fprintf(f, "trace to %s\n", name);
	else {
		fprintf(f, "{\"trace\":");
		jstr(f, name);
		fprintf(f, "}\n");
	}
	return 0;
}

/*
 * Runs one request line, with the descriptor that came with it (-1:
 * none); the answer's text goes to f.
 */
static int run_line(struct intrfs *fs, char *line, int fd, FILE *f)
{
	/* Each command and the words it takes (trace: on FILE, or off). */
	static const struct {
		const char *cmd;
		unsigned args;
		const char *usage;
	} cmds[] = {
		{ "tasks", 0, "tasks" },
		{ "stats", 0, "stats" },
		{ "mountstats", 0, "mountstats" },
		{ "policy", 1, "policy P" },
		{ "mode", 1, "mode M" },
		{ "watchdog", 1, "watchdog N" },
		{ "trace", 2, "trace on FILE|off" },
	};
	char *save = NULL, *cmd = strtok_r(line, " \t\r\n", &save);
	char *w[3] = { NULL, NULL, NULL };
	bool table = false;
	unsigned n = 0, want;
	size_t i;

	for (char *t; (t = strtok_r(NULL, " \t\r\n", &save));) {
		if (strcmp(t, "table") == 0)
			table = true;
		else if (n++ < 3)
			w[n - 1] = t;
	}
	if (!cmd) {
		fprintf(f, "an empty request\n");
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(cmds) && strcmp(cmd, cmds[i].cmd); i++)
		;
	if (i == ARRAY_SIZE(cmds)) {
		fprintf(f,
			"unknown command '%s' (tasks, stats, mountstats, "
			"policy P, mode M, watchdog N, trace on FILE|off)\n",
			cmd);
		return -EINVAL;
	}
	want = cmds[i].args;
	if (strcmp(cmd, "trace") == 0 && w[0] && strcmp(w[0], "off") == 0)
		want = 1;
	if (n != want) {
		fprintf(f, "%s takes %s: %u word%s after '%s', not %u\n", cmd,
			cmds[i].usage, want, want == 1 ? "" : "s", cmd, n);
		return -EINVAL;
	}
	if (strcmp(cmd, "tasks") == 0) {
		if (table)
			tasks_table(fs, f);
		else
			tasks_json(fs, f);
		return 0;
	}
	if (strcmp(cmd, "stats") == 0) {
		stats_out(fs, f, table);
		return 0;
	}
	if (strcmp(cmd, "mountstats") == 0) {
		mountstats_out(fs, f);
		return 0;
	}
	if (strcmp(cmd, "policy") == 0)
		return policy_set(fs, w[0], f, table);
	if (strcmp(cmd, "watchdog") == 0)
		return watchdog_set(w[0], f, table);
	if (strcmp(cmd, "trace") == 0)
		return trace_set(fs, w[0], w[1], fd, f, table);
	return mode_set(fs, w[0], f, table);
}

/*
 * A client being served: its request read, then its answer written, each
 * without blocking the others and before its deadline.
 */
struct client {
	int fd; /* -1: the slot is free */
	int passed; /* a descriptor that came with the request, or -1 */
	uint64_t deadline_ns;
	size_t got; /* bytes of line read */
	char line[CTL_LINE_MAX];
	char *out; /* the answer; NULL while the request is read */
	size_t out_len, out_off;
};

static void client_close(struct client *c)
{
	close(c->fd);
	if (c->passed >= 0)
		close(c->passed);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = c->passed = -1;
}

/*
 * Reads what the client sent, and a descriptor that came with it (only
 * the first is kept).  Returns recv()'s result.
 */
static ssize_t client_recv(struct client *c)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} u;
	struct iovec iov = { c->line + c->got, sizeof(c->line) - 1 - c->got };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return n;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h;
	     h = CMSG_NXTHDR(&mh, h)) {
		size_t nfd;
		int fds[4];

		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfd > 4)
			nfd = 4;
		memcpy(fds, CMSG_DATA(h), nfd * sizeof(int));
		for (size_t i = 0; i < nfd; i++) {
			if (c->passed < 0)
				c->passed = fds[i];
			else
				close(fds[i]);
		}
	}
	return n;
}

/*
 * Whether the peer may ask: root, or the user who mounted.  Anyone else
 * is told so at once, without a byte of theirs read: a client that sends
 * nothing never holds the endpoint.
 */
static bool peer_allowed(struct intrfs *fs, int cfd)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char msg[160];
	int n;

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 &&
	    (cred.uid == 0 || cred.uid == fs->ctl.owner))
		return true;
	n = snprintf(msg, sizeof(msg),
		     "error\nonly root and the user who mounted (uid %u) may "
		     "ask this mount\n",
		     (unsigned)fs->ctl.owner);
	/* An empty socket buffer takes it whole; else it is lost. */
	(void)!send(cfd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	return false;
}

/* The request is whole: runs it and makes the answer. */
static void client_answer(struct intrfs *fs, struct client *c)
{
	struct out o = { NULL, NULL, 0 };
	const char *head;
	int rc;

	c->line[c->got] = '\0';
	o.f = open_memstream(&o.buf, &o.len);
	if (!o.f) {
		client_close(c);
		return;
	}
	rc = run_line(fs, c->line, c->passed, o.f);
	fclose(o.f);
	head = rc ? "error\n" : "ok\n";
	c->out_len = strlen(head) + o.len;
	c->out = malloc(c->out_len);
	if (c->out) {
		memcpy(c->out, head, strlen(head));
		memcpy(c->out + strlen(head), o.buf, o.len);
	}
	free(o.buf);
	if (!c->out)
		client_close(c);
}

/* What poll() said about c: reads its request, or writes its answer. */
static void client_step(struct intrfs *fs, struct client *c)
{
	ssize_t n;

	if (!c->out) {
		n = client_recv(c);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			client_close(c);
			return;
		}
		c->got += (size_t)n;
		/* A line, the end of what it sends, or all the room. */
		if (n > 0 && !memchr(c->line, '\n', c->got) &&
		    c->got + 1 < sizeof(c->line))
			return;
		client_answer(fs, c);
		if (!c->out)
			return;
	}
	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	client_close(c);
}

/* A free slot, or the one closest to its deadline made free. */
static struct client *client_slot(struct client *cl)
{
	struct client *oldest = &cl[0];

	for (unsigned i = 0; i < CTL_CLIENTS; i++) {
		if (cl[i].fd < 0)
			return &cl[i];
		if (cl[i].deadline_ns < oldest->deadline_ns)
			oldest = &cl[i];
	}
	client_close(oldest);
	return oldest;
}

/* Every connection waiting: refused at once, or given a slot. */
static void accept_all(struct intrfs *fs, struct client *cl)
{
	for (;;) {
		int cfd = accept4(fs->ctl.fd, NULL, NULL,
				  SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct client *c;

		if (cfd < 0)
			return;
		if (!peer_allowed(fs, cfd)) {
			close(cfd);
			continue;
		}
		c = client_slot(cl);
		c->fd = cfd;
		c->passed = -1;
		c->deadline_ns = region_now_ns() + CTL_CLIENT_NS;
		/* Its request is usually there already: answered now. */
		client_step(fs, c);
	}
}

static void *control_main(void *arg)
{
	struct intrfs *fs = arg;
	struct client cl[CTL_CLIENTS];
	struct pollfd p[2 + CTL_CLIENTS];
	struct client *of[2 + CTL_CLIENTS];

	for (unsigned i = 0; i < CTL_CLIENTS; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].fd = cl[i].passed = -1;
	}
	for (;;) {
		uint64_t now = region_now_ns(), next = UINT64_MAX;
		nfds_t n = 2;
		int timeout;

		p[0] = (struct pollfd){ fs->ctl.fd, POLLIN, 0 };
		p[1] = (struct pollfd){ fs->ctl.stop[0], POLLIN, 0 };
		for (unsigned i = 0; i < CTL_CLIENTS; i++) {
			if (cl[i].fd < 0)
				continue;
			if (cl[i].deadline_ns <= now) {
				client_close(&cl[i]);
				continue;
			}
			if (cl[i].deadline_ns < next)
				next = cl[i].deadline_ns;
			of[n] = &cl[i];
			p[n++] = (struct pollfd){ cl[i].fd,
						  cl[i].out ? POLLOUT : POLLIN,
						  0 };
		}
		timeout = next == UINT64_MAX ?
				  -1 :
				  (int)((next - now + 999999) / 1000000);
		if (poll(p, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		for (nfds_t i = 2; i < n; i++)
			if (p[i].revents)
				client_step(fs, of[i]);
		if (p[0].revents)
			accept_all(fs, cl);
	}
	for (unsigned i = 0; i < CTL_CLIENTS; i++)
		if (cl[i].fd >= 0)
			client_close(&cl[i]);
	return NULL;
}

/* The socket closed and its name removed, at unmount. */
static void control_stop_listening(struct intrfs *fs)
{
	close(fs->ctl.fd);
	fs->ctl.fd = -1;
	unlink(fs->ctl.path);
}

/*
 * What is at path: 0 nothing, 1 a socket nobody listens on (its daemon
 * died), -EADDRINUSE a live one, -EEXIST something that is not a socket
 * (not ours to remove), or -errno.
 */
static int socket_state(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : -errno;
	close(fd);
	/* A full backlog (EAGAIN) is a live daemon too. */
	if (rc == 0 || rc == -EAGAIN)
		return -EADDRINUSE;
	return rc == -ECONNREFUSED ? 1 : rc;
}

/*
 * Removes from dir the sockets daemons that died left (nobody listens on
 * them): a mount that starts cleans up after every one that did not stop.
 */
static void sweep_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[108];

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (strncmp(e->d_name, "ctl-", 4) != 0 || n < 9 ||
		    strcmp(e->d_name + n - 5, ".sock") != 0 ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir,
				     e->d_name) >= sizeof(path))
			continue;
		if (socket_state(path) == 1 && unlink(path) == 0)
			fprintf(stderr,
				"intrfs: removed %s: its daemon is gone\n",
				path);
	}
	closedir(d);
}

/*
 * The directory of the sockets, made if missing: root's in /run, open to
 * all (anyone may connect, to be told whether they may ask); a user's in
 * that user's runtime directory, which a login session makes (-ENXIO
 * without it), open to that user and root only.  Either must be its
 * owner's alone.
 */
static int ctl_dir_make(const char *dir, uid_t uid)
{
	char runtime[64];
	struct stat st;

	if (uid != 0) {
		snprintf(runtime, sizeof(runtime), CTL_USER_RUNTIME,
			 (unsigned)uid);
		if (lstat(runtime, &st) < 0)
			return errno == ENOENT ? -ENXIO : -errno;
	}
	if (mkdir(dir, uid ? 0700 : 0755) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != uid ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	return 0;
}

/*
 * The socket, made listening under a name of its own and then renamed to
 * its place: a client, or a daemon looking for sockets left by dead ones,
 * never finds it there and not listening.
 */
static int ctl_listen(struct intrfs *fs)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int n;

	n = snprintf(a.sun_path, sizeof(a.sun_path), "%s.%d", fs->ctl.path,
		     (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	fs->ctl.fd =
		socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fs->ctl.fd < 0)
		return -errno;
	unlink(a.sun_path);
	/* Anyone may connect, to be told whether they may ask. */
	if (bind(fs->ctl.fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	if (chmod(a.sun_path, fs->ctl.owner ? 0600 : 0666) < 0 ||
	    listen(fs->ctl.fd, CTL_BACKLOG) < 0 ||
	    rename(a.sun_path, fs->ctl.path) < 0) {
		int err = -errno;

		unlink(a.sun_path);
		errno = -err;
		goto fail;
	}
	return 0;
fail:
	n = -errno;
	close(fs->ctl.fd);
	fs->ctl.fd = -1;
	return n;
}

int control_start(struct intrfs *fs)
{
	struct ctl_mount m;
	char dir[64];
	int rc;

	fs->ctl.fd = -1;
	fs->ctl.owner = getuid();
	fs->ctl.path[0] = '\0';
	/* Ours is the last intrfs mount there: it was just made. */
	rc = ctl_mount_on(fs->mountpoint, "fuse.intrfs", &m);
	if (rc) {
		fprintf(stderr,
			"intrfs: no control endpoint for intrfsctl: the mount "
			"on %s is not in /proc/self/mountinfo (%s)\n",
			fs->mountpoint, strerror(-rc));
		return rc;
	}
	fs->ctl.major = m.major;
	fs->ctl.minor = m.minor;
	ctl_dir(fs->ctl.owner, dir, sizeof(dir));
	ctl_path(fs->ctl.owner, m.major, m.minor, fs->ctl.path,
		 sizeof(fs->ctl.path));
	rc = ctl_dir_make(dir, fs->ctl.owner);
	if (rc == 0)
		sweep_stale(dir);
	if (rc == 0) {
		rc = socket_state(fs->ctl.path);
		/* A socket whose daemon died is replaced: rename() does. */
		if (rc == 1)
			rc = 0;
	}
	if (rc == 0 && pipe2(fs->ctl.stop, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc == 0) {
		rc = ctl_listen(fs);
		if (rc) {
			close(fs->ctl.stop[0]);
			close(fs->ctl.stop[1]);
		}
	}
	if (rc == 0) {
		rc = -pthread_create(&fs->ctl.thread, NULL, control_main, fs);
		if (rc) {
			control_stop_listening(fs);
			close(fs->ctl.stop[0]);
			close(fs->ctl.stop[1]);
		}
	}
	if (rc)
		fprintf(stderr,
			"intrfs: no control endpoint for intrfsctl at %s: %s\n",
			fs->ctl.path,
			rc == -ENXIO ?
				"this user has no runtime directory "
				"(/run/user/UID, which a login session "
				"makes)" :
			rc == -EPERM ?
				"its directory is not a directory of this "
				"user's alone" :
			rc == -EEXIST ?
				"something that is not a socket is there" :
			rc == -EADDRINUSE ? "a live daemon answers there" :
					    strerror(-rc));
	return rc;
}

void control_stop(struct intrfs *fs)
{
	if (fs->ctl.fd < 0)
		return;
	(void)!write(fs->ctl.stop[1], "x", 1);
	pthread_join(fs->ctl.thread, NULL);
	control_stop_listening(fs);
	close(fs->ctl.stop[0]);
	close(fs->ctl.stop[1]);
}
