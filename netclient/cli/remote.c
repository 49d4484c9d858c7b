/*
 * intrfs-client's remote side: a SERVER:/PATH argument parsed and its path
 * normalised, the client made on first use, and any path's file handle
 * found, though the netclient mounts only directories (a file is looked up
 * in its mounted parent; an export's root, whose parent may not be
 * exported, can only be mounted).
 *
 * It never resolves ".." on the server (the name is dropped by text, so no
 * LOOKUP can leave an export), and it never keeps more than one client: to
 * try another path it starts over, keeping the old client's counters for
 * -v.  No locks: only the main thread's task runs this.
 */
#include "cli_i.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * Makes path absolute-canonical in out: no empty, "." or ".." components
 * and no trailing slash ("/" stays "/").  ".." is resolved by name, as
 * realpath -m does; the server is never asked about it, since a LOOKUP of
 * ".." at an export's root may leave the export.
 */
static int normalize_path(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (in[0] != '/')
		return -EINVAL;
	while (*in) {
		const char *p, *end;
		size_t n;

		while (*in == '/')
			in++;
		end = strchrnul(in, '/');
		n = (size_t)(end - in);
		p = in;
		in = end;
		if (n == 0 || (n == 1 && p[0] == '.'))
			continue;
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--; /* the slash before the component */
			continue;
		}
		if (o + 1 + n + 1 > len)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/* Splits SERVER:/PATH at the first ':' (the server is a name or IPv4). */
int cli_parse_remote(struct cli_run *r, const char *arg, struct cli_remote *rem)
{
	const char *colon = strchr(arg, ':');
	size_t n;
	int rc;

	if (!colon)
		return cli_usage_fail(r, "'%s' is not SERVER:/PATH", arg);
	n = (size_t)(colon - arg);
	if (n == 0)
		return cli_usage_fail(r, "'%s' names no server", arg);
	if (n >= sizeof(rem->server))
		return cli_usage_fail(r, "server name in '%s' is too long",
				      arg);
	memcpy(rem->server, arg, n);
	rem->server[n] = '\0';
	rc = normalize_path(colon + 1, rem->path, sizeof(rem->path));
	if (rc == -EINVAL)
		return cli_usage_fail(r, "path in '%s' must be absolute", arg);
	if (rc < 0)
		return cli_usage_fail(r, "path in '%s' is too long", arg);
	rem->name = NULL;
	snprintf(rem->parent, sizeof(rem->parent), "/");
	if (strcmp(rem->path, "/") != 0) {
		size_t slash = (size_t)(strrchr(rem->path, '/') - rem->path);

		rem->name = rem->path + slash + 1;
		if (slash > 0)
			snprintf(rem->parent, sizeof(rem->parent), "%.*s",
				 (int)slash, rem->path);
	}
	return 0;
}

/* For the commands that act on a name in a directory. */
int cli_need_name(struct cli_run *r, const char *arg,
		  const struct cli_remote *rem)
{
	if (rem->name)
		return 0;
	return cli_usage_fail(
		r,
		"'%s' names no file, only the server's root; give "
		"a path such as %s:/export/name",
		arg, rem->server);
}

/* The client for server, made on first use. */
int cli_client_get(struct cli_run *r, const char *server)
{
	int rc;

	if (r->client)
		return 0;
	rc = nc_client_create(server, &r->opts, &r->client, r->err,
			      sizeof(r->err));
	if (rc < 0)
		r->client = NULL;
	return rc;
}

/*
 * A client mounts once (a second nc_client_mount() on it would make a
 * second NFS transport): to try another path, start over with a new one,
 * keeping the old one's counters for -v.
 */
static int client_renew(struct cli_run *r, const char *server)
{
	struct nc_stats st;

	if (r->client) {
		nc_client_stats(r->client, &st);
#define X(f, what) r->stats_before.f += st.f;
		NC_STATS_FIELDS(X)
#undef X
		nc_client_destroy(r->client);
		r->client = NULL;
	}
	r->err[0] = '\0';
	return cli_client_get(r, server);
}

/* Mounts a directory on server; *fh is its handle. */
int cli_mount_dir(struct cli_run *r, const char *server, const char *path,
		  struct nc_fh *fh)
{
	int rc;

	rc = cli_client_get(r, server);
	if (rc < 0)
		return rc;
	return nc_client_mount(r->client, path, &r->cred, fh, r->err,
			       sizeof(r->err));
}

/* Mounts the parent and looks the name up; *mounted says how far it got. */
static int lookup_in_parent(struct cli_run *r, const struct cli_remote *rem,
			    struct nc_fh *fh, struct nc_attr *attr,
			    bool *mounted)
{
	struct nc_entry e;
	struct nc_fh dir;
	int rc;

	*mounted = false;
	rc = cli_mount_dir(r, rem->server, rem->parent, &dir);
	if (rc < 0)
		return rc;
	*mounted = true;
	rc = nc_lookup(r->client, &r->cred, &dir, rem->name, &e);
	if (rc < 0)
		return rc;
	if (!e.has_fh)
		return cli_fail_detail(r, -EIO, "LOOKUP %s returned no handle",
				       rem->name);
	*fh = e.fh;
	if (!attr)
		return 0;
	if (e.has_attr) {
		*attr = e.attr;
		return 0;
	}
	return nc_getattr(r->client, &r->cred, fh, attr);
}

/*
 * Finds the handle (and the attributes, if attr) of any path.  The
 * netclient mounts only directories, so a file is reached by mounting its
 * parent and looking it up; an export's root, whose parent may not be
 * exported, only by mounting it.  dir_first says which to try first: the
 * path (it is most likely a directory) or the parent.
 */
int cli_open_path(struct cli_run *r, const struct cli_remote *rem,
		  bool dir_first, struct nc_fh *fh, struct nc_attr *attr)
{
	bool mounted;
	int rc;

	if (dir_first || !rem->name) {
		rc = cli_mount_dir(r, rem->server, rem->path, fh);
		if (rc == 0 && attr)
			rc = nc_getattr(r->client, &r->cred, fh, attr);
		if (rc != -ENOTDIR || !rem->name)
			return rc;
		rc = client_renew(r, rem->server);
		if (rc < 0)
			return rc;
		return lookup_in_parent(r, rem, fh, attr, &mounted);
	}
	rc = lookup_in_parent(r, rem, fh, attr, &mounted);
	/* Not exported, or not ours to see: maybe the path is an export. */
	if (mounted || (rc != -ENOENT && rc != -EACCES && rc != -EPERM))
		return rc;
	rc = client_renew(r, rem->server);
	if (rc < 0)
		return rc;
	rc = cli_mount_dir(r, rem->server, rem->path, fh);
	if (rc == 0 && attr)
		rc = nc_getattr(r->client, &r->cred, fh, attr);
	return rc;
}

/*
 * The command's argument arg (named in its messages) as a handle: parsed,
 * then opened as cli_open_path() does.
 */
int cli_open_arg(struct cli_run *r, const char *arg, bool dir_first,
		 struct cli_remote *rem, struct nc_fh *fh, struct nc_attr *attr)
{
	int rc;

	r->what = arg;
	rc = cli_parse_remote(r, arg, rem);
	if (rc < 0)
		return rc;
	return cli_open_path(r, rem, dir_first, fh, attr);
}

/*
 * The directory that holds the name arg ends in, for a command that makes
 * or removes that name: the name must be there (not the server's root).
 */
int cli_open_parent(struct cli_run *r, const char *arg, struct cli_remote *rem,
		    struct nc_fh *dir)
{
	int rc;

	r->what = arg;
	rc = cli_parse_remote(r, arg, rem);
	if (rc < 0)
		return rc;
	rc = cli_need_name(r, arg, rem);
	if (rc < 0)
		return rc;
	return cli_mount_dir(r, rem->server, rem->parent, dir);
}
