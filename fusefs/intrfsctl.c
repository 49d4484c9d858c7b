/*
 * intrfsctl: asks a live intrfs mount what it is doing (ctl.h).  Finds
 * the mount a path shows now by its device (the top one of mounts stacked
 * there), looks it up in /proc/self/mountinfo, so that a path that is not
 * an intrfs mount gets an error saying what it is instead, then sends one
 * request to the daemon's control socket and prints the answer.  It never
 * waits on the mount itself: a mount whose server stalls is the one to
 * ask about.
 */
#include "ctl.h"
#include "intrfs/netclient.h"
#include "safepath.h"
#include "termesc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define PROG "intrfsctl"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " MOUNTPOINT COMMAND [--table]\n"
		"\n"
		"Asks the intrfs daemon serving MOUNTPOINT what it is doing.\n"
		"Answers are JSON, one object (mountstats: text); --table prints them\n"
		"for people.\n"
		"\n"
		"Commands:\n"
		"  tasks        every request in flight: its op, the caller's pid "
		"and\n"
		"               command, its age, its RPCs (XID, procedure,\n"
		"               transmissions), the wait it is in (the wait's "
		"own\n"
		"               mode, and what the regions and the policy made of "
		"it),\n"
		"               its pending interrupt and how long it has been "
		"held\n"
		"               back, and its region stack (kind, reason, call "
		"site,\n"
		"               age; the caller's own regions outermost)\n"
		"  stats        the transport's counters (calls, retransmits, "
		"major\n"
		"               timeouts, resets, resets from interrupted "
		"records...),\n"
		"               the daemon's (INTERRUPTs, EINTR answers) and the "
		"region\n"
		"               API's (interrupts raised, delivered, deferred; "
		"deferral\n"
		"               times)\n"
		"  mountstats   the mount as an entry of /proc/self/mountstats, "
		"for\n"
		"               nfs-utils' mountstats(8): intrfsctl MNT "
		"mountstats >F;\n"
		"               mountstats iostat -f F (-S an earlier F: what "
		"changed)\n"
		"  policy P     requests from now on run under policy P (percall,\n"
		"               region, sigmask, or linux: percall with Linux's "
		"own\n"
		"               waits); those in flight keep theirs\n"
		"  mode M       requests from now on wait as killable, intr or\n"
		"               nointr mounts do\n"
		"  watchdog N   the hung-task watchdog reports a request blocked\n"
		"               uninterruptibly for N seconds (0: no reports)\n"
		"  trace on FILE, trace off\n"
		"               an event trace appended to FILE, one JSON object "
		"a\n"
		"               line: region begin and end, interrupt raised,\n"
		"               deferred, delivered; retransmit, major timeout,\n"
		"               reset, reply (also -o trace=FILE at mount).  FILE "
		"is\n"
		"               opened here and sent to the daemon: a regular "
		"file,\n"
		"               not on the mount, never through a symbolic "
		"link; by\n"
		"               root for a user's mount, with that user's "
		"rights only\n"
		"\n"
		"Only root and the user who mounted may ask.  Exit status: 0 "
		"answered,\n"
		"1 the daemon refused or failed the request, 2 bad usage or no "
		"intrfs\n"
		"mount there.\n");
}

/* Each command and the words it takes after its name. */
static const struct command {
	const char *cmd;
	unsigned args; /* trace: 2, or 1 for "trace off" */
	const char *usage;
} cmds[] = {
	{ "tasks", 0, "no argument" },
	{ "stats", 0, "no argument" },
	{ "mountstats", 0, "no argument" },
	{ "policy", 1, "one policy: " NC_POLICY_NAMES },
	{ "mode", 1, "one mode: killable, intr or nointr" },
	{ "watchdog", 1, "one number of seconds (0: off)" },
	{ "trace", 2, "'on FILE' or 'off'" },
	{ NULL, 0, NULL },
};

/*
 * The intrfs mount path shows now (the top one, when mounts are stacked
 * there), found by its device: statx() without asking the filesystem
 * (AT_STATX_DONT_SYNC), so that a mount whose server stalls, or whose
 * daemon died, is still found.  Returns 0, or 2 with the message printed.
 */
