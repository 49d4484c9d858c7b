/* Ignores an interruptible lock's result: must not build. */
#include "intrfs/region.h"

void take(task_mutex_t *m);

void take(task_mutex_t *m)
{
	region_task_mutex_lock(m, TASK_INTERRUPTIBLE, TASK_FOREVER);
}
