/*
 * Mount options that mount(8) passes from an fstab line written for
 * Linux's NFS client, which intrfs takes as that client does: the access
 * time flags.  Each mounts, the mount works, and the mount's flags in
 * /proc/self/mountinfo are what the kernel gives a FUSE mount (noatime
 * where it was asked, the kernel's default relatime otherwise: intrfs(8)
 * says why nothing else would change).  A flag given a value is refused
 * as bad usage, exit status 2.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The per-mount options of the mount on dir (mountinfo's sixth field). */
static void mount_flags(const char *dir, char *out, size_t len)
{
	char line[4096], point[1024], opts[1024];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	ASSERT_NOT_NULL(f);
	out[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %*u:%*u %*s %1023s %1023s", point,
			   opts) == 2 &&
		    strcmp(point, dir) == 0)
			snprintf(out, len, ",%s,", opts);
	fclose(f);
	if (!out[0])
		TEST__FAIL("no mount on %s in /proc/self/mountinfo", dir);
}

TEST_IMPL(mount_atime_options)
{
	static const struct {
		const char *opts;
		const char *flag; /* among the mount's flags */
	} rows[] = {
		{ "relatime", ",relatime," },
		{ "norelatime", ",relatime," },
		{ "strictatime", ",relatime," },
		{ "nostrictatime", ",relatime," },
		{ "nodiratime", ",relatime," },
		{ "diratime", ",relatime," },
		{ "lazytime", ",relatime," },
		{ "nolazytime", ",relatime," },
		{ "atime", ",relatime," },
		{ "noatime", ",noatime," },
		/* As mount(8) passes an fstab line's. */
		{ "rw,nodiratime,relatime,lazytime,_netdev", ",relatime," },
		{ "noatime,nodiratime,strictatime", ",noatime," },
	};
	static const char *const bad[] = { "relatime=1",
					   "nolazytime=", "strictatime=yes" };
	struct test_server s;
	char flags[1100], log[8192], *got;
	struct mnt m;

	srv_get(&s);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		fprintf(stderr, "# -o %s\n", rows[i].opts);
		mnt_start(&m, &s, rows[i].opts);
		write_file(mpath(&m, "f"), "atime\n", 6);
		ASSERT_EQ(read_file(mpath(&m, "f"), &got), 6);
		ASSERT_MEM_EQ(got, "atime\n", 6);
		free(got);
		mount_flags(m.dir, flags, sizeof(flags));
		mnt_stop(&m);
		ASSERT_CONTAINS(flags, rows[i].flag);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char want[128];

		snprintf(want, sizeof(want), "option '%.*s' takes no value",
			 (int)strcspn(bad[i], "="), bad[i]);
		ASSERT_EQ(mnt_start_fails(&m, &s, bad[i], log, sizeof(log)), 2);
		ASSERT_CONTAINS(log, want);
	}
	return 0;
}
