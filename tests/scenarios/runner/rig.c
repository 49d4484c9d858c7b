/*
 * The rig a scenario runs on: netfault in front of the server, the
 * scenario's directory on the export, the intrfs mount through netfault,
 * and the server-side faults (pause, kill and restart, partitions).
 * Processes are found by the pids the rig noted, never by name.  It runs
 * as root: every file it makes is in the run's own directory (mkdtemp,
 * 0700), which nobody else can plant a name in, and removed with it.
 * What explains a failed scenario is kept by keep.c: the logs named here
 * stay in the run's directory until rig_cell_end(), and a daemon that
 * does not exit after its unmount has its stacks kept before it is killed.
 */
#include "scenario.h"
#include "beneath.h"
#include "intrfs/util.h"
#include "mntrig.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MOUNT_DEADLINE_MS 15000
#define UMOUNT_DEADLINE_MS 15000
#define NETFAULT_DEADLINE_MS 10000
#define CONTROL_DEADLINE_MS 10000

static void say(const struct rig *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(const struct rig *r, const char *fmt, ...)
{
	va_list ap;

	if (!r->verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "  . ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

int rig_server_from_dir(struct rig_server *srv, const char *run_dir, char *err,
			size_t len)
{
	char path[SCN_TEXT_MAX + 32], line[SCN_TEXT_MAX + 32];
	struct srvrig env = { 0 };
	FILE *f;
	int rc;

	memset(srv, 0, sizeof(*srv));
	scn_copy(srv->run_dir, sizeof(srv->run_dir), run_dir);
	snprintf(path, sizeof(path), "%s/instance.env", run_dir);
	rc = srvrig_read(&env, path);
	if (rc < 0) {
		snprintf(err, len,
			 "%s: %s (is a server started there? "
			 "mount-scripts/start-server --run-dir %s)",
			 path, strerror(-rc), run_dir);
		return -1;
	}
	scn_copy(srv->host, sizeof(srv->host), env.host);
	scn_copy(srv->export_dir, sizeof(srv->export_dir), env.export_dir);
	srv->nfs_port = env.nfs_port;
	srv->mount_port = env.mount_port;
	srv->pid = env.pid;
	/* The NLM and RQUOTA ports a restart must write again. */
	snprintf(path, sizeof(path), "%s/ganesha.conf", run_dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, " NLM_Port = %u", &srv->nlm_port);
		sscanf(line, " Rquota_Port = %u", &srv->rquota_port);
	}
	if (f)
		fclose(f);
	if (!srv->host[0] || !srv->export_dir[0] || !srv->nfs_port ||
	    !srv->mount_port || srv->pid <= 0) {
		snprintf(err, len,
			 "%s/instance.env misses server=, export=, "
			 "nfs_port=, mount_port= or pid=",
			 run_dir);
		return -1;
	}
	if (kill(srv->pid, 0) < 0) {
		snprintf(err, len,
			 "the server in %s (pid %d) is not running; start it "
			 "with mount-scripts/start-server --run-dir %s",
			 run_dir, (int)srv->pid, run_dir);
		return -1;
	}
	return 0;
}

int rig_run_dir_make(struct rig *r, char *err, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || tmp[0] != '/' ||
	    strlen(tmp) + sizeof("/intrfs-scn.XXXXXX") > sizeof(r->run_dir))
		tmp = "/tmp";
	snprintf(r->run_dir, sizeof(r->run_dir), "%s/intrfs-scn.XXXXXX", tmp);
	if (!mkdtemp(r->run_dir)) {
		snprintf(err, len, "mkdtemp %s: %s", r->run_dir,
			 strerror(errno));
		r->run_dir[0] = '\0';
		return -1;
	}
	snprintf(r->nf_sock, sizeof(r->nf_sock), "%s/netfault.sock",
		 r->run_dir);
	snprintf(r->nf_log, sizeof(r->nf_log), "%s/netfault.log", r->run_dir);
	return 0;
}

void rig_run_dir_remove(struct rig *r)
{
	if (r->run_dir[0] && rmdir(r->run_dir) < 0)
		fprintf(stderr,
			"intrfs-scenario: could not remove %s (%s): something "
			"of the run is left in it\n",
			r->run_dir, strerror(errno));
	r->run_dir[0] = '\0';
}

int rig_netfault_start(struct rig *r, char *err, size_t len)
{
	char errlog[160], nlm[300];
	const char *more[8] = { "--control", r->nf_sock, "--log", r->nf_log };
	pid_t pid;

	/* The lock manager's calls go through it too, when its port is known. */
	r->nf_nlm_port = r->srv->nlm_port ? proc_free_port() : 0;
	if (r->nf_nlm_port) {
		snprintf(nlm, sizeof(nlm), "%u=%s:%u", r->nf_nlm_port,
			 r->srv->host, r->srv->nlm_port);
		more[4] = "--listen";
		more[5] = nlm;
	}
	snprintf(errlog, sizeof(errlog), "%s.err", r->nf_log);
	pid = proc_netfault_start(r->paths->netfault, r->srv->host,
				  r->srv->nfs_port, r->srv->mount_port, more,
				  errlog, NETFAULT_DEADLINE_MS, &r->nf_nfs_port,
				  &r->nf_mount_port, err, len);
	if (pid < 0)
		return -1;
	r->nf_pid = pid;
	say(r, "netfault (pid %d) on ports %u (NFS), %u (MOUNT), %u (NLM)",
	    (int)pid, r->nf_nfs_port, r->nf_mount_port, r->nf_nlm_port);
	return 0;
}

void rig_netfault_stop(struct rig *r)
{
	if (r->nf_pid <= 0)
		return;
	mntrig_end_child(r->nf_pid, 5000);
	r->nf_pid = 0;
	/* Its logs go at rig_cell_end(), kept first if the scenario failed. */
	unlink(r->nf_sock);
}

int rig_netfault_ask(struct rig *r, const char *req, char *ans, size_t len)
{
	return netrig_ask(r->nf_sock, req, ans, len, CONTROL_DEADLINE_MS);
}

int rig_dir_make(struct rig *r, unsigned seq, char *err, size_t len)
{
	int top = beneath_root(r->srv->export_dir), rc;

	r->dir_fd = -1;
	snprintf(r->sub, sizeof(r->sub), "scn-%d-%u", (int)getpid(), seq);
	snprintf(r->local, sizeof(r->local), "%s/%s", r->srv->export_dir,
		 r->sub);
	rc = top < 0 ? top : beneath_mkdir_mode(top, r->sub, 0777);
	if (rc == 0)
		rc = r->dir_fd =
			beneath_open(top, r->sub, O_PATH | O_DIRECTORY, 0);
	if (top >= 0)
		close(top);
	if (rc < 0) {
		r->dir_fd = -1;
		snprintf(err, len, "mkdir %s: %s", r->local,
			 beneath_strerror(rc));
		r->local[0] = '\0';
		return -1;
	}
	return 0;
}

void rig_dir_close(struct rig *r)
{
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	r->dir_fd = -1;
}

/* For the run's own directories: removes what nftw() walks to. */
static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? 0 : 0;
}

