/*
 * intrfs-exercise: a seeded, reproducible integrity exerciser.  It makes a
 * fresh directory on the export, puts netfault in front of the server, mounts
 * intrfs through it and forks workers (worker.c) that do random file
 * operations, each on its own files, keeping a model of what every byte must
 * be.  Meanwhile this process adds random netfault rules over the control
 * socket and sends random signals to the workers.  At the end it clears the
 * faults, lets the workers sync and check through the mount, unmounts, and
 * lets them check the export itself.
 *
 * This file owns every process started (netfault, the daemon, the workers)
 * and must never leave one behind: each is stopped by its pid at the end,
 * on failure, and on SIGINT or SIGTERM (the workers and netfault also die
 * with this process, PR_SET_PDEATHSIG).  One thread, no locks.
 */
#include "exercise_i.h"
#include "beneath.h"
#include "mntrig.h"
#include "netrig.h"
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef EXERCISE_INTRFS_BIN
#define EXERCISE_INTRFS_BIN "intrfs"
#endif
#ifndef EXERCISE_NETFAULT_BIN
#define EXERCISE_NETFAULT_BIN "netfault"
#endif

#define MAX_PROCS 64
#define START_DEADLINE_MS 15000
#define UMOUNT_DEADLINE_MS 30000

const char *const xop_names[XOP_N] = {
	[XOP_CREATE] = "create",   [XOP_OPEN] = "open",
	[XOP_CLOSE] = "close",	   [XOP_WRITE] = "write",
	[XOP_PWRITE] = "pwrite",   [XOP_SPARSE] = "sparse",
	[XOP_DWRITE] = "dwrite",   [XOP_TRUNC] = "truncate",
	[XOP_READ] = "read",	   [XOP_DREAD] = "dread",
	[XOP_STAT] = "stat",	   [XOP_FSYNC] = "fsync",
	[XOP_RENAME] = "rename",   [XOP_UNLINK] = "unlink",
	[XOP_MKDIR] = "mkdir",	   [XOP_RMDIR] = "rmdir",
	[XOP_READDIR] = "readdir",
};

static const char usage_text[] =
	"NAME\n"
	"    intrfs-exercise - random file operations on an intrfs mount under\n"
	"    random faults and signals, checked against a model\n"
	"\n"
	"SYNOPSIS\n"
	"    intrfs-exercise [--seed N] [--procs N] [--ops N | --seconds S]\n"
	"                    [--server HOST --export PATH --nfs-port P\n"
	"                     --mount-port Q] [--intrfs BIN] [--netfault BIN]\n"
	"                    [--mount-opts OPTS] [--no-faults]\n"
	"                    [--fault-kinds K,...] [--no-signals]\n"
	"                    [--signal-ms MS] [--stuck S] [--workdir DIR]\n"
	"                    [--keep] [-v]\n"
	"\n"
	"DESCRIPTION\n"
	"    Creates a fresh directory on the export (the export must be a\n"
	"    local directory: the end of the run reads it directly), starts\n"
	"    netfault on free loopback ports in front of the server's NFS and\n"
	"    MOUNT ports, and mounts that directory with intrfs through it.\n"
	"    Then N worker processes each do seeded random operations on their\n"
	"    own files and directories (create, write, pwrite, sparse writes,\n"
	"    O_DIRECT writes and reads, truncates up and down, reads checked\n"
	"    against the model, stat, fsync, close and reopen, O_TRUNC opens,\n"
	"    rename, unlink, mkdir, rmdir, readdir checked against the model),\n"
	"    while this process adds random netfault rules (delays with jitter,\n"
	"    dropped calls and replies, duplicates, reordered replies, connection\n"
	"    resets, also in the middle of a WRITE, sliced records; some on a\n"
	"    flip= or for= schedule) and sends the workers SIGUSR1 (handler\n"
	"    without SA_RESTART), SIGUSR2 (with SA_RESTART) and SIGALRM (either,\n"
	"    by the seed).\n"
	"\n"
	"    Each worker keeps a model of each of its files: a call that fails\n"
	"    with EINTR makes the range it touched \"old or new\" (and the size\n"
	"    uncertain within bounds) until a later successful write covers\n"
	"    it; an interrupted namespace call is repeated until its answer\n"
	"    says what the first one did.  Every read through the mount is\n"
	"    checked against the model.  Any error other than EINTR fails the\n"
	"    run: on a hard mount the faults must be invisible.  One exception,\n"
	"    counted as a replay: a namespace call that fails with ENOENT or\n"
	"    EEXIST while the export shows it done (its reply was lost and the\n"
	"    retransmission missed the server's duplicate request cache).\n"
	"\n"
	"    At the end the faults are cleared and the signals stop; each\n"
	"    worker fsyncs, reads back and closes its files and lists its\n"
	"    directory through the mount; the mount is unmounted and each\n"
	"    worker checks the export directly: every byte, every size, no\n"
	"    file missing and none unexpected.\n"
	"\n"
	"    The seed is printed first.  The operations each worker does, the\n"
	"    rules and the signal schedule follow from it; where a fault or a\n"
	"    signal lands depends on timing, so a rerun with the same seed does\n"
	"    the same operations under the same kinds of faults, not the same\n"
	"    interleaving.\n"
	"\n"
	"OPTIONS\n";

