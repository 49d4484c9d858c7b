/*
 * meta_bench DIR WORKLOAD N: one metadata workload on the files of DIR;
 * prints the seconds its timed part took.  The same binary runs on an
 * intrfs mount, sshfs, the export directory and, in the kernel oracle's
 * guest, Linux's own NFS client, so that every peer does the same calls.
 *
 *   create    N x open(O_CREAT|O_EXCL)+close, then N x stat, then
 *             N x unlink (one operation: create+stat+unlink)
 *   mkdir     N x mkdir, then N x rmdir
 *   rename    N x rename (the files are made before the clock starts and
 *             removed after it stops)
 *   populate  N empty files m000000... (untimed set-up for readdir, lsl)
 *   readdir   every entry of DIR (N: how many files populate made)
 *   lsl       every entry of DIR and an lstat of each, as ls -l does
 *   clear     unlinks the N files populate made
 *   churn     N x (create, close, unlink) of one name: the memory check
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <intrfs/region.h>

static char path[4096], path2[4096];

static const char *name(const char *dir, const char *prefix, int i)
{
	snprintf(path, sizeof(path), "%s/%s%06d", dir, prefix, i);
	return path;
}

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

static void make(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0 || close(fd) < 0)
		fail(p);
}

static void files(const char *dir, const char *prefix, int n, char what)
{
	struct stat st;

	for (int i = 0; i < n; i++) {
		const char *p = name(dir, prefix, i);

		if ((what == 'c' && (make(p), 0)) ||
		    (what == 's' && stat(p, &st) < 0) ||
		    (what == 'u' && unlink(p) < 0) ||
		    (what == 'm' && mkdir(p, 0755) < 0) ||
		    (what == 'r' && rmdir(p) < 0))
			fail(p);
	}
}

/* Reads DIR whole; with lstat_each, lstats every entry.  Returns names. */
static long list(const char *dir, int lstat_each)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	long n = 0;

	if (!d)
		fail(dir);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		if (lstat_each) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (lstat(path, &st) < 0)
				fail(path);
		}
	}
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	const char *dir, *w;
	uint64_t t0, t1;
	int n;

	if (argc != 4 || (n = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: meta_bench DIR "
				"create|mkdir|rename|populate|readdir|lsl|"
				"clear|churn N\n");
		return 2;
	}
	dir = argv[1];
	w = argv[2];
	if (!strcmp(w, "rename"))
		files(dir, "a", n, 'c');
	t0 = region_now_ns();
	if (!strcmp(w, "create")) {
		files(dir, "c", n, 'c');
		files(dir, "c", n, 's');
		files(dir, "c", n, 'u');
	} else if (!strcmp(w, "mkdir")) {
		files(dir, "d", n, 'm');
		files(dir, "d", n, 'r');
	} else if (!strcmp(w, "rename")) {
		for (int i = 0; i < n; i++) {
			snprintf(path2, sizeof(path2), "%s/b%06d", dir, i);
			if (rename(name(dir, "a", i), path2) < 0)
				fail(path2);
		}
	} else if (!strcmp(w, "populate")) {
		files(dir, "m", n, 'c');
	} else if (!strcmp(w, "clear")) {
		files(dir, "m", n, 'u');
	} else if (!strcmp(w, "readdir") || !strcmp(w, "lsl")) {
		long got = list(dir, !strcmp(w, "lsl"));

		if (got != n) {
			fprintf(stderr,
				"meta_bench: %s holds %ld entries, not %d\n",
				dir, got, n);
			return 1;
		}
	} else if (!strcmp(w, "churn")) {
		snprintf(path2, sizeof(path2), "%s/churn", dir);
		for (int i = 0; i < n; i++) {
			make(path2);
			if (unlink(path2) < 0)
				fail(path2);
		}
	} else {
		fprintf(stderr, "meta_bench: unknown workload '%s'\n", w);
		return 2;
	}
	t1 = region_now_ns();
	if (!strcmp(w, "rename"))
		files(dir, "b", n, 'u');
	printf("%.6f\n", (double)(t1 - t0) / 1e9);
	return 0;
}
