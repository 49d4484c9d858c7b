/*
 * meta_bench DIR N: creates N empty files in DIR, stats each, unlinks each;
 * prints the seconds it took.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include <intrfs/region.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096];
	struct stat st;
	double t0;
	int n;

	if (argc != 3) {
		fprintf(stderr, "usage: meta_bench DIR N\n");
		return 2;
	}
	n = atoi(argv[2]);
	t0 = (region_now_ns() / 1e9);
	for (int i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/m%06d", argv[1], i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || close(fd) < 0) {
			perror(path);
			return 1;
		}
	}
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/m%06d", argv[1], i);
		if (stat(path, &st) < 0) {
			perror(path);
			return 1;
		}
	}
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/m%06d", argv[1], i);
		if (unlink(path) < 0) {
			perror(path);
			return 1;
		}
	}
	printf("%.3f\n", (region_now_ns() / 1e9) - t0);
	return 0;
}
