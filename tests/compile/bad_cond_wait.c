/* Ignores an interruptible condition wait's result: must not build. */
#include "intrfs/region.h"

void wait_for(task_cond_t *c, task_mutex_t *m);

void wait_for(task_cond_t *c, task_mutex_t *m)
{
	region_task_cond_wait(c, m, TASK_INTERRUPTIBLE, TASK_FOREVER);
}
