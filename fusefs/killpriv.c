/*
 * Setuid and setgid on a write, truncate or chown by someone else than the
 * owner.  The kernel clears the bits with its own authority; a FUSE mount
 * asks the file system to, with HANDLE_KILLPRIV in INIT, which libfuse
 * 3.14 does not pass on: so the kernel sends the writer's SETATTR of the
 * mode without them, which the server refuses a writer who does not own
 * the file (and, on an atomic O_TRUNC open, drops it).  The daemon does
 * the kernel's part here: a SETATTR that only clears what the kernel
 * clears, from a caller who may write the file and is not in chmod(2), is
 * made with the daemon's own credentials.
 *
 * It owns no state and never answers a request; it reads a node's
 * attributes under fs->nodes_lock (a leaf) and the caller's /proc with no
 * lock held.
 */
#include "fusefs_i.h"

static bool in_group(const struct nc_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return true;
	for (unsigned i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

/*
 * The bits a write or truncate by cr clears, as the kernel decides it
 * (setattr_should_drop_suidgid()): setuid always, setgid with group
 * execute, or when cr is not in the file's group.
 */
static mode_t priv_bits(const struct nc_cred *cr, mode_t mode, uint32_t gid)
{
	mode_t kill = mode & S_ISUID;

	if ((mode & S_ISGID) && ((mode & S_IXGRP) || !in_group(cr, gid)))
		kill |= S_ISGID;
	return kill;
}

bool killpriv_only(struct job *j, struct node *n, const struct nc_sattr *sa)
{
	mode_t cur, gone;
	uid_t owner;

	pthread_mutex_lock(&j->fs->nodes_lock);
	cur = n->mode & 07777;
	owner = n->uid;
	pthread_mutex_unlock(&j->fs->nodes_lock);
	gone = cur & ~sa->mode;
	return (sa->set & NC_SET_MODE) &&
	       !(sa->set & (NC_SET_UID | NC_SET_GID)) && j->cred.uid != 0 &&
	       j->cred.uid != owner && gone &&
	       (gone & ~(mode_t)(S_ISUID | S_ISGID)) == 0 &&
	       (sa->mode & ~cur) == 0 && !caller_in_chmod(j->tid);
}

int killpriv_set_mode(struct job *j, struct node *n, mode_t mode,
		      struct nc_attr *a)
{
	struct nc_sattr sa = { .set = NC_SET_MODE, .mode = mode & 07777 };
	struct nc_cred self;

	nc_cred_self(&self);
	return nc_setattr(j->fs->nc, &self, &n->fh, &sa, a);
}

int killpriv_after_truncate(struct job *j, struct node *n, struct nc_attr *a)
{
	mode_t kill = j->cred.uid && j->cred.uid != a->uid ?
			      priv_bits(&j->cred, a->mode, a->gid) :
			      0;

	return kill ? killpriv_set_mode(j, n, a->mode & 07777 & ~kill, a) : 0;
}