static int find_mount(const char *path, struct ctl_mount *m)
{
	struct statx stx;
	bool root;
	int rc;

	/*
	 * Asking for no field at all: FUSE then answers with the device even
	 * to root on a user's mount without allow_other.
	 */
	if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC | AT_NO_AUTOMOUNT, 0,
		  &stx) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return 2;
	}
	if (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) {
		root = stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
	} else {
		/* Older kernels: its parent is on another device. */
		char up[PATH_MAX];
		struct statx pst;

		snprintf(up, sizeof(up), "%s/..", path);
		root = statx(AT_FDCWD, up, AT_STATX_DONT_SYNC, 0, &pst) == 0 &&
		       (pst.stx_dev_major != stx.stx_dev_major ||
			pst.stx_dev_minor != stx.stx_dev_minor);
	}
	rc = root ? ctl_mount_of_dev(stx.stx_dev_major, stx.stx_dev_minor, m) :
		    -ENOENT;
	if (rc == -ENOENT) {
		fprintf(stderr,
			PROG ": %s is not an intrfs mount (not a mount "
			     "point)\n",
			path);
		return 2;
	}
	if (rc) {
		fprintf(stderr, PROG ": /proc/self/mountinfo: %s\n",
			strerror(-rc));
		return 2;
	}
	if (strcmp(m->fstype, "fuse.intrfs") != 0) {
		fprintf(stderr,
			PROG ": %s is not an intrfs mount (a %s mount)\n", path,
			m->fstype);
		return 2;
	}
	return 0;
}

/*
 * Connects to the daemon of mount m; returns the socket, or -1 with the
 * message printed, saying what was found at the socket's place.
 */
