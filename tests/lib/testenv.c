/*
 * The test environment tests/run sets (testenv.h).  Reads only: the server
 * is started and stopped by tests/run, never from here.
 */
#include "testenv.h"

#include "test.h"

const char *testenv_get(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v)
		TEST__FAIL("%s is not set: run these tests through tests/run "
			   "(it starts the server)",
			   name);
	return v;
}

/* A port or a pid: a positive decimal number, or the test fails. */
static long number(const char *name)
{
	const char *v = testenv_get(name);
	char *end;
	long n = strtol(v, &end, 10);

	if (*end || n <= 0)
		TEST__FAIL("%s is \"%s\", not a positive number", name, v);
	return n;
}

void testenv_server(struct test_server *s)
{
	s->server = testenv_get("INTRFS_TEST_SERVER");
	s->export_dir = testenv_get("INTRFS_TEST_EXPORT");
	s->nfs_port = (unsigned)number("INTRFS_TEST_NFS_PORT");
	s->mount_port = (unsigned)number("INTRFS_TEST_MOUNT_PORT");
	s->nlm_port = (unsigned)number("INTRFS_TEST_NLM_PORT");
	s->ganesha = (pid_t)number("INTRFS_TEST_GANESHA_PID");
}