static const char usage_text2[] =
	"    --seed N          the seed (default: from the time and pid)\n"
	"    --procs N         worker processes (default 4, at most 64)\n"
	"    --ops N           calls per worker, an implicit open or close\n"
	"                      included (default 1000)\n"
	"    --seconds S       run each worker for S seconds instead of --ops\n"
	"    --server HOST     the NFS server (default $INTRFS_TEST_SERVER,\n"
	"                      else 127.0.0.1)\n"
	"    --export PATH     the exported directory, a local path (default\n"
	"                      $INTRFS_TEST_EXPORT)\n"
	"    --nfs-port P      the server's NFS port ($INTRFS_TEST_NFS_PORT)\n"
	"    --mount-port Q    its MOUNT port ($INTRFS_TEST_MOUNT_PORT)\n"
	"    --intrfs BIN      the daemon (default $INTRFS_BIN, else the one\n"
	"                      built beside this program)\n"
	"    --netfault BIN    the fault proxy (default: the one built beside\n"
	"                      this program)\n"
	"    --mount-opts OPTS intrfs options besides port= and mountport=\n"
	"                      (default hard,intr,timeo=5,retrans=2)\n"
	"    --no-faults       no netfault rules (netfault still proxies)\n"
	"    --fault-kinds K,...\n"
	"                      only these kinds of rule: delay, drop,\n"
	"                      duplicate, reorder, reset, slice (default all).\n"
	"                      Without reset no retransmission can miss the\n"
	"                      server's duplicate request cache; with it, one\n"
	"                      can where intrfs cannot reconnect from its old\n"
	"                      port (netfault keeps the port when it does)\n"
	"    --no-signals      no signals to the workers\n"
	"    --signal-ms MS    mean time between two signals, over all the\n"
	"                      workers (default 20)\n"
	"    --stuck S         fail when a worker makes no progress for S\n"
	"                      seconds (default 120)\n"
	"    --workdir DIR     where the mount point, the control socket and\n"
	"                      the logs go, in a new directory (default $TMPDIR,\n"
	"                      else /tmp)\n"
	"    --keep            on failure, leave the directory on the export\n"
	"                      and the work directory (logs) in place\n"
	"    --self-test-corrupt\n"
	"                      test the exerciser itself: flip one byte on the\n"
	"                      export behind the mount's back before the final\n"
	"                      check, which must then fail\n"
	"    --self-test-link  test the exerciser itself: before the unmount,\n"
	"                      put a symbolic link in place of one of worker\n"
	"                      0's files through the mount (over NFS, as any\n"
	"                      client of the server can), pointing outside the\n"
	"                      export at a copy of its bytes: the check of the\n"
	"                      export must refuse to follow it\n"
	"    -v, --verbose     print every operation\n"
	"    -h, --help        print this text\n"
	"\n"
	"OUTPUT\n"
	"    First 'intrfs-exercise: seed=N ...'.  On success one line:\n"
	"    'intrfs-exercise: ok seed=N' with the operations done by kind,\n"
	"    the faults netfault applied, the signals sent, the EINTRs seen,\n"
	"    the duration and the rate.  On a mismatch or an unexpected error:\n"
	"    the seed, the worker, the file, the offset, what the model\n"
	"    expected and what was found, the worker's last 20 operations, and\n"
	"    the command that reruns the seed.\n"
	"\n"
	"EXIT STATUS\n"
	"    0 the export matches the model; 1 a mismatch, an unexpected error\n"
	"    or a worker stuck; 2 a usage error or a set-up failure (the\n"
	"    server, netfault or the mount could not be started); 128+N when\n"
	"    stopped by signal N (SIGINT, SIGTERM), after cleaning up.\n"
	"\n"
	"EXAMPLES\n"
	"    intrfs-exercise --export /srv/export --nfs-port 2049 \\\n"
	"                    --mount-port 20048 --seconds 300 --procs 8\n"
	"    intrfs-exercise --seed 1234 --ops 500 --no-signals -v\n";

