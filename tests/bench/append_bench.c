/*
 * append_bench: writers appending lines to one log, as shell loops of
 * `echo LINE >> log` do, each line its own open(O_WRONLY|O_APPEND|O_CREAT),
 * write() and close().  One writer per FILE argument, a process each; the
 * FILEs name one log through different mounts (two clients) or the same
 * mount (one client).  Writer K (1, 2, ...) writes "wK-NNNN" for NNNN =
 * 0001..COUNT, padded with 3 * (K - 1) dots so that the writers' lines
 * differ in length (a line written over another of a different length
 * leaves a torn one, as in a real log), then a newline.
 *
 *   append_bench [--count N] [--lock none|flock|fcntl] [--turns] FILE...
 *
 * --lock flock takes flock(LOCK_EX) on the opened file before its write,
 * fcntl a whole-file F_SETLKW write lock; close() lets go of either.
 * --turns runs the writers one after another instead of all at once.
 *
 * Prints one JSON object: the workload, the time from the start until the
 * last writer ended (wall_ns; with --turns the sum of the writers'), each
 * writer's time, and the calls that failed with the first failure's text.
 * What the log holds is for the caller to read (tests/bench/append.py).
 * Exit 0 when every writer ran, whatever the calls returned; 2 bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The padding of writer K's lines: PAD_STEP * (K - 1) dots. */
#define PAD_STEP 3
#define MAX_WRITERS 32
#define MAX_COUNT 9999

enum lock_kind { LOCK_NONE, LOCK_FLOCK, LOCK_FCNTL };
static const char *const lock_names[] = { "none", "flock", "fcntl" };

/* What a writer tells the parent through its pipe. */
struct report {
	uint64_t ns;
	unsigned failed; /* calls that failed */
	char first[160]; /* the first failure */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void note(struct report *r, unsigned line, const char *call)
{
	if (r->failed++ == 0)
		snprintf(r->first, sizeof(r->first), "line %u: %s: %s", line,
			 call, strerror(errno));
}

static int take_lock(int fd, enum lock_kind lock)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	switch (lock) {
	case LOCK_FLOCK:
		return flock(fd, LOCK_EX);
	case LOCK_FCNTL:
		return fcntl(fd, F_SETLKW, &fl);
	default:
		return 0;
	}
}

/* Writer k's COUNT appends to path; waits on go_fd (EOF) before the first. */
static void writer(unsigned k, const char *path, unsigned count,
		   enum lock_kind lock, int go_fd, int out_fd)
{
	unsigned pad = PAD_STEP * (k - 1);
	struct report r = { 0 };
	char line[128], c;
	uint64_t t0;
	int len;

	while (read(go_fd, &c, 1) > 0)
		;
	t0 = now_ns();
	for (unsigned i = 1; i <= count; i++) {
		int fd;

		len = snprintf(line, sizeof(line), "w%u-%04u", k, i);
		memset(line + len, '.', pad);
		len += (int)pad;
		line[len++] = '\n';
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0666);
		if (fd < 0) {
			note(&r, i, "open");
			continue;
		}
		if (take_lock(fd, lock))
			note(&r, i, lock_names[lock]);
		if (write(fd, line, (size_t)len) != len)
			note(&r, i, "write");
		if (close(fd))
			note(&r, i, "close");
	}
	r.ns = now_ns() - t0;
	if (write(out_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(3);
	_exit(0);
}

/* Reads writer k's report once it has ended, and reaps it. */
static bool collect(unsigned k, pid_t pid, int fd, struct report *r)
{
	bool ok = read(fd, r, sizeof(*r)) == (ssize_t)sizeof(*r);
	int status;

	if (!ok)
		fprintf(stderr, "append_bench: writer %u died\n", k + 1);
	close(fd);
	waitpid(pid, &status, 0);
	return ok;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: append_bench [--count N] [--lock none|flock|fcntl] "
		"[--turns] FILE...\n"
		"One writer per FILE (the same log through one mount or "
		"several), each\n"
		"appending COUNT lines (default 200), a line an "
		"open(O_APPEND), write, close,\n"
		"as `echo LINE >> FILE`.  Writer K writes \"wK-NNNN\" and "
		"%d*(K-1) dots.\n"
		"  --lock flock|fcntl  lock the opened file before each write\n"
		"  --turns             one writer after another, not all at "
		"once\n"
		"Prints one JSON object with the times and failed calls.\n",
		PAD_STEP);
}

