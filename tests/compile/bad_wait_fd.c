/* Ignores whether an fd wait was interrupted: must not build. */
#include "intrfs/region.h"

#include <poll.h>

void wait_readable(int fd);

void wait_readable(int fd)
{
	region_task_wait_fd(fd, POLLIN, TASK_KILLABLE, TASK_FOREVER, NULL);
}
