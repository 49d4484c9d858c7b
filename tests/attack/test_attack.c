/*
 * Attacks on a server the project starts (mount-scripts/start-server, as
 * the test suites, the demo, the benchmarks and the scenario runner start
 * it), each made by a local user who is not root: uid and gid 65534, no
 * groups, speaking NFS from an unreserved port with the AUTH_SYS
 * credentials it likes (uid 0), as any NFS client library lets it.  Each
 * must be refused:
 *
 *   attack_setuid      a directory made as uid 0 and given to the
 *                      attacker, a program put in it (by its local path
 *                      where that can be reached, else over NFS), made
 *                      root's and 04755 over NFS, then run by its path and
 *                      through a descriptor root opened: never euid 0;
 *   attack_device      a node of root's disk (a loop device) made 0666
 *                      over NFS, opened by its path and through root's
 *                      descriptor: never read;
 *   attack_forged_handle  file handles made from the export's own (its
 *                      fsid, or the target's own): the root of the
 *                      filesystem under the export, /, and a root-only
 *                      file beside the export (read, and hard linked into
 *                      it): refused, or the export's own root;
 *   attack_netfault    the setuid and handle attacks through netfault,
 *                      whose listening socket is no reserved port;
 *   attack_link_runner, attack_hard_link_runner (test_links.c)
 *                      a symbolic link (a hard link) put over NFS in
 *                      place of the file the scenario runner then checks
 *                      on the export as root: the runner must refuse it
 *                      and name it.
 *
 * The attacker is attacker.c's.  The server is tests/run's (testenv.h),
 * which runs this program against each kind of server it and the scripts
 * start.  What each attacker did and saw is printed as TAP comments; an
 * attack that worked fails its test with what was gained.
 */
#include "test.h"

#include "attack_i.h"
#include "beneath.h"
#include "proc.h"

#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef WHOAMI_BIN
#error "WHOAMI_BIN: the path of attack-whoami, from tests/meson.build"
#endif

/* The local path of name in the attacker's directory. */
static const char *local(const struct attack *a, const char *name, char *buf,
			 size_t len)
{
	snprintf(buf, len, "%s/%s/%s", a->t.export_dir, a->name, name);
	return buf;
}

/* Puts the program in the directory: by its local path if it can. */
static bool put_program(struct attack *a, struct nfs *n,
			const struct nc_entry *d, struct nc_entry *f)
{
	struct nc_sattr sa = { .set = NC_SET_MODE, .mode = 0755 };
	struct nc_write_res res;
	char path[PATH_MAX];
	int fd, rc;

	fd = open(local(a, "whoami", path, sizeof(path)),
		  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0755);
	if (fd >= 0) {
		bool ok = write(fd, a->prog, a->prog_len) ==
			  (ssize_t)a->prog_len;

		if (close(fd) < 0 || !ok) {
			atk_say(a, "writing %s: %s", path, strerror(errno));
			return false;
		}
		atk_say(a, "copied the program to %s, by its path", path);
		rc = nc_lookup(n->c, &n->root, &d->fh, "whoami", f);
		if (rc) {
			atk_say(a, "LOOKUP whoami: %s", strerror(-rc));
			return false;
		}
		return true;
	}
	atk_say(a, "%s cannot be made by its path (%s): over NFS instead", path,
		strerror(errno));
	rc = nc_create(n->c, &n->root, &d->fh, "whoami", NC_CREATE_GUARDED, &sa,
		       f);
	if (!rc)
		rc = nc_pwrite(n->c, &n->root, &f->fh, 0, a->prog_len, a->prog,
			       NC_FILE_SYNC, &res);
	if (rc) {
		atk_say(a, "CREATE and WRITE of whoami: %s", strerror(-rc));
		return false;
	}
	return true;
}

/*
 * Runs path (or, path NULL, the descriptor a->fd) and reads what it
 * prints: true when it ran with euid 0.
 */