void rig_dir_remove(struct rig *r)
{
	int top, rc;

	if (!r->local[0])
		return;
	top = beneath_root(r->srv->export_dir);
	rc = top < 0 ? top : beneath_remove_tree(top, r->sub);
	if (rc < 0)
		fprintf(stderr, "intrfs-scenario: removing %s: %s\n", r->local,
			beneath_strerror(rc));
	if (top >= 0)
		close(top);
}

/*
 * The kernel's own NFS client has no intrfs options: the ones it knows
 * pass (hard, soft, softerr, timeo=, retrans=, the attribute cache's...;
 * intr and nointr too, which it takes and ignores), the others (killable,
 * policy=, send=, hung_timeout=...) are dropped and named in dropped.
 * rig_kernel_opts() puts the kernel's share in out, each with a leading
 * comma.
 */
static const char *const kernel_nfs_opts[] = {
	"hard",	      "soft",	      "softerr",     "softreval", "nosoftreval",
	"intr",	      "nointr",	      "timeo",	     "retrans",	  "ac",
	"noac",	      "actimeo",      "acregmin",    "acregmax",  "acdirmin",
	"acdirmax",   "rsize",	      "wsize",	     "cto",	  "nocto",
	"sync",	      "async",	      "lookupcache", "rdirplus",  "nordirplus",
	"sharecache", "nosharecache",
};

