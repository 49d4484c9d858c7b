/*
 * rpc_floor HOST NFSPORT MOUNTPORT EXPORT DIR WORKLOAD N: the bare-RPC
 * floor of the meta benchmarks.  A plain libtirpc client, with no FUSE and
 * no daemon, sends the NFSv3 calls intrfs sends for meta_bench's workload
 * of the same name, one call at a time, and prints the seconds its timed
 * part took ("%.6f\n", as meta_bench does).  What a workload costs on
 * intrfs above this figure is the price of FUSE and of the daemon.
 *
 * It mounts EXPORT with MNT on MOUNTPORT, LOOKUPs DIR (a path below the
 * export, "." for its root) one component at a time, and runs WORKLOAD on
 * the names of DIR over one TCP connection to NFSPORT, as root (AUTH_SYS,
 * uid 0, gid 0):
 *
 *   null          N x NULL: the round trip and nothing else
 *   create        N x (LOOKUP c%06d, NOENT; CREATE EXCLUSIVE; SETATTR mode
 *                 0644 and the times), then N x REMOVE: open(O_CREAT|O_EXCL)
 *                 + close, stat (no call) and unlink on intrfs
 *   create-linux  the same without the LOOKUP, which Linux's client skips
 *                 before an exclusive create
 *   mkdir         N x (LOOKUP d%06d, NOENT; MKDIR mode 0755), N x RMDIR
 *   mkdir-linux   the same without the LOOKUP
 *   rename        N x (LOOKUP b%06d, NOENT; RENAME a%06d to b%06d); the a
 *                 files are made before the clock starts (CREATE UNCHECKED)
 *                 and the b files removed after it stops
 *   rename-linux  the same without the LOOKUP
 *   populate      N x CREATE UNCHECKED m%06d: set-up for readdir
 *   readdir       READDIRPLUS from cookie 0 to eof, intrfs's sizes; N is the
 *                 number of entries (. and .. aside) DIR must hold
 *   clear         N x REMOVE m%06d: what populate made
 *
 * Any RPC error or unexpected NFS status ends it with exit status 1 and a
 * line naming the call and the error; bad usage with 2.  Every result is
 * freed before the next call, so N may be large.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <rpc/rpc.h>

#include <intrfs/region.h>

#include "mount3.h"
#include "intrfs/util.h"
#include "nfs3.h"

/* intrfs's READDIRPLUS sizes (netclient/nfs3.c, readdir_maxcount). */
#define READDIR_MAXCOUNT (64u * 1024)
#define READDIR_DIRCOUNT_SHIFT 3

/* The mode bits intrfs sends for meta_bench's files and directories. */
#define FILE_MODE 0644
#define DIR_MODE 0755

/* rpcgen's routines take a typed pointer; clnt_call takes an xdrproc_t. */
#define XDRPROC(f) ((xdrproc_t)(void (*)(void))(f))

/* A file handle held across calls, out of the result that carried it. */
struct fh {
	u_int len;
	char data[NFS3_FHSIZE];
};

static struct timeval call_timeout = { 60, 0 };
static CLIENT *nfs;
static char hostname[256];

static const char *stat_name(nfsstat3 st)
{
	switch (st) {
#define S(x)    \
	case x: \
		return #x
		S(NFS3_OK);
		S(NFS3ERR_PERM);
		S(NFS3ERR_NOENT);
		S(NFS3ERR_IO);
		S(NFS3ERR_NXIO);
		S(NFS3ERR_ACCES);
		S(NFS3ERR_EXIST);
		S(NFS3ERR_XDEV);
		S(NFS3ERR_NODEV);
		S(NFS3ERR_NOTDIR);
		S(NFS3ERR_ISDIR);
		S(NFS3ERR_INVAL);
		S(NFS3ERR_FBIG);
		S(NFS3ERR_NOSPC);
		S(NFS3ERR_ROFS);
		S(NFS3ERR_MLINK);
		S(NFS3ERR_NAMETOOLONG);
		S(NFS3ERR_NOTEMPTY);
		S(NFS3ERR_DQUOT);
		S(NFS3ERR_STALE);
		S(NFS3ERR_REMOTE);
		S(NFS3ERR_BADHANDLE);
		S(NFS3ERR_NOT_SYNC);
		S(NFS3ERR_BAD_COOKIE);
		S(NFS3ERR_NOTSUPP);
		S(NFS3ERR_TOOSMALL);
		S(NFS3ERR_SERVERFAULT);
		S(NFS3ERR_BADTYPE);
		S(NFS3ERR_JUKEBOX);
#undef S
	}
	return "unknown status";
}

