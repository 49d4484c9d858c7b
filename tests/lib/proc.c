/*
 * What /proc says about a process (proc.h): each answer comes from one read
 * of a small /proc file (stat, status, wchan), so a process that exits
 * meanwhile only makes the answer "gone" or "not there".  Never signals a
 * process but the one proc_stop() is given.
 */
#include "proc.h"
#include "intrfs/util.h"

#include <intrfs/region.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Reads path into buf (NUL-terminated); false if it cannot be opened. */
static bool read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return true;
}

/*
 * The fields of a stat line after the command name, which may itself hold
 * spaces and parentheses: from its last ')'.  NULL if there is none.
 */
static const char *stat_fields(const char *stat)
{
	const char *p = strrchr(stat, ')');

	return p && p[1] == ' ' ? p + 2 : NULL;
}

bool proc_threads_stopped(pid_t pid)
{
	char path[320], buf[512];
	struct dirent *de;
	bool stopped = true;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (stopped && (de = readdir(d))) {
		const char *st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid,
			 de->d_name);
		if (!read_small(path, buf, sizeof(buf)))
			continue; /* the thread exited */
		st = stat_fields(buf);
		stopped = st && (st[0] == 'T' || st[0] == 't');
	}
	closedir(d);
	return stopped;
}

bool proc_stop(pid_t pid, unsigned timeout_ms)
{
	uint64_t end = region_now_ns() + (uint64_t)timeout_ms * 1000000u;

	if (kill(pid, SIGSTOP) < 0)
		return false;
	while (!proc_threads_stopped(pid)) {
		if (region_now_ns() > end)
			return false;
		usleep(200);
	}
	return true;
}

bool proc_read(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return read_small(path, buf, len);
}

bool proc_in_kernel_nfs(pid_t pid)
{
	char wchan[128];

	if (!proc_read(pid, "wchan", wchan, sizeof(wchan)))
		return false;
	return strstr(wchan, "rpc") || strstr(wchan, "nfs") ||
	       strstr(wchan, "folio") || strstr(wchan, "writeback");
}

bool proc_in_fuse(pid_t pid)
{
	char path[64], wchan[128];

	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	if (!read_small(path, wchan, sizeof(wchan)))
		return false;
	return strstr(wchan, "fuse") || strstr(wchan, "request_wait");
}

/*
 * The value of field ("VmRSS") of /proc/<pid>/status as a number in base;
 * false when pid or the field is not there.
 */
static bool status_field(pid_t pid, const char *field, int base,
			 unsigned long long *out)
{
	char path[64], buf[4096], key[32];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	snprintf(key, sizeof(key), "\n%s:", field);
	if (!read_small(path, buf, sizeof(buf)) || !(p = strstr(buf, key)))
		return false;
	*out = strtoull(p + strlen(key), NULL, base);
	return true;
}

bool proc_signal_pending(pid_t pid, int sig)
{
	uint64_t bit = 1ull << (sig - 1);
	unsigned long long v;

	/* SigPnd: pending for the thread; ShdPnd: for the whole process. */
	return (status_field(pid, "SigPnd", 16, &v) && (v & bit)) ||
	       (status_field(pid, "ShdPnd", 16, &v) && (v & bit));
}

unsigned long proc_status_kib(pid_t pid, const char *field)
{
	unsigned long long v;

	return status_field(pid, field, 10, &v) ? (unsigned long)v : 0;
}

unsigned proc_children(pid_t parent, pid_t *out, unsigned max)
{
	struct dirent *de;
	unsigned n = 0;
	DIR *d = opendir("/proc");

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		char path[300], buf[512];
		const char *st;
		int ppid;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if (!read_small(path, buf, sizeof(buf)))
			continue;
		st = stat_fields(buf);
		if (st && sscanf(st, "%*c %d", &ppid) == 1 && ppid == parent)
			out[n++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return n;
}

bool proc_gone_within(pid_t pid, unsigned timeout_ms)
{
	uint64_t end = region_now_ns() + (uint64_t)timeout_ms * 1000000u;

	for (;;) {
		char path[64], buf[512];
		const char *st;

		/* Reap it if it is ours. */
		waitpid(pid, NULL, WNOHANG);
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (!read_small(path, buf, sizeof(buf)))
			return true;
		st = stat_fields(buf);
		if (st && st[0] == 'Z') {
			/* It may have died since the waitpid() above. */
			waitpid(pid, NULL, WNOHANG);
			return true;
		}
		if (region_now_ns() > end)
			return false;
		usleep(1000);
	}
}

bool proc_intrfs_mounted(const char *dir)
{
	char line[4096], needle[700];
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return false;
	snprintf(needle, sizeof(needle), " %s ", dir);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle) && strstr(line, " fuse.intrfs "))
			found = true;
	fclose(f);
	return found;
}

