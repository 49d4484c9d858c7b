/*
 * Locks between clients: two intrfs mounts of the same directory of the
 * export (A and B) and, to check who holds what, a third (C).  A lock
 * taken through one keeps out the same lock through another, whichever
 * way it was taken (fcntl(), lockf(), flock(): a whole-file POSIX lock, as
 * Linux NFS has it), F_GETLK names the other client's lock, a waiter is
 * granted the lock when the holder lets go, a holder's close, exit or kill
 * -9 releases it, and local_lock= and nolock keep their kinds local; a
 * daemon that died (reaped or still a zombie) has its locks released by
 * the next mount.
 *
 * A waiter hit by a signal, under each mount mode and policy: what the
 * regions make of the interruptible lock wait (a killable region holds a
 * handled signal back), and that an interrupted waiter never holds the
 * lock afterwards, checked through the third client; with SA_RESTART the
 * wait comes back and is granted once.  A fatal signal ends a lock wait
 * whatever region encloses it: two processes that each hold a lock and
 * wait for the other's, inside uninterruptible caller regions, die at
 * once on SIGKILL under every policy, and a third client takes both
 * locks after.  A close lets go of what its own open file took and of
 * nothing newer: a file closed and locked again at once stays locked.
 * With the server a host of its own, grants come as callbacks, and many
 * of them leave a bounded number of connections behind.
 *
 * The tests' own process is a lock owner too: its locks through A and
 * through B are two clients' (the server sees two hosts' owners), and
 * closing any descriptor of a file releases its POSIX locks on it through
 * that mount, so the descriptors stay open while their locks matter.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef INTRFSCTL_BIN
#error "INTRFSCTL_BIN: the path of intrfsctl, from tests/meson.build"
#endif

/* A blocked lock is granted by a LOCK sent again: 0.5 s apart, then. */
#define GRANT_MS 3000

static int open_rw(const char *path)
{
	int fd = open(path, O_RDWR);

	if (fd < 0)
		TEST__FAIL("open %s: %s", path, strerror(errno));
	return fd;
}

/* fcntl(cmd) of type on [start, start + len): 0 or the errno. */
static int fcntl_lock(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = { .l_type = type,
			    .l_whence = SEEK_SET,
			    .l_start = start,
			    .l_len = len };

	return fcntl(fd, cmd, &fl) == 0 ? 0 : errno;
}

static int do_flock(int fd, int op)
{
	return flock(fd, op) == 0 ? 0 : errno;
}

/* F_GETLK of a write lock on [start, start + len). */
static struct flock getlk(int fd, off_t start, off_t len)
{
	struct flock fl = { .l_type = F_WRLCK,
			    .l_whence = SEEK_SET,
			    .l_start = start,
			    .l_len = len };

	ASSERT_EQ(fcntl(fd, F_GETLK, &fl), 0);
	return fl;
}

/* Whether the third client can take (then drops) a write lock. */
static int c_can_lock(const struct mnt *c, const char *name, off_t start,
		      off_t len)
{
	int fd = open_rw(mpath(c, name)), err;

	err = fcntl_lock(fd, F_SETLK, F_WRLCK, start, len);
	close(fd); /* releases it */
	return err;
}

/* Waits until C can take the lock (the holder is gone): ms it took. */
static unsigned c_waits_for(const struct mnt *c, const char *name,
			    unsigned max_ms)
{
	uint64_t t0 = region_now_ns();

	for (;;) {
		if (c_can_lock(c, name, 0, 0) == 0)
			return (unsigned)((region_now_ns() - t0) / 1000000);
		if (region_now_ns() - t0 > (uint64_t)max_ms * 1000000)
			TEST__FAIL("C could not lock %s for %u ms", name,
				   max_ms);
		test_sleep_ms(20);
	}
}

TEST_IMPL(locks_between_clients)
{
	struct test_server s;
	struct mnt a, b, c;
	struct flock fl;
	int fa, fb, fa2;

	srv_get(&s);
	mnt_start(&a, &s, "");
	mnt_start_shared(&b, &a, &s, "");
	mnt_start_shared(&c, &a, &s, "");
	write_file(mpath(&a, "f"), "0123456789abcdef", 16);
	fa = open_rw(mpath(&a, "f"));
	fb = open_rw(mpath(&b, "f"));

	/* fcntl(): A's write lock keeps B out; F_GETLK names it. */
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 0), 0);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_WRLCK, 0, 0), EAGAIN);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_RDLCK, 8, 1), EAGAIN);
	fl = getlk(fb, 4, 4);
	ASSERT_EQ(fl.l_type, F_WRLCK);
	ASSERT_EQ(fl.l_start, 0);
	ASSERT_EQ(fl.l_len, 0);
	/* Another client's process cannot be named through FUSE: 0. */
	ASSERT_EQ(fl.l_pid, 0);
	/* One's own lock is no conflict. */
	ASSERT_EQ(getlk(fa, 0, 0).l_type, F_UNLCK);
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_UNLCK, 0, 0), 0);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_WRLCK, 0, 0), 0);
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 0), EAGAIN);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_UNLCK, 0, 0), 0);

	/* Byte ranges, and read locks side by side. */
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 10), 0);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_WRLCK, 10, 10), 0);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_WRLCK, 5, 10), EAGAIN);
	fl = getlk(fb, 9, 1);
	ASSERT_EQ(fl.l_type, F_WRLCK);
	ASSERT_EQ(fl.l_start, 0);
	ASSERT_EQ(fl.l_len, 10);
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_RDLCK, 0, 10), 0);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_RDLCK, 0, 10), 0);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_WRLCK, 0, 1), EAGAIN);
	ASSERT_EQ(getlk(fb, 0, 1).l_type, F_RDLCK);
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_UNLCK, 0, 0), 0);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_UNLCK, 0, 0), 0);

	/* lockf(), which glibc makes of fcntl(). */
	ASSERT_EQ(lockf(fa, F_TLOCK, 0), 0);
	ASSERT_EQ(lockf(fb, F_TLOCK, 0), -1);
	ASSERT(errno == EAGAIN || errno == EACCES);
	ASSERT_EQ(lockf(fb, F_TEST, 0), -1);
	ASSERT_EQ(lockf(fa, F_ULOCK, 0), 0);
	ASSERT_EQ(lockf(fb, F_TLOCK, 0), 0);
	ASSERT_EQ(lockf(fb, F_ULOCK, 0), 0);

	/* flock(): a whole-file POSIX lock there, so fcntl() meets it. */
	ASSERT_EQ(do_flock(fa, LOCK_EX), 0);
	ASSERT_EQ(do_flock(fb, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	ASSERT_EQ(do_flock(fb, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_RDLCK, 3, 1), EAGAIN);
	ASSERT_EQ(do_flock(fa, LOCK_SH), 0); /* a downgrade */
	ASSERT_EQ(do_flock(fb, LOCK_SH | LOCK_NB), 0);
	ASSERT_EQ(do_flock(fb, LOCK_UN), 0);
	ASSERT_EQ(do_flock(fa, LOCK_UN), 0);
	ASSERT_EQ(do_flock(fb, LOCK_EX | LOCK_NB), 0);
	ASSERT_EQ(c_can_lock(&c, "f", 0, 1), EAGAIN);
	/*
	 * The last close of the open file releases its flock().  FUSE sends
	 * that RELEASE after close() has returned (it is asynchronous unless
	 * the mount is fuseblk), so another client may meet the lock for as
	 * long as the UNLOCK takes to reach the server: soon, not at once.
	 */
	close(fb);
	fprintf(stderr, "# flock released %u ms after the last close\n",
		c_waits_for(&c, "f", 2000));
	fb = open_rw(mpath(&b, "f"));

	/*
	 * An OFD lock goes with its open file too, though another open file
	 * of the file stays open here (fa), as Linux's close lets go of it:
	 * the RELEASE of the one it was taken through lets go of it, soon.
	 */
	fa2 = open_rw(mpath(&a, "f"));
	ASSERT_EQ(fcntl_lock(fa2, F_OFD_SETLK, F_WRLCK, 0, 0), 0);
	ASSERT_EQ(c_can_lock(&c, "f", 0, 1), EAGAIN);
	close(fa2);
	fprintf(stderr, "# OFD lock released %u ms after its file's close\n",
		c_waits_for(&c, "f", 2000));

	/* Closing any descriptor of the file releases the process's locks. */
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 0), 0);
	fa2 = open_rw(mpath(&a, "f"));
	ASSERT_EQ(c_can_lock(&c, "f", 0, 0), EAGAIN);
	close(fa2);
	ASSERT_EQ(c_can_lock(&c, "f", 0, 0), 0);

	close(fa);
	close(fb);
	mnt_stop(&c);
	mnt_stop(&b);
	mnt_stop(&a);
	return 0;
}