static void die(const char *fmt, const char *op, const char *what)
{
	fprintf(stderr, "rpc_floor: ");
	fprintf(stderr, fmt, op, what);
	fputc('\n', stderr);
	exit(1);
}

/* One call; an RPC failure (not an NFS status) ends the program. */
static void call(CLIENT *cl, rpcproc_t proc, xdrproc_t xargs, void *args,
		 xdrproc_t xres, void *res, const char *op, const char *what)
{
	char msg[512];
	const char *err;

	if (clnt_call(cl, proc, xargs, args, xres, res, call_timeout) ==
	    RPC_SUCCESS)
		return;
	snprintf(msg, sizeof(msg), "rpc_floor: %s %s", op, what);
	err = clnt_sperror(cl, msg);
	fprintf(stderr, "%s%s", err,
		*err && err[strlen(err) - 1] == '\n' ? "" : "\n");
	exit(1);
}

static void expect(nfsstat3 got, nfsstat3 want, const char *op,
		   const char *what)
{
	if (got == want)
		return;
	fprintf(stderr, "rpc_floor: %s %s: %s (%d), expected %s\n", op, what,
		stat_name(got), (int)got, stat_name(want));
	exit(1);
}

static nfs_fh3 fh3(const struct fh *h)
{
	nfs_fh3 f;

	f.data.data_len = h->len;
	f.data.data_val = (char *)h->data;
	return f;
}

static void fh_keep(struct fh *h, const char *val, u_int len, const char *op,
		    const char *what)
{
	if (len > sizeof(h->data))
		die("%s %s: file handle longer than NFS3_FHSIZE", op, what);
	memcpy(h->data, val, len);
	h->len = len;
}

static diropargs3 dirop(const struct fh *dir, const char *fname)
{
	diropargs3 d;

	d.dir = fh3(dir);
	d.name = (char *)fname;
	return d;
}

/* The calls, each freeing its result before it returns. */

static void do_null(void)
{
	call(nfs, NFSPROC3_NULL, XDRPROC(xdr_void), NULL, XDRPROC(xdr_void),
	     NULL, "NULL", "");
}

/* LOOKUP fname in dir; out (if want is NFS3_OK) gets its handle. */
static void do_lookup(const struct fh *dir, const char *fname, nfsstat3 want,
		      struct fh *out)
{
	LOOKUP3args a = { dirop(dir, fname) };
	LOOKUP3res r;
	const nfs_fh3 *o = &r.LOOKUP3res_u.resok.object;

	memset(&r, 0, sizeof(r));
	call(nfs, NFSPROC3_LOOKUP, XDRPROC(xdr_LOOKUP3args), &a,
	     XDRPROC(xdr_LOOKUP3res), &r, "LOOKUP", fname);
	expect(r.status, want, "LOOKUP", fname);
	if (r.status == NFS3_OK && out)
		fh_keep(out, o->data.data_val, o->data.data_len, "LOOKUP",
			fname);
	xdr_free(XDRPROC(xdr_LOOKUP3res), (char *)&r);
}

/*
 * CREATE fname in dir: EXCLUSIVE with verf, or UNCHECKED with mode
 * FILE_MODE; out (if not NULL) gets the new file's handle.
 */
static void do_create(const struct fh *dir, const char *fname,
		      const unsigned char *verf, struct fh *out)
{
	CREATE3args a;
	CREATE3res r;
	const post_op_fh3 *o = &r.CREATE3res_u.resok.obj;

	memset(&a, 0, sizeof(a)); /* FALSE and DONT_CHANGE everywhere */
	a.where = dirop(dir, fname);
	if (verf) {
		a.how.mode = EXCLUSIVE;
		memcpy(a.how.createhow3_u.verf, verf, NFS3_CREATEVERFSIZE);
	} else {
		a.how.mode = UNCHECKED;
		a.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
		a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode =
			FILE_MODE;
	}
	memset(&r, 0, sizeof(r));
	call(nfs, NFSPROC3_CREATE, XDRPROC(xdr_CREATE3args), &a,
	     XDRPROC(xdr_CREATE3res), &r, "CREATE", fname);
	expect(r.status, NFS3_OK, "CREATE", fname);
	if (out) {
		if (!o->handle_follows)
			die("%s %s: the reply carries no file handle", "CREATE",
			    fname);
		fh_keep(out, o->post_op_fh3_u.handle.data.data_val,
			o->post_op_fh3_u.handle.data.data_len, "CREATE", fname);
	}
	xdr_free(XDRPROC(xdr_CREATE3res), (char *)&r);
}

