/*
 * A link planted over NFS where a root tool reads the export: while
 * intrfs-scenario's read waits on a late reply, the attacker (attack_i.h)
 * moves p0.a aside and puts in its place a symbolic link to a decoy of
 * root's that holds the bytes the runner expects, or a hard link.  The
 * runner must refuse it and name it, and leave the decoy as it was.
 */
#include "test.h"

#include "attack_i.h"
#include "beneath.h"
#include "proc.h"
#include "scenario.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_SIZE 65536

/* The runner's scenario: a read held by a READ reply 3 s late. */
static const char scenario[] =
	"name     attack-planted-link\n"
	"about    a file of the export swapped for a link during a read\n"
	"mount    hard,killable,timeo=50,retrans=1\n"
	"fault    at=0 netfault delay 3000 dir=reply proc=READ\n"
	"workload read size=64K chunk=64K direct\n"
	"expect   result=ok\n";

/* Whether an intrfs mount of the export's dir is up (mountinfo). */
static bool mounted(const char *dir)
{
	char line[4096];
	bool up = false;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	while (f && !up && fgets(line, sizeof(line), f))
		up = strstr(line, " fuse.intrfs ") && strstr(line, dir);
	if (f)
		fclose(f);
	return up;
}

/*
 * Waits for the runner's directory on the export and its mount of it;
 * then, with the file open and its read held by the late reply, moves
 * p0.a aside over NFS and puts a link in its place: a symbolic one to the
 * decoy (root's file outside the export, holding the bytes the runner
 * expects of p0.a), or a hard one to the file moved aside.
 */
static int plant_link(struct attack *a)
{
	char dir[64], mnt[80];
	struct nc_entry d, f, e;
	struct nfs n;
	int rc, i;

	if (!atk_nfs_open(a, &n))
		return BROKEN;
	snprintf(dir, sizeof(dir), "scn-%d-1", (int)a->runner);
	snprintf(mnt, sizeof(mnt), "/%s ", dir);
	for (i = 0; i < 3000 && !mounted(mnt); i++)
		test_sleep_ms(10);
	if (i == 3000) {
		atk_say(a, "the runner never mounted %s", dir);
		return BROKEN;
	}
	/* The file is opened as soon as the mount is up; its read waits. */
	test_sleep_ms(500);
	rc = nc_lookup(n.c, &n.root, &n.top, dir, &d);
	if (!rc)
		rc = nc_lookup(n.c, &n.root, &d.fh, "p0.a", &f);
	if (!rc)
		rc = nc_rename(n.c, &n.root, &d.fh, "p0.a", &d.fh, "p0.aside");
	if (rc) {
		atk_say(a, "%s/p0.a: %s", dir, strerror(-rc));
		return BROKEN;
	}
	if (a->hard)
		rc = nc_link(n.c, &n.root, &f.fh, &d.fh, "p0.a");
	else
		rc = nc_symlink(n.c, &n.root, &d.fh, "p0.a", a->decoy,
				&(struct nc_sattr){ 0 }, &e);
	if (rc) {
		atk_say(a, "%s %s/p0.a: %s", a->hard ? "LINK" : "SYMLINK", dir,
			strerror(-rc));
		return BROKEN;
	}
	atk_say(a, "put %s in place of %s/p0.a over NFS",
		a->hard ? "a hard link to p0.aside" : a->decoy, dir);
	return REFUSED;
}

static void link_runner(bool hard)
{
	char dir[] = "/tmp/intrfs-attack.XXXXXX", scn[PATH_MAX], out[8192];
	char got[16384], ports[2][16];
	static unsigned char buf[FILE_SIZE], now[FILE_SIZE + 1];
	struct attack a;
	size_t n = 0;
	int fd, p[2], st;

	atk_init(&a, "runner");
	a.hard = hard;
	/* The decoy holds what the runner expects of p0.a: its old bytes. */
	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(a.decoy, sizeof(a.decoy), "%s/decoy", dir);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = work_old_byte(0, i);
	fd = open(a.decoy, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	ASSERT_EQ(close(fd), 0);
	snprintf(scn, sizeof(scn), "%s/attack.scn", dir);
	fd = open(scn, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, scenario, strlen(scenario)),
		  (ssize_t)strlen(scenario));
	ASSERT_EQ(close(fd), 0);
	snprintf(ports[0], sizeof(ports[0]), "%u", a.t.nfs_port);
	snprintf(ports[1], sizeof(ports[1]), "%u", a.t.mount_port);
	ASSERT_EQ(pipe(p), 0);
	a.runner = proc_spawn(
		SCENARIO_BIN,
		(const char *const[]){ "intrfs-scenario", "--server",
				       a.t.server, "--export", a.t.export_dir,
				       "--nfs-port", ports[0], "--mount-port",
				       ports[1], scn, NULL },
		p[1], p[1], 0);
	ASSERT_GT(a.runner, 0);
	close(p[1]);
	atk_run(plant_link, &a, out, sizeof(out));
	for (ssize_t r; n < sizeof(got) - 1 &&
			(r = read(p[0], got + n, sizeof(got) - 1 - n)) > 0;)
		n += (size_t)r;
	got[n] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(a.runner, &st, 0), a.runner);
	fprintf(stderr, "# the runner said (exit %d):\n%s", WEXITSTATUS(st),
		got);
	ASSERT_CONTAINS(out, "in place of");
	if (WEXITSTATUS(st) == 0)
		TEST__FAIL("the runner checked p0.a through a %s link put "
			   "there over NFS (to %s) and passed",
			   hard ? "hard" : "symbolic",
			   hard ? "another file" : a.decoy);
	ASSERT_EQ(WEXITSTATUS(st), 1);
	ASSERT_CONTAINS(got, "p0.a");
	ASSERT_CONTAINS(got, hard ? "hard link" : "symbolic link");
	/* The decoy: still root's, unchanged. */
	fd = open(a.decoy, O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(read(fd, now, sizeof(now)), (ssize_t)sizeof(buf));
	ASSERT_MEM_EQ(now, buf, sizeof(buf));
	close(fd);
	/* The runner keeps a failed scenario's directory: ours to remove. */
	fd = beneath_root(a.t.export_dir);
	ASSERT_GE(fd, 0);
	snprintf(scn, sizeof(scn), "scn-%d-1", (int)a.runner);
	ASSERT_EQ(beneath_remove_tree(fd, scn), 0);
	close(fd);
	unlink(a.decoy);
	unlink(scn);
	snprintf(scn, sizeof(scn), "%s/attack.scn", dir);
	unlink(scn);
	rmdir(dir);
}

TEST_IMPL(attack_link_runner)
{
	link_runner(false);
	return 0;
}

TEST_IMPL(attack_hard_link_runner)
{
	link_runner(true);
	return 0;
}
