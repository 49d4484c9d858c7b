/*
 * What intrfs asks of the kernel's FUSE at INIT for its data and its
 * listings, in one place: the daemon's op_init() (ops.c) begins with it,
 * and the benchmarks' fuse_floor asks the same, so that FUSE alone is
 * measured moving data as intrfs has it moved.
 */
#ifndef INTRFS_FUSE_WANTS_H
#define INTRFS_FUSE_WANTS_H

#include "intrfs/netclient.h"

#include <fuse_lowlevel.h>

static inline void intrfs_fuse_wants(struct fuse_conn_info *conn)
{
	/*
	 * Big requests: 1 MiB reads and writes, several in flight; 16
	 * readaheads keep loopback's pipe full, and bound their buffers
	 * (64 held 288 MiB at once beside write-behind's).
	 */
	conn->max_write = NC_MAX_IO;
	conn->max_readahead = NC_MAX_IO;
	conn->max_background = 16;
	conn->congestion_threshold = 12;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/*
	 * Entries with attributes only where the reader stats them (ls -l),
	 * as the kernel sees from its lookups: a plain listing gets four
	 * times as many entries a request.  Both come from the same copy
	 * of the directory (dircache.c), read with READDIRPLUS either way.
	 */
	if (conn->capable & FUSE_CAP_READDIRPLUS_AUTO)
		conn->want |= FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/*
	 * A write's bytes through a pipe (its pages, not a copy of them)
	 * rather than the session thread's buffer: one copy fewer, read by
	 * a write_buf handler straight into the buffer that keeps them.
	 */
	if (conn->capable & FUSE_CAP_SPLICE_READ)
		conn->want |= FUSE_CAP_SPLICE_READ;
	/* The page cache would hide writes from the server's errors. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

#endif