/* A JSON string: what a failure's text may hold, escaped. */
static void put_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "lock", required_argument, NULL, 'l' },
		{ "turns", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct report reports[MAX_WRITERS];
	pid_t pids[MAX_WRITERS];
	enum lock_kind lock = LOCK_NONE;
	int go[2], out_fds[MAX_WRITERS], opt;
	unsigned count = 200, writers, k;
	bool turns = false, ok = true;
	uint64_t t0, wall = 0;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			count = (unsigned)strtoul(optarg, NULL, 10);
			if (count < 1 || count > MAX_COUNT) {
				fprintf(stderr,
					"append_bench: --count is 1 to %d\n",
					MAX_COUNT);
				return 2;
			}
			break;
		case 'l':
			for (lock = LOCK_NONE; lock <= LOCK_FCNTL; lock++)
				if (strcmp(optarg, lock_names[lock]) == 0)
					break;
			if (lock > LOCK_FCNTL) {
				fprintf(stderr,
					"append_bench: --lock is none, flock "
					"or fcntl, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 't':
			turns = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	writers = (unsigned)(argc - optind);
	if (writers < 1 || writers > MAX_WRITERS) {
		fprintf(stderr, "append_bench: 1 to %d FILEs\n", MAX_WRITERS);
		usage(stderr);
		return 2;
	}

	/*
	 * All at once: every writer waits for EOF on one pipe, which closing
	 * its write end gives them together.  In turns: each its own pipe,
	 * closed once the writer before it has ended.
	 */
	for (k = 0; k < writers; k++) {
		int out[2];

		if ((k == 0 || turns) && pipe(go)) {
			perror("append_bench: pipe");
			return 1;
		}
		if (pipe(out)) {
			perror("append_bench: pipe");
			return 1;
		}
		pids[k] = fork();
		if (pids[k] < 0) {
			perror("append_bench: fork");
			return 1;
		}
		if (pids[k] == 0) {
			close(go[1]);
			close(out[0]);
			writer(k + 1, argv[optind + k], count, lock, go[0],
			       out[1]);
		}
		close(out[1]);
		out_fds[k] = out[0];
		if (turns) {
			close(go[0]);
			close(go[1]);
			ok &= collect(k, pids[k], out_fds[k], &reports[k]);
			wall += reports[k].ns;
		}
	}
	if (!turns) {
		close(go[0]);
		t0 = now_ns();
		close(go[1]);
		for (k = 0; k < writers; k++)
			ok &= collect(k, pids[k], out_fds[k], &reports[k]);
		wall = now_ns() - t0;
	}
	if (!ok)
		return 1;

	printf("{\"writers\":%u,\"count\":%u,\"lock\":\"%s\",\"order\":"
	       "\"%s\",\"pad_step\":%d,\"wall_ns\":%llu,\"writer_ns\":[",
	       writers, count, lock_names[lock], turns ? "turns" : "together",
	       PAD_STEP, (unsigned long long)wall);
	for (k = 0; k < writers; k++)
		printf("%s%llu", k ? "," : "",
		       (unsigned long long)reports[k].ns);
	printf("],\"failed\":[");
	for (k = 0; k < writers; k++)
		printf("%s%u", k ? "," : "", reports[k].failed);
	printf("],\"first_failure\":");
	for (k = 0; k < writers && !reports[k].failed; k++)
		;
	put_json_string(k < writers ? reports[k].first : "");
	printf("}\n");
	return 0;
}