/*
 * A close lets go of its own open file's locks and of nothing taken after
 * it.  A process closes the file it held flock() on, opens it again and
 * locks the new open file at once (flock(), or fcntl()), as an appender
 * that locks around each append does: 30 ms later the lock is still its
 * own, checked through the other client, in every try, whenever FUSE's
 * RELEASE of the old open file (sent after close() has returned) is
 * handled.  And, as Linux unlocks an flock() before close() returns, a
 * LOCK_NB flock() of the new open file, from the same client, finds the
 * old one gone.
 */
#define RELOCK_TRIES 200

enum relock { RELOCK_FLOCK, RELOCK_FCNTL, RELOCK_FLOCK_NB };

TEST_IMPL(locks_reopen_relock)
{
	static const struct {
		const char *what;
		enum relock how;
	} rows[] = {
		{ "flock() of the new open file", RELOCK_FLOCK },
		{ "an fcntl() lock through the new open file", RELOCK_FCNTL },
		{ "flock(LOCK_NB) of the new open file", RELOCK_FLOCK_NB },
	};
	struct test_server s;
	unsigned bad = 0;
	struct mnt a, c;

	srv_get(&s);
	hosts_up(&s, 0);
	mnt_start(&a, &s, "");
	mnt_start_shared(&c, &a, &s, "");
	write_file(mpath(&a, "log"), "x", 1);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		unsigned lost = 0, refused = 0;
		int err = 0;

		for (unsigned t = 0; t < RELOCK_TRIES; t++) {
			int fd = open_rw(mpath(&a, "log"));

			ASSERT_EQ(do_flock(fd, LOCK_EX), 0);
			ASSERT_EQ(close(fd), 0);
			fd = open_rw(mpath(&a, "log"));
			switch (rows[i].how) {
			case RELOCK_FLOCK:
				err = do_flock(fd, LOCK_EX);
				break;
			case RELOCK_FCNTL:
				err = fcntl_lock(fd, F_SETLKW, F_WRLCK, 0, 0);
				break;
			case RELOCK_FLOCK_NB:
				err = do_flock(fd, LOCK_EX | LOCK_NB);
				break;
			}
			if (err == EWOULDBLOCK &&
			    rows[i].how == RELOCK_FLOCK_NB) {
				refused++;
				/* Then it waits for the old one to go. */
				err = do_flock(fd, LOCK_EX);
			}
			ASSERT_EQ(err, 0);
			test_sleep_ms(30);
			if (c_can_lock(&c, "log", 0, 0) == 0)
				lost++;
			ASSERT_EQ(close(fd), 0);
		}
		fprintf(stderr,
			"# %s: not held 30 ms later in %u of %u tries, the "
			"closed file's flock() still there in %u\n",
			rows[i].what, lost, RELOCK_TRIES, refused);
		bad += lost + refused;
	}
	/* Every row measured first, for the figures. */
	if (bad)
		TEST__FAIL("a process that closed the file and locked it "
			   "again did not hold the new lock, or met its "
			   "closed file's flock() (above)");
	mnt_stop(&c);
	mnt_stop(&a);
	hosts_down(&s);
	return 0;
}

/* A child that waits for a lock. */

enum how { BY_FCNTL, BY_FLOCK };

struct waiter {
	pid_t pid;
	int res; /* its result: errno (0: got it), ms, signals seen */
};

struct wres {
	int err;
	unsigned ms;
	unsigned sigs;
};

static volatile sig_atomic_t sigs_seen;

static void on_sig(int sig)
{
	(void)sig;
	sigs_seen++;
}

/*
 * Starts a child that opens path and waits for a write lock on it (the
 * whole file), with a SIGUSR1 handler unless handler is 0 (then SIGUSR1
 * kills it), SA_RESTART when handler is 2.  It reports, then holds what it
 * got until it is killed.
 */
static void waiter_start(struct waiter *w, const char *path, enum how how,
			 int handler)
{
	int p[2];

	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	w->pid = fork();
	ASSERT_GE(w->pid, 0);
	if (w->pid == 0) {
		struct sigaction sa = { .sa_handler = on_sig };
		struct wres r = { 0, 0, 0 };
		uint64_t t0;
		int fd, rc;

		signal(SIGABRT, SIG_DFL);
		/* Not left holding a lock when the test dies. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/*
		 * Nor with the test's descriptors: an open file's flock()
		 * goes with its last descriptor.
		 */
		for (int i = 3; i < 1024; i++)
			if (i != p[1])
				close(i);
		if (handler) {
			sa.sa_flags = handler == 2 ? SA_RESTART : 0;
			sigaction(SIGUSR1, &sa, NULL);
		}
		fd = open(path, O_RDWR);
		if (fd < 0)
			_exit(111);
		t0 = region_now_ns();
		rc = how == BY_FLOCK ?
			     flock(fd, LOCK_EX) :
			     fcntl(fd, F_SETLKW,
				   &(struct flock){ .l_type = F_WRLCK,
						    .l_whence = SEEK_SET });
		r.err = rc == 0 ? 0 : errno;
		r.ms = (unsigned)((region_now_ns() - t0) / 1000000);
		r.sigs = (unsigned)sigs_seen;
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(112);
		for (;;)
			pause();
	}
	close(p[1]);
	w->res = p[0];
}

