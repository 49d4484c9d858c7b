/*
 * What intrfs-region(1) and the daemon agree on: a process tree runs
 * inside a caller region when its cgroup path holds a component
 * REGION_CG_PREFIX ID, and REGION_REGISTRY_DIR/ID says the region's kind
 * and reason, "KIND\nREASON\n" (KIND: "killable" or "uninterruptible").
 * The entry is written (by a rename) before any process joins the cgroup,
 * and removed after the cgroup is; intrfs-region inside intrfs-region
 * nests its cgroup in the outer one, so the path lists the regions
 * outermost first.  The cgroups live in a named cgroup v1 hierarchy of
 * their own (name=REGION_CG_NAME, mounted on REGION_CG_MOUNT), or in the
 * cgroup v2 tree where v1 is gone.
 */
#ifndef INTRFS_REGION_CG_H
#define INTRFS_REGION_CG_H

#define REGION_REGISTRY_DIR "/run/intrfs/regions"
#define REGION_CG_PREFIX "intrfs-region."
#define REGION_CG_NAME "intrfs"
#define REGION_CG_MOUNT "/run/intrfs/cgroup"

#endif