static bool run_program(struct attack *a, const char *path)
{
	char out[256] = { 0 }, *euid;
	size_t got = 0;
	int p[2], st;
	pid_t pid;

	if (pipe(p) < 0)
		_exit(BROKEN);
	pid = fork();
	if (pid < 0)
		_exit(BROKEN);
	if (pid == 0) {
		char *argv[] = { "whoami", NULL }, *envp[] = { NULL };

		dup2(p[1], 1);
		dup2(p[1], 2);
		if (path)
			execve(path, argv, envp);
		else
			execveat(a->fd, "", argv, envp, AT_EMPTY_PATH);
		printf("exec: %s\n", strerror(errno));
		_exit(126);
	}
	close(p[1]);
	for (ssize_t r; got < sizeof(out) - 1 &&
			(r = read(p[0], out + got, sizeof(out) - 1 - got)) > 0;)
		got += (size_t)r;
	close(p[0]);
	waitpid(pid, &st, 0);
	out[strcspn(out, "\n")] = '\0';
	atk_say(a, "ran %s: %s", path ? path : "root's descriptor", out);
	euid = strstr(out, "euid=");
	return euid && strtol(euid + 5, NULL, 10) == 0;
}

static int plant_setuid(struct attack *a)
{
	struct nc_sattr own = { .set = NC_SET_UID | NC_SET_GID };
	struct nc_sattr mode = { .set = NC_SET_MODE, .mode = 04755 };
	struct nc_entry d, f;
	struct nc_attr at;
	char path[PATH_MAX];
	struct nfs n;
	int rc;

	if (!atk_nfs_open(a, &n) || !atk_own_dir(a, &n, &d) ||
	    !put_program(a, &n, &d, &f))
		return BROKEN;
	/* Two calls: a chown clears the setuid bit set with it. */
	rc = nc_setattr(n.c, &n.root, &f.fh, &own, NULL);
	if (!rc)
		rc = nc_setattr(n.c, &n.root, &f.fh, &mode, &at);
	if (rc) {
		atk_say(a, "SETATTR root's and 04755: %s", strerror(-rc));
		return BROKEN;
	}
	atk_say(a, "whoami is now uid %u mode %04o over NFS", at.uid,
		at.mode & 07777);
	if (run_program(a, local(a, "whoami", path, sizeof(path)))) {
		atk_say(a, "GAINED euid 0 by running %s", path);
		return GAINED;
	}
	return REFUSED;
}

/* The second step: root's descriptor of the program, run by the attacker. */
static int run_descriptor(struct attack *a)
{
	if (run_program(a, NULL)) {
		atk_say(a, "GAINED euid 0 through root's descriptor of it");
		return GAINED;
	}
	return REFUSED;
}

/* attack-whoami's bytes, read as root (the attacker may not reach them). */
static void read_program(struct attack *a)
{
	static char buf[4 << 20];
	ssize_t n;
	int fd = open(WHOAMI_BIN, O_RDONLY);

	ASSERT_GE(fd, 0);
	n = read(fd, buf, sizeof(buf));
	ASSERT_GT(n, 0);
	ASSERT_LT(n, (ssize_t)sizeof(buf));
	close(fd);
	a->prog = buf;
	a->prog_len = (size_t)n;
}

static void setuid_attack(struct attack *a)
{
	char out[8192], rel[128];

	if (atk_run(plant_setuid, a, out, sizeof(out)) == GAINED)
		ATK_GAINED(a,
			   "a local user gained root on the export at %s: %s",
			   a->t.export_dir, out);
	ASSERT_CONTAINS(out, "whoami is now uid 0 mode 4755");
	/* Even reached through a descriptor, the bit does nothing there. */
	snprintf(rel, sizeof(rel), "%s/whoami", a->name);
	a->fd = atk_root_opens(a, rel);
	ASSERT_GE(a->fd, 0);
	if (atk_run(run_descriptor, a, out, sizeof(out)) == GAINED)
		ATK_GAINED(a,
			   "the setuid program made over NFS runs as root: %s",
			   out);
}

TEST_IMPL(attack_setuid)
{
	struct attack a;

	atk_init(&a, "setuid");
	read_program(&a);
	setuid_attack(&a);
	atk_clean(&a);
	return 0;
}

