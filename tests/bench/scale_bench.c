/*
 * scale_bench: concurrent streams, each a process on its own file.
 *
 *   scale_bench write DIR N MIB   N writers of DIR/sNN (MIB/N MiB each,
 *                                 1 MiB writes, then fsync)
 *   scale_bench read DIR N MIB    N readers of the files write made
 *                                 (1 MiB reads; drop the caches first)
 *   scale_bench read DIR N MIB intr|calm
 *                                 the N readers, and one more process
 *                                 reading DIR/x (a 1 MiB O_DIRECT read
 *                                 every 10 ms, no SA_RESTART): with intr
 *                                 it is sent SIGINT every millisecond, so
 *                                 that its requests are interrupted
 *                                 while the N others are busy; with calm
 *                                 it reads the same way, unsignalled.  It
 *                                 starts a read on the same clock either
 *                                 way, so the server does the same work
 *                                 (an interrupted READ is still answered)
 *
 * Prints mibs=TOTAL (the N streams' bytes over the time from the start
 * until the last of them ended) and, with intr|calm, eintr=COUNT (the
 * extra reader's reads that ended with EINTR) and extra_reads=COUNT.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <intrfs/region.h>

#define CHUNK (1 << 20)
/* The extra reader starts a read this often. */
#define EXTRA_PERIOD_NS 10000000

static volatile sig_atomic_t stop_extra;

static void on_sigint(int sig)
{
	(void)sig;
}

static void on_sigterm(int sig)
{
	(void)sig;
	stop_extra = 1;
}

static void fail(const char *what)
{
	perror(what);
	_exit(1);
}

static void stream(const char *path, int writing, long mib)
{
	char *buf = malloc(CHUNK);
	int fd;

	if (!buf)
		_exit(1);
	memset(buf, 'a' + (int)(mib % 26), CHUNK);
	fd = writing ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) :
		       open(path, O_RDONLY);
	if (fd < 0)
		fail(path);
	for (long i = 0; i < mib; i++) {
		ssize_t n = writing ? write(fd, buf, CHUNK) :
				      read(fd, buf, CHUNK);

		if (n != CHUNK)
			fail(path);
	}
	if (writing && fsync(fd) < 0)
		fail(path);
	close(fd);
	_exit(0);
}

/* The extra reader: counts in shared memory how its reads ended. */
static void extra(const char *path, long *counts)
{
	struct sigaction sa = { 0 };
	struct timespec next;
	void *buf;
	int fd;

	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART */
	sa.sa_handler = on_sigterm;
	sigaction(SIGTERM, &sa, NULL);
	if (posix_memalign(&buf, 4096, CHUNK))
		_exit(1);
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		fail(path);
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!stop_extra) {
		ssize_t n = pread(fd, buf, CHUNK, 0);

		if (n < 0 && errno == EINTR)
			__atomic_add_fetch(&counts[0], 1, __ATOMIC_RELAXED);
		else if (n < 0)
			fail(path);
		__atomic_add_fetch(&counts[1], 1, __ATOMIC_RELAXED);
		next.tv_nsec += EXTRA_PERIOD_NS;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		while (!stop_extra &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
				       NULL) == EINTR)
			;
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	char path[4096];
	const char *mode = argc > 5 ? argv[5] : NULL;
	long mib, *counts;
	pid_t *pids, xpid = 0;
	uint64_t t0;
	int n, writing, rc = 0;

	if (argc < 5 || argc > 6 ||
	    (strcmp(argv[1], "read") && strcmp(argv[1], "write")) ||
	    (n = atoi(argv[3])) < 1 || (mib = atol(argv[4])) < n ||
	    (mode && strcmp(mode, "intr") && strcmp(mode, "calm"))) {
		fprintf(stderr, "usage: scale_bench read|write DIR N MIB "
				"[intr|calm]\n");
		return 2;
	}
	writing = !strcmp(argv[1], "write");
	pids = calloc((size_t)n, sizeof(*pids));
	counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!pids || counts == MAP_FAILED)
		return 1;
	if (mode) {
		snprintf(path, sizeof(path), "%s/x", argv[2]);
		xpid = fork();
		if (xpid == 0)
			extra(path, counts);
		usleep(20000);
	}
	t0 = region_now_ns();
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/s%02d", argv[2], i);
		pids[i] = fork();
		if (pids[i] == 0)
			stream(path, writing, mib / n);
	}
	for (int left = n; left > 0;) {
		int st;
		pid_t p;

		if (mode && !strcmp(mode, "intr")) {
			kill(xpid, SIGINT);
			usleep(1000);
			p = waitpid(-1, &st, WNOHANG);
			if (p == 0)
				continue;
		} else {
			p = waitpid(-1, &st, 0);
		}
		if (p < 0)
			break;
		if (p == xpid) {
			fprintf(stderr,
				"scale_bench: the extra reader failed\n");
			rc = 1;
			xpid = 0;
			mode = NULL;
			continue;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = 1;
		left--;
	}
	printf("mibs=%.1f\n",
	       (double)(mib / n * n) / ((double)(region_now_ns() - t0) / 1e9));
	if (xpid > 0) {
		kill(xpid, SIGTERM);
		kill(xpid, SIGINT);
		waitpid(xpid, NULL, 0);
		printf("eintr=%ld\nextra_reads=%ld\n", counts[0], counts[1]);
	}
	return rc;
}