/* Its result within ms, if it came. */
static bool waiter_result(struct waiter *w, unsigned ms, struct wres *r)
{
	struct pollfd pf = { w->res, POLLIN, 0 };

	if (poll(&pf, 1, (int)ms) != 1)
		return false;
	return read(w->res, r, sizeof(*r)) == sizeof(*r);
}

static void waiter_kill(struct waiter *w)
{
	kill(w->pid, SIGKILL);
	waitpid(w->pid, NULL, 0);
	close(w->res);
}

/* Waits until the waiter's LOCK is in the server's queue (BLOCKED). */
static void waiter_blocked(const struct waiter *w, const struct mnt *m,
			   uint64_t locks_before)
{
	ASSERT_WITHIN(proc_in_fuse(w->pid), 10000);
	ASSERT_WITHIN(mnt_proc_ops(m, "LOCK") > locks_before, 10000);
}

/*
 * A waiter is granted the lock when the holder lets go, whichever way
 * each took it, and kill -9 of a holder lets go as a close does.
 */
TEST_IMPL(locks_wait_granted)
{
	static const struct {
		const char *what;
		enum how holder, waiter;
		bool kill_holder; /* the holder is a process killed -9 */
	} rows[] = {
		{ "fcntl holder unlocks, F_SETLKW waiter", BY_FCNTL, BY_FCNTL,
		  false },
		{ "flock holder unlocks, flock waiter", BY_FLOCK, BY_FLOCK,
		  false },
		{ "flock holder unlocks, F_SETLKW waiter", BY_FLOCK, BY_FCNTL,
		  false },
		{ "fcntl holder killed -9, flock waiter", BY_FCNTL, BY_FLOCK,
		  true },
	};
	struct test_server s;
	struct mnt a, b, c;

	srv_get(&s);
	mnt_start(&a, &s, "");
	mnt_start_shared(&b, &a, &s, "");
	mnt_start_shared(&c, &a, &s, "");
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct waiter holder = { 0 }, w;
		struct wres r;
		char name[16];
		uint64_t t0, before;
		int fa = -1;

		snprintf(name, sizeof(name), "g%u", i);
		write_file(mpath(&a, name), "x", 1);
		if (rows[i].kill_holder) {
			waiter_start(&holder, mpath(&a, name), rows[i].holder,
				     1);
			if (!waiter_result(&holder, 5000, &r) || r.err)
				TEST__FAIL("%s: the holder did not get the "
					   "lock",
					   rows[i].what);
		} else {
			fa = open_rw(mpath(&a, name));
			ASSERT_EQ(rows[i].holder == BY_FLOCK ?
					  do_flock(fa, LOCK_EX) :
					  fcntl_lock(fa, F_SETLK, F_WRLCK, 0,
						     0),
				  0);
		}
		before = mnt_proc_ops(&b, "LOCK");
		waiter_start(&w, mpath(&b, name), rows[i].waiter, 1);
		waiter_blocked(&w, &b, before);
		ASSERT(!waiter_result(&w, 300, &r));
		t0 = region_now_ns();
		if (rows[i].kill_holder)
			waiter_kill(&holder);
		else
			close(fa); /* releases it, whichever kind */
		if (!waiter_result(&w, GRANT_MS, &r))
			TEST__FAIL("%s: the waiter was not granted the lock "
				   "within %d ms",
				   rows[i].what, GRANT_MS);
		ASSERT_EQ(r.err, 0);
		fprintf(stderr,
			"# %s: granted %.0f ms after the holder let go\n",
			rows[i].what, (double)(region_now_ns() - t0) / 1e6);
		/* The waiter holds it now: C is kept out until it dies. */
		ASSERT_EQ(c_can_lock(&c, name, 0, 0), EAGAIN);
		waiter_kill(&w);
		c_waits_for(&c, name, 2000);
	}
	mnt_stop(&c);
	mnt_stop(&b);
	mnt_stop(&a);
	return 0;
}

/*
 * A waiter hit by a signal, under each mode and policy.  The lock wait
 * is interruptible, as Linux's: the mount's region decides what a handled
 * signal does, and a fatal one ends it whatever the region.  Whatever the
 * outcome, a waiter that was interrupted never holds the lock: when A lets
 * go, C takes it.
 */
TEST_IMPL(locks_waiter_signalled)
{
	static const struct {
		const char *opts;
		int handler; /* 1: a handler; 2: with SA_RESTART; 0: SIGKILL */
		int want; /* 0: still waits, then granted; else the errno */
	} rows[] = {
		/* A killable region holds a handled signal back. */
		{ "", 1, 0 },
		{ "policy=sigmask", 1, 0 },
		{ "nointr", 1, 0 },
		/* Nothing holds it back: EINTR, and nothing held after. */
		{ "intr", 1, EINTR },
		{ "policy=percall", 1, EINTR },
		{ "policy=linux", 1, EINTR },
		/* SA_RESTART: FUSE restarts the wait, granted once. */
		{ "intr", 2, 0 },
		{ "policy=percall", 2, 0 },
		/* SIGKILL ends it everywhere, nointr's region too. */
		{ "", 0, -1 },
		{ "intr", 0, -1 },
		{ "policy=percall", 0, -1 },
		{ "nointr", 0, -1 },
		{ "nointr,policy=sigmask", 0, -1 },
	};
	struct test_server s;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct mnt a, b, c;
		struct waiter w;
		struct wres r;
		uint64_t before;
		int fa, st;

		mnt_start(&a, &s, "");
		mnt_start_shared(&b, &a, &s, rows[i].opts);
		mnt_start_shared(&c, &a, &s, "");
		write_file(mpath(&a, "f"), "x", 1);
		fa = open_rw(mpath(&a, "f"));
		ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 0), 0);
		before = mnt_proc_ops(&b, "LOCK");
		waiter_start(&w, mpath(&b, "f"), BY_FCNTL, rows[i].handler);
		waiter_blocked(&w, &b, before);
		kill(w.pid, rows[i].handler ? SIGUSR1 : SIGKILL);
		if (rows[i].want > 0) {
			if (!waiter_result(&w, 5000, &r))
				TEST__FAIL("-o '%s': the signalled waiter did "
					   "not return",
					   rows[i].opts);
			ASSERT_EQ(r.err, rows[i].want);
			ASSERT_EQ(r.sigs, 1);
		} else if (rows[i].want < 0) {
			ASSERT(proc_gone_within(w.pid, 5000));
			ASSERT_EQ(waitpid(w.pid, &st, 0), -1);
		} else {
			/* Held back, or restarted: it still waits. */
			if (waiter_result(&w, 500, &r))
				TEST__FAIL("-o '%s': the waiter returned %s "
					   "while A holds the lock",
					   rows[i].opts, strerror(r.err));
		}
		/* A lets go: who holds the lock now? */
		close(fa);
		if (rows[i].want == 0) {
			if (!waiter_result(&w, GRANT_MS, &r))
				TEST__FAIL("-o '%s': the waiter was not "
					   "granted the lock",
					   rows[i].opts);
			ASSERT_EQ(r.err, 0);
			ASSERT_EQ(r.sigs, 1);
			ASSERT_EQ(c_can_lock(&c, "f", 0, 0), EAGAIN);
		} else {
			/* Interrupted or dead: never the holder. */
			unsigned ms = c_waits_for(&c, "f", GRANT_MS);

			fprintf(stderr,
				"# -o '%s': C locked %u ms after A "
				"let go\n",
				rows[i].opts, ms);
		}
		if (rows[i].want >= 0)
			waiter_kill(&w);
		else
			close(w.res);
		mnt_stop(&c);
		mnt_stop(&b);
		mnt_stop(&a);
	}
	return 0;
}

