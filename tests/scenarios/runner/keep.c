/*
 * What explains a failed scenario, kept for whoever reads its FAIL line:
 * the daemon's log and netfault's, copied at the scenario's end into a
 * directory of its own in the output directory (--out, or one made in
 * $TMPDIR at the first failure), and, for a daemon that does not exit
 * after its unmount, its task table (kill -USR1, into its log) and every
 * thread's stack, kernel side from /proc and user side from gdb (or
 * eu-stack), written there before the rig kills it.
 *
 * The runner is root: the output directory must be a directory of its
 * user alone, not a symbolic link; each scenario's directory is made in
 * it with mkdirat() and opened without following links, and every file
 * in it with O_CREAT|O_EXCL|O_NOFOLLOW.  It only reads the run's own
 * files (in the run's 0700 directory) and /proc.
 */
#include "scenario.h"
#include "mntrig.h"
#include "proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the daemon may take to log its tables on kill -USR1. */
#define DUMP_DEADLINE_MS 2000
/* How long gdb (or eu-stack) may take to print every thread's stack. */
#define DEBUGGER_DEADLINE_MS 30000

/* Whether fd is a directory of this uid's that nobody else may write in. */
static int check_private(int fd, const char *dir, char *err, size_t len)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, len, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, len,
			 "%s belongs to uid %u, not to uid %u: not writing in "
			 "it",
			 dir, (unsigned)st.st_uid, (unsigned)geteuid());
		return -1;
	}
	if (st.st_mode & 022) {
		snprintf(err, len,
			 "others may write in %s (mode %o): not writing in it",
			 dir, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

int rig_out_open(struct rig *r, const char *dir, char *err, size_t len)
{
	int fd;

	if (strlen(dir) >= sizeof(r->out_dir)) {
		snprintf(err, len, "--out %s: the path is too long", dir);
		return -1;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, len, "--out %s: %s", dir, strerror(errno));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, len, "--out %s: %s", dir,
			 errno == ELOOP ? "a symbolic link: not writing in it" :
			 errno == ENOTDIR ? "not a directory" :
					    strerror(errno));
		return -1;
	}
	if (check_private(fd, dir, err, len) < 0) {
		close(fd);
		return -1;
	}
	snprintf(r->out_dir, sizeof(r->out_dir), "%s", dir);
	r->out_fd = fd;
	return 0;
}

void rig_cell_begin(struct rig *r, const char *name, unsigned seq)
{
	r->cell_name = name;
	r->cell_seq = seq;
	r->cell_dir[0] = '\0';
	r->cell_fd = -1;
}

/*
 * The running scenario's directory of kept logs, made at the first need:
 * OUT/NNN-NAME (the name's '/' and the like as '_'), NNN-NAME.2... when
 * that is taken.  Its descriptor, or -1 with why in err.
 */
