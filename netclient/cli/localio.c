/*
 * intrfs-client's local side: reading the input of a put and writing the
 * output of a cat, interruptibly.  A regular file or a block device never
 * blocks; on a pipe, a socket or a terminal each read and write first waits
 * in a task wait (region_task_wait_fd), so SIGINT ends a wait on a stalled peer
 * as it ends a wait for the server.
 *
 * It never blocks in read() or write() where an interrupt could not end
 * it, and never touches the server.  No locks and no state.
 */
#include "cli_i.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

bool cli_fd_never_blocks(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 &&
	       (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

/*
 * Reads up to len bytes, stopping early only at end of input.  On a pipe or
 * a terminal the wait for data is a task wait, so an interrupt ends it.
 */
int cli_read_full(int fd, bool may_block, void *buf, size_t len, size_t *got)
{
	char *p = buf;
	size_t off = 0;

	*got = 0;
	while (off < len) {
		ssize_t n;

		if (may_block) {
			int rc = region_task_wait_fd(fd, POLLIN,
						     TASK_INTERRUPTIBLE,
						     TASK_FOREVER, NULL);
			if (rc < 0)
				return rc;
		}
		n = read(fd, p + off, len - off);
		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		off += (size_t)n;
	}
	*got = off;
	return 0;
}

/*
 * Writes all of buf.  On a pipe, a socket or a terminal each write waits for
 * room first (a task wait) and is at most PIPE_BUF bytes, which a writable
 * pipe always takes at once, so a stalled reader never holds the program in
 * a write() an interrupt cannot end.
 */
int cli_write_full(int fd, bool may_block, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		size_t step = len;
		ssize_t n;

		if (may_block) {
			int rc = region_task_wait_fd(fd, POLLOUT,
						     TASK_INTERRUPTIBLE,
						     TASK_FOREVER, NULL);
			if (rc < 0)
				return rc;
			if (step > PIPE_BUF)
				step = PIPE_BUF;
		}
		n = write(fd, p, step);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
