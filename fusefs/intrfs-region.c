/*
 * intrfs-region: runs a command, and every process it starts, inside a
 * caller region (killable or uninterruptible) of every intrfs mount it
 * makes requests to, the ones mounted later included.
 *
 * A thread-keyed ioctl (region_caller_begin()) cannot follow a fork, nor
 * reach a mount made after it: the daemon sees only the calling thread's
 * id.  A cgroup can: children inherit it, and the daemon reads a caller's
 * from /proc/TID/cgroup at each request (region_cg.h).  So this makes a
 * cgroup intrfs-region.ID (inside the one it runs in, when that is a
 * region already: regions nest), writes ID's kind and reason to the
 * registry, and runs the command in a child that joins the cgroup before
 * it execs.  It forwards the signals a terminal or a kill(1) sends it to
 * the command, waits for it, removes the cgroup and the registry entry,
 * and exits as the command did (with its status, or killed by the same
 * signal).
 *
 * A command that leaves processes behind keeps its region until they end:
 * the cgroup is not empty, so it stays, and the next intrfs-region removes
 * the regions whose owner is gone and whose cgroup has emptied.
 *
 * The cgroups live in a named cgroup v1 hierarchy of intrfs's own
 * (name=intrfs, no controller: it changes nothing else), mounted on
 * /run/intrfs/cgroup; where the kernel has no cgroup v1, in the cgroup v2
 * tree, below the cgroup intrfs-region runs in.
 */
#include "intrfs/util.h"
#include "region_cg.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG "intrfs-region"
/* As env(1) and timeout(1): its own failure, or the command's exec's. */
#define EXIT_FAIL 125
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND 127
#define REASON_MAX 64

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG
		" [-k killable|uninterruptible] [-r REASON] [-v] "
		"[--] COMMAND [ARG...]\n"
		"\n"
		"Runs COMMAND, and every process it starts, with each request "
		"it makes to\n"
		"an intrfs mount inside a caller region: the daemon runs the "
		"request's\n"
		"waits inside it, outside the mount's own regions.  Under "
		"policy=region\n"
		"and sigmask, a killable region lets only a fatal signal end a "
		"call, an\n"
		"uninterruptible one no signal (the call completes, a handler "
		"runs\n"
		"after); under percall the region is shown but each wait "
		"decides.\n"
		"\n"
		"  -k, --kind KIND      killable (the default) or "
		"uninterruptible\n"
		"  -r, --reason REASON  what the region is for, as intrfsctl "
		"tasks and\n"
		"                       the trace show it (default: COMMAND's "
		"name;\n"
		"                       at most %d bytes)\n"
		"  -v, --verbose        say which cgroup the region is\n"
		"  -h, --help           this text\n"
		"\n"
		"Regions nest: " PROG " inside " PROG " adds a region inside "
		"the first.\n"
		"It needs root (it makes a cgroup).  Exit status: COMMAND's; "
		"125 when\n"
		"" PROG " itself fails, 126 when COMMAND cannot run, 127 when "
		"it is not\n"
		"found, 2 on bad usage.  See intrfs-region(1).\n",
		REASON_MAX - 1);
}

