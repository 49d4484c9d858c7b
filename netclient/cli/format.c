/*
 * intrfs-client's attributes in human terms: file types by letter and by
 * name, "drwxr-sr-t" mode strings, local times, 1024-based sizes and the
 * width of a column, shared by ls, stat, df and put's messages.
 *
 * Pure functions of their arguments: no I/O, no netclient call, no state.
 */
#include "cli_i.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static char type_char(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return 'd';
	case S_IFLNK:
		return 'l';
	case S_IFCHR:
		return 'c';
	case S_IFBLK:
		return 'b';
	case S_IFIFO:
		return 'p';
	case S_IFSOCK:
		return 's';
	}
	return '-';
}

const char *cli_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "regular file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symbolic link";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	}
	return "unknown";
}

/* "drwxr-sr-t" and friends, as ls -l writes them. */
void cli_mode_string(mode_t mode, char buf[11])
{
	static const char rwx[] = "rwxrwxrwx";

	buf[0] = type_char(mode);
	for (int i = 0; i < 9; i++)
		buf[1 + i] = mode & (0400u >> i) ? rwx[i] : '-';
	if (mode & S_ISUID)
		buf[3] = buf[3] == 'x' ? 's' : 'S';
	if (mode & S_ISGID)
		buf[6] = buf[6] == 'x' ? 's' : 'S';
	if (mode & S_ISVTX)
		buf[9] = buf[9] == 'x' ? 't' : 'T';
	buf[10] = '\0';
}

void cli_format_time(const struct timespec *ts, const char *fmt, char *buf,
		     size_t len)
{
	time_t t = ts->tv_sec;
	struct tm tm;

	if (!localtime_r(&t, &tm) || strftime(buf, len, fmt, &tm) == 0)
		snprintf(buf, len, "%lld", (long long)ts->tv_sec);
}

/* 1024-based, as df -h: "0", "512", "4.0K", "20G". */
void cli_human_size(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double x = (double)v;
	int u = -1;

	if (v < 1024) {
		snprintf(buf, len, "%" PRIu64, v);
		return;
	}
	while (x >= 1024 && u < 5) {
		x /= 1024;
		u++;
	}
	if (x < 10)
		snprintf(buf, len, "%.1f%c", x, units[u]);
	else
		snprintf(buf, len, "%.0f%c", x, units[u]);
}

int cli_width(const char *s, int w)
{
	int n = (int)strlen(s);

	return n > w ? n : w;
}
