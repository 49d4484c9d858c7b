/*
 * One scenario, start to end: netfault and the mount, the old state on
 * the export, the processes held at the start line, time 0, the faults
 * and signals on their schedule, every process's end (seen at once through
 * a pidfd), every fault lifted, the unmount, the export checked, one line
 * and one JSON object out.
 */
#include "scenario.h"

#include "beneath.h"
#include "intrfs/util.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_DEADLINE_MS 15000
#define BLOCKED_WAIT_NS 10000000000ull
#define WHY_MAX 1024
#define FRAMES_MAX 24
/* The second look at a process still blocked after the signal. */
#define AFTER_SIGNAL_NS 250000000ull
/* With no signal, where the process is at this time. */
#define NO_SIGNAL_LOOK_NS 300000000ull

/* Where a process sleeps in the kernel, read from /proc. */
struct kwhere {
	bool taken;
	char state; /* /proc/PID/stat's state: R, S, D... */
	char wchan[64];
	char frames[FRAMES_MAX][96]; /* "function [module]", innermost first */
	unsigned nframes;
};

struct rig *run_current_rig;
volatile sig_atomic_t run_stop;

struct proc {
	pid_t pid;
	int pidfd, ready_fd, go_fd, report_fd;
	bool ended;
	struct work_report rep;
	uint64_t end_ns;
	const char *state; /* what the export holds, or NULL */
	/* What it holds even when that is not what was wanted (JSON, the
	 * result line), NULL when it is in no state the op can leave. */
	const char *seen;
	char state_why[WHY_MAX];
	unsigned work_left; /* copyup: its temporaries left in work/ */
	/* Where it slept when the signal came, and 250 ms later. */
	struct kwhere at_signal, after_signal;
};