/* A path made by fmt; -1 (ENAMETOOLONG) when it does not fit. */
static int __attribute__((format(printf, 3, 4)))
pathf(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int fail(const char *what, const char *path)
{
	int e = errno;

	fprintf(stderr, PROG ": %s %s: %s%s\n", what, path, strerror(e),
		e == EACCES || e == EPERM ? " (" PROG " needs root)" : "");
	return -1;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	if (close(fd) < 0 || n != (ssize_t)strlen(s))
		return -1;
	return 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

/*
 * The mount point of the cgroup hierarchy whose super options hold opt
 * ("name=intrfs"), or of cgroup2 (opt NULL); false when there is none.
 */
static bool find_mount(const char *opt, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], fstype[64], super[2048];
		char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %*s %2047s", fstype, super) != 2)
			continue;
		if (opt ? strcmp(fstype, "cgroup") == 0 &&
				    strstr(super, opt) != NULL :
			  strcmp(fstype, "cgroup2") == 0) {
			snprintf(out, len, "%s", mnt);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/*
 * This process's path in the hierarchy: the line of /proc/self/cgroup
 * whose controllers are ctl ("name=intrfs", or "" for cgroup2).
 */
static bool own_path(const char *ctl, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':'), *p;

		p = c ? strchr(c + 1, ':') : NULL;
		if (!p || (size_t)(p - c - 1) != strlen(ctl) ||
		    strncmp(c + 1, ctl, strlen(ctl)) != 0)
			continue;
		p[1 + strcspn(p + 1, "\n")] = '\0';
		snprintf(out, len, "%s", strcmp(p + 1, "/") ? p + 1 : "");
		found = true;
	}
	fclose(f);
	return found;
}

/*
 * Where this run's cgroup goes: the directory of the cgroup this process
 * is in, in intrfs's named hierarchy (mounted here first if need be) or
 * else in cgroup2.
 */
static int cgroup_base(char *out, size_t len, bool verbose)
{
	char mnt[PATH_MAX], path[PATH_MAX];

	if (!find_mount("name=" REGION_CG_NAME, mnt, sizeof(mnt))) {
		if (mkdir_p(REGION_CG_MOUNT, 0755) < 0)
			return fail("cannot make", REGION_CG_MOUNT);
		if (mount(REGION_CG_NAME, REGION_CG_MOUNT, "cgroup",
			  MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "none,name=" REGION_CG_NAME) == 0) {
			snprintf(mnt, sizeof(mnt), "%s", REGION_CG_MOUNT);
		} else if (errno == EPERM) {
			return fail("cannot mount a cgroup hierarchy on",
				    REGION_CG_MOUNT);
		} else {
			/* No cgroup v1 in this kernel: cgroup2 it is. */
			if (verbose)
				fprintf(stderr,
					PROG ": no cgroup v1 (%s): using "
					     "cgroup2\n",
					strerror(errno));
			rmdir(REGION_CG_MOUNT);
			if (!find_mount(NULL, mnt, sizeof(mnt)) ||
			    !own_path("", path, sizeof(path))) {
				fprintf(stderr,
					PROG ": neither a cgroup v1 hierarchy "
					     "nor cgroup2 is available\n");
				return -1;
			}
			if (pathf(out, len, "%s%s", mnt, path) < 0)
				return fail("no room for the cgroup of", path);
			return 0;
		}
	}
	if (!own_path("name=" REGION_CG_NAME, path, sizeof(path))) {
		fprintf(stderr, PROG ": /proc/self/cgroup does not show the "
				     "name=" REGION_CG_NAME " hierarchy\n");
		return -1;
	}
	if (pathf(out, len, "%s%s", mnt, path) < 0)
		return fail("no room for the cgroup of", path);
	return 0;
}

/*
 * Regions whose intrfs-region is gone and whose cgroup has emptied: their
 * cgroup and registry entry go.  A cgroup still in use refuses rmdir().
 */
static void collect(void)
{
	DIR *d = opendir(REGION_REGISTRY_DIR);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX], buf[PATH_MAX + 128], *cg;
		long owner = strtol(e->d_name, NULL, 10);
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.' || owner <= 0 ||
		    (kill((pid_t)owner, 0) == 0 || errno == EPERM))
			continue;
		snprintf(path, sizeof(path), "%s/%s", REGION_REGISTRY_DIR,
			 e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "KIND\nREASON\nCGROUP\n" */
		cg = strchr(buf, '\n');
		cg = cg ? strchr(cg + 1, '\n') : NULL;
		if (!cg)
			continue;
		cg++;
		cg[strcspn(cg, "\n")] = '\0';
		if (cg[0] == '/' && rmdir(cg) < 0 && errno != ENOENT)
			continue;
		unlink(path);
	}
	closedir(d);
}

/* The registry entry id says kind, reason and the cgroup; 0 or -1. */
static int register_region(const char *id, const char *kind, const char *reason,
			   const char *cg)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	FILE *f;

	if (mkdir_p(REGION_REGISTRY_DIR, 0755) < 0)
		return fail("cannot make", REGION_REGISTRY_DIR);
	/* Dotted: daemons skip it until the rename makes it whole. */
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", REGION_REGISTRY_DIR, id);
	snprintf(path, sizeof(path), "%s/%s", REGION_REGISTRY_DIR, id);
	unlink(tmp);
	f = fopen(tmp, "wxe");
	if (!f)
		return fail("cannot write", tmp);
	fprintf(f, "%s\n%s\n%s\n", kind, reason, cg);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		fail("cannot write", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

static volatile sig_atomic_t child_pid;

/*
 * Signals for the command go to it; this process waits for it.  Not those
 * the kernel sent the terminal's foreground group (^C, a hang-up): the
 * command, in the same group, has its own already.
 */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill((pid_t)child_pid, sig);
}

