/*
 * intrfs-client's ls: a directory read whole with READDIR (READDIRPLUS for
 * -l), sorted by name, and printed one name a line or as ls -l does, in
 * columns as wide as their widest value; a file given instead of a
 * directory is listed by itself, as ls does.
 *
 * It never lists "." or "..", and never asks the same READDIR page twice
 * (a server that sends an empty page before the end is an error, not a
 * loop).  No locks: only the main thread's task runs this.
 */
#include "cli_i.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct dent {
	char *name;
	bool has_fh, has_attr;
	struct nc_fh fh;
	struct nc_attr attr;
};

struct dir_list {
	struct dent *v;
	size_t n, cap;
	uint64_t cookie; /* of the last entry, for the next READDIR */
	unsigned seen; /* entries in the current call */
	int rc; /* -ENOMEM from the callback */
};

static int dir_add(void *arg, const char *name, uint64_t fileid,
		   uint64_t cookie, const struct nc_fh *fh,
		   const struct nc_attr *attr)
{
	struct dir_list *dl = arg;
	struct dent *d;

	(void)fileid;
	dl->cookie = cookie;
	dl->seen++;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? dl->cap * 2 : 64;
		struct dent *v = realloc(dl->v, cap * sizeof(*v));

		if (!v) {
			dl->rc = -ENOMEM;
			return 1;
		}
		dl->v = v;
		dl->cap = cap;
	}
	d = &dl->v[dl->n];
	memset(d, 0, sizeof(*d));
	d->name = strdup(name);
	if (!d->name) {
		dl->rc = -ENOMEM;
		return 1;
	}
	if (fh) {
		d->fh = *fh;
		d->has_fh = true;
	}
	if (attr) {
		d->attr = *attr;
		d->has_attr = true;
	}
	dl->n++;
	return 0;
}

static void dir_free(struct dir_list *dl)
{
	for (size_t i = 0; i < dl->n; i++)
		free(dl->v[i].name);
	free(dl->v);
}

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->name,
		      ((const struct dent *)b)->name);
}

static int read_dir(struct cli_run *r, const struct nc_fh *dir,
		    struct dir_list *dl)
{
	unsigned char verf[8] = { 0 };
	bool eof = false;

	dl->cookie = 0;
	while (!eof) {
		int rc;

		dl->seen = 0;
		rc = nc_readdir(r->client, &r->cred, dir, dl->cookie, verf,
				r->long_list, dir_add, dl, &eof);
		if (rc < 0)
			return rc;
		if (dl->rc < 0)
			return dl->rc;
		/* Without progress the next call would ask the same again. */
		if (!eof && dl->seen == 0)
			return cli_fail_detail(
				r, -EIO,
				"the server sent an empty directory "
				"page before the end");
	}
	qsort(dl->v, dl->n, sizeof(dl->v[0]), dent_cmp);
	return 0;
}

/* Fills in what READDIR (not PLUS) left out, for a long listing. */
static int dent_complete(struct cli_run *r, const struct nc_fh *dir,
			 struct dent *d)
{
	struct nc_entry e;
	int rc;

	if (d->has_attr && (d->has_fh || !S_ISLNK(d->attr.mode)))
		return 0;
	if (d->has_fh)
		rc = nc_getattr(r->client, &r->cred, &d->fh, &d->attr);
	else
		rc = nc_lookup(r->client, &r->cred, dir, d->name, &e);
	if (rc < 0)
		return rc;
	if (!d->has_fh) {
		if (!e.has_fh || !e.has_attr)
			return cli_fail_detail(
				r, -EIO,
				"LOOKUP %s returned no handle or "
				"attributes",
				d->name);
		d->fh = e.fh;
		d->attr = e.attr;
		d->has_fh = true;
	}
	d->has_attr = true;
	return 0;
}

struct long_row {
	char mode[11], nlink[16], uid[16], gid[16], size[48], mtime[32];
};

static void long_row_fill(const struct nc_attr *a, struct long_row *lr)
{
	cli_mode_string(a->mode, lr->mode);
	snprintf(lr->nlink, sizeof(lr->nlink), "%" PRIu32, a->nlink);
	snprintf(lr->uid, sizeof(lr->uid), "%" PRIu32, a->uid);
	snprintf(lr->gid, sizeof(lr->gid), "%" PRIu32, a->gid);
	if (S_ISCHR(a->mode) || S_ISBLK(a->mode))
		snprintf(lr->size, sizeof(lr->size), "%" PRIu32 ", %" PRIu32,
			 a->rdev_major, a->rdev_minor);
	else
		snprintf(lr->size, sizeof(lr->size), "%" PRIu64, a->size);
	cli_format_time(&a->mtime, "%Y-%m-%d %H:%M", lr->mtime,
			sizeof(lr->mtime));
}

static int print_long(struct cli_run *r, const struct nc_fh *dir,
		      struct dent *v, size_t n)
{
	struct long_row *rows;
	int wl = 0, wu = 0, wg = 0, ws = 0;
	int rc = 0;

	rows = calloc(n ? n : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (dir) {
			rc = dent_complete(r, dir, &v[i]);
			if (rc < 0) {
				if (!r->err[0])
					cli_fail_detail(r, rc,
							"the attributes of %s",
							v[i].name);
				goto out_free_rows;
			}
		}
		long_row_fill(&v[i].attr, &rows[i]);
		wl = cli_width(rows[i].nlink, wl);
		wu = cli_width(rows[i].uid, wu);
		wg = cli_width(rows[i].gid, wg);
		ws = cli_width(rows[i].size, ws);
	}
	for (size_t i = 0; i < n; i++) {
		char target[CLI_REMOTE_PATH_MAX] = "";

		if (S_ISLNK(v[i].attr.mode) && v[i].has_fh &&
		    nc_readlink(r->client, &r->cred, &v[i].fh, target,
				sizeof(target) - 1) < 0)
			target[0] = '\0';
		printf("%s %*s %*s %*s %*s %s %s%s%s\n", rows[i].mode, wl,
		       rows[i].nlink, wu, rows[i].uid, wg, rows[i].gid, ws,
		       rows[i].size, rows[i].mtime, v[i].name,
		       target[0] ? " -> " : "", target);
	}
out_free_rows:
	free(rows);
	return rc;
}

int cli_cmd_ls(struct cli_run *r, char **argv)
{
	struct dir_list dl = { 0 };
	struct cli_remote rem;
	struct nc_attr attr;
	struct nc_fh fh;
	int rc;

	rc = cli_open_arg(r, argv[0], true, &rem, &fh, &attr);
	if (rc < 0)
		return rc;
	if (!S_ISDIR(attr.mode)) {
		/* As ls does for a file: the file itself, by its name. */
		struct dent d = {
			.fh = fh, .attr = attr, .has_fh = true, .has_attr = true
		};
		d.name = (char *)(rem.name ? rem.name : "/");
		if (!r->long_list) {
			printf("%s\n", d.name);
			return 0;
		}
		return print_long(r, NULL, &d, 1);
	}
	rc = read_dir(r, &fh, &dl);
	if (rc < 0)
		goto out_free_list;
	if (r->long_list) {
		rc = print_long(r, &fh, dl.v, dl.n);
	} else {
		for (size_t i = 0; i < dl.n; i++)
			printf("%s\n", dl.v[i].name);
	}
out_free_list:
	dir_free(&dl);
	return rc;
}