static struct xopts o = {
	.procs = 4,
	.seconds = 0,
	.faults = true,
	.signals = true,
	.stuck_s = 120,
};

struct child {
	pid_t pid;
	int ctl;
	char state; /* the last byte it sent: 0, 'D', 'F', 'O' */
	bool reaped;
	int status;
};

static struct {
	struct child w[MAX_PROCS];
	struct xshared *sh;
	struct nf nf;
	pid_t daemon;
	char work[512], mnt[600], dlog[600];
	char local[700]; /* the run's directory on the export */
	/*
	 * The export's root and that directory name (O_PATH): every name
	 * the checks read there is resolved beneath them, never through a
	 * link a client of the server planted (tests/lib/beneath.h).
	 */
	int top;
	char sub[96];
	char source[1200];
	bool mounted;
	struct xrand r; /* the signals */
	uint64_t start_ns;
	unsigned signal_ms;
	uint64_t sigs_sent[3];
	bool seed_given;
	char argv_line[2048];
} g;

static volatile sig_atomic_t stop_req;

static void on_stop(int sig)
{
	stop_req = sig;
}

static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "intrfs-exercise: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Stops every process started and unmounts; leaves the directories. */
static void stop_all(void)
{
	int st;

	for (unsigned k = 0; k < o.procs; k++)
		if (g.w[k].pid > 0 && !g.w[k].reaped) {
			kill(g.w[k].pid, SIGKILL);
			waitpid(g.w[k].pid, &st, 0);
			g.w[k].reaped = true;
		}
	/* Unmounted, the daemon exits; one that never mounted is told to. */
	if (g.mounted)
		mntrig_stop(g.mnt, g.daemon, UMOUNT_DEADLINE_MS);
	else
		mntrig_end_child(g.daemon, UMOUNT_DEADLINE_MS);
	g.mounted = false;
	g.daemon = 0;
	nf_stop(&g.nf);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

/* A directory of the run's own (the work directory), by path. */
static void remove_tree(const char *path)
{
	if (path[0])
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* The run's directory on the export, never through a link planted there. */
static void remove_export_dir(void)
{
	int rc;

	if (!g.local[0])
		return;
	rc = beneath_remove_tree(g.top, g.sub);
	if (rc < 0)
		note("removing %s: %s", g.local, beneath_strerror(rc));
}

static void print_tail(const char *path, unsigned lines)
{
	char buf[65536];
	int fd = open(path, O_RDONLY);
	off_t size;
	ssize_t n;
	char *p;

	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	n = pread(fd, buf, sizeof(buf) - 1,
		  size > (off_t)sizeof(buf) - 1 ?
			  size - (off_t)sizeof(buf) + 1 :
			  0);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	p = buf + n;
	while (p > buf && lines) {
		p--;
		if (*p == '\n' && p + 1 < buf + n)
			lines--;
	}
	if (*p == '\n')
		p++;
	fprintf(stderr, "intrfs-exercise: the end of %s:\n%s", path, p);
}

/*
 * How long worker k has made no progress.  Its time is read before the
 * clock: the worker writes it all the time, and a time newer than the clock
 * read before it would make a busy worker look stuck forever.
 */
static uint64_t idle_ns(unsigned k)
{
	uint64_t last = __atomic_load_n(&g.sh[k].progress_ns, __ATOMIC_RELAXED);
	uint64_t now = xnow_ns();

	return now > last ? now - last : 0;
}

/*
 * On a failure, before anything is stopped: where each worker is, and what
 * netfault has in force and has done.
 */
static void print_state(void)
{
	static char ans[65536];
	uint64_t now = xnow_ns();

	for (unsigned k = 0; g.sh && k < o.procs; k++)
		fprintf(stderr,
			"intrfs-exercise: worker %u: step '%c', %" PRIu64
			" operations, last progress %.1f s ago%s%s\n",
			k, g.w[k].state ? g.w[k].state : '-', g.sh[k].ops,
			idle_ns(k) / 1e9, g.sh[k].cur[0] ? ", in: " : "",
			g.sh[k].cur);
	if (g.nf.pid > 0 && nf_ctl(&g.nf, "stats", ans, sizeof(ans)) == 0)
		fprintf(stderr, "intrfs-exercise: netfault at %.1f s: %s",
			(now - g.nf.start_ns) / 1e9, ans);
}

/* Ends the run: everything stopped, the directories removed or kept. */
static void __attribute__((noreturn)) finish(int code)
{
	bool keep = code != 0 && o.keep;

	if (code != 0 && code != 2)
		print_state();
	stop_all();
	if (code == 1) {
		print_tail(g.dlog, 40);
		note("FAILED seed=%" PRIu64 "; rerun: %s --seed %" PRIu64,
		     o.seed, g.argv_line, o.seed);
	}
	if (keep) {
		note("kept the export's directory %s and the work directory "
		     "%s (daemon log %s, netfault log %s)",
		     g.local, g.work, g.dlog, g.nf.log);
	} else {
		remove_export_dir();
		/* Never through a mount still there: detach it first. */
		umount2(g.mnt, MNT_DETACH);
		remove_tree(g.work);
	}
	exit(code);
}

static void __attribute__((noreturn, format(printf, 2, 3)))
die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "intrfs-exercise: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	finish(code);
}

static void mount_it(void)
{
	char opts[1024], err[256];
	int st, rc;

	snprintf(opts, sizeof(opts), "port=%u,mountport=%u%s%s", g.nf.nfs_port,
		 g.nf.mount_port, o.mount_opts[0] ? "," : "", o.mount_opts);
	snprintf(g.source, sizeof(g.source), "%s:%s", o.server, g.local);
	/* It unmounts cleanly if this process dies. */
	g.daemon = mntrig_spawn(o.intrfs, g.source, g.mnt, opts, g.dlog,
				PROC_PARENT_DEATH, err, sizeof(err));
	if (g.daemon < 0) {
		g.daemon = 0;
		die(2, "%s", err);
	}
	rc = mntrig_wait(g.daemon, g.mnt, START_DEADLINE_MS, &st);
	if (rc > 0) {
		g.daemon = 0;
		print_tail(g.dlog, 20);
		die(2, "intrfs exited (status 0x%x) instead of mounting", st);
	}
	if (rc < 0)
		die(2, "intrfs did not mount %s within %d ms", g.mnt,
		    START_DEADLINE_MS);
	g.mounted = true;
}

/* Adds a random rule; past NF_MAX_RULES the oldest goes. */
static void fault_step(void)
{
	char rule[300], ans[4096];

	if (nf_add_random(&g.nf, rule, sizeof(rule), ans, sizeof(ans)) < 0)
		die(1, "netfault: '%s': %s", rule, ans);
	if (o.verbose)
		note("rule %d: %s", g.nf.ids[g.nf.nrules - 1], rule);
}

static const int sig_kinds[3] = { SIGUSR1, SIGUSR2, SIGALRM };

static void signal_step(void)
{
	unsigned k = (unsigned)xrand_below(&g.r, o.procs);
	unsigned p = (unsigned)xrand_below(&g.r, 100);
	unsigned s = p < 45 ? 0 : p < 70 ? 1 : 2;

	if (g.w[k].state == 0 && !g.w[k].reaped &&
	    kill(g.w[k].pid, sig_kinds[s]) == 0)
		g.sigs_sent[s]++;
}

/*
 * The workers' signals are blocked from before the fork until each worker
 * has its handlers: one sent at once would kill it with the default action.
 */
static void start_workers(void)
{
	sigset_t set, old;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, &old);
	g.sh = mmap(NULL, sizeof(*g.sh) * o.procs, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g.sh == MAP_FAILED)
		die(2, "mmap: %s", strerror(errno));
	for (unsigned k = 0; k < o.procs; k++) {
		int sp[2];
		pid_t pid;

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
			die(2, "socketpair: %s", strerror(errno));
		__atomic_store_n(&g.sh[k].progress_ns, xnow_ns(),
				 __ATOMIC_RELAXED);
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			die(2, "fork: %s", strerror(errno));
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			for (unsigned j = 0; j < k; j++)
				close(g.w[j].ctl);
			close(sp[0]);
			_exit(worker_main(&o, k, &g.sh[k], sp[1], g.mnt,
					  g.local, g.top, g.sub));
		}
		close(sp[1]);
		g.w[k].pid = pid;
		g.w[k].ctl = sp[0];
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* A worker ended before it should: its own report is on stderr. */
static void worker_died(unsigned k)
{
	int st = g.w[k].status;

	if (WIFEXITED(st) && WEXITSTATUS(st) == 1)
		die(1,
		    "worker %u found a mismatch or an error (its report "
		    "is above): %s",
		    k, g.sh[k].why[0] ? g.sh[k].why : "(no reason recorded)");
	die(1, "worker %u ended unexpectedly (%s %d) in: %s", k,
	    WIFEXITED(st) ? "exit" : "signal",
	    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), g.sh[k].cur);
}