/* The lock cycle: two processes, each holding a lock the other waits for. */

/* The user nobody, as the cycle's unprivileged user. */
#define NOBODY 65534
/* SIGKILL must end the cycle within this. */
#define KILL_MS 1000

struct cycler {
	pid_t pid;
	int res; /* its report: struct cycle_res, then its wait's errno */
	int go;
};

struct cycle_res {
	int region; /* 0, or the errno of the region's begin */
	uint32_t kind; /* the kind the mount says it holds */
};

/*
 * A child that, as uid (0: root), opens own and other, locks own, begins
 * a caller region of kind on it, reports, then at the go byte waits
 * (F_SETLKW) for a write lock on other.  A SIGUSR1 handler without
 * SA_RESTART counts signals.
 */
static void cycler_start(struct cycler *c, const char *own, const char *other,
			 uid_t uid, enum region_kind kind)
{
	int res[2], go[2];

	ASSERT_EQ(pipe(res), 0);
	ASSERT_EQ(pipe(go), 0);
	fflush(NULL);
	c->pid = fork();
	ASSERT_GE(c->pid, 0);
	if (c->pid == 0) {
		struct sigaction sa = { .sa_handler = on_sig };
		struct region_caller_ioc ioc = { .op = REGION_CALLER_BEGIN,
						 .kind = kind };
		struct cycle_res r = { 0, 0 };
		int fo, fx, err;
		char b;

		signal(SIGABRT, SIG_DFL);
		for (int i = 3; i < 1024; i++)
			if (i != res[1] && i != go[0])
				close(i);
		sigaction(SIGUSR1, &sa, NULL);
		if (uid) {
			gid_t g = uid;

			if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
			    setresuid(uid, uid, uid) < 0)
				_exit(110);
		}
		/* After the change of user, which clears it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fo = open(own, O_RDWR);
		fx = open(other, O_RDWR);
		if (fo < 0 || fx < 0)
			_exit(111);
		if (fcntl_lock(fo, F_SETLK, F_WRLCK, 0, 0))
			_exit(112);
		snprintf(ioc.reason, sizeof(ioc.reason), "lock cycle");
		r.region = ioctl(fo, REGION_CALLER_IOC, &ioc) < 0 ? errno : 0;
		r.kind = ioc.kind;
		if (write(res[1], &r, sizeof(r)) != sizeof(r) ||
		    read(go[0], &b, 1) != 1)
			_exit(113);
		err = fcntl_lock(fx, F_SETLKW, F_WRLCK, 0, 0);
		if (write(res[1], &err, sizeof(err)) != sizeof(err))
			_exit(114);
		for (;;)
			pause();
	}
	close(res[1]);
	close(go[0]);
	c->res = res[0];
	c->go = go[1];
}

/* intrfsctl MNT policy P. */
static void policy_switch(const struct mnt *m, const char *policy)
{
	int st;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execl(INTRFSCTL_BIN, "intrfsctl", m->dir, "policy", policy,
		      (char *)NULL);
		_exit(127);
	}
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * Two processes each hold a lock, each enter an uninterruptible caller
 * region and each wait for the other's lock: a lock wait is not I/O in
 * flight (nothing is half done when it ends, its CANCEL is safe), so
 * SIGKILL ends both within KILL_MS, under every policy and mode, whoever
 * the processes are, after a handled signal already interrupted the wait
 * (the kernel sends no INTERRUPT for the SIGKILL then), and after the
 * policy was switched while they waited.  Neither holds a lock after: the
 * third client takes both.
 */
TEST_IMPL(locks_cycle_killed)
{
	static const struct {
		const char *opts; /* A's, beside allow_other */
		uid_t uid; /* the two processes' */
		uint32_t held; /* the kind the mount holds their region as */
		bool handled_first; /* SIGUSR1 first, SIGKILL after */
		const char *switch_to; /* intrfsctl policy, before the kill */
	} rows[] = {
		{ "policy=region", 0, REGION_UNINTERRUPTIBLE, false, NULL },
		{ "policy=sigmask", 0, REGION_UNINTERRUPTIBLE, false, NULL },
		{ "policy=percall", 0, REGION_UNINTERRUPTIBLE, false, NULL },
		{ "policy=linux", 0, REGION_UNINTERRUPTIBLE, false, NULL },
		{ "nointr", 0, REGION_UNINTERRUPTIBLE, false, NULL },
		{ "intr", 0, REGION_UNINTERRUPTIBLE, false, NULL },
		/* A user's region is killable, unless the mount opts in. */
		{ "policy=region", NOBODY, REGION_KILLABLE, false, NULL },
		{ "policy=region,caller_hold_any,caller_hold_max=60", NOBODY,
		  REGION_UNINTERRUPTIBLE, false, NULL },
		{ "policy=region", 0, REGION_UNINTERRUPTIBLE, true, NULL },
		{ "policy=sigmask", 0, REGION_UNINTERRUPTIBLE, true, NULL },
		{ "policy=region,caller_hold_any,caller_hold_max=60", NOBODY,
		  REGION_UNINTERRUPTIBLE, true, NULL },
		{ "policy=region", 0, REGION_UNINTERRUPTIBLE, false,
		  "percall" },
	};
	struct test_server s;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct cycler p[2];
		struct mnt a, c;
		char opts[128];
		uint64_t before, t0;
		unsigned ms[2];

		snprintf(opts, sizeof(opts), "allow_other,%s", rows[i].opts);
		mnt_start(&a, &s, opts);
		mnt_start_shared(&c, &a, &s, "");
		write_file(mpath(&a, "f0"), "x", 1);
		write_file(mpath(&a, "f1"), "x", 1);
		ASSERT_EQ(chmod(mpath(&a, "f0"), 0666), 0);
		ASSERT_EQ(chmod(mpath(&a, "f1"), 0666), 0);
		for (unsigned k = 0; k < 2; k++) {
			struct cycle_res r;

			cycler_start(&p[k], mpath(&a, k ? "f1" : "f0"),
				     mpath(&a, k ? "f0" : "f1"), rows[i].uid,
				     REGION_UNINTERRUPTIBLE);
			if (read(p[k].res, &r, sizeof(r)) != sizeof(r)) {
				int st = 0;

				waitpid(p[k].pid, &st, 0);
				TEST__FAIL("-o '%s': process %u did not lock "
					   "and begin its region (status "
					   "0x%x)",
					   opts, k, st);
			}
			ASSERT_EQ(r.region, 0);
			if (r.kind != rows[i].held)
				TEST__FAIL("-o '%s', uid %u: the region is "
					   "held as %s, not %s",
					   opts, (unsigned)rows[i].uid,
					   region_kind_name(r.kind),
					   region_kind_name(rows[i].held));
		}
		before = mnt_proc_ops(&a, "LOCK");
		for (unsigned k = 0; k < 2; k++)
			ASSERT_EQ(write(p[k].go, "g", 1), 1);
		for (unsigned k = 0; k < 2; k++)
			ASSERT_WITHIN(proc_in_fuse(p[k].pid), 10000);
		ASSERT_WITHIN(mnt_proc_ops(&a, "LOCK") >= before + 2, 10000);
		if (rows[i].handled_first) {
			for (unsigned k = 0; k < 2; k++)
				ASSERT_EQ(kill(p[k].pid, SIGUSR1), 0);
		}
		if (rows[i].switch_to) {
			/* Not theirs: they keep the policy they began with. */
			policy_switch(&a, rows[i].switch_to);
			mnt_wait_log(&a, "2 requests in flight keep theirs",
				     5000);
		}
		/* The cycle holds: nobody gets anywhere. */
		for (unsigned k = 0; k < 2; k++) {
			struct pollfd pf = { p[k].res, POLLIN, 0 };

			if (poll(&pf, 1, k ? 0 : 300) != 0)
				TEST__FAIL("-o '%s': process %u left the "
					   "cycle before the kill",
					   opts, k);
		}
		t0 = region_now_ns();
		for (unsigned k = 0; k < 2; k++)
			ASSERT_EQ(kill(p[k].pid, SIGKILL), 0);
		for (unsigned k = 0; k < 2; k++) {
			if (!proc_gone_within(p[k].pid, KILL_MS))
				TEST__FAIL("-o '%s'%s%s: process %u (uid %u) "
					   "still there %u ms after SIGKILL",
					   opts,
					   rows[i].handled_first ?
						   ", SIGUSR1 first" :
						   "",
					   rows[i].switch_to ?
						   ", switched to percall" :
						   "",
					   k, (unsigned)rows[i].uid, KILL_MS);
			ms[k] = (unsigned)((region_now_ns() - t0) / 1000000);
			close(p[k].res);
			close(p[k].go);
		}
		fprintf(stderr,
			"# -o '%s'%s%s, uid %u: both gone %u ms after "
			"SIGKILL\n",
			opts, rows[i].handled_first ? ", SIGUSR1 first" : "",
			rows[i].switch_to ? ", switched to percall" : "",
			(unsigned)rows[i].uid, ms[0] > ms[1] ? ms[0] : ms[1]);
		/* Neither holds a lock, nor waits for one on the server. */
		c_waits_for(&c, "f0", 2000);
		c_waits_for(&c, "f1", 2000);
		mnt_stop(&c);
		mnt_stop(&a);
	}
	return 0;
}