/* What one scenario run found. */
struct outcome {
	struct proc procs[SCN_PROCS_MAX];
	uint64_t t0, sig_ns; /* sig_ns: the first signal, 0 if none sent */
	unsigned sent;
	long long resets, faults_applied;
	char error[WHY_MAX]; /* the rig failed: the scenario could not run */
	/* Where its logs were kept (it failed), else "". */
	char kept[SCN_TEXT_MAX + SCN_NAME_MAX + 16];
	bool passed;
	struct {
		char check[24], want[64], got[WHY_MAX];
		unsigned proc;
		bool pass;
	} checks[SCN_PROCS_MAX * 8];
	unsigned nchecks;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void check(struct outcome *o, unsigned k, const char *what,
		  const char *want, const char *got, bool pass)
{
	if (o->nchecks == ARRAY_SIZE(o->checks))
		return;
	snprintf(o->checks[o->nchecks].check, sizeof(o->checks[0].check), "%s",
		 what);
	snprintf(o->checks[o->nchecks].want, sizeof(o->checks[0].want), "%s",
		 want);
	snprintf(o->checks[o->nchecks].got, sizeof(o->checks[0].got), "%s",
		 got);
	o->checks[o->nchecks].proc = k;
	o->checks[o->nchecks].pass = pass;
	o->nchecks++;
	if (!pass)
		o->passed = false;
}

static int open_pidfd(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * copyup's upper and work directories: where the processes use them (the
 * mount's, or the run's local ones), or where the check reads them
 * (check: the export's, or the same local ones).
 */
static void copyup_dirs(const struct scenario *s, const struct rig *r,
			bool check, char *upper, char *work, size_t len)
{
	const char *base = !s->upper_intrfs ? r->cu : check ? r->local : r->mnt;

	snprintf(upper, len, "%s/upper", base);
	snprintf(work, len, "%s/work", base);
}

/*
 * Process k's copy-up checked: the lower file in the scenario's directory
 * on the export, upper and work as the check reads them (the export's,
 * beneath that directory; or the run's local ones).  Its state, or NULL
 * with why in p.
 */
static const char *copyup_check(const struct scenario *s, const struct rig *r,
				unsigned k, enum scn_state want, struct proc *p)
{
	char up[SCN_TEXT_MAX + 96], wk[SCN_TEXT_MAX + 96];
	struct work_at dir = { r->dir_fd, r->local };
	struct work_at upper = { -1, up }, work = { -1, wk };
	bool killed = p->rep.result == RES_KILLED || p->rep.result == RES_HUNG;
	const char *state = NULL;
	int base;

	copyup_dirs(s, r, true, up, wk, sizeof(up));
	base = s->upper_intrfs ? dup(r->dir_fd) :
				 open(r->cu, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (base >= 0) {
		upper.fd = beneath_open(base, "upper", O_PATH | O_DIRECTORY, 0);
		work.fd = beneath_open(base, "work", O_PATH | O_DIRECTORY, 0);
		close(base);
	}
	if (base < 0 || upper.fd < 0 || work.fd < 0)
		snprintf(p->state_why, sizeof(p->state_why), "%s: %s",
			 upper.fd < 0 ? up : wk,
			 base < 0 ? strerror(errno) :
				    beneath_strerror(upper.fd < 0 ? upper.fd :
								    work.fd));
	else
		state = work_copyup_check(s, &dir, &upper, &work, k, want,
					  killed, p->state_why,
					  sizeof(p->state_why), &p->seen,
					  &p->work_left);
	if (upper.fd >= 0)
		close(upper.fd);
	if (work.fd >= 0)
		close(work.fd);
	return state;
}

/* Forks the processes; each gets ready (opens its file) and waits. */
static int start_procs(const struct scenario *s, struct rig *r,
		       struct outcome *o)
{
	char dir[200], upper[SCN_TEXT_MAX + 96], work[SCN_TEXT_MAX + 96];
	struct work_dirs d = { .upper = upper, .work = work };

	d.dir = rig_work_dir(r, dir, sizeof(dir));
	/*
	 * The kernel's client has no caller regions: a region line is held
	 * with prctl(PR_REGION) where the kernel has it, else dropped.
	 */
	d.mnt = r->kernel ? NULL : r->mnt;
	d.kernel_regions = r->kernel_regions;
	copyup_dirs(s, r, false, upper, work, sizeof(upper));

	for (unsigned k = 0; k < s->procs; k++) {
		struct proc *p = &o->procs[k];
		int ready[2], go[2], rep[2];

		if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 ||
		    pipe2(rep, O_CLOEXEC) < 0) {
			snprintf(o->error, sizeof(o->error), "pipe: %s",
				 strerror(errno));
			return -1;
		}
		fflush(NULL);
		p->pid = fork();
		if (p->pid < 0) {
			snprintf(o->error, sizeof(o->error), "fork: %s",
				 strerror(errno));
			return -1;
		}
		if (p->pid > 0)
			p->ended = false;
		if (p->pid == 0) {
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			work_child(s, &d, k, ready[1], go[0], rep[1]);
		}
		close(ready[1]);
		close(go[0]);
		close(rep[1]);
		p->ready_fd = ready[0];
		p->go_fd = go[1];
		p->report_fd = rep[0];
		p->pidfd = open_pidfd(p->pid);
		if (p->pidfd < 0) {
			snprintf(o->error, sizeof(o->error), "pidfd_open: %s",
				 strerror(errno));
			return -1;
		}
	}
	for (unsigned k = 0; k < s->procs; k++) {
		struct pollfd pf = { o->procs[k].ready_fd, POLLIN, 0 };
		char c;

		if (poll(&pf, 1, READY_DEADLINE_MS) != 1 ||
		    read(o->procs[k].ready_fd, &c, 1) != 1) {
			snprintf(o->error, sizeof(o->error),
				 "process %u did not get ready within %d s", k,
				 READY_DEADLINE_MS / 1000);
			return -1;
		}
	}
	return 0;
}

/* Process k ended: its report, or how it died. */
static void reap(struct proc *p)
{
	int status;

	if (waitpid(p->pid, &status, 0) != p->pid)
		return;
	p->ended = true;
	p->end_ns = now_ns();
	if (WIFSIGNALED(status)) {
		p->rep.result = RES_KILLED;
		snprintf(p->rep.call, sizeof(p->rep.call), "%s",
			 scn_signal_name(WTERMSIG(status)));
	} else if (read(p->report_fd, &p->rep, sizeof(p->rep)) ==
		   (ssize_t)sizeof(p->rep)) {
		p->end_ns = p->rep.end_ns;
	} else {
		p->rep.result = EIO;
		snprintf(p->rep.call, sizeof(p->rep.call), "exit%d",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	close_fd(&p->pidfd);
}

static unsigned live_count(const struct scenario *s, const struct outcome *o)
{
	unsigned n = 0;

	for (unsigned k = 0; k < s->procs; k++)
		n += !o->procs[k].ended;
	return n;
}

static bool all_blocked(const struct scenario *s, const struct rig *r,
			const struct outcome *o)
{
	for (unsigned k = 0; k < s->procs; k++)
		if (!o->procs[k].ended &&
		    !(r->kernel ? proc_in_kernel_nfs(o->procs[k].pid) :
				  proc_in_fuse(o->procs[k].pid)))
			return false;
	return true;
}

/*
 * Where pid sleeps: its state, wait channel and kernel stack, each frame
 * as "function [module]" ("[<0>] rpc_wait_bit_killable+0x1e/0x90 [sunrpc]"
 * in /proc/PID/stack).
 */
static void look_where(pid_t pid, struct kwhere *w)
{
	char buf[4096], *save = NULL, *rp;

	memset(w, 0, sizeof(*w));
	if (proc_read(pid, "stat", buf, sizeof(buf)) &&
	    (rp = strrchr(buf, ')')) && rp[1] == ' ')
		w->state = rp[2];
	proc_read(pid, "wchan", w->wchan, sizeof(w->wchan));
	if (!strcmp(w->wchan, "0"))
		w->wchan[0] = '\0';
	if (proc_read(pid, "stack", buf, sizeof(buf)))
		for (char *l = strtok_r(buf, "\n", &save);
		     l && w->nframes < FRAMES_MAX;
		     l = strtok_r(NULL, "\n", &save)) {
			char *fn = strchr(l, ']'), *plus, *mod;

			fn = fn ? fn + 1 : l;
			fn += strspn(fn, " ");
			plus = strchr(fn, '+');
			mod = strchr(fn, '[');
			if (plus)
				*plus = '\0';
			snprintf(w->frames[w->nframes++], sizeof(w->frames[0]),
				 "%s%s%s", fn, mod ? " " : "", mod ? mod : "");
		}
	w->taken = true;
}

static void look_all(const struct scenario *s, struct outcome *o, bool after)
{
	for (unsigned k = 0; k < s->procs; k++)
		if (!o->procs[k].ended)
			look_where(o->procs[k].pid,
				   after ? &o->procs[k].after_signal :
					   &o->procs[k].at_signal);
}

static void send_signal(const struct scenario *s, struct outcome *o)
{
	if (!o->sig_ns) {
		look_all(s, o, false);
		/*
		 * The time is taken before kill(), not after: a process can
		 * take the signal, get its answer and note its own end while
		 * this thread is still on its way back from kill() (an EINTR
		 * comes back in tens of microseconds), which made the latency
		 * negative and left it out of the JSON.
		 */
		o->sig_ns = now_ns();
	}
	for (unsigned k = 0; k < s->procs; k++)
		if (!o->procs[k].ended)
			kill(o->procs[k].pid, s->sig);
	o->sent++;
}

static int apply_fault(struct rig *r, const struct scn_fault *f, long *id,
		       char *err, size_t len)
{
	char req[SCN_TEXT_MAX + 8], ans[1024];

	switch (f->kind) {
	case FK_NETFAULT:
		snprintf(req, sizeof(req), "add %s", f->rule);
		if (rig_netfault_ask(r, req, ans, sizeof(ans)) < 0) {
			if ((size_t)snprintf(err, len,
					     "netfault refused '%s': %s",
					     f->rule, ans) >= len)
				err[len - 1] = '\0';
			return -1;
		}
		*id = netrig_json_long(ans, "id");
		if (r->verbose)
			fprintf(stderr, "  . netfault rule %ld: %s\n", *id,
				f->rule);
		return 0;
	case FK_PAUSE:
		return rig_pause(r, err, len);
	case FK_RESTART:
		if (rig_kill_server(r, err, len) < 0)
			return -1;
		return f->has_for ? 0 : rig_start_server(r, err, len);
	case FK_PARTITION_DROP:
	case FK_PARTITION_REJECT:
		return rig_partition(r, f->kind == FK_PARTITION_REJECT, err,
				     len);
	}
	return 0;
}

static int lift_fault(struct rig *r, const struct scn_fault *f, long id,
		      char *err, size_t len)
{
	char req[64], ans[256];

	switch (f->kind) {
	case FK_NETFAULT:
		snprintf(req, sizeof(req), "clear %ld", id);
		rig_netfault_ask(r, req, ans, sizeof(ans));
		return 0;
	case FK_PAUSE:
		rig_resume(r);
		return 0;
	case FK_RESTART:
		return rig_start_server(r, err, len);
	case FK_PARTITION_DROP:
	case FK_PARTITION_REJECT:
		rig_heal(r);
		return 0;
	}
	return 0;
}

static long long netfault_conns(struct rig *r)
{
	char ans[4096];

	if (rig_netfault_ask(r, "stats", ans, sizeof(ans)) < 0)
		return -1;
	return netrig_json_long(ans, "conns");
}

static void kill_all(const struct scenario *s, struct outcome *o)
{
	for (unsigned k = 0; k < s->procs; k++)
		if (!o->procs[k].ended)
			kill(o->procs[k].pid, SIGKILL);
}

/*
 * Time 0 on: faults and signals on their schedule until every process
 * ended (or the timeout: then they are killed and reported hung).
 */
static void timeline(const struct scenario *s, struct rig *r, struct outcome *o)
{
	bool applied[SCN_FAULTS_MAX] = { 0 }, lifted[SCN_FAULTS_MAX] = { 0 };
	long ids[SCN_FAULTS_MAX] = { 0 };
	uint64_t next_sig = s->sig ? s->sig_at_ns : UINT64_MAX;
	/* The look at where the processes sleep (see struct kwhere). */
	uint64_t next_look = s->sig ? UINT64_MAX : NO_SIGNAL_LOOK_NS;
	bool hung = false;
	char c = 'g';

	for (unsigned i = 0; i < s->nfaults; i++)
		if (s->faults[i].at_ns == 0) {
			if (apply_fault(r, &s->faults[i], &ids[i], o->error,
					sizeof(o->error)) < 0)
				return;
			applied[i] = true;
		}
	o->t0 = now_ns();
	for (unsigned k = 0; k < s->procs; k++)
		if (write(o->procs[k].go_fd, &c, 1) != 1) {
			snprintf(o->error, sizeof(o->error),
				 "process %u is gone before time 0", k);
			return;
		}
	while (live_count(s, o)) {
		struct pollfd pf[SCN_PROCS_MAX];
		unsigned map[SCN_PROCS_MAX], n = 0;
		uint64_t t = now_ns() - o->t0, next = UINT64_MAX;
		struct timespec ts;

		if (run_stop && !hung) {
			snprintf(o->error, sizeof(o->error), "interrupted");
			kill_all(s, o);
			hung = true;
			/* Whatever holds them (a nointr wait) is lifted. */
			rig_lift_all(r);
		}
		/* What is due now. */
		for (unsigned i = 0; i < s->nfaults; i++) {
			const struct scn_fault *f = &s->faults[i];

			if (!applied[i] && f->at_ns <= t) {
				if (apply_fault(r, f, &ids[i], o->error,
						sizeof(o->error)) < 0) {
					kill_all(s, o);
					hung = true;
				}
				applied[i] = true;
			}
			if (applied[i] && !lifted[i] && f->has_for &&
			    f->at_ns + f->for_ns <= t) {
				if (lift_fault(r, f, ids[i], o->error,
					       sizeof(o->error)) < 0) {
					kill_all(s, o);
					hung = true;
				}
				lifted[i] = true;
			}
			if (!applied[i] && f->at_ns < next)
				next = f->at_ns;
			if (applied[i] && !lifted[i] && f->has_for &&
			    f->at_ns + f->for_ns < next)
				next = f->at_ns + f->for_ns;
		}
		t = now_ns() - o->t0;
		if (next_sig <= t) {
			if (s->when_blocked && !all_blocked(s, r, o) &&
			    t < s->sig_at_ns + BLOCKED_WAIT_NS) {
				next_sig = t + 1000000;
			} else {
				if (!o->sig_ns)
					next_look = t + AFTER_SIGNAL_NS;
				send_signal(s, o);
				next_sig = s->every_ns ? t + s->every_ns :
							 UINT64_MAX;
			}
		}
		if (next_look <= t) {
			look_all(s, o, s->sig != 0);
			next_look = UINT64_MAX;
		}
		if (next_sig < next)
			next = next_sig;
		if (next_look < next)
			next = next_look;
		if (!hung && t >= s->timeout_ns) {
			kill_all(s, o);
			hung = true;
			/* Whatever holds them (a nointr wait) is lifted. */
			rig_lift_all(r);
			next = UINT64_MAX;
		}
		if (!hung && s->timeout_ns < next)
			next = s->timeout_ns;
		for (unsigned k = 0; k < s->procs; k++)
			if (!o->procs[k].ended) {
				pf[n] = (struct pollfd){ o->procs[k].pidfd,
							 POLLIN, 0 };
				map[n++] = k;
			}
		t = now_ns() - o->t0;
		if (next == UINT64_MAX || hung) {
			ts = (struct timespec){ 0, 50000000 };
		} else {
			uint64_t d = next > t ? next - t : 0;

			ts = (struct timespec){ (time_t)(d / 1000000000ull),
						(long)(d % 1000000000ull) };
		}
		if (ppoll(pf, n, &ts, NULL) > 0)
			for (unsigned i = 0; i < n; i++)
				if (pf[i].revents)
					reap(&o->procs[map[i]]);
	}
	if (hung)
		for (unsigned k = 0; k < s->procs; k++)
			if (o->procs[k].rep.result == RES_KILLED &&
			    !o->error[0])
				o->procs[k].rep.result = RES_HUNG;
}

static bool result_wanted(const struct scenario *s, int res)
{
	for (unsigned i = 0; i < s->nresults; i++)
		if (s->results[i] == res)
			return true;
	return false;
}

static bool call_wanted(const struct scenario *s, const char *call)
{
	for (unsigned i = 0; i < s->ncalls; i++)
		if (!strcmp(s->calls[i], call))
			return true;
	return false;
}

static void bound_check(struct outcome *o, unsigned k, const char *what,
			const struct scn_bound *b, bool max, uint64_t got)
{
	char want[64], g[32], d[32];

	if (!b->set)
		return;
	scn_format_duration(b->ns, d, sizeof(d));
	snprintf(want, sizeof(want), "%s%s", max ? "<=" : ">=", d);
	scn_format_duration(got, g, sizeof(g));
	check(o, k, what, want, g, max ? got <= b->ns : got >= b->ns);
}

static void evaluate(const struct scenario *s, struct outcome *o)
{
	char want[128] = "", calls[128] = "", got[WHY_MAX];

	for (unsigned i = 0; i < s->nresults; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
			 "%s%s", i ? "|" : "", scn_result_name(s->results[i]));
	for (unsigned i = 0; i < s->ncalls; i++)
		snprintf(calls + strlen(calls), sizeof(calls) - strlen(calls),
			 "%s%s", i ? "|" : "", s->calls[i]);
	for (unsigned k = 0; k < s->procs; k++) {
		const struct proc *p = &o->procs[k];
		uint64_t elapsed = p->end_ns - o->t0;
		uint64_t latency = o->sig_ns ? (p->end_ns > o->sig_ns ?
							p->end_ns - o->sig_ns :
							0) :
					       elapsed;
		bool reads = s->op == OP_READ || s->op == OP_READDIR ||
			     s->op == OP_STAT;

		snprintf(got, sizeof(got), "%s",
			 scn_result_name(p->rep.result));
		if (p->rep.result > 0)
			snprintf(got + strlen(got), sizeof(got) - strlen(got),
				 " (%s)", p->rep.call);
		check(o, k, "result", want, got,
		      result_wanted(s, p->rep.result));
		if (s->ncalls) {
			/* A killed process's call is the signal (reap()). */
			const char *call =
				p->rep.result == RES_OK ? "none" : p->rep.call;

			check(o, k, "call", calls, call, call_wanted(s, call));
		}
		if (!o->sig_ns && s->sig && p->ended && s->latency_max.set) {
			/* The process ended before the signal was due. */
			latency = 0;
		}
		bound_check(o, k, "latency", &s->latency_max, true, latency);
		bound_check(o, k, "latency", &s->latency_min, false, latency);
		bound_check(o, k, "elapsed", &s->elapsed_max, true, elapsed);
		bound_check(o, k, "elapsed", &s->elapsed_min, false, elapsed);
		if (reads && p->rep.result == RES_OK && !s->data_any)
			check(o, k, "data", "intact",
			      p->rep.data_ok ? "intact" : "wrong",
			      p->rep.data_ok);
		check(o, k, "export", scn_state_name(s->export_state),
		      p->state ? p->state : p->state_why, p->state != NULL);
	}
	if (s->resets_eq_set || s->resets_min_set || s->resets_max_set) {
		char w[64] = "";

		if (s->resets_eq_set)
			snprintf(w, sizeof(w), "=%u", s->resets_eq);
		if (s->resets_min_set)
			snprintf(w + strlen(w), sizeof(w) - strlen(w), ">=%u ",
				 s->resets_min);
		if (s->resets_max_set)
			snprintf(w + strlen(w), sizeof(w) - strlen(w), "<=%u",
				 s->resets_max);
		snprintf(got, sizeof(got), "%lld", o->resets);
		check(o, 0, "resets", w, got,
		      o->resets >= 0 &&
			      (!s->resets_eq_set ||
			       o->resets == (long long)s->resets_eq) &&
			      (!s->resets_min_set ||
			       o->resets >= (long long)s->resets_min) &&
			      (!s->resets_max_set ||
			       o->resets <= (long long)s->resets_max));
	}
}

static void json_str(FILE *f, const char *str)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* ,"key":{"state":"D","wchan":...,"stack":[...]} when it was taken. */
static void json_where(FILE *f, const char *key, const struct kwhere *w)
{
	if (!w->taken)
		return;
	fprintf(f, ",\"%s\":{\"state\":\"%c\",\"wchan\":", key,
		w->state ? w->state : '?');
	json_str(f, w->wchan);
	fprintf(f, ",\"stack\":[");
	for (unsigned i = 0; i < w->nframes; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_str(f, w->frames[i]);
	}
	fprintf(f, "]}");
}

static void json_out(const struct scenario *s, const struct outcome *o,
		     const struct rig *r, const char *opts, FILE *f)
{
	fprintf(f, "{\"name\":");
	json_str(f, s->name);
	fprintf(f, ",\"file\":");
	json_str(f, s->file);
	fprintf(f, ",\"about\":");
	json_str(f, s->about);
	fprintf(f, ",\"op\":\"%s\",\"mount\":", scn_op_name(s->op));
	json_str(f, opts);
	fprintf(f, ",\"client\":\"%s\"", r->kernel ? "kernel" : "intrfs");
	if (s->has_region) {
		fprintf(f, ",\"region\":{\"kind\":\"%s\",\"reason\":",
			scn_region_kind_name(s->region_kind));
		json_str(f, s->region_reason);
		fprintf(f, "}");
	}
	if (s->op == OP_COPYUP)
		fprintf(f, ",\"upper\":\"%s\"",
			s->upper_intrfs ? "intrfs" : "local");
	if (r->kernel) {
		struct utsname u;

		fprintf(f, ",\"kernel_mount\":");
		json_str(f, r->kernel_opts);
		fprintf(f, ",\"not_for_kernel\":");
		json_str(f, r->dropped);
		if (uname(&u) == 0) {
			fprintf(f, ",\"kernel\":");
			json_str(f, u.release);
		}
	}
	fprintf(f, ",\"pass\":%s", o->passed ? "true" : "false");
	if (o->error[0]) {
		fprintf(f, ",\"error\":");
		json_str(f, o->error);
	}
	if (o->kept[0]) {
		fprintf(f, ",\"logs_kept\":");
		json_str(f, o->kept);
	}
	fprintf(f, ",\"signal\":\"%s\",\"signals_sent\":%u,\"procs\":[",
		s->sig ? scn_signal_name(s->sig) : "none", o->sent);
	for (unsigned k = 0; k < s->procs; k++) {
		const struct proc *p = &o->procs[k];
		double el = (double)(p->end_ns - o->t0) / 1e6;
		double lat = o->sig_ns && p->end_ns > o->sig_ns ?
				     (double)(p->end_ns - o->sig_ns) / 1e6 :
				     -1;

		fprintf(f, "%s{\"result\":\"%s\",\"errno\":%d,\"call\":",
			k ? "," : "", scn_result_name(p->rep.result),
			p->rep.result > 0 ? p->rep.result : 0);
		json_str(f, p->rep.call);
		fprintf(f, ",\"signals_seen\":%u,\"done\":%llu", p->rep.sigs,
			(unsigned long long)p->rep.done);
		if (o->t0)
			fprintf(f, ",\"elapsed_ms\":%.3f", el);
		if (lat >= 0)
			fprintf(f, ",\"latency_ms\":%.3f", lat);
		fprintf(f, ",\"export\":");
		json_str(f, p->seen ? p->seen : "bad");
		if (s->op == OP_COPYUP)
			fprintf(f, ",\"work_left\":%u", p->work_left);
		json_where(f, "at_signal", &p->at_signal);
		json_where(f, "after_signal", &p->after_signal);
		fprintf(f, "}");
	}
	fprintf(f, "],\"resets\":%lld,\"faults_applied\":%lld", o->resets,
		o->faults_applied);
	if (r->hung[0]) {
		fprintf(f, ",\"hung_report\":");
		json_str(f, r->hung);
	}
	if (r->exit_ms >= 0)
		fprintf(f, ",\"unmount_exit_ms\":%lld", r->exit_ms);
	fprintf(f, ",\"checks\":[");
	for (unsigned i = 0; i < o->nchecks; i++) {
		fprintf(f, "%s{\"check\":\"%s\",\"proc\":%u,\"want\":",
			i ? "," : "", o->checks[i].check, o->checks[i].proc);
		json_str(f, o->checks[i].want);
		fprintf(f, ",\"got\":");
		json_str(f, o->checks[i].got);
		fprintf(f, ",\"pass\":%s}",
			o->checks[i].pass ? "true" : "false");
	}
	fprintf(f, "]}\n");
	fflush(f);
}

static void print_line(const struct scenario *s, const struct outcome *o)
{
	const struct proc *p = &o->procs[0];
	char el[32], lat[32];
	bool first = true;

	for (unsigned k = 0; k < s->procs; k++)
		if (o->procs[k].rep.result != RES_OK) {
			p = &o->procs[k];
			break;
		}
	printf("%s %s  ", o->passed ? "PASS" : "FAIL", s->name);
	/* No time 0 (the rig failed first): nothing ran, nothing to time. */
	if (o->error[0] && (!o->t0 || !p->ended)) {
		printf("could not run: %s\n", o->error);
		return;
	}
	scn_format_duration(p->end_ns - o->t0, el, sizeof(el));
	printf("%s", scn_result_name(p->rep.result));
	if (p->rep.result > 0)
		printf(" (%s)", p->rep.call);
	printf(" after %s", el);
	if (o->sig_ns && p->end_ns > o->sig_ns) {
		scn_format_duration(p->end_ns - o->sig_ns, lat, sizeof(lat));
		printf(" (latency %s)", lat);
	}
	if (s->procs > 1)
		printf(" [%u procs]", s->procs);
	printf(", resets %lld, export %s", o->resets,
	       p->seen ? p->seen : "bad");
	for (unsigned i = 0; i < o->nchecks; i++) {
		if (o->checks[i].pass)
			continue;
		printf("%s want %s%s%s, got %s", first ? ":" : ";",
		       o->checks[i].check,
		       strchr("<>", o->checks[i].want[0]) ? "" : "=",
		       o->checks[i].want, o->checks[i].got);
		first = false;
	}
	if (o->error[0])
		printf("%s %s", first ? ":" : ";", o->error);
	printf("\n");
	fflush(stdout);
}

/*
 * The scenario's region: under the kernel's client, which has no caller
 * regions, it is held with prctl(PR_REGION) on a kernel with the regions
 * series, else not declared (the same file runs there) and named among
 * what the kernel did not get.
 */
static void note_region(const struct scenario *s, struct rig *r)
{
	const char *kind = scn_region_kind_name(s->region_kind);

	if (!s->has_region)
		return;
	if (r->kernel_regions) {
		if (r->verbose)
			fprintf(stderr,
				"  . each process holds a %s region (%s) "
				"with prctl(PR_REGION)\n",
				kind, s->region_reason);
	} else if (r->kernel) {
		snprintf(r->dropped + strlen(r->dropped),
			 sizeof(r->dropped) - strlen(r->dropped), "%sregion %s",
			 r->dropped[0] ? "," : "", kind);
		if (r->verbose)
			fprintf(stderr,
				"  . region %s (%s) not declared: the "
				"kernel's client has no caller regions\n",
				kind, s->region_reason);
	} else if (r->verbose) {
		fprintf(stderr,
			"  . each process declares a %s region (%s) on %s\n",
			kind, s->region_reason, r->mnt);
	}
}

static void join_opts(const char *a, const char *b, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", a, a[0] && b[0] ? "," : "", b);
}

bool run_scenario(const struct scenario *s, struct rig *r,
		  const char *extra_opts, FILE *json, bool keep, unsigned seq)
{
	struct outcome *o = calloc(1, sizeof(*o));
	char opts[SCN_TEXT_MAX * 2], err[WHY_MAX];
	long long conns0 = -1, conns1;
	bool passed;

	if (!o) {
		fprintf(stderr, "intrfs-scenario: out of memory\n");
		return false;
	}
	o->passed = true;
	o->resets = -1;
	/*
	 * A process counts as live from its fork on: one a failed set-up
	 * never started has pid 0, and kill(0, SIGKILL) is the runner's
	 * whole process group (tests/run with it).
	 */
	for (unsigned k = 0; k < SCN_PROCS_MAX; k++) {
		o->procs[k].pidfd = o->procs[k].ready_fd = -1;
		o->procs[k].go_fd = o->procs[k].report_fd = -1;
		o->procs[k].ended = true;
	}
	join_opts(s->mount, extra_opts, opts, sizeof(opts));
	run_current_rig = r;
	rig_cell_begin(r, s->name, seq);
	/* No directory of this scenario's yet (none of the one before). */
	r->local[0] = '\0';
	r->dir_fd = -1;
	if (rig_netfault_start(r, o->error, sizeof(o->error)) < 0 ||
	    rig_dir_make(r, seq, o->error, sizeof(o->error)) < 0)
		goto out;
	for (unsigned k = 0; k < s->procs; k++)
		if (work_prepare(s, &(struct work_at){ r->dir_fd, r->local },
				 k) < 0) {
			snprintf(o->error, sizeof(o->error),
				 "preparing process %u's files in %s: %s", k,
				 r->local, beneath_strerror(errno));
			goto out;
		}
	if (rig_mount(r, opts, o->error, sizeof(o->error)) < 0)
		goto out;
	note_region(s, r);
	if (s->op == OP_COPYUP && !s->upper_intrfs &&
	    rig_copyup_make(r, o->error, sizeof(o->error)) < 0)
		goto out;
	if (s->overlay && rig_overlay_mount(r, o->error, sizeof(o->error)) < 0)
		goto out;
	if (start_procs(s, r, o) < 0)
		goto out;
	conns0 = netfault_conns(r);
	timeline(s, r, o);
	rig_lift_all(r);
	conns1 = netfault_conns(r);
	if (conns0 >= 0 && conns1 >= 0)
		o->resets = conns1 - conns0;
	{
		char ans[4096];

		if (rig_netfault_ask(r, "stats", ans, sizeof(ans)) == 0)
			o->faults_applied = netrig_json_long(ans, "faults");
	}
out:
	kill_all(s, o);
	rig_lift_all(r);
	for (unsigned k = 0; k < s->procs; k++) {
		struct proc *p = &o->procs[k];

		if (p->pid > 0 && !p->ended)
			reap(p);
		close_fd(&p->pidfd);
		close_fd(&p->ready_fd);
		close_fd(&p->go_fd);
		close_fd(&p->report_fd);
	}
	rig_overlay_umount(r);
	if (rig_umount(r, err, sizeof(err)) < 0 && !o->error[0])
		snprintf(o->error, sizeof(o->error), "%s", err);
	if (o->t0 && !(o->error[0] && !o->procs[0].ended)) {
		for (unsigned k = 0; k < s->procs; k++) {
			struct proc *p = &o->procs[k];
			enum scn_state want = s->export_state;

			/* Through an overlay the export is its lower layer:
			 * nothing written there reaches it. */
			if (want == ST_AUTO && s->overlay)
				want = ST_OLD;
			else if (want == ST_AUTO)
				want = p->rep.result == RES_OK ? ST_NEW :
				       s->op == OP_LOCK	       ? ST_OLD :
								 ST_ANY;
			if (s->op == OP_LOCK) {
				p->state = work_lock_state(&p->rep, want,
							   p->state_why,
							   sizeof(p->state_why),
							   &p->seen);
			} else if (s->op == OP_COPYUP) {
				p->state = copyup_check(s, r, k, want, p);
			} else {
				p->state = work_check(
					s,
					&(struct work_at){ r->dir_fd,
							   r->local },
					k, want, p->state_why,
					sizeof(p->state_why), &p->seen);
			}
		}
		evaluate(s, o);
	}
	rig_copyup_remove(r);
	if (o->error[0])
		o->passed = false;
	rig_netfault_stop(r);
	rig_cell_end(r, !o->passed, o->kept, sizeof(o->kept));
	print_line(s, o);
	if (json)
		json_out(s, o, r, opts, json);
	if (o->passed && !keep)
		rig_dir_remove(r);
	else if (r->local[0])
		printf("     kept %s\n", r->local);
	if (o->kept[0])
		printf("     logs kept in %s\n", o->kept);
	rig_dir_close(r);
	passed = o->passed;
	run_current_rig = NULL;
	free(o);
	return passed;
}