static void rig_kernel_opts(const char *opts, char *out, size_t len,
			    char *dropped, size_t dlen)
{
	char buf[SCN_TEXT_MAX * 2], *save = NULL;

	out[0] = dropped[0] = '\0';
	snprintf(buf, sizeof(buf), "%s", opts);
	for (char *o = strtok_r(buf, ",", &save); o;
	     o = strtok_r(NULL, ",", &save)) {
		size_t klen = strcspn(o, "=");
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(kernel_nfs_opts); i++)
			if (strlen(kernel_nfs_opts[i]) == klen &&
			    !strncmp(o, kernel_nfs_opts[i], klen))
				known = true;
		if (known)
			snprintf(out + strlen(out), len - strlen(out), ",%s",
				 o);
		else
			snprintf(dropped + strlen(dropped),
				 dlen - strlen(dropped), "%s%s",
				 dropped[0] ? "," : "", o);
	}
}

/*
 * The kernel's NFSv3 client on r->mnt, through netfault's ports, as
 * mount.nfs would ask it (the text options with addr=), with no locking
 * (no lockd or statd in the guest).
 */
static int kernel_mount(struct rig *r, const char *opts, char *err, size_t len)
{
	char source[SCN_TEXT_MAX + 160], kopts[SCN_TEXT_MAX * 2];
	char o[SCN_TEXT_MAX * 3 + 256];

	rig_kernel_opts(opts, kopts, sizeof(kopts), r->dropped,
			sizeof(r->dropped));
	snprintf(source, sizeof(source), "%s:%s", r->srv->host, r->local);
	snprintf(o, sizeof(o),
		 "vers=3,proto=tcp,mountproto=tcp,nolock,addr=%s,"
		 "mountaddr=%s,port=%u,mountport=%u%s",
		 r->srv->host, r->srv->host, r->nf_nfs_port, r->nf_mount_port,
		 kopts);
	snprintf(r->kernel_opts, sizeof(r->kernel_opts), "%s", o);
	if (mount(source, r->mnt, "nfs", 0, o) < 0) {
		snprintf(err, len, "mount -t nfs %s %s -o %s: %s", source,
			 r->mnt, o, strerror(errno));
		rmdir(r->mnt);
		r->mnt[0] = '\0';
		return -1;
	}
	say(r, "kernel NFS mounts %s on %s -o %s%s%s", source, r->mnt, o,
	    r->dropped[0] ? " (not for the kernel: " : "",
	    r->dropped[0] ? r->dropped : "");
	return 0;
}

