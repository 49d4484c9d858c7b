/*
 * The floors' FUSE session (floor_fs.c, fuse_floor.c): mounts mnt and
 * serves ops with libfuse's multi-threaded loop as intrfs runs it
 * (fusefs/intrfs.c: clone_fd; idle_threads of them kept idle, libfuse's
 * default when negative) until unmounted.  Returns the exit status.
 */
#ifndef INTRFS_FLOOR_SERVE_H
#define INTRFS_FLOOR_SERVE_H

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <stddef.h>

static inline int floor_serve(const char *prog, const char *mnt,
			      const struct fuse_lowlevel_ops *ops, size_t size,
			      int idle_threads)
{
	char *fargv[] = { (char *)prog, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, fargv);
	struct fuse_loop_config *lc;
	struct fuse_session *se;
	int rc = 1;

	se = fuse_session_new(&args, ops, size, NULL);
	if (!se)
		return 1;
	if (fuse_set_signal_handlers(se) == 0 &&
	    fuse_session_mount(se, mnt) == 0) {
		lc = fuse_loop_cfg_create();
		fuse_loop_cfg_set_clone_fd(lc, 1);
		if (idle_threads >= 0)
			fuse_loop_cfg_set_idle_threads(lc,
						       (unsigned)idle_threads);
		rc = fuse_session_loop_mt(se, lc) ? 1 : 0;
		fuse_loop_cfg_destroy(lc);
		fuse_session_unmount(se);
	}
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc;
}

#endif