/*
 * Reads the first block of the disk through path (NULL: root's
 * descriptor): true when root's words are in it.
 */
static bool read_disk(struct attack *a, const char *path)
{
	char buf[512] = { 0 }, proc[64];
	ssize_t n;
	int fd;

	if (!path) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", a->fd);
		path = proc;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		atk_say(a, "open %s: %s", path, strerror(errno));
		return false;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[strcspn(buf, "\n")] = '\0';
	atk_say(a, "read %zd bytes of block device %u:%u through %s: \"%s\"", n,
		major(a->disk), minor(a->disk), path, buf);
	return n > 0 && strncmp(buf, a->secret_text, 8) == 0;
}

static int plant_device(struct attack *a)
{
	struct nc_sattr sa = { .set = NC_SET_MODE, .mode = 0666 };
	struct nc_entry d, f;
	char path[PATH_MAX];
	struct nfs n;
	int rc;

	if (!atk_nfs_open(a, &n) || !atk_own_dir(a, &n, &d))
		return BROKEN;
	rc = nc_mknod(n.c, &n.root, &d.fh, "disk", S_IFBLK, major(a->disk),
		      minor(a->disk), &sa, &f);
	if (rc) {
		/* A server that refuses device nodes is refusing the attack. */
		atk_say(a, "MKNOD block %u:%u as uid 0: %s", major(a->disk),
			minor(a->disk), strerror(-rc));
		return REFUSED;
	}
	atk_say(a, "made block device %u:%u mode 0666 over NFS", major(a->disk),
		minor(a->disk));
	if (read_disk(a, local(a, "disk", path, sizeof(path)))) {
		atk_say(a, "GAINED root's disk through %s", path);
		return GAINED;
	}
	return REFUSED;
}

static int open_device_descriptor(struct attack *a)
{
	if (read_disk(a, NULL)) {
		atk_say(a, "GAINED root's disk through root's descriptor");
		return GAINED;
	}
	return REFUSED;
}

/*
 * Root's disk: a loop device (0660 root:disk, as udev makes them) of a
 * file in a directory of root's, its first block root's words.  Returns
 * the open loop device, which lets go of its file when it is closed,
 * however the test ends (LO_FLAGS_AUTOCLEAR): loop devices are the
 * machine's, not the test's.
 */
static int make_disk(struct attack *a, char *dir)
{
	struct loop_config cfg = { .info.lo_flags = LO_FLAGS_READ_ONLY |
						    LO_FLAGS_AUTOCLEAR };
	char path[PATH_MAX], dev[32];
	struct stat st;
	int fd, ctl, n, loop;

	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/disk", dir);
	snprintf(a->secret_text, sizeof(a->secret_text), "root's disk %d\n",
		 (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, a->secret_text, strlen(a->secret_text)),
		  (ssize_t)strlen(a->secret_text));
	ASSERT_EQ(ftruncate(fd, 65536), 0);
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	ASSERT_GE(ctl, 0);
	/* Another user of loop devices may take the free one first. */
	for (int i = 0;; i++) {
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		ASSERT_GE(n, 0);
		snprintf(dev, sizeof(dev), "/dev/loop%d", n);
		loop = open(dev, O_RDONLY | O_CLOEXEC);
		ASSERT_GE(loop, 0);
		cfg.fd = (unsigned)fd;
		if (ioctl(loop, LOOP_CONFIGURE, &cfg) == 0)
			break;
		if (errno != EBUSY || i == 10)
			TEST__FAIL("LOOP_CONFIGURE %s: %s", dev,
				   strerror(errno));
		close(loop);
	}
	close(ctl);
	close(fd);
	ASSERT_EQ(fstat(loop, &st), 0);
	a->disk = st.st_rdev;
	fprintf(stderr, "# root's disk: %s (%u:%u)\n", dev, major(a->disk),
		minor(a->disk));
	return loop;
}