int rig_mount(struct rig *r, const char *opts, char *err, size_t len)
{
	char source[SCN_TEXT_MAX + 160], o[SCN_TEXT_MAX * 2 + 64];
	char tail[2048];
	int status, rc;
	pid_t pid;

	r->hung[0] = '\0';
	snprintf(r->mnt, sizeof(r->mnt), "%s/mnt.%u", r->run_dir, ++r->seq);
	if (mkdir(r->mnt, 0755) < 0) {
		snprintf(err, len, "mkdir %s: %s", r->mnt, strerror(errno));
		r->mnt[0] = '\0';
		return -1;
	}
	if (r->kernel)
		return kernel_mount(r, opts, err, len);
	snprintf(r->mnt_log, sizeof(r->mnt_log), "%s.log", r->mnt);
	snprintf(source, sizeof(source), "%s:%s", r->srv->host, r->local);
	snprintf(o, sizeof(o), "port=%u,mountport=%u", r->nf_nfs_port,
		 r->nf_mount_port);
	if (r->nf_nlm_port)
		snprintf(o + strlen(o), sizeof(o) - strlen(o), ",nlmport=%u",
			 r->nf_nlm_port);
	snprintf(o + strlen(o), sizeof(o) - strlen(o), "%s%s",
		 opts[0] ? "," : "", opts);
	pid = mntrig_spawn(r->paths->intrfs, source, r->mnt, o, r->mnt_log,
			   PROC_OWN_GROUP, err, len);
	if (pid < 0) {
		rmdir(r->mnt);
		r->mnt[0] = '\0';
		return -1;
	}
	r->daemon = pid;
	say(r, "intrfs (pid %d) mounts %s on %s -o %s", (int)pid, source,
	    r->mnt, o);
	rc = mntrig_wait(pid, r->mnt, MOUNT_DEADLINE_MS, &status);
	if (rc == 0)
		return 0;
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	mntrig_log_tail(r->mnt_log, tail, sizeof(tail), NULL);
	snprintf(err, len, "intrfs %s -o %s:\n%s",
		 rc > 0 ? "exited instead of mounting" :
			  "did not mount within 15 s",
		 o, tail);
	r->daemon = 0;
	rmdir(r->mnt);
	r->mnt[0] = '\0';
	return -1;
}

int rig_overlay_mount(struct rig *r, char *err, size_t len)
{
	char up[200], wk[200], mg[200], opts[700];

	snprintf(r->ovl, sizeof(r->ovl), "%s/ovl.%u", r->run_dir, ++r->seq);
	if (mkdir(r->ovl, 0755) < 0) {
		snprintf(err, len, "mkdir %s: %s", r->ovl, strerror(errno));
		r->ovl[0] = '\0';
		return -1;
	}
	snprintf(up, sizeof(up), "%s/upper", r->ovl);
	snprintf(wk, sizeof(wk), "%s/work", r->ovl);
	snprintf(mg, sizeof(mg), "%s/merged", r->ovl);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s",
		 r->mnt, up, wk);
	if (mkdir(up, 0755) < 0 || mkdir(wk, 0755) < 0 || mkdir(mg, 0755) < 0 ||
	    mount("overlay", mg, "overlay", 0, opts) < 0) {
		snprintf(err, len, "overlay on %s (%s): %s", mg, opts,
			 strerror(errno));
		rig_overlay_umount(r);
		return -1;
	}
	r->ovl_mounted = true;
	say(r, "overlay on %s, lower %s", mg, r->mnt);
	return 0;
}

