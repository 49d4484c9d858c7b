/*
 * The one place where protocol failures become errnos: NFS3ERR_* statuses
 * (nfsstat3, RFC 1813 section 2.6), and the RPC-level accept_stat and
 * reject_stat of a reply (RFC 5531, section 9).  Every other file maps
 * statuses through the functions here, never with a switch of its own.
 *
 * The NFS statuses are one X-macro table, so the errno and the name of a
 * status cannot drift apart.  MOUNT3 statuses (mountstat3) use the same
 * numbers as the NFS3 statuses of the same name (mount3.x says so), so
 * mount.c maps them through nc__nfs3_errno() as well.  Every function here
 * is a pure mapping: no state, no locks, nothing that waits or prints.
 */
#include "netclient_i.h"
#include "nfs3.h"

#include <errno.h>

/*
 * X(status, positive errno).  Most statuses are the historic UNIX errno
 * numbers and map to the errno of the same name; the NFS-specific ones
 * (10001 and up) are chosen as follows:
 *
 *  - BADHANDLE: the handle is not one the server recognises, which to the
 *    user is the same as a handle that went stale (Linux does the same).
 *  - NOT_SYNC: a SETATTR guard mismatch; the client only sends guards it
 *    expects to hold, so a mismatch is an I/O failure of the operation.
 *  - BAD_COOKIE: the READDIR cookie is no longer valid.  Linux maps it to
 *    the kernel-internal EBADCOOKIE (523), which user space has no name
 *    for, and recovers by reading the directory again from cookie 0.
 *    ESTALE is the user-space errno that says the same thing ("your view
 *    of this object is out of date") and the one an application can
 *    print sensibly if the error escapes.  READDIR can also fail with
 *    STALE/BADHANDLE, so a caller of nc_readdir() that gets -ESTALE with
 *    a non-zero cookie should restart once from cookie 0: a stale cookie
 *    then succeeds, a stale directory fails again with -ESTALE.  The
 *    other candidate, EINVAL, would collide with TOOSMALL, which READDIR
 *    also returns and which must not trigger a restart.
 *  - NOTSUPP: EOPNOTSUPP, which is what nc_readdir() tests to fall back
 *    from READDIRPLUS to READDIR.
 *  - TOOSMALL, BADTYPE: the request itself was unacceptable: EINVAL.
 *  - SERVERFAULT: the server failed in a way it has no error for; Linux
 *    uses EREMOTEIO.
 *  - JUKEBOX: the data is being fetched (e.g. from tape): try again later.
 */
#define NC_NFS3_ERRORS(X)                    \
	X(NFS3_OK, 0)                        \
	X(NFS3ERR_PERM, EPERM)               \
	X(NFS3ERR_NOENT, ENOENT)             \
	X(NFS3ERR_IO, EIO)                   \
	X(NFS3ERR_NXIO, ENXIO)               \
	X(NFS3ERR_ACCES, EACCES)             \
	X(NFS3ERR_EXIST, EEXIST)             \
	X(NFS3ERR_XDEV, EXDEV)               \
	X(NFS3ERR_NODEV, ENODEV)             \
	X(NFS3ERR_NOTDIR, ENOTDIR)           \
	X(NFS3ERR_ISDIR, EISDIR)             \
	X(NFS3ERR_INVAL, EINVAL)             \
	X(NFS3ERR_FBIG, EFBIG)               \
	X(NFS3ERR_NOSPC, ENOSPC)             \
	X(NFS3ERR_ROFS, EROFS)               \
	X(NFS3ERR_MLINK, EMLINK)             \
	X(NFS3ERR_NAMETOOLONG, ENAMETOOLONG) \
	X(NFS3ERR_NOTEMPTY, ENOTEMPTY)       \
	X(NFS3ERR_DQUOT, EDQUOT)             \
	X(NFS3ERR_STALE, ESTALE)             \
	X(NFS3ERR_REMOTE, EREMOTE)           \
	X(NFS3ERR_BADHANDLE, ESTALE)         \
	X(NFS3ERR_NOT_SYNC, EIO)             \
	X(NFS3ERR_BAD_COOKIE, ESTALE)        \
	X(NFS3ERR_NOTSUPP, EOPNOTSUPP)       \
	X(NFS3ERR_TOOSMALL, EINVAL)          \
	X(NFS3ERR_SERVERFAULT, EREMOTEIO)    \
	X(NFS3ERR_BADTYPE, EINVAL)           \
	X(NFS3ERR_JUKEBOX, EAGAIN)

/* What a status the table does not know (a newer server's?) becomes. */
#define NC_NFS3_UNKNOWN_ERRNO EIO

static const struct nfs3_error {
	int status;
	int err; /* positive */
	const char *name;
} nfs3_errors[] = {
#define X(status, err) { status, err, #status },
	NC_NFS3_ERRORS(X)
#undef X
};

#define NFS3_NERRORS (ARRAY_SIZE(nfs3_errors))

static const struct nfs3_error *nfs3_error_find(int status)
{
	for (size_t i = 0; i < NFS3_NERRORS; i++)
		if (nfs3_errors[i].status == status)
			return &nfs3_errors[i];
	return NULL;
}

int nc__nfs3_errno(int status)
{
	const struct nfs3_error *e = nfs3_error_find(status);

	return e ? -e->err : -NC_NFS3_UNKNOWN_ERRNO;
}

const char *nc__nfs3_status_name(int status)
{
	const struct nfs3_error *e = nfs3_error_find(status);

	return e ? e->name : "NFS3ERR_(unknown)";
}

/*
 * An accepted call that did not run.  The server does not have the program
 * or this version of it: the protocol is not supported there.  It has the
 * program but not the procedure: the operation is not.  GARBAGE_ARGS means
 * it could not decode what we sent.
 */
int nc__rpc_accept_errno(int accept_stat)
{
	switch ((enum accept_stat)accept_stat) {
	case SUCCESS:
		return 0;
	case PROG_UNAVAIL:
	case PROG_MISMATCH:
		return -EPROTONOSUPPORT;
	case PROC_UNAVAIL:
		return -EOPNOTSUPP;
	case GARBAGE_ARGS:
		return -EINVAL;
	case SYSTEM_ERR:
		break;
	}
	return -EIO;
}

/*
 * A call the server refused to accept.  RPC_MISMATCH: it does not speak
 * RPC version 2.  AUTH_ERROR: whatever the auth_stat (bad or rejected
 * credentials, a flavor too weak for this export), the caller was not let
 * in; with AUTH_SYS there is nothing to refresh and retry, so every reason
 * is -EACCES.  auth_stat is taken so that a future RPCSEC_GSS transport can
 * tell an expired context (which it would renew) from a refusal.
 */
int nc__rpc_reject_errno(int reject_stat, int auth_stat)
{
	(void)auth_stat;
	switch ((enum reject_stat)reject_stat) {
	case RPC_MISMATCH:
		return -EPROTONOSUPPORT;
	case AUTH_ERROR:
		return -EACCES;
	}
	return -EIO;
}
