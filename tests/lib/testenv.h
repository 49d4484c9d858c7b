/*
 * The test server as tests/run describes it in the environment
 * (INTRFS_TEST_SERVER, _EXPORT, _NFS_PORT, _MOUNT_PORT, _NLM_PORT,
 * _GANESHA_PID) and the
 * other INTRFS_* paths it sets, read in one place for the client and the
 * mount tests.  A variable that is missing fails the test, naming it: these
 * tests run against a server tests/run starts, never against a default.
 */
#ifndef INTRFS_TEST_TESTENV_H
#define INTRFS_TEST_TESTENV_H

#include <stdbool.h>
#include <sys/types.h>

struct test_server {
	const char *server; /* its address, 127.0.0.1 */
	const char *export_dir; /* the exported directory, a local path */
	unsigned nfs_port, mount_port;
	unsigned nlm_port; /* its lock manager's */
	pid_t ganesha; /* its pid, to stall (SIGSTOP) and resume it */
	bool hosts; /* a host of its own (hosts_up(), tests/mount) */
};

/* The value of name; fails the test if it is unset or empty. */
const char *testenv_get(const char *name);
/* The test server from the environment. */
void testenv_server(struct test_server *s);

#endif
