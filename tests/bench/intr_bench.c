/*
 * intr_bench: how long a signal takes to end a call stuck in a FUSE
 * request.  A child loops over O_DIRECT reads of FILE (the file system
 * never answers them: a stalled server, or the floor daemon); the parent
 * waits until the child is inside the read, sends the signal and times how
 * long until the call is over.
 *
 *   intr_bench intr FILE N   SIGINT, the read fails with EINTR (one child
 *                            does N reads); prints intr_p50_us/intr_p99_us
 *   intr_bench kill FILE N   SIGKILL, until the child is reaped (a child
 *                            per round); prints kill_p50_ms/kill_p99_ms
 *
 * The file is opened before anything else, so that children inherit an
 * open file.  STALL_PID=pid: stop that process (the server) once the file
 * is open, wait until all its threads have stopped, and let it go on at
 * the end.  PREFIX=name replaces "intr"/"kill" in the names printed.
 * BLOCKED=n: n requests blocked in all, the measured one and n-1 other
 * readers, each stuck in its own read of FILE for the whole run.
 */
#include "proc.h"

#include <intrfs/region.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The server to stop for the measurement, and to resume on the way out. */
static pid_t stall_pid;

static void on_sigint(int sig)
{
	(void)sig;
}

static void wait_in_fuse(pid_t pid)
{
	uint64_t end = region_now_ns() + 10000000000ull;

	while (!proc_in_fuse(pid)) {
		if (region_now_ns() > end) {
			fprintf(stderr, "intr_bench: the read never blocked "
					"in FUSE (is the server stalled?)\n");
			kill(pid, SIGKILL);
			if (stall_pid > 0)
				kill(stall_pid, SIGCONT);
			exit(1);
		}
		usleep(100);
	}
	/*
	 * Inside the daemon, not only entering the kernel.  Nothing outside
	 * shows that for the floor daemon, which sends no call: both file
	 * systems get the same 2 ms, before the clock starts.
	 */
	usleep(2000);
}

/* The child: announce each read on out, report how it ended on out. */
static void reader(int fd, int n, int out, int in)
{
	struct sigaction sa = { 0 };
	void *buf;

	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART */
	if (posix_memalign(&buf, 4096, 4096))
		_exit(2);
	for (int i = 0; i < n; i++) {
		char c = 'r';
		int e;

		if (read(in, &c, 1) != 1)
			_exit(3);
		e = pread(fd, buf, 4096, 0) < 0 ? errno : 0;
		c = e == EINTR ? 'i' : 'x';
		if (write(out, &c, 1) != 1)
			_exit(3);
	}
	_exit(0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void print(const char *name, uint64_t *v, int n, double unit,
		  const char *suffix)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	printf("%s_p50_%s=%.1f\n", name, suffix, (double)v[n / 2] / unit);
	printf("%s_p99_%s=%.1f\n", name, suffix,
	       (double)v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / unit);
}

/*
 * Starts a child that makes one read of fd and waits until it is stuck in
 * the file system; returns its pid.
 */
static pid_t start_stuck_reader(int fd)
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up) || pipe(down))
		exit(1);
	pid = fork();
	if (pid == 0)
		reader(fd, 1, up[1], down[0]);
	if (pid < 0 || write(down[1], "g", 1) != 1)
		exit(1);
	wait_in_fuse(pid);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	return pid;
}

/* Other readers, stuck in FILE for the whole run: the load. */
static pid_t *others, parent;
static int n_others;

static void block_others(int fd, int n)
{
	others = calloc((size_t)(n > 0 ? n : 1), sizeof(*others));
	for (int i = 0; i < n; i++)
		others[n_others++] = start_stuck_reader(fd);
}

static void end_others(void)
{
	if (getpid() != parent)
		return;
	for (int i = 0; i < n_others; i++)
		kill(others[i], SIGKILL);
	for (int i = 0; i < n_others; i++)
		waitpid(others[i], NULL, 0);
}

int main(int argc, char **argv)
{
	const char *stall = getenv("STALL_PID");
	const char *blocked = getenv("BLOCKED");
	int fd;
	const char *prefix = getenv("PREFIX");
	uint64_t *lat;
	int n;

	if (argc != 4 || (strcmp(argv[1], "intr") && strcmp(argv[1], "kill"))) {
		fprintf(stderr, "usage: intr_bench intr|kill FILE N\n");
		return 2;
	}
	n = atoi(argv[3]);
	if (n < 1)
		n = 1;
	lat = calloc((size_t)n, sizeof(*lat));
	if (!prefix)
		prefix = argv[1];
	stall_pid = stall ? (pid_t)atoi(stall) : 0;
	fd = open(argv[2], O_RDONLY | O_DIRECT);
	if (fd < 0) {
		perror(argv[2]);
		return 1;
	}
	if (stall_pid > 0 && !proc_stop(stall_pid, 5000)) {
		fprintf(stderr, "intr_bench: pid %d did not stop (SIGSTOP)\n",
			(int)stall_pid);
		kill(stall_pid, SIGCONT);
		return 1;
	}
	parent = getpid();
	atexit(end_others);
	if (blocked && atoi(blocked) > 1)
		block_others(fd, atoi(blocked) - 1);

	if (!strcmp(argv[1], "intr")) {
		int up[2], down[2];
		pid_t pid;

		if (pipe(up) || pipe(down))
			return 1;
		pid = fork();
		if (pid == 0)
			reader(fd, n, up[1], down[0]);
		close(up[1]);
		close(down[0]);
		for (int i = 0; i < n; i++) {
			uint64_t t0;
			char c;

			if (write(down[1], "g", 1) != 1)
				return 1;
			wait_in_fuse(pid);
			t0 = region_now_ns();
			kill(pid, SIGINT);
			if (read(up[0], &c, 1) != 1 || c != 'i') {
				fprintf(stderr, "intr_bench: the read did not "
						"fail with EINTR\n");
				kill(pid, SIGKILL);
				if (stall_pid > 0)
					kill(stall_pid, SIGCONT);
				return 1;
			}
			lat[i] = region_now_ns() - t0;
		}
		waitpid(pid, NULL, 0);
		print(prefix, lat, n, 1e3, "us");
	} else {
		for (int i = 0; i < n; i++) {
			uint64_t t0;
			pid_t pid;

			pid = start_stuck_reader(fd);
			t0 = region_now_ns();
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			lat[i] = region_now_ns() - t0;
		}
		print(prefix, lat, n, 1e6, "ms");
	}
	if (stall_pid > 0)
		kill(stall_pid, SIGCONT);
	free(lat);
	return 0;
}