TEST_IMPL(attack_device)
{
	char dir[] = "/tmp/intrfs-attack-disk.XXXXXX", path[PATH_MAX];
	char out[8192], rel[128];
	struct attack a;
	int loop;

	atk_init(&a, "device");
	loop = make_disk(&a, dir);
	if (atk_run(plant_device, &a, out, sizeof(out)) == GAINED)
		ATK_GAINED(&a,
			   "a local user read root's disk through the export "
			   "at %s: %s",
			   a.t.export_dir, out);
	snprintf(rel, sizeof(rel), "%s/disk", a.name);
	a.fd = atk_root_opens(&a, rel);
	if (a.fd >= 0 &&
	    atk_run(open_device_descriptor, &a, out, sizeof(out)) == GAINED)
		ATK_GAINED(&a, "a device node made over NFS opens: %s", out);
	atk_clean(&a);
	close(loop);
	snprintf(path, sizeof(path), "%s/disk", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}

/* Forged handles. */

/* ganesha's NFSv3 handle: version, flags, export id, length, the FSAL's. */
#define GSH_HEAD 5
/* The VFS FSAL's: flags (fsid type, handle type's size), fsid, type, handle. */
#define VFS_TYPE_8 0x40
#define VFS_FSID_MASK 0x1f

static unsigned fsid_len(unsigned type)
{
	static const unsigned len[] = { 0, 8, 8, 16, 8, 8 };

	return type < ARRAY_SIZE(len) ? len[type] : 0;
}

/* ganesha's fsid types (enum fsid_type): two 32-bit words is statfs's. */
#define FSID_TWO_UINT32 4

/*
 * A handle of the export's server for the kernel handle k, made from the
 * export's root handle top: its head and fsid, or with fsid (statfs's two
 * words) in place of its fsid.  False when top is not a VFS FSAL handle
 * this understands.
 */
static bool forge(struct attack *a, const struct nc_fh *top,
		  const struct khandle *k, const uint32_t *fsid,
		  struct nc_fh *out)
{
	unsigned ftype, flen, len;

	if (top->len < GSH_HEAD + 1 || top->data[4] + GSH_HEAD > top->len) {
		atk_say(a, "the export's handle is not ganesha's (%u bytes)",
			top->len);
		return false;
	}
	ftype = fsid ? FSID_TWO_UINT32 : top->data[GSH_HEAD] & VFS_FSID_MASK;
	flen = fsid_len(ftype);
	len = 1 + flen + 1 + k->len;
	if (k->type > 0xff || GSH_HEAD + len > NC_FHSIZE)
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out->data, top->data, GSH_HEAD + 1 + flen);
	out->data[4] = (unsigned char)len;
	out->data[GSH_HEAD] = (unsigned char)(ftype | VFS_TYPE_8);
	if (fsid)
		memcpy(out->data + GSH_HEAD + 1, fsid, 8);
	out->data[GSH_HEAD + 1 + flen] = (unsigned char)k->type;
	memcpy(out->data + GSH_HEAD + 2 + flen, k->data, k->len);
	/* ganesha pads its handles to four bytes. */
	out->len = (GSH_HEAD + len + 3) & ~3u;
	return true;
}

/*
 * What the server does with the forged handle fh of what: true when it
 * reaches something that is not the export's root (said, with a listing
 * when it is a directory).
 */
static bool reaches(struct attack *a, struct nfs *n, const struct nc_fh *fh,
		    const char *what)
{
	unsigned char verf[8] = { 0 };
	struct names l = { { 0 }, 0 };
	struct nc_attr at;
	bool eof;
	int rc = nc_getattr(n->c, &n->root, fh, &at);

	if (rc) {
		atk_say(a, "%s: refused (%s)", what, strerror(-rc));
		return false;
	}
	if (at.fileid == n->top_attr.fileid && at.fsid == n->top_attr.fsid) {
		atk_say(a, "%s: the export's own root", what);
		return false;
	}
	if (S_ISDIR(at.mode) && nc_readdir(n->c, &n->root, fh, 0, verf, false,
					   atk_add_name, &l, &eof) == 0)
		atk_say(a, "GAINED %s: a directory of %u names:%s", what, l.n,
			l.list);
	else
		atk_say(a, "GAINED %s: fileid %llu, mode %o, uid %u", what,
			(unsigned long long)at.fileid, at.mode, at.uid);
	return true;
}

