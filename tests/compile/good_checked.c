/* The same calls, results checked: must build (the control case). */
#include "intrfs/region.h"

#include <poll.h>

int take_and_wait(task_mutex_t *m, task_cond_t *c, int fd);

int take_and_wait(task_mutex_t *m, task_cond_t *c, int fd)
{
	int rc = region_task_mutex_lock(m, TASK_INTERRUPTIBLE, TASK_FOREVER);

	if (rc)
		return rc;
	rc = region_task_cond_wait(c, m, TASK_INTERRUPTIBLE, TASK_FOREVER);
	region_task_mutex_unlock(m);
	if (rc)
		return rc;
	return region_task_wait_fd(fd, POLLIN, TASK_KILLABLE, TASK_FOREVER,
				   NULL);
}
