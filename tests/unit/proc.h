/*
 * What /proc says about a process, for the tests and the benchmarks that
 * stall a server or wait for a caller to be inside a FUSE request.
 */
#ifndef INTRFS_TEST_PROC_H
#define INTRFS_TEST_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* True when every thread of pid is stopped (state T in its stat). */
bool proc_threads_stopped(pid_t pid);
/* True while pid sleeps inside a FUSE request (its wchan). */
bool proc_in_fuse(pid_t pid);

#endif