static void check_helpers(void)
{
	int st;

	if (g.daemon > 0 && waitpid(g.daemon, &st, WNOHANG) == g.daemon) {
		g.daemon = 0;
		die(1, "the intrfs daemon ended during the run (status 0x%x)",
		    st);
	}
	if (g.nf.pid > 0 && waitpid(g.nf.pid, &st, WNOHANG) == g.nf.pid) {
		g.nf.pid = 0;
		die(1, "netfault ended during the run (status 0x%x)", st);
	}
}

/* What /proc says of a stuck worker: where it waits. */
static void print_proc(pid_t pid, const char *file)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		fprintf(stderr, "intrfs-exercise: %s: %s%s", path, buf,
			buf[n - 1] == '\n' ? "" : "\n");
	}
}

/*
 * Reads what the workers sent and reaps those that ended; fails the run
 * when one ended or made no progress for o.stuck_s.  Returns once every
 * worker has reached state want, or after timeout_ms.
 */
static bool poll_workers(char want, int timeout_ms)
{
	struct pollfd p[MAX_PROCS];
	unsigned n = 0, at = 0;

	for (unsigned k = 0; k < o.procs; k++) {
		/* One at want waits for the next step: no more from it. */
		p[k].fd = g.w[k].state == want ? -1 : g.w[k].ctl;
		p[k].events = POLLIN;
		p[k].revents = 0;
		at += g.w[k].state == want;
	}
	if (at == o.procs)
		return true;
	if (poll(p, o.procs, timeout_ms) > 0) {
		for (unsigned k = 0; k < o.procs; k++) {
			char c;

			if (!p[k].revents)
				continue;
			if (read(g.w[k].ctl, &c, 1) == 1) {
				g.w[k].state = c;
				continue;
			}
			waitpid(g.w[k].pid, &g.w[k].status, 0);
			g.w[k].reaped = true;
			worker_died(k);
		}
	}
	if (stop_req)
		die(128 + (int)stop_req, "stopped by signal %d", (int)stop_req);
	check_helpers();
	for (unsigned k = 0; k < o.procs; k++) {
		if (g.w[k].state == want) {
			n++;
			continue;
		}
		if (idle_ns(k) > (uint64_t)o.stuck_s * 1000000000ull) {
			/* The daemon logs its tasks: twice, to tell stuck
			 * ones (there both times) from passing ones. */
			if (g.daemon > 0)
				kill(g.daemon, SIGUSR1);
			usleep(1000000);
			if (g.daemon > 0)
				kill(g.daemon, SIGUSR1);
			usleep(300000);
			print_proc(g.w[k].pid, "wchan");
			print_proc(g.w[k].pid, "syscall");
			print_proc(g.w[k].pid, "stack");
			die(1,
			    "worker %u made no progress for %u s (last step "
			    "'%c', waiting for '%c') in: %s",
			    k, o.stuck_s, g.w[k].state ? g.w[k].state : '-',
			    want,
			    g.sh[k].cur[0] ? g.sh[k].cur : "(between calls)");
		}
	}
	return n == o.procs;
}

