/*
 * intrfs-client's one-call commands: stat (attributes as name=value
 * lines), rm, mkdir, exports (the server's export list) and df (FSSTAT, as
 * df -h and df -i print it on one line).
 *
 * Each finds its handle through remote.c and makes its calls in the main
 * thread's task; none changes anything on the server but what its name
 * says.  No locks.
 */
#include "cli_i.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* stat */

static void print_time(const char *name, const struct timespec *ts)
{
	char date[64], zone[16];

	cli_format_time(ts, "%Y-%m-%d %H:%M:%S", date, sizeof(date));
	cli_format_time(ts, "%z", zone, sizeof(zone));
	printf("%s=%lld.%09ld (%s.%09ld %s)\n", name, (long long)ts->tv_sec,
	       ts->tv_nsec, date, ts->tv_nsec, zone);
}

int cli_cmd_stat(struct cli_run *r, char **argv)
{
	struct cli_remote rem;
	struct nc_attr a;
	struct nc_fh fh;
	int rc;

	rc = cli_open_arg(r, argv[0], false, &rem, &fh, &a);
	if (rc < 0)
		return rc;
	printf("type=%s\n", cli_type_name(a.mode));
	printf("mode=%04o\n", (unsigned)(a.mode & 07777));
	printf("nlink=%" PRIu32 "\n", a.nlink);
	printf("uid=%" PRIu32 "\n", a.uid);
	printf("gid=%" PRIu32 "\n", a.gid);
	printf("size=%" PRIu64 "\n", a.size);
	printf("used=%" PRIu64 "\n", a.used);
	if (S_ISCHR(a.mode) || S_ISBLK(a.mode))
		printf("rdev=%" PRIu32 ",%" PRIu32 "\n", a.rdev_major,
		       a.rdev_minor);
	printf("fsid=0x%016" PRIx64 "\n", a.fsid);
	printf("fileid=%" PRIu64 "\n", a.fileid);
	print_time("atime", &a.atime);
	print_time("mtime", &a.mtime);
	print_time("ctime", &a.ctime);
	return 0;
}

/* rm, mkdir */

int cli_cmd_rm(struct cli_run *r, char **argv)
{
	struct cli_remote rem;
	struct nc_fh dir;
	int rc;

	rc = cli_open_parent(r, argv[0], &rem, &dir);
	if (rc < 0)
		return rc;
	return nc_remove(r->client, &r->cred, &dir, rem.name);
}

int cli_cmd_mkdir(struct cli_run *r, char **argv)
{
	struct nc_sattr sa = { .set = NC_SET_MODE, .mode = 0755 & ~r->umask };
	struct cli_remote rem;
	struct nc_fh dir;
	int rc;

	rc = cli_open_parent(r, argv[0], &rem, &dir);
	if (rc < 0)
		return rc;
	return nc_mkdir(r->client, &r->cred, &dir, rem.name, &sa, NULL);
}

/* exports, df */

static int print_export(const char *dir, void *arg)
{
	(void)arg;
	printf("%s\n", dir);
	return 0;
}

int cli_cmd_exports(struct cli_run *r, char **argv)
{
	const char *server = argv[0];
	size_t n = strcspn(server, ":");
	char name[CLI_SERVER_MAX];
	int rc;

	r->what = server;
	/* "SERVER" or "SERVER:", nothing after: there is no path to list. */
	if (n == 0 || (server[n] == ':' && server[n + 1] != '\0'))
		return cli_usage_fail(r, "'%s' is not a server name", server);
	if (n >= sizeof(name))
		return cli_usage_fail(r, "server name '%s' is too long",
				      server);
	memcpy(name, server, n);
	name[n] = '\0';
	rc = cli_client_get(r, name);
	if (rc < 0)
		return rc;
	return nc_client_exports(r->client, &r->cred, print_export, NULL);
}

int cli_cmd_df(struct cli_run *r, char **argv)
{
	char size[32], used[32], avail[32], pct[24], ipct[24];
	uint64_t bused, iused;
	struct nc_fsstat fs;
	struct cli_remote rem;
	struct nc_fh fh;
	int w, rc;

	rc = cli_open_arg(r, argv[0], true, &rem, &fh, NULL);
	if (rc < 0)
		return rc;
	rc = nc_fsstat(r->client, &r->cred, &fh, &fs);
	if (rc < 0)
		return rc;
	bused = fs.tbytes > fs.fbytes ? fs.tbytes - fs.fbytes : 0;
	iused = fs.tfiles > fs.ffiles ? fs.tfiles - fs.ffiles : 0;
	cli_human_size(fs.tbytes, size, sizeof(size));
	cli_human_size(bused, used, sizeof(used));
	cli_human_size(fs.abytes, avail, sizeof(avail));
	/* As df: used over what non-root users could have, rounded up. */
	if (bused + fs.abytes)
		snprintf(pct, sizeof(pct), "%" PRIu64 "%%",
			 (bused * 100 + bused + fs.abytes - 1) /
				 (bused + fs.abytes));
	else
		snprintf(pct, sizeof(pct), "-");
	if (iused + fs.afiles)
		snprintf(ipct, sizeof(ipct), "%" PRIu64 "%%",
			 (iused * 100 + iused + fs.afiles - 1) /
				 (iused + fs.afiles));
	else
		snprintf(ipct, sizeof(ipct), "-");
	w = cli_width(argv[0], (int)strlen("Filesystem"));
	printf("%-*s %6s %6s %6s %5s %10s %10s %10s %5s %s\n", w, "Filesystem",
	       "Size", "Used", "Avail", "Use%", "Inodes", "IUsed", "IFree",
	       "IUse%", "Export");
	printf("%-*s %6s %6s %6s %5s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
	       " %5s %s\n",
	       w, argv[0], size, used, avail, pct, fs.tfiles, iused, fs.afiles,
	       ipct, nc_client_export(r->client));
	return 0;
}
