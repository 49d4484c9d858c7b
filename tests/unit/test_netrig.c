/*
 * Tests of the rigs' network side (tests/lib/netrig.c) that need no root:
 * netfault's control client against a socket that answers ok, answers an
 * error, never answers, or is not there; and the JSON numbers it reads.
 * (Partitions need nft and root: the mount and scenario suites load them.)
 * And the rigs' mount side, as far as it goes without a server, and
 * netfault's start when its ports are taken (a stand-in netfault).
 */
#include "test.h"

#include "mntrig.h"
#include "netrig.h"
#include "proc.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct fake_ctl {
	int lfd;
	const char *answer; /* NULL: read the request, never answer */
	char request[256];
};

static void *fake_ctl_serve(void *arg)
{
	struct fake_ctl *f = arg;
	int fd = accept(f->lfd, NULL, NULL);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, f->request, sizeof(f->request) - 1);
	f->request[n > 0 ? n : 0] = '\0';
	if (f->answer) {
		if (write(fd, f->answer, strlen(f->answer)) < 0)
			perror("fake_ctl write");
	} else {
		usleep(500 * 1000);
	}
	close(fd);
	return NULL;
}

static void fake_ctl_start(struct fake_ctl *f, const char *path, pthread_t *th)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	unlink(path);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_GE(f->lfd, 0);
	ASSERT_EQ(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ASSERT_EQ(listen(f->lfd, 1), 0);
	ASSERT_EQ(pthread_create(th, NULL, fake_ctl_serve, f), 0);
}

static void fake_ctl_stop(struct fake_ctl *f, const char *path, pthread_t th)
{
	pthread_join(th, NULL);
	close(f->lfd);
	unlink(path);
}