void proc_note_pid(pid_t pid)
{
	const char *path = getenv("INTRFS_TEST_PIDS");
	FILE *f = path && *path ? fopen(path, "a") : NULL;

	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
}

unsigned proc_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unsigned port = 0;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* How many times what occurs in the file at path (a small log). */
static unsigned count_in(const char *path, const char *what)
{
	char buf[16384];
	unsigned n = 0;

	if (!read_small(path, buf, sizeof(buf)))
		return 0;
	for (const char *p = buf; (p = strstr(p, what)); p++)
		n++;
	return n;
}

pid_t proc_spawn(const char *bin, const char *const *argv, int out_fd,
		 int err_fd, unsigned flags)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (out_fd >= 0)
			dup2(out_fd, 1);
		if (err_fd >= 0)
			dup2(err_fd, 2);
		if (flags & PROC_OWN_GROUP)
			setpgid(0, 0);
		if (flags & PROC_PARENT_DEATH)
			prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv(bin, (char *const *)argv);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	proc_note_pid(pid);
	return pid;
}

/*
 * One start of netfault on a pair of ports free a moment ago; *taken when
 * it failed for want of those ports, so that another pair may do.
 */
static pid_t netfault_try(const char *bin, const char *host, unsigned nfs_port,
			  unsigned mount_port, const char *const *more,
			  const char *errlog, unsigned deadline_ms,
			  unsigned *nfs_via, unsigned *mount_via, char *err,
			  size_t len, bool *taken)
{
	const char *argv[32] = { "netfault", "--listen" };
	uint64_t end = region_now_ns() + (uint64_t)deadline_ms * 1000000u;
	char l1[300], l2[300];
	size_t n = 2;
	int status, efd;
	pid_t pid;

	*nfs_via = proc_free_port();
	*mount_via = proc_free_port();
	*taken = false;
	if (!*nfs_via || !*mount_via || *nfs_via == *mount_via) {
		snprintf(err, len, "no free loopback port for netfault");
		*taken = true;
		return -1;
	}
	snprintf(l1, sizeof(l1), "%u=%s:%u", *nfs_via, host, nfs_port);
	snprintf(l2, sizeof(l2), "%u=%s:%u", *mount_via, host, mount_port);
	argv[n++] = l1;
	argv[n++] = "--listen";
	argv[n++] = l2;
	for (; more && *more && n < ARRAY_SIZE(argv) - 1; more++)
		argv[n++] = *more;
	argv[n] = NULL;
	/*
	 * A file of our own, made now: a name left there (by a try before,
	 * or planted: a symbolic link towards a file of root's) is removed,
	 * never written through.
	 */
	/* Only ever a log of ours: never a device or a directory. */
	{
		struct stat st;

		if (lstat(errlog, &st) == 0 && !S_ISREG(st.st_mode)) {
			snprintf(err, len, "%s: not a regular file", errlog);
			return -1;
		}
	}
	unlink(errlog);
	efd = open(errlog, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		   0644);
	if (efd < 0) {
		snprintf(err, len, "%s: %s", errlog, strerror(errno));
		return -1;
	}
	/* Gone with whoever started it, however that ends. */
	pid = proc_spawn(bin, argv, -1, efd,
			 PROC_OWN_GROUP | PROC_PARENT_DEATH);
	if (pid < 0) {
		snprintf(err, len, "fork: %s", strerror(errno));
		close(efd);
		return -1;
	}
	close(efd);
	while (count_in(errlog, "netfault: listening") < 2) {
		if (waitpid(pid, &status, WNOHANG) == pid ||
		    region_now_ns() > end) {
			char tail[1024];

			if (!read_small(errlog, tail, sizeof(tail)))
				tail[0] = '\0';
			snprintf(err, len, "netfault did not start: %s", tail);
			*taken = strstr(tail, "address already in use") != NULL;
			if (kill(pid, 0) == 0) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
			}
			return -1;
		}
		usleep(2000);
	}
	return pid;
}

/*
 * A port free when proc_free_port() looked can be taken before netfault
 * binds it (an outgoing connection's source port, a listener of another
 * test): netfault says so and ends, and a new pair is tried.
 */
pid_t proc_netfault_start(const char *bin, const char *host, unsigned nfs_port,
			  unsigned mount_port, const char *const *more,
			  const char *errlog, unsigned deadline_ms,
			  unsigned *nfs_via, unsigned *mount_via, char *err,
			  size_t len)
{
	bool taken = true;
	pid_t pid = -1;

	for (int i = 0; i < PROC_NETFAULT_TRIES && pid < 0 && taken; i++)
		pid = netfault_try(bin, host, nfs_port, mount_port, more,
				   errlog, deadline_ms, nfs_via, mount_via, err,
				   len, &taken);
	/* What a try before said is no error of the start that worked. */
	if (pid >= 0 && len)
		err[0] = '\0';
	return pid;
}