/* READ of the root-only file, LINK of it into the attacker's directory. */
static bool steals_secret(struct attack *a, struct nfs *n,
			  const struct nc_fh *fh, const struct nc_entry *d)
{
	char buf[128] = { 0 };
	uint32_t got = 0;
	bool eof, gained = false;
	int rc;

	rc = nc_read(n->c, &n->root, fh, 0, sizeof(buf) - 1, buf, &got, &eof,
		     NULL);
	if (rc == 0 && got) {
		buf[strcspn(buf, "\n")] = '\0';
		atk_say(a, "GAINED a root-only file outside the export: \"%s\"",
			buf);
		gained = true;
	} else {
		atk_say(a, "READ of the root-only file's handle: refused (%s)",
			strerror(rc ? -rc : EIO));
	}
	rc = nc_link(n->c, &n->root, fh, &d->fh, "hard");
	if (rc == 0) {
		atk_say(a, "GAINED a hard link %s/hard to the root-only file",
			a->name);
		gained = true;
	} else {
		atk_say(a,
			"LINK of the root-only file into the export: refused "
			"(%s)",
			strerror(-rc));
	}
	return gained;
}

static int forge_handles(struct attack *a)
{
	struct nc_fh fh;
	struct nc_entry d;
	bool gained = false;
	struct nfs n;

	if (!atk_nfs_open(a, &n) || !atk_own_dir(a, &n, &d))
		return BROKEN;
	if (!forge(a, &n.top, &a->fs_root, NULL, &fh))
		return BROKEN;
	gained |= reaches(a, &n, &fh, "the root of the export's filesystem");
	if (!forge(a, &n.top, &a->slash, NULL, &fh))
		return BROKEN;
	gained |= reaches(a, &n, &fh, "/ with the export's fsid");
	if (a->slash_fsid_ok && forge(a, &n.top, &a->slash, a->slash_fsid, &fh))
		gained |= reaches(a, &n, &fh, "/ with its own fsid");
	if (!forge(a, &n.top, &a->secret, NULL, &fh))
		return BROKEN;
	gained |= steals_secret(a, &n, &fh, &d);
	if (a->secret_fsid_ok &&
	    forge(a, &n.top, &a->secret, a->secret_fsid, &fh))
		gained |= steals_secret(a, &n, &fh, &d);
	return gained ? GAINED : REFUSED;
}

static void handle_of(const char *path, struct khandle *k)
{
	struct {
		struct file_handle fh;
		unsigned char room[MAX_HANDLE_SZ];
	} h;
	int mnt;

	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mnt, 0) < 0)
		TEST__FAIL("name_to_handle_at %s: %s", path, strerror(errno));
	k->type = h.fh.handle_type;
	k->len = h.fh.handle_bytes;
	memcpy(k->data, h.fh.f_handle, k->len);
}

/* The mount point of the filesystem under path (/proc/self/mountinfo). */
static void mount_point_of(const char *path, char *out, size_t len)
{
	char real[PATH_MAX], line[4096], mp[PATH_MAX];
	size_t best = 0;
	FILE *f;

	ASSERT_NOT_NULL(realpath(path, real));
	f = fopen("/proc/self/mountinfo", "r");
	ASSERT_NOT_NULL(f);
	snprintf(out, len, "/");
	while (fgets(line, sizeof(line), f)) {
		size_t n;

		/* id parent major:minor root MOUNTPOINT ... */
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		n = strlen(mp);
		if (strstr(mp, "\\") || n < best)
			continue;
		if (strncmp(real, mp, n) == 0 &&
		    (real[n] == '/' || real[n] == '\0' || n == 1)) {
			best = n;
			snprintf(out, len, "%s", mp);
		}
	}
	fclose(f);
}

/*
 * A root-only file beside the export, with words of its own in it: in the
 * nearest directory above the export whose filesystem gives out file
 * handles (start-server's run directory: the export's own parent holds no
 * file an NFS client could name).
 */