/*
 * The SETATTR that follows an exclusive create on intrfs (nc_create): the
 * mode, and atime and mtime set to the server's time, which overwrites the
 * verifier the server may have kept in them.
 */
static void do_setattr_mode(const struct fh *f, const char *fname)
{
	SETATTR3args a;
	SETATTR3res r;

	memset(&a, 0, sizeof(a));
	a.object = fh3(f);
	a.new_attributes.mode.set_it = TRUE;
	a.new_attributes.mode.set_mode3_u.mode = FILE_MODE;
	a.new_attributes.atime.set_it = SET_TO_SERVER_TIME;
	a.new_attributes.mtime.set_it = SET_TO_SERVER_TIME;
	a.guard.check = FALSE;
	memset(&r, 0, sizeof(r));
	call(nfs, NFSPROC3_SETATTR, XDRPROC(xdr_SETATTR3args), &a,
	     XDRPROC(xdr_SETATTR3res), &r, "SETATTR", fname);
	expect(r.status, NFS3_OK, "SETATTR", fname);
	xdr_free(XDRPROC(xdr_SETATTR3res), (char *)&r);
}

static void do_mkdir(const struct fh *dir, const char *fname)
{
	MKDIR3args a;
	MKDIR3res r;

	memset(&a, 0, sizeof(a));
	a.where = dirop(dir, fname);
	a.attributes.mode.set_it = TRUE;
	a.attributes.mode.set_mode3_u.mode = DIR_MODE;
	memset(&r, 0, sizeof(r));
	call(nfs, NFSPROC3_MKDIR, XDRPROC(xdr_MKDIR3args), &a,
	     XDRPROC(xdr_MKDIR3res), &r, "MKDIR", fname);
	expect(r.status, NFS3_OK, "MKDIR", fname);
	xdr_free(XDRPROC(xdr_MKDIR3res), (char *)&r);
}

static void do_remove(const struct fh *dir, const char *fname)
{
	REMOVE3args a = { dirop(dir, fname) };
	REMOVE3res r;

	memset(&r, 0, sizeof(r));
	call(nfs, NFSPROC3_REMOVE, XDRPROC(xdr_REMOVE3args), &a,
	     XDRPROC(xdr_REMOVE3res), &r, "REMOVE", fname);
	expect(r.status, NFS3_OK, "REMOVE", fname);
	xdr_free(XDRPROC(xdr_REMOVE3res), (char *)&r);
}

static void do_rmdir(const struct fh *dir, const char *fname)
{
	RMDIR3args a = { dirop(dir, fname) };
	RMDIR3res r;

	memset(&r, 0, sizeof(r));
	call(nfs, NFSPROC3_RMDIR, XDRPROC(xdr_RMDIR3args), &a,
	     XDRPROC(xdr_RMDIR3res), &r, "RMDIR", fname);
	expect(r.status, NFS3_OK, "RMDIR", fname);
	xdr_free(XDRPROC(xdr_RMDIR3res), (char *)&r);
}

static void do_rename(const struct fh *dir, const char *from, const char *to)
{
	RENAME3args a = { dirop(dir, from), dirop(dir, to) };
	RENAME3res r;

	memset(&r, 0, sizeof(r));
	call(nfs, NFSPROC3_RENAME, XDRPROC(xdr_RENAME3args), &a,
	     XDRPROC(xdr_RENAME3res), &r, "RENAME", from);
	expect(r.status, NFS3_OK, "RENAME", from);
	xdr_free(XDRPROC(xdr_RENAME3res), (char *)&r);
}