void rig_overlay_umount(struct rig *r)
{
	char p[200];

	if (!r->ovl[0])
		return;
	snprintf(p, sizeof(p), "%s/merged", r->ovl);
	if (r->ovl_mounted && umount2(p, 0) < 0)
		umount2(p, MNT_DETACH);
	r->ovl_mounted = false;
	rmdir(p);
	/*
	 * What copy-up left in the upper layer goes with it; never across a
	 * mount (merged, if its unmount failed: that is the export).
	 */
	nftw(r->ovl, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	if (rmdir(r->ovl) < 0 && errno != ENOENT)
		fprintf(stderr, "intrfs-scenario: could not remove %s: %s\n",
			r->ovl, strerror(errno));
	r->ovl[0] = '\0';
}

int rig_copyup_make(struct rig *r, char *err, size_t len)
{
	struct work_at cu = { -1, r->cu };
	int rc = -1;

	snprintf(r->cu, sizeof(r->cu), "%s/cu.%u", r->run_dir, ++r->seq);
	if (mkdir(r->cu, 0700) == 0 &&
	    (cu.fd = open(r->cu, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0)
		rc = work_copyup_dirs(&cu);
	if (cu.fd >= 0)
		close(cu.fd);
	if (rc < 0) {
		snprintf(err, len, "copyup's directories in %s: %s", r->cu,
			 strerror(errno));
		rig_copyup_remove(r);
		return -1;
	}
	say(r, "copyup's upper and work directories in %s", r->cu);
	return 0;
}

void rig_copyup_remove(struct rig *r)
{
	if (!r->cu[0])
		return;
	nftw(r->cu, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	if (rmdir(r->cu) < 0 && errno != ENOENT)
		fprintf(stderr, "intrfs-scenario: could not remove %s: %s\n",
			r->cu, strerror(errno));
	r->cu[0] = '\0';
}

const char *rig_work_dir(const struct rig *r, char *buf, size_t len)
{
	if (!r->ovl_mounted)
		return r->mnt;
	snprintf(buf, len, "%s/merged", r->ovl);
	return buf;
}

/*
 * Keeps the first hung-task report of the daemon's log in r->hung: the
 * line that says which request blocked uninterruptibly, and the region
 * stack under it (its indented lines).
 */
static void keep_hung_report(struct rig *r)
{
	char buf[65536], *at, *end, *line;
	size_t n;
	int fd = open(r->mnt_log, O_RDONLY);
	ssize_t got;

	if (fd < 0)
		return;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	at = strstr(buf, "blocked uninterruptibly");
	if (!at)
		return;
	while (at > buf && at[-1] != '\n')
		at--;
	/* The first line, then "region stack..." and the indented ones. */
	end = strchr(at, '\n');
	while (end && (strncmp(end + 1, "region stack", 12) == 0 ||
		       strncmp(end + 1, "  ", 2) == 0))
		end = strchr(end + 1, '\n');
	line = at;
	n = end ? (size_t)(end - line) : strlen(line);
	if (n >= sizeof(r->hung))
		n = sizeof(r->hung) - 1;
	memcpy(r->hung, line, n);
	r->hung[n] = '\0';
}

int rig_umount(struct rig *r, char *err, size_t len)
{
	char where[4096];
	int rc = 0;

	uint64_t t0 = mntrig_now_ms();

	r->exit_ms = -1;
	if (!r->mnt[0])
		return 0;
	if (r->kernel) {
		/* A hung kernel mount: forced, then detached. */
		if (umount2(r->mnt, 0) < 0 && errno != EINVAL &&
		    umount2(r->mnt, MNT_FORCE) < 0 && errno != EINVAL)
			umount2(r->mnt, MNT_DETACH);
		rmdir(r->mnt);
		r->mnt[0] = '\0';
		return 0;
	}
	if (mntrig_unmount(r->mnt, r->daemon, UMOUNT_DEADLINE_MS) < 0) {
		/* What it is stuck on, before the kill loses it. */
		rig_keep_stacks(r, r->daemon, UMOUNT_DEADLINE_MS, where,
				sizeof(where));
		mntrig_kill(r->mnt, r->daemon);
		snprintf(err, len,
			 "intrfs (pid %d) did not exit within %d s of the "
			 "unmount; killed (%s)",
			 (int)r->daemon, UMOUNT_DEADLINE_MS / 1000, where);
		rc = -1;
	}
	r->exit_ms = (long long)(mntrig_now_ms() - t0);
	say(r, "intrfs (pid %d) %s %lld ms after the unmount", (int)r->daemon,
	    rc ? "killed" : "exited", r->exit_ms);
	r->daemon = 0;
	rmdir(r->mnt);
	keep_hung_report(r);
	r->mnt[0] = '\0';
	return rc;
}

int rig_pause(struct rig *r, char *err, size_t len)
{
	if (r->srv->pid <= 0) {
		snprintf(err, len,
			 "pause needs the server's pid: give "
			 "--server-dir");
		return -1;
	}
	r->paused = true;
	if (!proc_stop(r->srv->pid, 10000)) {
		snprintf(err, len,
			 "the server (pid %d) did not stop within 10 s",
			 (int)r->srv->pid);
		return -1;
	}
	say(r, "server (pid %d) paused, every thread stopped",
	    (int)r->srv->pid);
	return 0;
}

void rig_resume(struct rig *r)
{
	if (!r->paused)
		return;
	kill(r->srv->pid, SIGCONT);
	r->paused = false;
	say(r, "server resumed");
}

int rig_kill_server(struct rig *r, char *err, size_t len)
{
	if (!r->srv->run_dir[0] || r->srv->pid <= 0) {
		snprintf(err, len,
			 "restart needs the server's run directory: "
			 "give --server-dir");
		return -1;
	}
	r->down = true;
	kill(r->srv->pid, SIGKILL);
	if (!proc_gone_within(r->srv->pid, 10000)) {
		snprintf(err, len, "the server (pid %d) did not die",
			 (int)r->srv->pid);
		return -1;
	}
	r->paused = false;
	say(r, "server (pid %d) killed", (int)r->srv->pid);
	return 0;
}

int rig_start_server(struct rig *r, char *err, size_t len)
{
	struct rig_server *srv = (struct rig_server *)r->srv;
	char cmd[SCN_TEXT_MAX * 3 + 256];
	struct srvrig now = { 0 };
	int rc;

	if (!r->down)
		return 0;
	snprintf(cmd, sizeof(cmd),
		 "'%s/start-server' --run-dir '%s' --export '%s' --nfs-port %u "
		 "--mount-port %u --nlm-port %u --rquota-port %u",
		 r->paths->scripts, srv->run_dir, srv->export_dir,
		 srv->nfs_port, srv->mount_port,
		 srv->nlm_port ? srv->nlm_port : srv->nfs_port - 2,
		 srv->rquota_port ? srv->rquota_port : srv->nfs_port - 3);
	rc = srvrig_run(&now, cmd, NULL);
	if (rc < 0) {
		snprintf(err, len, "%s: %s", cmd, strerror(errno));
		return -1;
	}
	if (rc != 0 || now.pid <= 0) {
		snprintf(err, len, "the server did not start again (%s)", cmd);
		return -1;
	}
	srv->pid = now.pid;
	r->down = false;
	say(r, "server started again (pid %d)", (int)now.pid);
	return 0;
}

int rig_partition(struct rig *r, bool reject, char *err, size_t len)
{
	unsigned port = r->nf_nfs_port;

	say(r, "partition (%s) on port %u", reject ? "reject" : "drop", port);
	return netrig_partition(&r->part, "intrfs_scn", port,
				reject ? NETRIG_REJECT : NETRIG_DROP, err, len);
}

void rig_heal(struct rig *r)
{
	if (!r->part.loaded)
		return;
	if (netrig_heal(&r->part))
		fprintf(stderr,
			"intrfs-scenario: could not delete nftables table "
			"%s\n",
			r->part.table);
	say(r, "partition healed");
}

void rig_lift_all(struct rig *r)
{
	char ans[256], err[512];

	if (r->nf_pid > 0)
		rig_netfault_ask(r, "clear", ans, sizeof(ans));
	rig_heal(r);
	rig_resume(r);
	if (r->down && rig_start_server(r, err, sizeof(err)) < 0)
		fprintf(stderr, "intrfs-scenario: %s\n", err);
}

void rig_emergency(struct rig *r)
{
	if (r->paused && r->srv->pid > 0)
		kill(r->srv->pid, SIGCONT);
	if (r->ovl_mounted) {
		char p[200];

		snprintf(p, sizeof(p), "%s/merged", r->ovl);
		umount2(p, MNT_DETACH);
	}
	if (r->mnt[0])
		umount2(r->mnt, MNT_DETACH);
	if (r->daemon > 0)
		kill(r->daemon, SIGKILL);
	if (r->nf_pid > 0)
		kill(r->nf_pid, SIGKILL);
}