static int reach(const struct ctl_mount *m, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uid_t owner = m->owner == (uid_t)-1 ? 0 : m->owner;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int fd, err;

	ctl_path(owner, m->major, m->minor, a.sun_path, sizeof(a.sun_path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, PROG ": socket: %s\n", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		err = errno;
		close(fd);
		if (err == ECONNREFUSED)
			fprintf(stderr,
				PROG ": the control socket %s of %s is left by "
				     "a daemon that is gone (nobody listens on "
				     "it): the mount's daemon died; umount %s "
				     "(the next intrfs mount removes the "
				     "socket)\n",
				a.sun_path, path, m->point);
		else if (err == ENOENT)
			fprintf(stderr,
				PROG ": %s has no control socket (no %s): its "
				     "daemon made none, its log says why\n",
				path, a.sun_path);
		else
			fprintf(stderr,
				PROG ": cannot reach the daemon of %s at %s: "
				     "%s\n",
				path, a.sun_path, strerror(err));
		return -1;
	}
	/* Only the mount's own daemon is asked. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 ||
	    (cred.uid != 0 && cred.uid != owner)) {
		fprintf(stderr,
			PROG ": %s is served by uid %u, neither root nor the "
			     "user who mounted %s (uid %u): not asked\n",
			a.sun_path, (unsigned)cred.uid, path, (unsigned)owner);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The trace file, opened here and sent to the daemon as a descriptor: a
 * regular file, never through a symbolic link, and not on the mount m
 * (each line would be a request to trace).  Whose rights open it is the
 * point.  A descriptor root opened never goes to a daemon of another uid:
 * whatever listens on a user's socket is the user's (a fake daemon has
 * the same credentials as the real one), so root asking the daemon of uid
 * U has the file opened by a child that took U's uid and groups (the
 * peer's, SO_PEERGROUPS), with U's rights alone.  Asking root's daemon,
 * root opens it by safepath's rule (safepath.h).  A relative name is the
 * caller's.  Returns the descriptor, or -1 with the message printed.
 */
static int open_trace(const char *file, const struct ctl_mount *m, int sock)
{
	const int flags = O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK;
	char dir[PATH_MAX], *slash, msg[SAFEPATH_MSG_MAX];
	struct safepath_user peer;
	struct statx stx;
	int fd, rc;

	/* The directory it is in, asked without waiting on a mount. */
	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (statx(AT_FDCWD, dir, AT_STATX_DONT_SYNC, 0, &stx) == 0 &&
	    stx.stx_dev_major == m->major && stx.stx_dev_minor == m->minor) {
		fprintf(stderr,
			PROG ": cannot write the trace to %s: it is on this "
			     "mount (its lines would be requests to trace)\n",
			file);
		return -1;
	}
	if (geteuid() != 0) {
		fd = safepath_open(file, flags, 0644, msg, sizeof(msg));
	} else {
		rc = safepath_peer(sock, &peer);
		if (rc) {
			fprintf(stderr, PROG ": the daemon's credentials: %s\n",
				strerror(-rc));
			return -1;
		}
		fd = peer.uid == 0 ? safepath_open(file, flags, 0644, msg,
						   sizeof(msg)) :
				     safepath_open_as(&peer, file, flags, 0644,
						      msg, sizeof(msg));
	}
	if (fd < 0) {
		fprintf(stderr, PROG ": %s\n", msg);
		return -1;
	}
	return fd;
}

/* The request line, with the descriptor fd when it is not -1. */
static void send_request(int sock, const char *req, size_t len, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { (void *)req, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *h;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &fd, sizeof(int));
	}
	/* A daemon that refused at once closed: its answer is still read. */
	(void)!sendmsg(sock, &mh, MSG_NOSIGNAL);
}

int main(int argc, char **argv)
{
	struct ctl_mount m;
	char req[CTL_LINE_MAX], *buf = NULL;
	const char *trace_file = NULL;
	int tfd = -1;
	size_t cap = 0;
	const char *mnt = NULL, *cmd = NULL, *arg = NULL, *arg2 = NULL;
	const struct command *c;
	char abs[PATH_MAX];
	bool table = false;
	unsigned nargs = 0, want;
	size_t got = 0;
	int fd, n;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(argv[i], "--table") == 0)
			table = true;
		else if (!mnt)
			mnt = argv[i];
		else if (!cmd)
			cmd = argv[i];
		else if (nargs++ == 0)
			arg = argv[i];
		else if (nargs == 2)
			arg2 = argv[i];
	}
	if (!mnt || !cmd) {
		usage(stderr);
		return 2;
	}
	for (c = cmds; c->cmd && strcmp(cmd, c->cmd); c++)
		;
	if (!c->cmd) {
		fprintf(stderr,
			PROG ": unknown command '%s' (tasks, stats, "
			     "mountstats, policy P, mode M, watchdog N, trace "
			     "on FILE|off; see --help)\n",
			cmd);
		return 2;
	}
	want = c->args;
	if (strcmp(cmd, "trace") == 0 && arg && strcmp(arg, "off") == 0)
		want = 1;
	if (nargs != want) {
		fprintf(stderr, PROG ": %s takes %s (%s)\n", cmd, c->usage,
			nargs < want ? "too few arguments" :
				       "too many arguments");
		return 2;
	}
	if (strcmp(cmd, "trace") == 0) {
		if (arg && strcmp(arg, "on") == 0 && arg2) {
			if (strpbrk(arg2, " \t\n")) {
				fprintf(stderr, PROG
					": a trace file name with blanks "
					"cannot be sent: choose another\n");
				return 2;
			}
			trace_file = arg2;
			/* The name the daemon logs: ours, made absolute. */
			if (arg2[0] != '/') {
				char cwd[PATH_MAX];

				if (!getcwd(cwd, sizeof(cwd)) ||
				    snprintf(abs, sizeof(abs), "%s/%s", cwd,
					     arg2) >= (int)sizeof(abs)) {
					fprintf(stderr,
						PROG ": %s: no absolute path "
						     "for it\n",
						arg2);
					return 2;
				}
				arg2 = abs;
			}
		} else if (!arg || strcmp(arg, "off") != 0 || arg2) {
			fprintf(stderr,
				PROG ": trace takes 'on FILE' or 'off'\n");
			return 2;
		}
	}
	if (find_mount(mnt, &m))
		return 2;
	fd = reach(&m, mnt);
	if (fd < 0)
		return 2;
	if (trace_file) {
		tfd = open_trace(trace_file, &m, fd);
		if (tfd < 0) {
			close(fd);
			return 1;
		}
	}
	n = snprintf(req, sizeof(req), "%s%s%s%s%s%s\n", cmd, arg ? " " : "",
		     arg ? arg : "", arg2 ? " " : "", arg2 ? arg2 : "",
		     table ? " table" : "");
	if (n >= (int)sizeof(req)) {
		fprintf(stderr, PROG ": the request is too long\n");
		return 2;
	}
	/* A daemon that answered at once (a refusal) closed: read it. */
	signal(SIGPIPE, SIG_IGN);
	send_request(fd, req, (size_t)n, tfd);
	if (tfd >= 0)
		close(tfd);
	for (;;) {
		ssize_t r;

		if (got + 4096 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);

			if (!nb) {
				fprintf(stderr, PROG ": out of memory\n");
				return 1;
			}
			buf = nb;
		}
		r = read(fd, buf + got, cap - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!buf)
		buf = strdup("");
	if (!buf)
		return 1;
	buf[got] = '\0';
	/*
	 * What the daemon sent reaches a terminal escaped: the daemon is
	 * the user's when the mount is (and may be a fake one), and a
	 * caller's command name or region reason is the caller's text.
	 */
	if (got >= 3 && strncmp(buf, "ok\n", 3) == 0) {
		termesc_fwrite(stdout, buf + 3, got - 3, TERMESC_LINES);
		return 0;
	}
	if (got >= 6 && strncmp(buf, "error\n", 6) == 0) {
		fputs(PROG ": ", stderr);
		termesc_fwrite(stderr, buf + 6, got - 6, TERMESC_LINES);
		return 1;
	}
	fputs(PROG ": the daemon's answer is not one: ", stderr);
	termesc_fwrite(stderr, buf, got < 80 ? got : 80, 0);
	fputc('\n', stderr);
	return 1;
}