TEST_IMPL(netrig_ask_answers)
{
	char path[64], ans[256];
	struct fake_ctl f = { .answer = "{\"ok\":true,\"id\":7}\nmore\n" };
	struct timespec t0, t1;
	long long n = 0;
	pthread_t th;

	snprintf(path, sizeof(path), "/tmp/netrig-test.%d", (int)getpid());
	/* ok: the answer's first line, its numbers. */
	fake_ctl_start(&f, path, &th);
	ASSERT_EQ(netrig_ask(path, "add drop", ans, sizeof(ans), 5000), 0);
	fake_ctl_stop(&f, path, th);
	ASSERT_STR_EQ(f.request, "add drop\n");
	ASSERT_STR_EQ(ans, "{\"ok\":true,\"id\":7}");
	ASSERT(netrig_json_number(ans, "id", &n));
	ASSERT_EQ(n, 7);
	ASSERT(!netrig_json_number(ans, "i", &n));
	ASSERT(!netrig_json_number(ans, "ok", &n)); /* true is no number */

	/* An error answer: -1, the answer kept to say why. */
	f.answer = "{\"ok\":false,\"error\":\"no such rule\"}\n";
	fake_ctl_start(&f, path, &th);
	ASSERT_EQ(netrig_ask(path, "del 9", ans, sizeof(ans), 5000), -1);
	fake_ctl_stop(&f, path, th);
	ASSERT_CONTAINS(ans, "no such rule");

	/* No answer: -1 at the deadline, not later. */
	f.answer = NULL;
	fake_ctl_start(&f, path, &th);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ASSERT_EQ(netrig_ask(path, "stats", ans, sizeof(ans), 100), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fake_ctl_stop(&f, path, th);
	ASSERT_LT((t1.tv_sec - t0.tv_sec) * 1000 +
			  (t1.tv_nsec - t0.tv_nsec) / 1000000,
		  450);

	/* Nobody there: -1, saying so. */
	ASSERT_EQ(netrig_ask(path, "stats", ans, sizeof(ans), 100), -1);
	ASSERT_CONTAINS(ans, "cannot reach netfault at");
	return 0;
}

TEST_IMPL(netrig_json_numbers)
{
	const char *j = "{\"ok\":true,\"conns\":12,\"faults\":-3,"
			"\"getattr\":{\"ops\":40},\"x\":\"7\"}";
	long long n = 0;

	ASSERT(netrig_json_number(j, "conns", &n));
	ASSERT_EQ(n, 12);
	ASSERT(netrig_json_number(j, "faults", &n));
	ASSERT_EQ(n, -3);
	ASSERT(netrig_json_number(j, "getattr\":{\"ops", &n));
	ASSERT_EQ(n, 40);
	ASSERT(!netrig_json_number(j, "x", &n)); /* a string */
	ASSERT(!netrig_json_number(j, "missing", &n));
	return 0;
}

/*
 * The mount side (tests/lib/mntrig.c): a server's KEY=VALUE lines, from a
 * command and from a file, the others handed on; the last bytes of a log;
 * a directory that is no intrfs mount has no FUSE connection.
 */

static char others[512];

static void other_line(const char *line)
{
	snprintf(others + strlen(others), sizeof(others) - strlen(others),
		 "[%s]", line);
}

TEST_IMPL(mntrig_server_lines)
{
	char path[] = "/tmp/intrfs-test-srvrig.XXXXXX", buf[8];
	struct srvrig s = { 0 };
	off_t size;
	FILE *f;
	int fd;

	/* Each key, and only whole keys: "pidfile=" is not "pid=". */
	ASSERT(srvrig_line(&s, "pid=4242"));
	ASSERT(srvrig_line(&s, "server=127.0.0.1"));
	ASSERT(srvrig_line(&s, "export=/srv/x y"));
	ASSERT(srvrig_line(&s, "nfs_port=12049"));
	ASSERT(srvrig_line(&s, "mount_port=12048"));
	ASSERT(srvrig_line(&s, "nlm_port=12047"));
	ASSERT(srvrig_line(&s, "rquota_port=12046"));
	ASSERT(srvrig_line(&s, "client_netns=/proc/1/ns/net"));
	ASSERT(!srvrig_line(&s, "pidfile=/run/x"));
	ASSERT(!srvrig_line(&s, "start-server: started rpcbind (pid 7)"));
	ASSERT_EQ(s.pid, 4242);
	ASSERT_STR_EQ(s.host, "127.0.0.1");
	ASSERT_STR_EQ(s.export_dir, "/srv/x y");
	ASSERT_EQ(s.nfs_port, 12049u);
	ASSERT_EQ(s.mount_port, 12048u);
	ASSERT_EQ(s.nlm_port, 12047u);
	ASSERT_EQ(s.rquota_port, 12046u);
	ASSERT_STR_EQ(s.client_netns, "/proc/1/ns/net");

	/* A command: its status, its lines, the others passed on. */
	memset(&s, 0, sizeof(s));
	others[0] = '\0';
	ASSERT_EQ(srvrig_run(&s,
			     "printf 'hello\\npid=7\\nexport=/e\\n'; "
			     "echo oops >&2; exit 3",
			     other_line),
		  3);
	ASSERT_EQ(s.pid, 7);
	ASSERT_STR_EQ(s.export_dir, "/e");
	ASSERT_STR_EQ(others, "[hello][oops]");

	/* A file (instance.env); one that is not there. */
	fd = mkstemp(path);
	ASSERT_GE(fd, 0);
	f = fdopen(fd, "w");
	ASSERT_NOT_NULL(f);
	fprintf(f, "server=10.0.0.2\nnfs_port=2049\n0123456789");
	fclose(f);
	memset(&s, 0, sizeof(s));
	ASSERT_EQ(srvrig_read(&s, path), 0);
	ASSERT_STR_EQ(s.host, "10.0.0.2");
	ASSERT_EQ(s.nfs_port, 2049u);

	/* The log's last len - 1 bytes, and its size. */
	mntrig_log_tail(path, buf, sizeof(buf), &size);
	ASSERT_STR_EQ(buf, "3456789");
	ASSERT_EQ(size, (off_t)strlen("server=10.0.0.2\nnfs_port=2049\n"
				      "0123456789"));
	unlink(path);
	ASSERT_EQ(srvrig_read(&s, path), -ENOENT);
	mntrig_log_tail(path, buf, sizeof(buf), &size);
	ASSERT_EQ(buf[0], '\0');
	ASSERT_EQ(size, 0);

	/* No intrfs mount on /tmp: no connection to abort. */
	ASSERT_EQ(mntrig_connection("/tmp"), 0u);
	return 0;
}

/*
 * A stand-in for netfault in dir: its start number k (from 1) finds its
 * port taken while k <= taken, and says something else that went wrong
 * when other_failure is set; else it listens (its two lines) and waits.
 */
static void fake_netfault(const char *dir, int taken, bool other_failure,
			  char *bin, size_t len)
{
	FILE *f;

	snprintf(bin, len, "%s/netfault", dir);
	f = fopen(bin, "w");
	ASSERT_NOT_NULL(f);
	fprintf(f,
		"#!/bin/sh\n"
		"n=$(($(cat %s/starts 2>/dev/null || echo 0) + 1))\n"
		"echo $n > %s/starts\n",
		dir, dir);
	if (other_failure)
		fprintf(f, "echo 'netfault: --rule: no such fault' >&2; "
			   "exit 2\n");
	fprintf(f,
		"if [ $n -le %d ]; then\n"
		"  echo 'netfault: cannot listen on 127.0.0.1:1 for "
		"127.0.0.1:2: address already in use' >&2; exit 1\n"
		"fi\n"
		"echo 'netfault: listening 1' >&2\n"
		"echo 'netfault: listening 2' >&2\n"
		"exec sleep 30\n",
		taken);
	fclose(f);
	ASSERT_EQ(chmod(bin, 0755), 0);
}

static int fake_starts(const char *dir)
{
	char path[96];
	int n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/starts", dir);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	unlink(path);
	return n;
}

TEST_IMPL(proc_netfault_port_taken)
{
	char dir[] = "/tmp/intrfs-test-nf.XXXXXX", bin[96], log[96], err[512];
	unsigned a, b;
	pid_t pid;
	int status;

	ASSERT_NOT_NULL(mkdtemp(dir));
	snprintf(log, sizeof(log), "%s/netfault.log", dir);

	/* Its ports taken at the first start: a new pair, and it runs. */
	fake_netfault(dir, 1, false, bin, sizeof(bin));
	pid = proc_netfault_start(bin, "127.0.0.1", 2, 3, NULL, log, 5000, &a,
				  &b, err, sizeof(err));
	ASSERT_GT(pid, 0);
	ASSERT_EQ(fake_starts(dir), 2);
	/* The first try's error is not left for the caller to report. */
	ASSERT_STR_EQ(err, "");
	ASSERT(a && b && a != b);
	kill(pid, SIGKILL);
	ASSERT_EQ(waitpid(pid, &status, 0), pid);

	/* Taken at every start: given up after the last, saying why. */
	fake_netfault(dir, PROC_NETFAULT_TRIES, false, bin, sizeof(bin));
	pid = proc_netfault_start(bin, "127.0.0.1", 2, 3, NULL, log, 5000, &a,
				  &b, err, sizeof(err));
	ASSERT_EQ(pid, -1);
	ASSERT_EQ(fake_starts(dir), PROC_NETFAULT_TRIES);
	ASSERT_CONTAINS(err, "address already in use");

	/* Any other failure is not tried again. */
	fake_netfault(dir, 0, true, bin, sizeof(bin));
	pid = proc_netfault_start(bin, "127.0.0.1", 2, 3, NULL, log, 5000, &a,
				  &b, err, sizeof(err));
	ASSERT_EQ(pid, -1);
	ASSERT_EQ(fake_starts(dir), 1);
	ASSERT_CONTAINS(err, "no such fault");

	unlink(log);
	unlink(bin);
	ASSERT_EQ(rmdir(dir), 0);
	return 0;
}
