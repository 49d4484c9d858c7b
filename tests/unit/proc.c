/* What /proc says about a process; see proc.h. */
#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
		st = strrchr(buf, ')');
		stopped = st && st[1] == ' ' && (st[2] == 'T' || st[2] == 't');
	}
	closedir(d);
	return stopped;
}

bool proc_in_fuse(pid_t pid)
{
	char path[64], wchan[128];

	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	if (!read_small(path, wchan, sizeof(wchan)))
		return false;
	return strstr(wchan, "fuse") || strstr(wchan, "request_wait");
}