static void make_secret(struct attack *a, char *path, size_t len)
{
	char dir[PATH_MAX - 32], *slash;
	struct statfs sf;
	int fd;

	snprintf(dir, sizeof(dir), "%s", a->t.export_dir);
	snprintf(a->secret_text, sizeof(a->secret_text), "root's secret %d\n",
		 (int)getpid());
	for (;;) {
		struct {
			struct file_handle fh;
			unsigned char room[MAX_HANDLE_SZ];
		} h = { .fh.handle_bytes = MAX_HANDLE_SZ };
		int mnt;

		slash = strrchr(dir, '/');
		ASSERT(slash && slash != dir);
		*slash = '\0';
		if (name_to_handle_at(AT_FDCWD, dir, &h.fh, &mnt, 0) == 0)
			break;
		ASSERT_EQ(errno, EOPNOTSUPP);
	}
	snprintf(path, len, "%s/attack-secret.XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(write(fd, a->secret_text, strlen(a->secret_text)),
		  (ssize_t)strlen(a->secret_text));
	ASSERT_EQ(close(fd), 0);
	handle_of(path, &a->secret);
	if (statfs(path, &sf) == 0) {
		memcpy(a->secret_fsid, &sf.f_fsid, sizeof(a->secret_fsid));
		a->secret_fsid_ok = true;
	}
	fprintf(stderr, "# root's secret: %s\n", path);
}

static void forge_setup(struct attack *a, char *secret, size_t len)
{
	char mp[PATH_MAX];
	struct statfs sf;

	mount_point_of(a->t.export_dir, mp, sizeof(mp));
	fprintf(stderr, "# the export %s is on the filesystem mounted on %s\n",
		a->t.export_dir, mp);
	handle_of(mp, &a->fs_root);
	handle_of("/", &a->slash);
	if (statfs("/", &sf) == 0) {
		memcpy(a->slash_fsid, &sf.f_fsid, sizeof(a->slash_fsid));
		a->slash_fsid_ok = true;
	}
	make_secret(a, secret, len);
}

static void forge_attack(struct attack *a)
{
	char out[8192];

	if (atk_run(forge_handles, a, out, sizeof(out)) != REFUSED)
		ATK_GAINED(a,
			   "a forged handle reached outside the export at %s: "
			   "%s",
			   a->t.export_dir, out);
	ASSERT_CONTAINS(out, "LINK of the root-only file into the export: "
			     "refused");
}

TEST_IMPL(attack_forged_handle)
{
	char secret[PATH_MAX];
	struct attack a;

	atk_init(&a, "handle");
	forge_setup(&a, secret, sizeof(secret));
	forge_attack(&a);
	unlink(secret);
	atk_clean(&a);
	return 0;
}

/* The same attacks through netfault: its socket is no reserved port. */
TEST_IMPL(attack_netfault)
{
	char secret[PATH_MAX], err[1024], log[64];
	unsigned nfs, mnt;
	struct attack a;
	pid_t nf;
	int st;

	atk_init(&a, "netfault");
	read_program(&a);
	forge_setup(&a, secret, sizeof(secret));
	snprintf(log, sizeof(log), "/tmp/intrfs-attack-nf.%d.log",
		 (int)getpid());
	nf = proc_netfault_start(NETFAULT_BIN, a.t.server, a.t.nfs_port,
				 a.t.mount_port, (const char *const[]){ NULL },
				 log, 10000, &nfs, &mnt, err, sizeof(err));
	unlink(log);
	if (nf < 0)
		TEST__FAIL("netfault: %s", err);
	fprintf(stderr, "# through netfault on ports %u and %u\n", nfs, mnt);
	a.t.nfs_port = nfs;
	a.t.mount_port = mnt;
	setuid_attack(&a);
	atk_clean(&a);
	forge_attack(&a);
	atk_clean(&a);
	unlink(secret);
	kill(nf, SIGTERM);
	ASSERT_EQ(waitpid(nf, &st, 0), nf);
	return 0;
}