/* The next step: each worker's time without progress counts from now. */
static void tell_all(char c)
{
	for (unsigned k = 0; k < o.procs; k++) {
		__atomic_store_n(&g.sh[k].progress_ns, xnow_ns(),
				 __ATOMIC_RELAXED);
		if (write(g.w[k].ctl, &c, 1) != 1)
			die(1, "worker %u is gone", k);
	}
}

static void run(void)
{
	uint64_t next_sig = xnow_ns(), next_fault = xnow_ns();

	while (!poll_workers('D', 5)) {
		uint64_t now = xnow_ns();

		if (o.signals && now >= next_sig) {
			signal_step();
			next_sig =
				now + (1 + xrand_below(&g.r, 2 * g.signal_ms)) *
					      1000000ull;
		}
		if (o.faults && now >= next_fault) {
			fault_step();
			next_fault = now + (300 + xrand_below(&g.r, 1700)) *
						   1000000ull;
		}
	}
}

static void summary(void)
{
	char ans[65536], kinds[1024];
	uint64_t count[XOP_N] = { 0 }, eintr = 0, retries = 0, replays = 0,
		 ops = 0, sigs = 0, wr = 0, rd = 0;
	double secs = (xnow_ns() - g.start_ns) / 1e9;
	long faults = -1;
	size_t n = 0;

	if (nf_ctl(&g.nf, "stats", ans, sizeof(ans)) == 0)
		faults = netrig_json_long(ans, "faults");
	for (unsigned k = 0; k < o.procs; k++) {
		for (unsigned i = 0; i < XOP_N; i++)
			count[i] += g.sh[k].count[i];
		eintr += g.sh[k].eintr;
		retries += g.sh[k].retries;
		replays += g.sh[k].replays;
		sigs += g.sh[k].sigs;
		wr += g.sh[k].bytes_written;
		rd += g.sh[k].bytes_read;
	}
	kinds[0] = '\0';
	for (unsigned i = 0; i < XOP_N; i++) {
		ops += count[i];
		n += (size_t)snprintf(kinds + n, sizeof(kinds) - n,
				      "%s%s=%" PRIu64, i ? "," : "",
				      xop_names[i], count[i]);
	}
	printf("intrfs-exercise: ok seed=%" PRIu64 " procs=%u ops=%" PRIu64
	       " (%s) MiB_written=%.1f MiB_read=%.1f rules=%" PRIu64
	       " faults=%ld signals=%" PRIu64 " (usr1=%" PRIu64 ",usr2=%" PRIu64
	       ",alrm=%" PRIu64 ") handled=%" PRIu64 " eintr=%" PRIu64
	       " retries=%" PRIu64 " replays=%" PRIu64
	       " seconds=%.1f ops_per_s=%.0f\n",
	       o.seed, o.procs, ops, kinds, wr / 1048576.0, rd / 1048576.0,
	       g.nf.added, faults,
	       g.sigs_sent[0] + g.sigs_sent[1] + g.sigs_sent[2], g.sigs_sent[0],
	       g.sigs_sent[1], g.sigs_sent[2], sigs, eintr, retries, replays,
	       secs, ops / secs);
	fflush(stdout);
}

