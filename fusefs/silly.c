/*
 * Silly rename, as the Linux NFS client does it (fs/nfs/unlink.c): NFS has
 * no open state, so a file that is unlinked, or renamed over, while it is
 * open here is not removed but renamed to a hidden name in the same
 * directory, .nfs<16 hex digits of its fileid><8 hex digits of a counter>,
 * and the last close removes that name.  The open descriptors keep reading
 * and writing the file meanwhile, and readdir shows the hidden name, as on
 * Linux.  Unlinking the hidden name itself while the file is open fails
 * with EBUSY, as on Linux.
 *
 * Whether a name is an open file takes a LOOKUP, made only while some file
 * is open on the mount.  Each hidden name is also written to a journal,
 * /run/intrfs/silly-SERVER-PORT-EXPORTHASH (one line: pid uid gid handle
 * name), one per server address, NFS port and export, so that when a
 * daemon dies with files open, the next mount of that export removes what
 * it left; an unmount removes what a failed removal left.
 * Both log what they could not remove.
 *
 * It never holds a lock across a call to the server or a journal edit.
 * The node fields (silly_name, silly_dir, silly_cred) and the list of names
 * left (fs->silly.left) are protected by fs->nodes_lock, a leaf; the
 * journal by an flock() on it, taken with no lock held, as several daemons
 * may share it.
 */
#include "fusefs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* A name is tried with the next counter when it exists already. */
#define SILLY_TRIES 64
#define SILLY_NAME_MAX 64
#define LINE_MAX_LEN (32 * 3 + 2 * NC_FHSIZE + SILLY_NAME_MAX + 8)

/* A hidden name to remove: at unmount, or after a removal that failed. */
struct silly_left {
	struct silly_left *next;
	struct nc_fh dir;
	struct nc_cred cr;
	char name[SILLY_NAME_MAX];
};

/* The journal. */

static void fh_hex(const struct nc_fh *fh, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (unsigned i = 0; i < fh->len; i++) {
		out[2 * i] = digits[fh->data[i] >> 4];
		out[2 * i + 1] = digits[fh->data[i] & 15];
	}
	out[2 * fh->len] = '\0';
}

static bool fh_unhex(const char *s, struct nc_fh *fh)
{
	size_t len = strlen(s);

	if (len % 2 || len / 2 > NC_FHSIZE)
		return false;
	fh->len = (unsigned)(len / 2);
	for (unsigned i = 0; i < fh->len; i++) {
		unsigned v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return false;
		fh->data[i] = (unsigned char)v;
	}
	return true;
}

static void journal_line(char *out, size_t len, pid_t pid,
			 const struct nc_cred *cr, const struct nc_fh *dir,
			 const char *name)
{
	char hex[2 * NC_FHSIZE + 1];

	fh_hex(dir, hex);
	snprintf(out, len, "%d %u %u %s %s\n", (int)pid, cr->uid, cr->gid, hex,
		 name);
}

/*
 * Rewrites the journal with the line add appended and the line del taken
 * out (either may be NULL).  Returns 0 or -errno.
 */