/* Reads dir whole with READDIRPLUS; returns its entries but . and .. */
static long do_readdir(const struct fh *dir, const char *dirname)
{
	cookieverf3 verf = { 0 };
	cookie3 cookie = 0;
	bool eof = false;
	long n = 0;

	while (!eof) {
		READDIRPLUS3args a;
		READDIRPLUS3res r;
		const READDIRPLUS3resok *ok = &r.READDIRPLUS3res_u.resok;
		const entryplus3 *e;

		a.dir = fh3(dir);
		a.cookie = cookie;
		memcpy(a.cookieverf, verf, sizeof(verf));
		a.maxcount = READDIR_MAXCOUNT;
		a.dircount = READDIR_MAXCOUNT >> READDIR_DIRCOUNT_SHIFT;
		memset(&r, 0, sizeof(r));
		call(nfs, NFSPROC3_READDIRPLUS, XDRPROC(xdr_READDIRPLUS3args),
		     &a, XDRPROC(xdr_READDIRPLUS3res), &r, "READDIRPLUS",
		     dirname);
		expect(r.status, NFS3_OK, "READDIRPLUS", dirname);
		memcpy(verf, ok->cookieverf, sizeof(verf));
		eof = ok->reply.eof;
		if (!eof && !ok->reply.entries)
			die("%s %s: no entries and no eof", "READDIRPLUS",
			    dirname);
		for (e = ok->reply.entries; e; e = e->nextentry) {
			cookie = e->cookie;
			if (strcmp(e->name, ".") && strcmp(e->name, ".."))
				n++;
		}
		xdr_free(XDRPROC(xdr_READDIRPLUS3res), (char *)&r);
	}
	return n;
}

/* Set-up: the connections, the root handle and DIR's. */

static CLIENT *connect_to(struct sockaddr_in *sin, unsigned port,
			  rpcprog_t prog, rpcvers_t vers, const char *what)
{
	int sock = RPC_ANYSOCK;
	char msg[128];
	CLIENT *cl;

	sin->sin_port = htons(port);
	cl = clnttcp_create(sin, prog, vers, &sock, 0, 0);
	if (!cl) {
		snprintf(msg, sizeof(msg), "rpc_floor: connect to %s port %u",
			 what, port);
		fprintf(stderr, "%s\n", clnt_spcreateerror(msg));
		exit(1);
	}
	clnt_control(cl, CLSET_TIMEOUT, (char *)&call_timeout);
	auth_destroy(cl->cl_auth);
	cl->cl_auth = authunix_create(hostname, 0, 0, 0, NULL);
	if (!cl->cl_auth)
		die("%s %s: cannot make AUTH_SYS credentials", "connect", what);
	return cl;
}

static void mount_root(struct sockaddr_in *sin, unsigned port,
		       const char *export, struct fh *root)
{
	CLIENT *cl = connect_to(sin, port, MOUNT_PROGRAM, MOUNT_V3, "MOUNT");
	dirpath path = (char *)export;
	const fhandle3 *h;
	mountres3 r;

	memset(&r, 0, sizeof(r));
	call(cl, MOUNTPROC3_MNT, XDRPROC(xdr_dirpath), &path,
	     XDRPROC(xdr_mountres3), &r, "MNT", export);
	/* mountstat3's values are the NFS3 errors of the same name. */
	expect((nfsstat3)r.fhs_status, NFS3_OK, "MNT", export);
	h = &r.mountres3_u.mountinfo.fhandle;
	fh_keep(root, h->fhandle3_val, h->fhandle3_len, "MNT", export);
	xdr_free(XDRPROC(xdr_mountres3), (char *)&r);
	auth_destroy(cl->cl_auth);
	clnt_destroy(cl);
}

/* LOOKUPs each component of path below root into out. */
static void lookup_path(const struct fh *root, const char *path, struct fh *out)
{
	char *copy = strdup(path), *save = NULL, *c;

	if (!copy)
		die("%s %s: out of memory", "LOOKUP", path);
	*out = *root;
	for (c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
		if (strcmp(c, "."))
			do_lookup(out, c, NFS3_OK, out);
	free(copy);
}

static const char *fname_of(char *buf, size_t size, const char *prefix, long i)
{
	snprintf(buf, size, "%s%06ld", prefix, i);
	return buf;
}

static void usage(void)
{
	fprintf(stderr, "usage: rpc_floor HOST NFSPORT MOUNTPORT EXPORT DIR "
			"null|create|create-linux|mkdir|mkdir-linux|rename|"
			"rename-linux|populate|readdir|clear N\n");
	exit(2);
}

static unsigned port_arg(const char *s)
{
	char *end;
	unsigned long p = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || p == 0 || p > 65535)
		usage();
	return (unsigned)p;
}