/* The run's directory on the export holds the workers' and nothing else. */
static void check_top(void)
{
	bool seen[MAX_PROCS] = { false };
	int fd = beneath_open(g.top, g.sub, O_RDONLY | O_DIRECTORY, 0);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;

	if (!d)
		die(1, "opendir %s: %s", g.local,
		    beneath_strerror(fd < 0 ? fd : -errno));
	while ((e = readdir(d))) {
		unsigned k;
		char end;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (sscanf(e->d_name, "w%u%c", &k, &end) != 1 || k >= o.procs) {
			closedir(d);
			die(1, "MISMATCH: unexpected entry %s/%s on the export",
			    g.local, e->d_name);
		}
		seen[k] = true;
	}
	closedir(d);
	for (unsigned k = 0; k < o.procs; k++)
		if (!seen[k])
			die(1, "MISMATCH: %s/w%u is missing on the export",
			    g.local, k);
}

static void end_phases(void)
{
	char ans[4096];
	uint64_t faults_ns;

	/* The faults first: the workers' last calls go through cleanly. */
	if (nf_clear(&g.nf, ans, sizeof(ans)) < 0)
		die(1, "netfault: clear: %s", ans);
	faults_ns = xnow_ns();
	tell_all('C');
	while (!poll_workers('F', 100))
		;
	if (o.verbose)
		note("the workers synced and checked in %.1f s",
		     (xnow_ns() - faults_ns) / 1e9);
	{
		uint64_t end = xnow_ns() + UMOUNT_DEADLINE_MS * 1000000ull;
		int st;

		while (umount2(g.mnt, 0) < 0) {
			if (errno != EBUSY || xnow_ns() > end)
				die(1, "umount %s: %s", g.mnt, strerror(errno));
			usleep(20000);
		}
		g.mounted = false;
		while (waitpid(g.daemon, &st, WNOHANG) != g.daemon) {
			if (xnow_ns() > end)
				die(1, "intrfs did not exit after the unmount");
			usleep(5000);
		}
		g.daemon = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die(1,
			    "intrfs exited with status 0x%x after the "
			    "unmount",
			    st);
	}
	tell_all('U');
	while (!poll_workers('O', 100))
		;
	check_top();
	summary();
}

static unsigned env_port(const char *name)
{
	const char *v = getenv(name);

	return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

static void __attribute__((noreturn)) usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "intrfs-exercise: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'intrfs-exercise --help'.\n");
	exit(2);
}