/*
 * A LOCK on its way to a stalled server, inside an uninterruptible caller
 * region, and SIGKILL: the region holds the signal for caller_hold_max=
 * only, then the caller is answered EINTR and dies while the LOCK is still
 * unanswered.  When the server comes back and grants it, the lock goes
 * back: the dead process's close came before the grant and released
 * nothing, so only the daemon can give it back.  The third client takes
 * it after.
 */
TEST_IMPL(locks_held_grant_given_back)
{
	struct test_server s;
	struct cycler p;
	struct cycle_res r;
	struct mnt a, c;
	uint64_t t0;
	unsigned ms;

	srv_get(&s);
	mnt_start(&a, &s, "caller_hold_max=1");
	mnt_start_shared(&c, &a, &s, "");
	write_file(mpath(&a, "g"), "x", 1);
	write_file(mpath(&a, "f"), "x", 1);
	/* It locks g, then, at the go byte, waits for f, which is free. */
	cycler_start(&p, mpath(&a, "g"), mpath(&a, "f"), 0,
		     REGION_UNINTERRUPTIBLE);
	ASSERT_EQ(read(p.res, &r, sizeof(r)), (ssize_t)sizeof(r));
	ASSERT_EQ(r.region, 0);
	srv_stall(&s);
	ASSERT_EQ(write(p.go, "g", 1), 1);
	ASSERT_WITHIN(proc_in_fuse(p.pid), 10000);
	test_sleep_ms(200);
	t0 = region_now_ns();
	ASSERT_EQ(kill(p.pid, SIGKILL), 0);
	if (!proc_gone_within(p.pid, 4000)) {
		srv_resume(&s);
		TEST__FAIL(
			"still there 4 s after SIGKILL, its LOCK unanswered");
	}
	ms = (unsigned)((region_now_ns() - t0) / 1000000);
	fprintf(stderr, "# dead %u ms after SIGKILL, the server stalled\n", ms);
	ASSERT_GE(ms, 700);
	srv_resume(&s);
	/* The grant for the dead caller goes back. */
	ms = c_waits_for(&c, "f", 5000);
	fprintf(stderr, "# C locked f %u ms after the server came back\n", ms);
	close(p.res);
	close(p.go);
	mnt_stop(&c);
	mnt_stop(&a);
	return 0;
}

/*
 * local_lock= and nolock keep their kinds in this kernel: two clients do
 * not see each other's locks of that kind, and still see the other kind.
 */
TEST_IMPL(locks_local_lock)
{
	static const struct {
		const char *opts;
		bool posix_remote, flock_remote;
	} rows[] = {
		{ "local_lock=none", true, true },
		{ "local_lock=flock", true, false },
		{ "local_lock=posix", false, true },
		{ "local_lock=all", false, false },
		{ "nolock", false, false },
		{ "nolock,lock", true, true },
	};
	struct test_server s;

	srv_get(&s);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct mnt a, b;
		int fa, fb, err;

		mnt_start(&a, &s, rows[i].opts);
		mnt_start_shared(&b, &a, &s, rows[i].opts);
		write_file(mpath(&a, "f"), "x", 1);
		fa = open_rw(mpath(&a, "f"));
		fb = open_rw(mpath(&b, "f"));
		ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 0), 0);
		err = fcntl_lock(fb, F_SETLK, F_WRLCK, 0, 0);
		if (err != (rows[i].posix_remote ? EAGAIN : 0))
			TEST__FAIL("-o %s: B's fcntl() lock beside A's: %s",
				   rows[i].opts,
				   err ? strerror(err) : "got it");
		ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_UNLCK, 0, 0), 0);
		ASSERT_EQ(fcntl_lock(fb, F_SETLK, F_UNLCK, 0, 0), 0);
		ASSERT_EQ(do_flock(fa, LOCK_EX), 0);
		err = do_flock(fb, LOCK_EX | LOCK_NB);
		if (err != (rows[i].flock_remote ? EWOULDBLOCK : 0))
			TEST__FAIL("-o %s: B's flock() beside A's: %s",
				   rows[i].opts,
				   err ? strerror(err) : "got it");
		close(fa);
		close(fb);
		mnt_stop(&b);
		mnt_stop(&a);
	}
	return 0;
}