static const int forwarded[] = { SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1,
				 SIGUSR2, SIGALRM, SIGCONT, SIGWINCH };

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "reason", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *kind = "killable", *reason = NULL, *slash;
	char base[PATH_MAX], cg[PATH_MAX], procs[PATH_MAX + 16], id[32];
	char reg[PATH_MAX], why[REASON_MAX];
	bool verbose = false;
	struct sigaction sa;
	struct rlimit no_core = { 0, 0 };
	int c, st;
	pid_t pid;
	ssize_t n;

	while ((c = getopt_long(argc, argv, "+k:r:vh", longs, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (strcmp(optarg, "killable") != 0 &&
			    strcmp(optarg, "uninterruptible") != 0) {
				fprintf(stderr,
					PROG ": unknown kind '%s' (killable "
					     "or uninterruptible)\n",
					optarg);
				return 2;
			}
			kind = optarg;
			break;
		case 'r':
			reason = optarg;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, PROG ": no command to run\n");
		usage(stderr);
		return 2;
	}
	if (!reason) {
		slash = strrchr(argv[optind], '/');
		reason = slash ? slash + 1 : argv[optind];
	}
	/* One line in the registry, and what intrfsctl shows. */
	snprintf(why, sizeof(why), "%s", reason);
	for (char *p = why; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';

	collect();
	if (cgroup_base(base, sizeof(base), verbose) < 0)
		return EXIT_FAIL;
	/* Its own pid names it; a leftover of a dead namesake gets a suffix. */
	for (unsigned k = 0;; k++) {
		if (k == 0)
			snprintf(id, sizeof(id), "%d", (int)getpid());
		else
			snprintf(id, sizeof(id), "%d.%u", (int)getpid(), k);
		if (pathf(cg, sizeof(cg), "%s/%s%s", base, REGION_CG_PREFIX,
			  id) < 0) {
			fail("no room for a cgroup in", base);
			return EXIT_FAIL;
		}
		if (mkdir(cg, 0755) == 0)
			break;
		if (errno != EEXIST || k == 16) {
			fail("cannot make the cgroup", cg);
			return EXIT_FAIL;
		}
	}
	if (register_region(id, kind, why, cg) < 0) {
		rmdir(cg);
		return EXIT_FAIL;
	}
	snprintf(reg, sizeof(reg), "%s/%s", REGION_REGISTRY_DIR, id);
	if (verbose)
		fprintf(stderr, PROG ": %s region \"%s\": cgroup %s\n", kind,
			why, cg);

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fail("cannot fork for", argv[optind]);
		goto out_fail;
	}
	if (pid == 0) {
		int err;

		if (write_str(procs, "0") < 0) {
			err = errno;
			fprintf(stderr, PROG ": cannot join %s: %s\n", cg,
				strerror(err));
			_exit(EXIT_FAIL);
		}
		execvp(argv[optind], argv + optind);
		err = errno;
		fprintf(stderr, PROG ": cannot run %s: %s\n", argv[optind],
			strerror(err));
		_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
	}
	child_pid = pid;
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaction(forwarded[i], &sa, NULL);
	do
		n = waitpid(pid, &st, 0);
	while (n < 0 && errno == EINTR);

	/* The region ends with the command, unless it left processes. */
	if (rmdir(cg) == 0 || errno == ENOENT)
		unlink(reg);
	else if (verbose)
		fprintf(stderr,
			PROG ": processes the command started are still in "
			     "%s: the region stays until they end\n",
			cg);
	if (n < 0)
		return EXIT_FAIL;
	if (WIFSIGNALED(st)) {
		/* Die of the same signal, as the shell expects. */
		setrlimit(RLIMIT_CORE, &no_core);
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
		return 128 + WTERMSIG(st);
	}
	return WEXITSTATUS(st);

out_fail:
	rmdir(cg);
	unlink(reg);
	return EXIT_FAIL;
}
