/*
 * Where a mount's control socket is (ctl.h), for the daemon and for
 * intrfsctl alike: the directory by who mounted, the name by the mount's
 * device, and the mounts of /proc/self/mountinfo found by device or by
 * mount point.  It only reads; it keeps no state.
 */
#include "ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctl_dir(uid_t uid, char *buf, size_t len)
{
	if (uid == 0)
		snprintf(buf, len, "%s", CTL_DIR);
	else
		snprintf(buf, len, CTL_USER_RUNTIME "/" CTL_USER_SUBDIR,
			 (unsigned)uid);
}

void ctl_path(uid_t uid, unsigned major, unsigned minor, char *buf, size_t len)
{
	char dir[64];

	ctl_dir(uid, dir, sizeof(dir));
	snprintf(buf, len, "%s/ctl-%u:%u.sock", dir, major, minor);
}

/* The kernel's octal escapes (\040 for a space) undone, in place. */
static void unescape(char *s)
{
	for (char *r = s, *w = s;; r++, w++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 +
				    (r[3] - '0'));
			r += 3;
		} else {
			*w = *r;
		}
		if (!*r)
			break;
	}
}

/*
 * One line: "id parent maj:min root point options [optional...] - fstype
 * source superoptions".  False when it is not one.
 */
static bool parse_line(char *line, struct ctl_mount *m)
{
	char *sep = strstr(line, " - "), *opt, *save = NULL;
	char super[1024];

	if (!sep ||
	    sscanf(line, "%*s %*s %u:%u %*s %4095s", &m->major, &m->minor,
		   m->point) != 3 ||
	    sscanf(sep + 3, "%63s %*s %1023s", m->fstype, super) != 2)
		return false;
	unescape(m->point);
	m->owner = (uid_t)-1;
	for (opt = strtok_r(super, ",", &save); opt;
	     opt = strtok_r(NULL, ",", &save))
		if (strncmp(opt, "user_id=", 8) == 0)
			m->owner = (uid_t)strtoul(opt + 8, NULL, 10);
	return true;
}

int ctl_mount_of_dev(unsigned major, unsigned minor, struct ctl_mount *m)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192];
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (rc && fgets(line, sizeof(line), f))
		if (parse_line(line, m) && m->major == major &&
		    m->minor == minor)
			rc = 0;
	fclose(f);
	return rc;
}

int ctl_mount_on(const char *point, const char *fstype, struct ctl_mount *m)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct ctl_mount one;
	char line[8192];
	int rc = -ENOENT;

	if (!f)
		return -errno;
	/* Mounts are listed in the order they were made: keep the last. */
	while (fgets(line, sizeof(line), f))
		if (parse_line(line, &one) && strcmp(one.point, point) == 0 &&
		    strcmp(one.fstype, fstype) == 0) {
			*m = one;
			rc = 0;
		}
	fclose(f);
	return rc;
}