int main(int argc, char **argv)
{
	static const char *const workloads[] = {
		"null",	       "create", "create-linux", "mkdir",
		"mkdir-linux", "rename", "rename-linux", "populate",
		"readdir",     "clear",
	};
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	struct sockaddr_in sin;
	struct fh root, dir, f;
	unsigned nfsport, mountport;
	unsigned char verf[NFS3_CREATEVERFSIZE];
	char fname[32], fname2[32];
	const char *w;
	bool linux_seq, known = false;
	uint64_t t0, t1, base;
	char *end;
	long n;
	int rc;

	if (argc != 8)
		usage();
	nfsport = port_arg(argv[2]);
	mountport = port_arg(argv[3]);
	w = argv[6];
	n = strtol(argv[7], &end, 10);
	if (*argv[7] == '\0' || *end != '\0' || n < 1 || n > 999999)
		usage();
	for (size_t i = 0; i < ARRAY_SIZE(workloads); i++)
		known |= !strcmp(w, workloads[i]);
	if (!known) {
		fprintf(stderr, "rpc_floor: unknown workload '%s'\n", w);
		usage();
	}
	linux_seq = strstr(w, "-linux") != NULL;

	rc = getaddrinfo(argv[1], NULL, &hints, &ai);
	if (rc) {
		fprintf(stderr, "rpc_floor: %s: %s\n", argv[1],
			gai_strerror(rc));
		return 1;
	}
	memcpy(&sin, ai->ai_addr, sizeof(sin));
	freeaddrinfo(ai);
	if (gethostname(hostname, sizeof(hostname) - 1) < 0)
		strcpy(hostname, "localhost");

	mount_root(&sin, mountport, argv[4], &root);
	nfs = connect_to(&sin, nfsport, NFS_PROGRAM, NFS_V3, "NFS");
	lookup_path(&root, argv[5], &dir);

	/* Each exclusive create's verifier only has to differ from the rest. */
	if (getrandom(&base, sizeof(base), 0) != (ssize_t)sizeof(base))
		base = region_now_ns() ^ (uint64_t)getpid();

	if (!strncmp(w, "rename", 6))
		for (long i = 0; i < n; i++)
			do_create(&dir, fname_of(fname, sizeof(fname), "a", i),
				  NULL, NULL);

	t0 = region_now_ns();
	if (!strcmp(w, "null")) {
		for (long i = 0; i < n; i++)
			do_null();
	} else if (!strncmp(w, "create", 6)) {
		for (long i = 0; i < n; i++) {
			uint64_t v = base + (uint64_t)i;

			fname_of(fname, sizeof(fname), "c", i);
			if (!linux_seq)
				do_lookup(&dir, fname, NFS3ERR_NOENT, NULL);
			_Static_assert(sizeof(v) == NFS3_CREATEVERFSIZE,
				       "verifier size");
			memcpy(verf, &v, sizeof(verf));
			do_create(&dir, fname, verf, &f);
			do_setattr_mode(&f, fname);
		}
		for (long i = 0; i < n; i++)
			do_remove(&dir, fname_of(fname, sizeof(fname), "c", i));
	} else if (!strncmp(w, "mkdir", 5)) {
		for (long i = 0; i < n; i++) {
			fname_of(fname, sizeof(fname), "d", i);
			if (!linux_seq)
				do_lookup(&dir, fname, NFS3ERR_NOENT, NULL);
			do_mkdir(&dir, fname);
		}
		for (long i = 0; i < n; i++)
			do_rmdir(&dir, fname_of(fname, sizeof(fname), "d", i));
	} else if (!strncmp(w, "rename", 6)) {
		for (long i = 0; i < n; i++) {
			fname_of(fname, sizeof(fname), "a", i);
			fname_of(fname2, sizeof(fname2), "b", i);
			if (!linux_seq)
				do_lookup(&dir, fname2, NFS3ERR_NOENT, NULL);
			do_rename(&dir, fname, fname2);
		}
	} else if (!strcmp(w, "populate")) {
		for (long i = 0; i < n; i++)
			do_create(&dir, fname_of(fname, sizeof(fname), "m", i),
				  NULL, NULL);
	} else if (!strcmp(w, "clear")) {
		for (long i = 0; i < n; i++)
			do_remove(&dir, fname_of(fname, sizeof(fname), "m", i));
	} else if (!strcmp(w, "readdir")) {
		long got = do_readdir(&dir, argv[5]);

		if (got != n) {
			fprintf(stderr,
				"rpc_floor: %s holds %ld entries, not %ld\n",
				argv[5], got, n);
			return 1;
		}
	}
	t1 = region_now_ns();

	if (!strncmp(w, "rename", 6))
		for (long i = 0; i < n; i++)
			do_remove(&dir, fname_of(fname, sizeof(fname), "b", i));
	auth_destroy(nfs->cl_auth);
	clnt_destroy(nfs);
	printf("%.6f\n", (double)(t1 - t0) / 1e9);
	return 0;
}