static int journal_edit(struct intrfs *fs, const char *add, const char *del)
{
	char *buf = NULL, *out, *p;
	struct stat st;
	size_t len = 0, olen = 0;
	int fd, rc = 0;

	if (!fs->silly.journal)
		return -ENOENT;
	fd = open(fs->silly.journal, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	out = malloc((size_t)st.st_size + (add ? strlen(add) : 0) + 1);
	if (!buf || !out) {
		free(out);
		rc = -ENOMEM;
		goto out_close;
	}
	if (st.st_size)
		len = (size_t)pread(fd, buf, (size_t)st.st_size, 0);
	buf[len < (size_t)st.st_size ? len : (size_t)st.st_size] = '\0';
	for (p = buf; *p;) {
		char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (!del || strlen(del) != l || strncmp(p, del, l) != 0) {
			memcpy(out + olen, p, l);
			olen += l;
		} else {
			del = NULL; /* one line only */
		}
		p += l;
	}
	if (add) {
		memcpy(out + olen, add, strlen(add));
		olen += strlen(add);
	}
	if (ftruncate(fd, 0) < 0 ||
	    (olen && pwrite(fd, out, olen, 0) != (ssize_t)olen))
		rc = -errno;
	free(out);
out_close:
	free(buf);
	close(fd);
	return rc;
}

static void journal_note(struct intrfs *fs, const struct nc_cred *cr,
			 const struct nc_fh *dir, const char *name, bool add)
{
	char line[LINE_MAX_LEN];
	int rc;

	journal_line(line, sizeof(line), getpid(), cr, dir, name);
	rc = journal_edit(fs, add ? line : NULL, add ? NULL : line);
	if (rc && add && fs->silly.journal)
		fprintf(stderr,
			"intrfs: cannot note %s in %s (%s): if intrfs dies "
			"before the file is closed, the name stays\n",
			name, fs->silly.journal, strerror(-rc));
}

/* Renaming. */

/* Called with nodes_lock held. */
static bool is_regular_open(const struct node *n)
{
	return S_ISREG(n->type) && n->opens > 0;
}

/*
 * Renames name in dir to a new hidden name for n.  When the last close
 * came meanwhile, removes the hidden name at once.
 */
static int silly_move(const struct actor *a, struct node *dir, const char *name,
		      struct node *n)
{
	struct intrfs *fs = a->fs;
	char sname[SILLY_NAME_MAX];
	bool closed;
	int rc = -EBUSY;

	for (unsigned i = 0; i < SILLY_TRIES; i++) {
		/* relaxed: only uniqueness matters; LOOKUP checks the name. */
		unsigned seq = atomic_fetch_add_explicit(&fs->silly.seq, 1,
							 memory_order_relaxed);

		snprintf(sname, sizeof(sname), ".nfs%016" PRIx64 "%08x",
			 n->fileid, seq);
		/* RENAME replaces what is there: the name must be free. */
		rc = nc_lookup(fs->nc, a->cred, &dir->fh, sname, NULL);
		if (rc == 0) {
			rc = -EBUSY;
			continue;
		}
		if (rc != -ENOENT)
			return rc;
		rc = nc_rename(fs->nc, a->cred, &dir->fh, name, &dir->fh,
			       sname);
		break;
	}
	if (rc)
		return rc;
	nfs_event(fs, SILLYRENAME);
	pthread_mutex_lock(&fs->nodes_lock);
	closed = n->opens == 0;
	if (!closed) {
		free(n->silly_name);
		n->silly_name = strdup(sname);
		n->silly_dir = dir->fh;
		n->silly_cred = *a->cred;
	}
	pthread_mutex_unlock(&fs->nodes_lock);
	if (closed) {
		/* Closed while we renamed it: nobody will remove it now. */
		rc = nc_remove(fs->nc, a->cred, &dir->fh, sname);
		return rc == -ENOENT ? 0 : rc;
	}
	journal_note(fs, a->cred, &dir->fh, sname, true);
	return 0;
}

int silly_unlink(const struct actor *a, struct node *dir, const char *name)
{
	struct intrfs *fs = a->fs;
	struct node *n = NULL;
	struct nc_entry e;
	bool open = false, busy = false;
	int rc;

	/* Relaxed: a hint; a file opened meanwhile races as on Linux. */
	if (!atomic_load_explicit(&fs->open_files, memory_order_relaxed))
		return nc_remove(fs->nc, a->cred, &dir->fh, name);
	FS_REGION_BEGIN(a, "unlink: LOOKUP, then REMOVE or silly RENAME");
	rc = nc_lookup(fs->nc, a->cred, &dir->fh, name, &e);
	if (rc == 0 && e.has_fh)
		n = node_find_pin(fs, &e.fh);
	if (n) {
		pthread_mutex_lock(&fs->nodes_lock);
		open = is_regular_open(n);
		/* Its hidden name, or a file that has one: just REMOVE. */
		busy = open && n->silly_name &&
		       strcmp(n->silly_name, name) == 0;
		if (n->silly_name)
			open = false;
		pthread_mutex_unlock(&fs->nodes_lock);
	}
	if (busy)
		rc = -EBUSY;
	else if (rc == 0 && open)
		rc = silly_move(a, dir, name, n);
	else if (rc == 0)
		rc = nc_remove(fs->nc, a->cred, &dir->fh, name);
	FS_REGION_END(a);
	if (n)
		node_unpin(fs, n);
	return rc;
}

int silly_rename_target(const struct actor *a, struct node *from_dir,
			const char *from_name, struct node *to_dir,
			const char *to_name)
{
	struct intrfs *fs = a->fs;
	struct nc_entry to, from;
	struct node *n;
	bool open;
	int rc;

	if (!atomic_load_explicit(&fs->open_files, memory_order_relaxed))
		return 0;
	/*
	 * An error of these LOOKUPs is the RENAME's to report, but for an
	 * interruption, which ends the request here.
	 */
	rc = nc_lookup(fs->nc, a->cred, &to_dir->fh, to_name, &to);
	if (rc == -EINTR)
		return rc;
	if (rc || !to.has_fh)
		return 0;
	n = node_find_pin(fs, &to.fh);
	if (!n)
		return 0;
	pthread_mutex_lock(&fs->nodes_lock);
	open = is_regular_open(n) && !n->silly_name;
	pthread_mutex_unlock(&fs->nodes_lock);
	rc = 0;
	if (open) {
		rc = nc_lookup(fs->nc, a->cred, &from_dir->fh, from_name,
			       &from);
		/* Two names of one file: the rename does nothing to hide. */
		if (rc == 0 && from.has_fh && from.fh.len == to.fh.len &&
		    memcmp(from.fh.data, to.fh.data, to.fh.len) == 0)
			open = false;
	}
	if (rc != -EINTR)
		rc = open ? silly_move(a, to_dir, to_name, n) : 0;
	node_unpin(fs, n);
	return rc;
}

void silly_remove(struct intrfs *fs, struct node *n, char *name)
{
	struct nc_cred cr;
	struct nc_fh dir;
	int rc;

	pthread_mutex_lock(&fs->nodes_lock);
	dir = n->silly_dir;
	cr = n->silly_cred;
	pthread_mutex_unlock(&fs->nodes_lock);
	rc = nc_remove(fs->nc, &cr, &dir, name);
	if (rc == 0 || rc == -ENOENT || rc == -ESTALE) {
		journal_note(fs, &cr, &dir, name, false);
	} else {
		struct silly_left *l = calloc(1, sizeof(*l));

		fprintf(stderr,
			"intrfs: could not remove %s, the hidden name of a "
			"file unlinked while open: %s (tried again at "
			"unmount)\n",
			name, strerror(-rc));
		if (l) {
			l->dir = dir;
			l->cr = cr;
			snprintf(l->name, sizeof(l->name), "%s", name);
			pthread_mutex_lock(&fs->nodes_lock);
			l->next = fs->silly.left;
			fs->silly.left = l;
			pthread_mutex_unlock(&fs->nodes_lock);
		}
	}
	free(name);
}

/* Recovery and cleanup. */

/* Whether pid is a live intrfs daemon (one that may still need its names). */
static bool daemon_alive(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (pid == getpid())
		return true;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return strncmp(comm, "intrfs", 6) == 0;
}

int journal_key(struct intrfs *fs, char *out, size_t len)
{
	const char *server = nc_client_server(fs->nc);
	uint64_t h = 14695981039346656037ull; /* FNV-1a */
	size_t n = 0;

	if (mkdir(JOURNAL_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	for (const unsigned char *p =
		     (const unsigned char *)nc_client_export(fs->nc);
	     *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	for (const char *s = server; *s && n < len - 64; s++)
		out[n++] = (*s == '/' || *s == ' ') ? '_' : *s;
	snprintf(out + n, len - n, "-%u-%016" PRIx64,
		 nc_client_nfs_port(fs->nc), h);
	return 0;
}

/*
 * The journal of this server and export (journal_key()): a line sent to
 * the wrong server would get ESTALE, which would drop it, and its name
 * would never be removed.
 */
static void journal_path(struct intrfs *fs)
{
	char key[300], path[512];
	int rc = journal_key(fs, key, sizeof(key));

	if (rc) {
		fprintf(stderr,
			"intrfs: cannot make %s (%s): files unlinked while "
			"open stay under their hidden names if intrfs dies\n",
			JOURNAL_DIR, strerror(-rc));
		return;
	}
	snprintf(path, sizeof(path), JOURNAL_DIR "/silly-%s", key);
	fs->silly.journal = strdup(path);
}

/* The journal's lines, read whole: it is rewritten as they are handled. */
static char *journal_read(const char *path)
{
	char *buf = NULL;
	size_t cap = 0, len = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return NULL;
	for (;;) {
		size_t n;

		if (len + LINE_MAX_LEN + 1 > cap) {
			char *p =
				realloc(buf, cap = cap * 2 + LINE_MAX_LEN + 1);

			if (!p)
				break;
			buf = p;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/*
 * One journal line: removes the name when its daemon is gone.  True when
 * it removed it.
 */
static bool recover_one(struct intrfs *fs, const char *line)
{
	char hex[2 * NC_FHSIZE + 2], name[SILLY_NAME_MAX], copy[LINE_MAX_LEN];
	struct nc_cred cr = { 0 };
	struct nc_fh dir;
	int pid, rc;

	snprintf(copy, sizeof(copy), "%s\n", line);
	if (sscanf(line, "%d %u %u %129s %63s", &pid, &cr.uid, &cr.gid, hex,
		   name) != 5 ||
	    !fh_unhex(hex, &dir) || strncmp(name, ".nfs", 4) != 0) {
		journal_edit(fs, NULL, copy); /* not a line of ours */
		return false;
	}
	if (daemon_alive(pid))
		return false;
	rc = nc_remove(fs->nc, &cr, &dir, name);
	if (rc == 0 || rc == -ENOENT || rc == -ESTALE) {
		journal_edit(fs, NULL, copy);
		return rc == 0;
	}
	fprintf(stderr,
		"intrfs: could not remove %s, left by an intrfs that died "
		"with it open: %s (tried again at the next mount)\n",
		name, strerror(-rc));
	return false;
}

void silly_recover(struct intrfs *fs)
{
	struct task_attr attr = { "silly-recover", fs->nco.policy, NULL };
	unsigned removed = 0;
	char *buf, *line, *save = NULL;
	task_t *t;

	journal_path(fs);
	if (!fs->silly.journal)
		return;
	buf = journal_read(fs->silly.journal);
	if (!buf)
		return;
	t = region_task_create(&attr);
	if (!t) {
		free(buf);
		return;
	}
	region_task_enter(t);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		removed += recover_one(fs, line);
	region_task_leave(t);
	region_task_put(t);
	free(buf);
	if (removed)
		fprintf(stderr,
			"intrfs: removed %u hidden file%s (.nfs*) that an "
			"intrfs which died left on %s\n",
			removed, removed == 1 ? "" : "s",
			nc_client_server(fs->nc));
}

/* Called with nodes_lock held (nodes_foreach). */
static void collect(struct node *n, void *arg)
{
	struct silly_left **list = arg, *l;

	if (!n->silly_name)
		return;
	l = calloc(1, sizeof(*l));
	if (!l)
		return;
	l->dir = n->silly_dir;
	l->cr = n->silly_cred;
	snprintf(l->name, sizeof(l->name), "%s", n->silly_name);
	free(n->silly_name);
	n->silly_name = NULL;
	l->next = *list;
	*list = l;
}

void silly_cleanup(struct intrfs *fs, bool server_answers)
{
	struct task_attr attr = { "silly-cleanup", fs->nco.policy, NULL };
	struct silly_left *list = NULL;
	task_t *t;

	nodes_foreach(fs, collect, &list);
	pthread_mutex_lock(&fs->nodes_lock);
	while (fs->silly.left) {
		struct silly_left *l = fs->silly.left;

		fs->silly.left = l->next;
		l->next = list;
		list = l;
	}
	pthread_mutex_unlock(&fs->nodes_lock);
	if (!list)
		return;
	if (!server_answers) {
		/* The journal keeps them for the next mount. */
		while (list) {
			struct silly_left *l = list;

			fprintf(stderr,
				"intrfs: %s left on %s (the next mount "
				"removes it)\n",
				l->name, nc_client_server(fs->nc));
			list = l->next;
			free(l);
		}
		return;
	}
	t = region_task_create(&attr);
	if (t)
		region_task_enter(t);
	while (list) {
		struct silly_left *l = list;
		int rc = t ? nc_remove(fs->nc, &l->cr, &l->dir, l->name) :
			     -ENOMEM;

		if (rc == 0 || rc == -ENOENT || rc == -ESTALE)
			journal_note(fs, &l->cr, &l->dir, l->name, false);
		else
			fprintf(stderr,
				"intrfs: could not remove %s at unmount: %s "
				"(the next mount of %s tries again)\n",
				l->name, strerror(-rc),
				nc_client_server(fs->nc));
		list = l->next;
		free(l);
	}
	if (t) {
		region_task_leave(t);
		region_task_put(t);
	}
}