/*
 * The lock janitor waiting for work is idle, not hung, as khungtaskd skips
 * a kernel thread's idle wait: with hung_timeout=1, the watchdog reports a
 * read the stalled server holds, and never the janitor, idle three times
 * as long by then.
 */
TEST_IMPL(locks_janitor_idle_not_hung)
{
	static char zeros[65536];
	struct test_server s;
	uint64_t unread;
	struct probe p;
	struct mnt m;
	char log[32768];
	int fd, status;

	srv_get(&s);
	mnt_start(&m, &s, "hard,nointr,hung_timeout=1");
	write_file(lpath(&m, "f"), zeros, sizeof(zeros));
	fd = open_rw(mpath(&m, "f"));
	ASSERT_EQ(fcntl_lock(fd, F_SETLK, F_WRLCK, 0, 0), 0);
	close(fd); /* its UNLOCK is the janitor's; then it waits for work */
	test_sleep_ms(3000);
	/* The watchdog reports what is blocked: a read on a stalled server. */
	probe_start(&p, PROBE_READ, mpath(&m, "f"), sizeof(zeros), true, 0);
	probe_wait_ready(&p);
	srv_stall(&s);
	unread = srv_unread(&s);
	probe_go(&p);
	probe_wait_blocked(&p);
	srv_wait_call(&s, unread);
	mnt_wait_log(&m, "(read) blocked uninterruptibly", 5000);
	srv_resume(&s);
	ASSERT(probe_wait(&p, 20000, NULL, &status));
	mnt_read_log(&m, log, sizeof(log));
	if (strstr(log, "(locks) blocked uninterruptibly"))
		TEST__FAIL("the idle lock janitor was reported hung:\n%s", log);
	mnt_stop(&m);
	return 0;
}

/* The server as a host of its own: callbacks, reclaims. */

/* The daemon logs what within ms, or the test fails with its log. */
static void log_says(const struct mnt *m, const char *what, unsigned ms)
{
	mnt_wait_log(m, what, ms);
}

/*
 * With the server a host of its own, a mount serves the lock manager's
 * callbacks: a waiter is granted by the server's GRANTED_MSG, answered with
 * GRANTED_RES, with no LOCK sent again (that is 30 s away then).  The
 * first mount of the client host to lock serves them; the others poll.
 */
TEST_IMPL(locks_hosts_callback_grant)
{
	struct test_server s;
	struct mnt a, b, c;
	struct waiter w;
	struct wres r;
	uint64_t locks, t0;
	int fa;

	srv_get(&s);
	hosts_up(&s, 0);
	mnt_start(&b, &s, "");
	mnt_start_shared(&a, &b, &s, "");
	mnt_start_shared(&c, &b, &s, "");
	/* B locks first: it serves the callbacks. */
	write_file(mpath(&a, "g"), "x", 1);
	ASSERT_EQ(c_can_lock(&b, "g", 0, 0), 0);
	write_file(mpath(&a, "f"), "x", 1);
	fa = open_rw(mpath(&a, "f"));
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 0), 0);
	/* A found B's registration: it polls. */
	mnt_wait_log(&a, "no lock callbacks", 2000);
	locks = mnt_proc_ops(&b, "LOCK");
	waiter_start(&w, mpath(&b, "f"), BY_FCNTL, 1);
	waiter_blocked(&w, &b, locks);
	ASSERT(!waiter_result(&w, 300, &r));
	t0 = region_now_ns();
	close(fa);
	if (!waiter_result(&w, 5000, &r))
		TEST__FAIL("the waiter was not granted within 5 s of the "
			   "holder letting go");
	ASSERT_EQ(r.err, 0);
	fprintf(stderr,
		"# granted by the callback %.0f ms after the holder "
		"let go\n",
		(double)(region_now_ns() - t0) / 1e6);
	/* One LOCK, BLOCKED; the grant came as a callback. */
	ASSERT_UINT64_EQ(mnt_proc_ops(&b, "LOCK") - locks, 1);
	ASSERT_UINT64_EQ(mnt_proc_ops(&b, "GRANTED_RES"), 1);
	ASSERT_EQ(c_can_lock(&c, "f", 0, 0), EAGAIN);
	waiter_kill(&w);
	c_waits_for(&c, "f", 2000);
	mnt_stop(&c);
	mnt_stop(&a);
	mnt_stop(&b);
	hosts_down(&s);
	return 0;
}

/* TCP states in /proc/net/tcp. */
#define TCP_ESTABLISHED 0x01
#define TCP_CLOSE_WAIT 0x08
#define TCP_LISTEN 0x0a

/* Whether socket inode `inode` is one of pid's descriptors. */
static bool pid_has_socket(pid_t pid, unsigned long inode)
{
	char path[64], link[64], want[64];
	bool has = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	d = opendir(path);
	for (struct dirent *e; d && !has && (e = readdir(d));) {
		ssize_t n =
			readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);

		if (n <= 0)
			continue;
		link[n] = '\0';
		has = strcmp(link, want) == 0;
	}
	if (d)
		closedir(d);
	return has;
}

/* What the callback connections pid accepted are, by state. */
struct conns {
	unsigned all, established, close_wait;
};

/*
 * The TCP connections pid holds that its listening sockets accepted (in
 * pid's network namespace): for a daemon, the lock manager's callbacks.
 */
static struct conns accepted_conns(pid_t pid)
{
	unsigned listen[8], nlisten = 0;
	struct conns c = { 0, 0, 0 };
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/tcp", (int)pid);
	for (int pass = 0; pass < 2; pass++) {
		f = fopen(path, "r");
		ASSERT_NOT_NULL(f);
		while (fgets(line, sizeof(line), f)) {
			unsigned lport, state;
			unsigned long inode;
			bool mine = false;

			if (sscanf(line,
				   " %*d: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x "
				   "%*x %*u %*u %lu",
				   &lport, &state, &inode) != 3)
				continue;
			for (unsigned i = 0; i < nlisten; i++)
				mine |= listen[i] == lport;
			if (pass == 0 && state == TCP_LISTEN && nlisten < 8 &&
			    pid_has_socket(pid, inode))
				listen[nlisten++] = lport;
			if (pass == 1 && state != TCP_LISTEN && mine && inode &&
			    pid_has_socket(pid, inode)) {
				c.all++;
				c.established += state == TCP_ESTABLISHED;
				c.close_wait += state == TCP_CLOSE_WAIT;
			}
		}
		fclose(f);
	}
	return c;
}

