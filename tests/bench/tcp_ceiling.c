/*
 * tcp_ceiling: one loopback TCP stream's throughput, the ceiling any
 * client of a server on 127.0.0.1 reads and writes under.  A child reads
 * as fast as it can; the parent writes MIB mebibytes in 1 MiB writes and
 * waits for the child to have read them all.  Prints tcp_mibs=N (MiB/s).
 *
 * Usage: tcp_ceiling MIB
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	long mib = argc == 2 ? atol(argv[1]) : 0;
	int ls, s, st;
	char *buf;
	double t0;
	pid_t pid;

	if (mib <= 0) {
		fprintf(stderr, "usage: tcp_ceiling MIB\n");
		return 2;
	}
	buf = calloc(1, CHUNK);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (!buf || ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(ls, 1) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &alen) < 0) {
		perror("tcp_ceiling: listen");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("tcp_ceiling: fork");
		return 1;
	}
	if (pid == 0) {
		long long left = (long long)mib * CHUNK;
		ssize_t n;

		s = accept(ls, NULL, NULL);
		if (s < 0)
			_exit(1);
		while (left > 0 && (n = read(s, buf, CHUNK)) > 0)
			left -= n;
		_exit(left == 0 ? 0 : 1);
	}
	close(ls);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("tcp_ceiling: connect");
		return 1;
	}
	t0 = now_s();
	for (long i = 0; i < mib; i++) {
		for (size_t off = 0; off < CHUNK;) {
			ssize_t n = write(s, buf + off, CHUNK - off);

			if (n <= 0) {
				perror("tcp_ceiling: write");
				return 1;
			}
			off += (size_t)n;
		}
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		fprintf(stderr,
			"tcp_ceiling: the reader did not get every byte\n");
		return 1;
	}
	printf("tcp_mibs=%.1f\n", (double)mib / (now_s() - t0));
	close(s);
	free(buf);
	return 0;
}
