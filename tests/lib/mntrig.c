/*
 * The test rigs' mount side (mntrig.h): servers as their scripts describe
 * them, intrfs daemons started, waited for, unmounted and reaped.  A
 * process is known by the pid this file returned, never by its name.
 */
#include "mntrig.h"

#include "intrfs/util.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t mntrig_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The value of "key=" at the start of line, or NULL. */
static const char *value_of(const char *line, const char *key)
{
	size_t n = strlen(key);

	return strncmp(line, key, n) == 0 && line[n] == '=' ? line + n + 1 :
							      NULL;
}

bool srvrig_line(struct srvrig *s, const char *line)
{
	static const struct {
		const char *key;
		size_t off;
	} ports[] = {
		{ "nfs_port", offsetof(struct srvrig, nfs_port) },
		{ "mount_port", offsetof(struct srvrig, mount_port) },
		{ "nlm_port", offsetof(struct srvrig, nlm_port) },
		{ "rquota_port", offsetof(struct srvrig, rquota_port) },
	};
	const char *v;

	if ((v = value_of(line, "pid"))) {
		s->pid = (pid_t)atoi(v);
		return true;
	}
	if ((v = value_of(line, "server"))) {
		snprintf(s->host, sizeof(s->host), "%s", v);
		return true;
	}
	if ((v = value_of(line, "export"))) {
		snprintf(s->export_dir, sizeof(s->export_dir), "%s", v);
		return true;
	}
	if ((v = value_of(line, "client_netns"))) {
		snprintf(s->client_netns, sizeof(s->client_netns), "%s", v);
		return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ports); i++) {
		if ((v = value_of(line, ports[i].key))) {
			*(unsigned *)((char *)s + ports[i].off) =
				(unsigned)atoi(v);
			return true;
		}
	}
	return false;
}

/* Every line of f into s, the others to other. */
static void read_lines(struct srvrig *s, FILE *f,
		       void (*other)(const char *line))
{
	char line[1024];

	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!srvrig_line(s, line) && other)
			other(line);
	}
}

int srvrig_run(struct srvrig *s, const char *cmd,
	       void (*other)(const char *line))
{
	char run[4096];
	FILE *f;
	int st;

	/* The whole command line's stderr, not only its last command's. */
	if (snprintf(run, sizeof(run), "exec 2>&1; %s", cmd) >=
	    (int)sizeof(run)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fflush(NULL);
	f = popen(run, "r");
	if (!f)
		return -1;
	read_lines(s, f, other);
	st = pclose(f);
	if (st < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int srvrig_read(struct srvrig *s, const char *path)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	read_lines(s, f, NULL);
	fclose(f);
	return 0;
}

pid_t mntrig_spawn(const char *bin, const char *source, const char *dir,
		   const char *opts, const char *log, unsigned flags, char *err,
		   size_t len)
{
	const char *argv[] = { "intrfs", "-f", source, dir, "-o", opts, NULL };
	int fd = open(log,
		      O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		      0644);
	pid_t pid;

	if (fd < 0) {
		snprintf(err, len, "open %s: %s", log, strerror(errno));
		return -1;
	}
	pid = proc_spawn(bin, argv, fd, fd, flags);
	if (pid < 0)
		snprintf(err, len, "fork: %s", strerror(errno));
	close(fd);
	return pid;
}

int mntrig_wait(pid_t pid, const char *dir, unsigned deadline_ms, int *status)
{
	uint64_t end = mntrig_now_ms() + deadline_ms;

	while (!proc_intrfs_mounted(dir)) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 1;
		if (mntrig_now_ms() > end)
			return -1;
		usleep(2000);
	}
	return 0;
}

int mntrig_unmount(const char *dir, pid_t pid, unsigned deadline_ms)
{
	uint64_t end = mntrig_now_ms() + deadline_ms;
	int status;

	if (umount2(dir, 0) < 0 && errno != EINVAL)
		umount2(dir, MNT_DETACH);
	while (pid > 0 && waitpid(pid, &status, WNOHANG) != pid) {
		if (mntrig_now_ms() > end)
			return -1;
		usleep(2000);
	}
	return 0;
}

void mntrig_kill(const char *dir, pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	umount2(dir, MNT_DETACH);
}

int mntrig_stop(const char *dir, pid_t pid, unsigned deadline_ms)
{
	if (mntrig_unmount(dir, pid, deadline_ms) == 0)
		return 0;
	mntrig_kill(dir, pid);
	return -1;
}

unsigned mntrig_connection(const char *dir)
{
	char line[4096], point[1024];
	unsigned maj, min, conn = 0;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %u:%u %*s %1023s", &maj, &min,
			   point) == 3 &&
		    strcmp(point, dir) == 0 && strstr(line, " - fuse.intrfs "))
			conn = min;
	if (f)
		fclose(f);
	return conn;
}

#define FUSECTL "/sys/fs/fuse/connections"

int mntrig_abort(unsigned conn)
{
	char path[128];
	bool mounted = false;
	int fd, rc = 0;

	snprintf(path, sizeof(path), FUSECTL "/%u/abort", conn);
	if (access(FUSECTL "/", F_OK) == 0 && access(path, F_OK) != 0) {
		if (mount("fusectl", FUSECTL, "fusectl", 0, NULL) < 0)
			return -errno;
		mounted = true;
	}
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (mounted)
		umount2(FUSECTL, 0);
	return rc;
}

void mntrig_log_tail(const char *path, char *buf, size_t len, off_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	ssize_t n = -1;

	if (size)
		*size = 0;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		off_t from = st.st_size > (off_t)(len - 1) ?
				     st.st_size - (off_t)(len - 1) :
				     0;

		if (size)
			*size = st.st_size;
		n = pread(fd, buf, len - 1, from);
	}
	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

void mntrig_end_child(pid_t pid, unsigned grace_ms)
{
	int status;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	if (!proc_gone_within(pid, grace_ms)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
}