/* The descriptors pid has open. */
static unsigned open_fds(pid_t pid)
{
	char path[64];
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	ASSERT_NOT_NULL(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * The lock manager's callbacks leave no pile of connections behind.
 * ganesha opens a connection to this host's lock manager for each
 * GRANTED_MSG and never closes it; the mount closes those idle for a few
 * seconds, and past a cap the one idle longest.  400 locks that wait
 * and are granted by callback: each is granted within 5 s of the holder
 * letting go (no LOCK sent again, which is 30 s away), the mount never
 * holds more than CALLBACK_CONNS_MAX callback connections, a lock still
 * gets its callback at the end, and once idle, none is left.
 */
#define CALLBACK_LOCKS 400
#define CALLBACK_CONNS_MAX 64
#define CALLBACK_IDLE_MS 5000

/*
 * A child that takes flock() of path and lets go of it at each byte on
 * go, and says so with a byte on done; until go is closed.
 */
static pid_t flocker_start(const char *path, int go[2], int done[2])
{
	pid_t pid;

	ASSERT_EQ(pipe(go), 0);
	ASSERT_EQ(pipe(done), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		char b;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGABRT, SIG_DFL);
		close(go[1]);
		close(done[0]);
		if (fd < 0)
			_exit(1);
		while (read(go[0], &b, 1) == 1) {
			if (flock(fd, LOCK_EX) || flock(fd, LOCK_UN))
				_exit(2);
			if (write(done[1], "d", 1) != 1)
				_exit(3);
		}
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	return pid;
}

/* Whether the flocker said done within ms. */
static bool flocker_done(int done, unsigned ms)
{
	struct pollfd pf = { done, POLLIN, 0 };
	char b;

	return poll(&pf, 1, (int)ms) == 1 && read(done, &b, 1) == 1;
}

TEST_IMPL(locks_hosts_callback_conns)
{
	struct test_server s;
	unsigned most = 0, ms;
	uint64_t res, locks, t0;
	int go[2], done[2], fc;
	struct mnt a, c;
	struct conns k;
	pid_t pid;

	srv_get(&s);
	hosts_up(&s, 0);
	mnt_start(&a, &s, "");
	mnt_start_shared(&c, &a, &s, "");
	write_file(mpath(&a, "f"), "x", 1);
	/* A locks first: it serves the callbacks. */
	ASSERT_EQ(c_can_lock(&a, "f", 0, 0), 0);
	fc = open_rw(mpath(&c, "f"));
	pid = flocker_start(mpath(&a, "f"), go, done);
	t0 = region_now_ns();
	for (unsigned i = 1; i <= CALLBACK_LOCKS; i++) {
		ASSERT_EQ(do_flock(fc, LOCK_EX), 0);
		ASSERT_EQ(write(go[1], "g", 1), 1);
		/* Its LOCK waits on the server: the grant is a callback. */
		ASSERT_WITHIN(proc_in_fuse(pid), 10000);
		test_sleep_ms(10);
		ASSERT_EQ(do_flock(fc, LOCK_UN), 0);
		if (!flocker_done(done[0], 5000))
			TEST__FAIL("lock %u was not granted within 5 s of the "
				   "holder letting go; the mount holds %u "
				   "callback connections, ganesha %u "
				   "descriptors",
				   i, accepted_conns(a.pid).all,
				   open_fds(s.ganesha));
		if (i % 100 == 0) {
			k = accepted_conns(a.pid);
			if (k.all > most)
				most = k.all;
		}
	}
	res = mnt_proc_ops(&a, "GRANTED_RES");
	fprintf(stderr,
		"# %u locks in %.1f s, %" PRIu64 " granted by callback; at "
		"most %u callback connections; ganesha holds %u "
		"descriptors\n",
		CALLBACK_LOCKS, (double)(region_now_ns() - t0) / 1e9, res, most,
		open_fds(s.ganesha));
	ASSERT_LE(most, CALLBACK_CONNS_MAX);
	/* One more, surely queued on the server: its grant is a callback. */
	locks = mnt_proc_ops(&a, "LOCK");
	ASSERT_EQ(do_flock(fc, LOCK_EX), 0);
	ASSERT_EQ(write(go[1], "g", 1), 1);
	ASSERT_WITHIN(mnt_proc_ops(&a, "LOCK") > locks, 10000);
	ASSERT_EQ(do_flock(fc, LOCK_UN), 0);
	ASSERT(flocker_done(done[0], 5000));
	ASSERT_UINT64_EQ(mnt_proc_ops(&a, "GRANTED_RES"), res + 1);
	/* Idle: closed. */
	t0 = region_now_ns();
	ASSERT_WITHIN(accepted_conns(a.pid).all == 0, CALLBACK_IDLE_MS + 5000);
	ms = (unsigned)((region_now_ns() - t0) / 1000000);
	fprintf(stderr, "# none left %u ms after the last callback\n", ms);
	close(go[1]);
	waitpid(pid, NULL, 0);
	close(done[0]);
	close(fc);
	mnt_stop(&c);
	mnt_stop(&a);
	hosts_down(&s);
	return 0;
}

/*
 * The local port of pid's TCP connection to remote_port (its socket's
 * inode among pid's descriptors, in /proc/net/tcp), or 0.
 */
static unsigned tcp_port_to(pid_t pid, unsigned remote_port)
{
	char path[64], link[64], line[512];
	unsigned port = 0;
	FILE *f = fopen("/proc/net/tcp", "r");

	if (!f)
		return 0;
	while (!port && fgets(line, sizeof(line), f)) {
		unsigned lport, rport;
		unsigned long inode;

		if (sscanf(line,
			   " %*d: %*x:%x %*x:%x %*x %*x:%*x %*x:%*x %*x %*u "
			   "%*u %lu",
			   &lport, &rport, &inode) != 3 ||
		    rport != remote_port || !inode)
			continue;
		for (int fd = 0; fd < 256 && !port; fd++) {
			char want[64];
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid,
				 fd);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			snprintf(want, sizeof(want), "socket:[%lu]", inode);
			if (strcmp(link, want) == 0)
				port = lport;
		}
	}
	fclose(f);
	return port;
}

/*
 * A GRANTED that comes after its waiter left is answered DENIED, and the
 * server lets go of the lock.  The waiter is interrupted (intr) while its
 * mount's connection to the lock manager is cut (its CANCEL waits on the
 * way), the holder lets go meanwhile, the server grants the lock that
 * nobody waits for any more: the third client takes it, before the CANCEL
 * even arrives.  The waiter's EINTR is answered once its CANCEL went.
 */
TEST_IMPL(locks_hosts_late_grant)
{
	struct test_server s;
	struct mnt a, b, c;
	struct waiter w;
	struct wres r;
	unsigned port;
	uint64_t locks;
	int fa;

	srv_get(&s);
	hosts_up(&s, 0);
	mnt_start(&b, &s, "intr");
	mnt_start_shared(&a, &b, &s, "");
	mnt_start_shared(&c, &b, &s, "");
	/* B locks first: it serves the callbacks. */
	write_file(mpath(&a, "g"), "x", 1);
	ASSERT_EQ(c_can_lock(&b, "g", 0, 0), 0);
	write_file(mpath(&a, "f"), "x", 1);
	fa = open_rw(mpath(&a, "f"));
	ASSERT_EQ(fcntl_lock(fa, F_SETLK, F_WRLCK, 0, 0), 0);
	locks = mnt_proc_ops(&b, "LOCK");
	waiter_start(&w, mpath(&b, "f"), BY_FCNTL, 1);
	waiter_blocked(&w, &b, locks);
	port = tcp_port_to(b.pid, s.nlm_port);
	ASSERT_NE(port, 0);
	net_block_flow(port, s.nlm_port);
	kill(w.pid, SIGUSR1);
	/* Its CANCEL is on the way, held up: the holder lets go now. */
	test_sleep_ms(300);
	close(fa);
	c_waits_for(&c, "f", 5000);
	/* The grant came for nobody: answered DENIED. */
	ASSERT_UINT64_EQ(mnt_proc_ops(&b, "GRANTED_RES"), 1);
	/* No answer to the waiter before its CANCEL is through. */
	ASSERT(!waiter_result(&w, 200, &r));
	net_heal();
	if (!waiter_result(&w, 15000, &r))
		TEST__FAIL("the interrupted waiter did not return once its "
			   "CANCEL could go");
	ASSERT_EQ(r.err, EINTR);
	ASSERT_UINT64_EQ(mnt_proc_ops(&b, "CANCEL"), 1);
	waiter_kill(&w);
	mnt_stop(&c);
	mnt_stop(&a);
	mnt_stop(&b);
	hosts_down(&s);
	return 0;
}

/*
 * The server crashes and comes back: its status monitor tells the client
 * host, whose status monitor calls the mount back, which reclaims its
 * lock in the grace period; no other client gets it meanwhile (their
 * LOCK is answered DENIED_GRACE_PERIOD and asked again), nor after.
 * Without a grace period (the server refuses every reclaim) the lock is
 * lost, logged, as Linux's lockd logs "failed to reclaim lock": then the
 * other client gets it.
 */
TEST_IMPL(locks_hosts_reclaim)
{
	static const struct {
		unsigned grace; /* at the restart; 0: none */
		bool reclaimed;
	} rows[] = {
		{ 6, true },
		{ 0, false },
	};
	struct test_server s;

	srv_get(&s);
	hosts_up(&s, 0);
	for (unsigned i = 0; i < ARRAY_SIZE(rows); i++) {
		struct mnt b, c;
		struct waiter holder;
		struct wres r;
		uint64_t t0;
		int err;

		mnt_start(&b, &s, "");
		mnt_start_shared(&c, &b, &s, "");
		write_file(mpath(&b, "f"), "x", 1);
		waiter_start(&holder, mpath(&b, "f"), BY_FCNTL, 1);
		if (!waiter_result(&holder, 5000, &r) || r.err)
			TEST__FAIL("the holder did not get the lock");
		ASSERT_EQ(c_can_lock(&c, "f", 0, 0), EAGAIN);
		hosts_restart(&s, rows[i].grace, true);
		log_says(&b, "rebooted", 15000);
		if (rows[i].reclaimed) {
			log_says(&b, "1 locks reclaimed, 0 lost", 15000);
			/* In grace, then after it: the holder's. */
			t0 = region_now_ns();
			err = c_can_lock(&c, "f", 0, 0);
			ASSERT_EQ(err, EAGAIN);
			fprintf(stderr,
				"# C refused %.1f s after the "
				"restart, the grace period over\n",
				(double)(region_now_ns() - t0) / 1e9);
			waiter_kill(&holder);
			c_waits_for(&c, "f", 5000);
		} else {
			log_says(&b, "failed to reclaim", 15000);
			log_says(&b, "0 locks reclaimed, 1 lost", 15000);
			c_waits_for(&c, "f", 5000);
			waiter_kill(&holder);
		}
		mnt_stop(&c);
		mnt_stop(&b);
		/* The next row's server starts without the last's grace. */
		hosts_restart(&s, 0, false);
	}
	hosts_down(&s);
	return 0;
}

/*
 * A daemon that dies leaves its locks on the server; the next mount of the
 * same export on this host releases them from the dead daemon's journal.
 */
TEST_IMPL(locks_dead_daemon_released)
{
	struct test_server s;
	struct mnt a, a2, c;
	struct waiter holder;
	struct wres r;
	unsigned ms;

	srv_get(&s);
	mnt_start(&a, &s, "");
	mnt_start_shared(&c, &a, &s, "");
	write_file(mpath(&a, "f"), "x", 1);
	waiter_start(&holder, mpath(&a, "f"), BY_FCNTL, 1);
	if (!waiter_result(&holder, 5000, &r) || r.err)
		TEST__FAIL("the holder did not get the lock");
	/* The daemon dies, its lock stays on the server. */
	kill(a.pid, SIGKILL);
	waitpid(a.pid, NULL, 0);
	a.pid = 0;
	waiter_kill(&holder);
	mnt_stop(&a);
	ASSERT_EQ(c_can_lock(&c, "f", 0, 0), EAGAIN);
	/* The next mount of the export releases it. */
	mnt_start_shared(&a2, &c, &s, "");
	ms = c_waits_for(&c, "f", 5000);
	fprintf(stderr, "# released %u ms after the next mount\n", ms);
	mnt_wait_log(&a2, "releasing the locks a daemon that died left", 1000);
	mnt_stop(&a2);
	mnt_stop(&c);
	return 0;
}

/* Waits up to 5 s for pid to be a zombie (dead, not reaped). */
static void wait_zombie(pid_t pid)
{
	char stat[1024], *p;

	for (unsigned i = 0; i < 500; i++) {
		if (proc_read(pid, "stat", stat, sizeof(stat)) &&
		    (p = strrchr(stat, ')')) && p[1] == ' ' && p[2] == 'Z')
			return;
		test_sleep_ms(10);
	}
	TEST__FAIL("pid %d is not a zombie 5 s after SIGKILL", (int)pid);
}

/*
 * The same when the dead daemon is a zombie, which its parent (a mount
 * command's daemon in the foreground, this test) has not reaped yet: it is
 * dead all the same, and its locks are released.
 */
TEST_IMPL(locks_zombie_daemon_released)
{
	struct test_server s;
	struct mnt a, a2, c;
	struct waiter holder;
	struct wres r;
	pid_t zombie;
	unsigned ms;

	srv_get(&s);
	mnt_start(&a, &s, "");
	mnt_start_shared(&c, &a, &s, "");
	write_file(mpath(&a, "f"), "x", 1);
	waiter_start(&holder, mpath(&a, "f"), BY_FCNTL, 1);
	if (!waiter_result(&holder, 5000, &r) || r.err)
		TEST__FAIL("the holder did not get the lock");
	kill(a.pid, SIGKILL);
	wait_zombie(a.pid);
	zombie = a.pid;
	a.pid = 0;
	waiter_kill(&holder);
	mnt_stop(&a);
	ASSERT_EQ(c_can_lock(&c, "f", 0, 0), EAGAIN);
	/* Not reaped: the next mount of the export releases its lock. */
	mnt_start_shared(&a2, &c, &s, "");
	ms = c_waits_for(&c, "f", 5000);
	fprintf(stderr, "# released %u ms after the next mount\n", ms);
	mnt_wait_log(&a2, "releasing the locks a daemon that died left", 1000);
	ASSERT_EQ(waitpid(zombie, NULL, 0), zombie);
	mnt_stop(&a2);
	mnt_stop(&c);
	return 0;
}