static int cell_fd(struct rig *r, char *err, size_t len)
{
	char name[SCN_NAME_MAX + 16], *p;
	size_t base;

	if (r->cell_fd >= 0)
		return r->cell_fd;
	if (r->out_fd < 0) {
		const char *tmp = getenv("TMPDIR");
		char dir[SCN_TEXT_MAX];

		if (!tmp || tmp[0] != '/' ||
		    strlen(tmp) + sizeof("/intrfs-scn-failed.XXXXXX") >
			    sizeof(dir))
			tmp = "/tmp";
		snprintf(dir, sizeof(dir), "%s/intrfs-scn-failed.XXXXXX", tmp);
		if (!mkdtemp(dir)) {
			snprintf(err, len, "mkdtemp %s: %s", dir,
				 strerror(errno));
			return -1;
		}
		if (rig_out_open(r, dir, err, len) < 0)
			return -1;
	}
	snprintf(name, sizeof(name), "%03u-%s", r->cell_seq,
		 r->cell_name ? r->cell_name : "scenario");
	for (p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
			*p = '_';
	base = strlen(name);
	for (unsigned n = 1; n < 100; n++) {
		if (n > 1)
			snprintf(name + base, sizeof(name) - base, ".%u", n);
		if (mkdirat(r->out_fd, name, 0700) == 0)
			break;
		if (errno != EEXIST) {
			snprintf(err, len, "mkdir %s/%s: %s", r->out_dir, name,
				 strerror(errno));
			return -1;
		}
	}
	r->cell_fd = openat(r->out_fd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->cell_fd < 0) {
		snprintf(err, len, "%s/%s: %s", r->out_dir, name,
			 strerror(errno));
		return -1;
	}
	snprintf(r->cell_dir, sizeof(r->cell_dir), "%s/%s", r->out_dir, name);
	return r->cell_fd;
}

/* A new file name in the scenario's directory, for writing; fd or -1. */
static int cell_file(struct rig *r, const char *name, char *err, size_t len)
{
	int dfd = cell_fd(r, err, len), fd;

	if (dfd < 0)
		return -1;
	fd = openat(dfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		snprintf(err, len, "%s/%s: %s", r->cell_dir, name,
			 strerror(errno));
	return fd;
}

/* A copy of the run's file src as name in the scenario's directory. */
static void keep_file(struct rig *r, const char *src, const char *name)
{
	char buf[65536], err[2048];
	int in, out;
	ssize_t n;

	if (!src[0])
		return;
	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return;
	out = cell_file(r, name, err, sizeof(err));
	if (out < 0) {
		fprintf(stderr, "intrfs-scenario: could not keep %s: %s\n", src,
			err);
		close(in);
		return;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	close(out);
}

/* The first line of /proc/PID/task/TID/name into buf; "?" if none. */
static void task_line(pid_t pid, const char *tid, const char *name, char *buf,
		      size_t len)
{
	char path[128];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/%s", (int)pid, tid,
		 name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (!buf[0])
		snprintf(buf, len, "?");
}

/* Every thread of pid: its name, state, wchan and kernel stack. */
static void kernel_stacks(pid_t pid, FILE *f)
{
	char path[300], comm[64], stat[512], wchan[128], stack[8192];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d) {
		fprintf(f, "(%s: %s)\n", path, strerror(errno));
		return;
	}
	while ((e = readdir(d))) {
		const char *state;

		if (e->d_name[0] == '.')
			continue;
		task_line(pid, e->d_name, "comm", comm, sizeof(comm));
		task_line(pid, e->d_name, "stat", stat, sizeof(stat));
		task_line(pid, e->d_name, "wchan", wchan, sizeof(wchan));
		state = strrchr(stat, ')');
		fprintf(f, "thread %s (%s) %c %s\n", e->d_name, comm,
			state && state[1] && state[2] ? state[2] : '?', wchan);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack", (int)pid,
			 e->d_name);
		{
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			ssize_t n = fd >= 0 ?
					    read(fd, stack, sizeof(stack) - 1) :
					    -1;

			if (fd >= 0)
				close(fd);
			stack[n > 0 ? n : 0] = '\0';
			fputs(stack, f);
		}
	}
	closedir(d);
}

/* The path of name in $PATH, into buf: true when it is there. */
static bool find_tool(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096], *save = NULL;

	snprintf(dirs, sizeof(dirs), "%s",
		 path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (char *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, len, "%s/%s", d, name);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

/*
 * Every thread's user-side stack, by gdb (or eu-stack), its output
 * appended to fd; killed after DEBUGGER_DEADLINE_MS (a thread stuck in
 * the kernel can keep gdb from attaching).
 */
static void user_stacks(pid_t pid, int fd, FILE *f)
{
	char bin[512], p[16];
	const char *gdb[] = { "gdb",
			      "-nx",
			      "-batch",
			      "-ex",
			      "set pagination off",
			      "-ex",
			      "thread apply all bt",
			      "-p",
			      p,
			      NULL };
	const char *eu[] = { "eu-stack", "-p", p, NULL };
	const char *const *argv = gdb;
	uint64_t end = mntrig_now_ms() + DEBUGGER_DEADLINE_MS;
	int status;
	pid_t child;

	snprintf(p, sizeof(p), "%d", (int)pid);
	if (!find_tool("gdb", bin, sizeof(bin))) {
		argv = eu;
		if (!find_tool("eu-stack", bin, sizeof(bin))) {
			fprintf(f, "\nNo user-side stacks: neither gdb nor "
				   "eu-stack is installed (apt-get install "
				   "gdb).\n");
			return;
		}
	}
	fprintf(f, "\nUser-side stacks (%s):\n", argv[0]);
	fflush(f);
	child = proc_spawn(bin, argv, fd, fd, PROC_OWN_GROUP);
	if (child < 0) {
		fprintf(f, "(%s: %s)\n", bin, strerror(errno));
		return;
	}
	while (waitpid(child, &status, WNOHANG) != child) {
		if (mntrig_now_ms() > end) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			fprintf(f, "(%s did not finish within %d s: killed)\n",
				argv[0], DEBUGGER_DEADLINE_MS / 1000);
			return;
		}
		usleep(10000);
	}
}

void rig_keep_stacks(struct rig *r, pid_t pid, unsigned waited_ms, char *where,
		     size_t len)
{
	char err[2048];
	uint64_t end = mntrig_now_ms() + DUMP_DEADLINE_MS;
	off_t size, was, last = -1;
	FILE *f;
	int fd;

	mntrig_log_tail(r->mnt_log, err, 2, &was);
	kill(pid, SIGUSR1);
	/* Its dump is written once the log grew and stopped growing. */
	while (mntrig_now_ms() < end) {
		usleep(200000);
		mntrig_log_tail(r->mnt_log, err, 2, &size);
		if (size > was && size == last)
			break;
		last = size;
	}
	fd = cell_file(r, "stacks.txt", err, sizeof(err));
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		snprintf(where, len, "its stacks could not be kept: %s", err);
		return;
	}
	fprintf(f,
		"intrfs (pid %d) had not exited %u s after the unmount of "
		"%s; its threads before the kill.\n\nKernel-side stacks:\n",
		(int)pid, waited_ms / 1000, r->mnt);
	kernel_stacks(pid, f);
	user_stacks(pid, fd, f);
	fclose(f);
	snprintf(where, len,
		 "its log, task table and threads' stacks kept in %s",
		 r->cell_dir);
}

void rig_cell_end(struct rig *r, bool failed, char *kept, size_t len)
{
	char errlog[sizeof(r->nf_log) + 8];

	snprintf(errlog, sizeof(errlog), "%s.err", r->nf_log);
	if (failed) {
		keep_file(r, r->mnt_log, "intrfs.log");
		keep_file(r, r->nf_log, "netfault.log");
		keep_file(r, errlog, "netfault.err");
	}
	if (r->mnt_log[0])
		unlink(r->mnt_log);
	r->mnt_log[0] = '\0';
	unlink(r->nf_log);
	unlink(errlog);
	snprintf(kept, len, "%s", r->cell_fd >= 0 ? r->cell_dir : "");
	if (r->cell_fd >= 0)
		close(r->cell_fd);
	r->cell_fd = -1;
	r->cell_dir[0] = '\0';
	r->cell_name = NULL;
}
