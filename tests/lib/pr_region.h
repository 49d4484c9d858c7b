/*
 * prctl(PR_REGION): regions of uninterruptibility held from user space, on
 * Linux with the regions series (kernel/patches/0003).  The values, for
 * the programs that hold them (the scenario runner on the kernel's client,
 * the kernel self-tests), built against headers that do not have them.
 * Elsewhere prctl(PR_REGION, ...) fails with EINVAL.
 */
#ifndef INTRFS_TEST_PR_REGION_H
#define INTRFS_TEST_PR_REGION_H

#include <sys/prctl.h>

#ifndef PR_REGION
#define PR_REGION 0x52474e53
#define PR_REGION_BEGIN 1
#define PR_REGION_END 2
#define PR_REGION_KILLABLE 1
#define PR_REGION_UNINTERRUPTIBLE 2
#endif

#endif
