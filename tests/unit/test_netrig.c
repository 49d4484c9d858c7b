/*
 * Tests of the rigs' network side (tests/lib/netrig.c) that need no root:
 * netfault's control client against a socket that answers ok, answers an
 * error, never answers, or is not there; and the JSON numbers it reads.
 * (Partitions need nft and root: the mount and scenario suites load them.)
 */
#include "test.h"

#include "netrig.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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
