/*
 * region-probe: one call on a file, for the tests of intrfs-region(1),
 * which must run it as a command (and as a descendant of one).
 *
 *   region-probe read|write PATH LEN [direct]
 *
 * Installs a SIGINT handler (no SA_RESTART) that counts, opens PATH,
 * writes "PID\n" to fd 3, waits for a byte on fd 4, then reads or writes
 * LEN bytes ('w's) and prints "ret=R err=E sigs=S ns=N" on stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t sigs;

static void count_sig(int sig)
{
	(void)sig;
	sigs++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int write_op, direct, fd, err;
	size_t len;
	char *buf, line[32], c;
	uint64_t t0;
	ssize_t ret;

	if (argc < 4 || (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
		fprintf(stderr,
			"usage: region-probe read|write PATH LEN [direct]\n");
		return 2;
	}
	write_op = strcmp(argv[1], "write") == 0;
	direct = argc > 4 && strcmp(argv[4], "direct") == 0;
	len = strtoul(argv[3], NULL, 10);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = count_sig;
	sigaction(SIGINT, &sa, NULL);
	if (posix_memalign((void **)&buf, 4096, len ? len : 4096) != 0)
		return 3;
	memset(buf, 'w', len);
	fd = open(argv[2],
		  (write_op ? O_WRONLY : O_RDONLY) | (direct ? O_DIRECT : 0));
	if (fd < 0) {
		printf("ret=-1 err=%d sigs=0 ns=0\n", errno);
		return 1;
	}
	snprintf(line, sizeof(line), "%d\n", (int)getpid());
	if (write(3, line, strlen(line)) < 0 || read(4, &c, 1) != 1)
		return 3;
	t0 = now_ns();
	ret = write_op ? write(fd, buf, len) : read(fd, buf, len);
	err = ret < 0 ? errno : 0;
	printf("ret=%zd err=%d sigs=%d ns=%llu\n", ret, err, (int)sigs,
	       (unsigned long long)(now_ns() - t0));
	return 0;
}