static uint64_t number(const char *opt, const char *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(v, &end, 0);
	if (errno || *end || !*v || v[0] == '-')
		usage_error("%s: '%s' is not a number", opt, v);
	return n;
}

/* The binary built beside this one (build/tests/ -> build/what). */
static const char *sibling(const char *env, const char *built)
{
	const char *v = env ? getenv(env) : NULL;

	return v && *v ? v : built;
}

static void parse(int argc, char **argv)
{
	enum {
		O_SEED = 256,
		O_PROCS,
		O_OPS,
		O_SECONDS,
		O_SERVER,
		O_EXPORT,
		O_NFSPORT,
		O_MOUNTPORT,
		O_INTRFS,
		O_NETFAULT,
		O_MOPTS,
		O_NOFAULTS,
		O_NOSIGNALS,
		O_SIGMS,
		O_STUCK,
		O_WORKDIR,
		O_KEEP,
		O_CORRUPT,
		O_LINK,
		O_KINDS,
	};
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, O_SEED },
		{ "procs", required_argument, NULL, O_PROCS },
		{ "ops", required_argument, NULL, O_OPS },
		{ "seconds", required_argument, NULL, O_SECONDS },
		{ "server", required_argument, NULL, O_SERVER },
		{ "export", required_argument, NULL, O_EXPORT },
		{ "nfs-port", required_argument, NULL, O_NFSPORT },
		{ "mount-port", required_argument, NULL, O_MOUNTPORT },
		{ "intrfs", required_argument, NULL, O_INTRFS },
		{ "netfault", required_argument, NULL, O_NETFAULT },
		{ "mount-opts", required_argument, NULL, O_MOPTS },
		{ "no-faults", no_argument, NULL, O_NOFAULTS },
		{ "fault-kinds", required_argument, NULL, O_KINDS },
		{ "no-signals", no_argument, NULL, O_NOSIGNALS },
		{ "signal-ms", required_argument, NULL, O_SIGMS },
		{ "stuck", required_argument, NULL, O_STUCK },
		{ "workdir", required_argument, NULL, O_WORKDIR },
		{ "keep", no_argument, NULL, O_KEEP },
		{ "self-test-corrupt", no_argument, NULL, O_CORRUPT },
		{ "self-test-link", no_argument, NULL, O_LINK },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *workdir = getenv("TMPDIR");
	char bad[64];
	size_t n = 0;
	int c;

	o.server = getenv("INTRFS_TEST_SERVER");
	o.export_dir = getenv("INTRFS_TEST_EXPORT");
	o.nfs_port = env_port("INTRFS_TEST_NFS_PORT");
	o.mount_port = env_port("INTRFS_TEST_MOUNT_PORT");
	o.intrfs = sibling("INTRFS_BIN", EXERCISE_INTRFS_BIN);
	o.netfault = EXERCISE_NETFAULT_BIN;
	o.mount_opts = "hard,intr,timeo=5,retrans=2";
	g.signal_ms = 20;
	g.nf.kinds = (1u << NF_KIND_N) - 1;
	while ((c = getopt_long(argc, argv, "vh", lo, NULL)) != -1) {
		switch (c) {
		case O_SEED:
			o.seed = number("--seed", optarg);
			g.seed_given = true;
			break;
		case O_PROCS:
			o.procs = (unsigned)number("--procs", optarg);
			if (o.procs < 1 || o.procs > MAX_PROCS)
				usage_error("--procs: from 1 to %d", MAX_PROCS);
			break;
		case O_OPS:
			o.ops = number("--ops", optarg);
			break;
		case O_SECONDS:
			o.seconds = (double)number("--seconds", optarg);
			break;
		case O_SERVER:
			o.server = optarg;
			break;
		case O_EXPORT:
			o.export_dir = optarg;
			break;
		case O_NFSPORT:
			o.nfs_port = (unsigned)number("--nfs-port", optarg);
			break;
		case O_MOUNTPORT:
			o.mount_port = (unsigned)number("--mount-port", optarg);
			break;
		case O_INTRFS:
			o.intrfs = optarg;
			break;
		case O_NETFAULT:
			o.netfault = optarg;
			break;
		case O_MOPTS:
			o.mount_opts = optarg;
			break;
		case O_NOFAULTS:
			o.faults = false;
			break;
		case O_KINDS:
			g.nf.kinds = nf_parse_kinds(optarg, bad, sizeof(bad));
			if (!g.nf.kinds)
				usage_error("--fault-kinds: unknown kind '%s'",
					    bad);
			break;
		case O_NOSIGNALS:
			o.signals = false;
			break;
		case O_SIGMS:
			g.signal_ms = (unsigned)number("--signal-ms", optarg);
			if (!g.signal_ms)
				usage_error("--signal-ms: at least 1");
			break;
		case O_STUCK:
			o.stuck_s = (unsigned)number("--stuck", optarg);
			break;
		case O_WORKDIR:
			workdir = optarg;
			break;
		case O_KEEP:
			o.keep = true;
			break;
		case O_CORRUPT:
			o.self_test_corrupt = true;
			break;
		case O_LINK:
			o.self_test_link = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			fputs(usage_text2, stdout);
			exit(0);
		default:
			usage_error("unknown option");
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (o.ops && o.seconds > 0)
		usage_error("give --ops or --seconds, not both");
	if (!o.ops && o.seconds <= 0)
		o.ops = 1000;
	if (!o.server || !*o.server)
		o.server = "127.0.0.1";
	if (!o.export_dir || !*o.export_dir)
		usage_error("no export: give --export (or set "
			    "INTRFS_TEST_EXPORT)");
	if (!o.nfs_port || !o.mount_port)
		usage_error("no ports: give --nfs-port and --mount-port (or "
			    "set INTRFS_TEST_NFS_PORT, _MOUNT_PORT)");
	if (!g.seed_given)
		o.seed =
			((uint64_t)time(NULL) * 1000003u + (uint64_t)getpid()) %
			1000000000u;
	snprintf(g.work, sizeof(g.work), "%s/intrfs-exercise.XXXXXX",
		 workdir && *workdir ? workdir : "/tmp");
	/* The command that reruns this seed: every option but --seed. */
	for (int i = 0; i < argc && n < sizeof(g.argv_line); i++) {
		if (strcmp(argv[i], "--seed") == 0) {
			i++;
			continue;
		}
		if (strncmp(argv[i], "--seed=", 7) == 0)
			continue;
		n += (size_t)snprintf(g.argv_line + n, sizeof(g.argv_line) - n,
				      "%s%s", i ? " " : "", argv[i]);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_stop };
	unsigned tries = 0;
	int rc;

	parse(argc, argv);
	if (o.ops)
		printf("intrfs-exercise: seed=%" PRIu64 " procs=%u ops=%" PRIu64
		       " mount-opts=%s\n",
		       o.seed, o.procs, o.ops, o.mount_opts);
	else
		printf("intrfs-exercise: seed=%" PRIu64 " procs=%u seconds=%.0f"
		       " mount-opts=%s\n",
		       o.seed, o.procs, o.seconds, o.mount_opts);
	fflush(stdout);
	g.r.s = xmix(o.seed ^ 0x5167);
	g.nf.r.s = xmix(o.seed ^ 0xfa17);
	g.start_ns = xnow_ns();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(g.work)) {
		g.work[0] = '\0';
		die(2, "mkdtemp: %s", strerror(errno));
	}
	snprintf(g.mnt, sizeof(g.mnt), "%s/mnt", g.work);
	snprintf(g.nf.sock, sizeof(g.nf.sock), "%s/netfault.sock", g.work);
	snprintf(g.nf.log, sizeof(g.nf.log), "%s/netfault.log", g.work);
	snprintf(g.nf.err, sizeof(g.nf.err), "%s/netfault.err", g.work);
	snprintf(g.dlog, sizeof(g.dlog), "%s/intrfs.log", g.work);
	if (mkdir(g.mnt, 0755) < 0)
		die(2, "mkdir %s: %s", g.mnt, strerror(errno));
	snprintf(g.sub, sizeof(g.sub), "exercise-%" PRIu64 "-%d", o.seed,
		 (int)getpid());
	snprintf(g.local, sizeof(g.local), "%s/%s", o.export_dir, g.sub);
	g.top = beneath_root(o.export_dir);
	rc = g.top < 0 ? g.top : beneath_mkdir_mode(g.top, g.sub, 0777);
	if (rc < 0) {
		g.local[0] = '\0';
		die(2, "mkdir on the export %s: %s", o.export_dir,
		    beneath_strerror(rc));
	}
	while ((rc = nf_start(&g.nf, &o, &stop_req)) == -EAGAIN && ++tries < 5)
		;
	if (rc < 0)
		die(2, "netfault did not start: %s (%s)", strerror(-rc),
		    g.nf.err);
	proc_note_pid(g.nf.pid);
	mount_it();
	start_workers();
	run();
	end_phases();
	finish(0);
}
