/*
 * intrfs-client's cat and put: a file copied from the server to stdout, or
 * from a local file or stdin to the server, in chunks of many rsize/wsize
 * calls, each chunk moved by one of the two lanes (lanes.c).  cat writes
 * each READ's data out from where its reply landed, no copy between.  put
 * writes UNSTABLE, COMMITs, and writes again from the start (while the
 * input can be re-read) when the server's write verifier says it
 * restarted and may have lost what it had not committed.
 *
 * It never empties a remote file before the local input is known to open,
 * and never reports success for a put whose data a restart may have lost.
 * Lock order: only the lanes' lock (put's verifier bookkeeping is under
 * it), held for no netclient call and no local I/O.
 */
#include "cli_i.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A lane's chunk, in rsize/wsize calls in flight at once.  cat's two lanes
 * keep 16 READs in flight: a cold file is read no faster with more, since
 * the server then reads it from its disk at as many places at once (two
 * lanes of 16 read a cold 512 MiB file at 0.92 of the speed of two lanes
 * of 8), and fewer would leave a network with any latency idle.
 */
#define CAT_CHUNK_CALLS 8
#define PUT_CHUNK_CALLS 16
/* put COMMITs as it goes, each time this many more chunks are written. */
#define PUT_COMMIT_CHUNKS 2
/* The I/O size when the client reports none (it always should). */
#define IO_SIZE_FALLBACK 65536u
/* Passes a put makes before it gives up on a server that keeps restarting. */
#define PUT_MAX_PASSES 4

static size_t io_chunk(unsigned calls, unsigned size)
{
	return (size_t)calls * (size ? size : IO_SIZE_FALLBACK);
}

/* cat */

struct cat {
	struct cli_run *r;
	struct nc_fh fh;
	size_t chunk;
	bool out_blocks;
	struct cli_lanes l;
};

/*
 * Writes out replies b[0..n) and gives them back; the data goes from where
 * each reply landed to stdout, no copy between.
 */
static int cat_out(struct cat *c, struct nc_rbuf *b, unsigned n)
{
	int rc = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!rc)
			rc = cli_write_full(STDOUT_FILENO, c->out_blocks,
					    b[i].data, b[i].len);
		nc_rbuf_release(&b[i]);
	}
	return rc;
}

static void cat_lane(void *job, unsigned index)
{
	struct cat *c = job;
	struct nc_rbuf b[CAT_CHUNK_CALLS];

	for (uint64_t k = index; cli_lanes_needed(&c->l, k); k += CLI_LANES) {
		uint64_t off = k * c->chunk, end = off + c->chunk;
		bool eof = false, turn = false;

		/* More than one pass only after a short reply. */
		while (off < end && !eof) {
			unsigned n;
			size_t got;
			int rc;

			rc = nc_pread_inplace(c->r->client, &c->r->cred, &c->fh,
					      off, end - off, b,
					      CAT_CHUNK_CALLS, &n, &got, &eof);
			if (rc < 0) {
				cli_lanes_fail(&c->l, rc, NULL);
				return;
			}
			if (!turn && !cli_lanes_wait_turn(&c->l, k)) {
				while (n > 0)
					nc_rbuf_release(&b[--n]);
				return;
			}
			turn = true;
			rc = cat_out(c, b, n);
			if (rc < 0) {
				if (rc == -EPIPE)
					c->r->stdout_gone = true;
				cli_lanes_fail(&c->l, rc, "stdout");
				return;
			}
			off += got;
		}
		cli_lanes_pass_turn(&c->l, k, eof);
	}
}

int cli_cmd_cat(struct cli_run *r, char **argv)
{
	struct cli_remote rem;
	struct cat c = { .r = r };
	int rc;

	rc = cli_open_arg(r, argv[0], false, &rem, &c.fh, NULL);
	if (rc < 0)
		return rc;
	c.chunk = io_chunk(CAT_CHUNK_CALLS, nc_client_rsize(r->client));
	c.out_blocks = !cli_fd_never_blocks(STDOUT_FILENO);
	return cli_run_lanes(r, cat_lane, NULL, &c, &c.l);
}

/* put */

struct put {
	const char *local; /* as given, for messages */
	int fd;
	bool seekable, may_block;
	off_t start; /* where the input started, to read it again */
	struct nc_fh fh; /* the file on the server */
	size_t chunk;
	uint64_t bytes;
};

static int put_truncate(struct cli_run *r, struct put *p)
{
	struct nc_sattr sa = { .set = NC_SET_SIZE, .size = 0 };

	return nc_setattr(r->client, &r->cred, &p->fh, &sa, NULL);
}

struct put_pass {
	struct cli_run *r;
	struct put *p;
	struct cli_lanes l;
	/* Under l.lock: */
	unsigned char verf[8];
	bool have_verf, changed, unstable;
	uint64_t bytes;
	/* The chunk each lane writes next; UINT64_MAX once it is done. */
	uint64_t lane_next[CLI_LANES];
	uint64_t committed; /* the bytes from 0 on that a COMMIT covered */
};

/* Under l.lock: the bytes from 0 on whose WRITEs have all been answered. */
static uint64_t put_written(const struct put_pass *pp)
{
	uint64_t k = pp->lane_next[0];

	for (unsigned i = 1; i < CLI_LANES; i++)
		if (pp->lane_next[i] < k)
			k = pp->lane_next[i];
	if (k > pp->bytes / pp->p->chunk)
		return pp->bytes;
	return k * pp->p->chunk;
}

/*
 * Beside the lanes: a COMMIT of what they have written, each time another
 * PUT_COMMIT_CHUNKS chunks are in, so that the server writes them to its
 * disk while the rest arrives rather than all of it at the end (Linux's
 * client commits as its writeback goes, too).  Its verifier is checked as
 * the last COMMIT's is; its failure fails the put.
 */
static void put_committer(void *job)
{
	struct put_pass *pp = job;
	const uint64_t every = PUT_COMMIT_CHUNKS * (uint64_t)pp->p->chunk;

	pthread_mutex_lock(&pp->l.lock);
	for (;;) {
		uint64_t from = pp->committed, upto;
		unsigned char verf[8];
		int rc;

		while (!pp->l.rc && !pp->l.done &&
		       put_written(pp) - pp->committed < every)
			pthread_cond_wait(&pp->l.cond, &pp->l.lock);
		if (pp->l.rc || pp->l.done)
			break;
		upto = put_written(pp);
		pthread_mutex_unlock(&pp->l.lock);
		/* Count 0 is to the end of the file: more, never less. */
		rc = nc_commit(
			pp->r->client, &pp->r->cred, &pp->p->fh, from,
			upto - from > UINT32_MAX ? 0 : (uint32_t)(upto - from),
			verf);
		if (rc < 0) {
			cli_lanes_fail(&pp->l, rc, NULL);
			return;
		}
		pthread_mutex_lock(&pp->l.lock);
		if (memcmp(pp->verf, verf, sizeof(verf)) != 0)
			pp->changed = true;
		pp->committed = upto;
	}
	pthread_mutex_unlock(&pp->l.lock);
}

static void put_lane(void *job, unsigned index)
{
	struct put_pass *pp = job;
	struct put *p = pp->p;
	char *buf = malloc(p->chunk);

	if (!buf) {
		cli_lanes_fail(&pp->l, -ENOMEM, NULL);
		return;
	}
	for (uint64_t k = index; cli_lanes_needed(&pp->l, k); k += CLI_LANES) {
		struct nc_write_res res;
		size_t got;
		int rc;

		/* The input is read in order, one chunk at a time. */
		if (!cli_lanes_wait_turn(&pp->l, k))
			break;
		rc = cli_read_full(p->fd, p->may_block, buf, p->chunk, &got);
		if (rc < 0) {
			cli_lanes_fail(&pp->l, rc, p->local);
			break;
		}
		cli_lanes_pass_turn(&pp->l, k, got < p->chunk);
		if (got == 0)
			break;
		rc = nc_pwrite(pp->r->client, &pp->r->cred, &p->fh,
			       k * p->chunk, got, buf, NC_UNSTABLE, &res);
		if (rc < 0) {
			cli_lanes_fail(&pp->l, rc, NULL);
			break;
		}
		/*
		 * The verifier of the first WRITE is the one the COMMIT must
		 * return; FILE_SYNC data survives a restart whatever it says.
		 */
		pthread_mutex_lock(&pp->l.lock);
		if (res.committed != NC_FILE_SYNC)
			pp->unstable = true;
		if (!pp->have_verf)
			memcpy(pp->verf, res.verf, sizeof(pp->verf));
		else if (memcmp(pp->verf, res.verf, sizeof(pp->verf)) != 0)
			pp->changed = true;
		if (res.verf_changed)
			pp->changed = true;
		pp->have_verf = true;
		if (k * p->chunk + got > pp->bytes)
			pp->bytes = k * p->chunk + got;
		pp->lane_next[index] = k + CLI_LANES;
		pthread_cond_broadcast(&pp->l.cond);
		pthread_mutex_unlock(&pp->l.lock);
	}
	pthread_mutex_lock(&pp->l.lock);
	pp->lane_next[index] = UINT64_MAX;
	pthread_cond_broadcast(&pp->l.cond);
	pthread_mutex_unlock(&pp->l.lock);
	free(buf);
}

/*
 * Writes the whole input UNSTABLE and COMMITs it.  *lost is set when the
 * server's write verifier changed on the way (it restarted, and UNSTABLE
 * data it had not committed may be gone).
 */
static int put_pass(struct cli_run *r, struct put *p, bool *lost)
{
	struct put_pass pp = { .r = r, .p = p };
	unsigned char cverf[8];
	int rc;

	*lost = false;
	for (unsigned i = 0; i < CLI_LANES; i++)
		pp.lane_next[i] = i;
	rc = cli_run_lanes(r, put_lane, put_committer, &pp, &pp.l);
	if (rc < 0)
		return rc;
	p->bytes = pp.bytes;
	/* Count 0: from offset 0 to the end of the file. */
	rc = nc_commit(r->client, &r->cred, &p->fh, 0, 0, cverf);
	if (rc < 0)
		return rc;
	if (pp.have_verf && memcmp(pp.verf, cverf, sizeof(cverf)) != 0)
		pp.changed = true;
	*lost = pp.changed && pp.unstable;
	return 0;
}

static int put_open(struct put *p)
{
	struct stat st;

	if (strcmp(p->local, "-") == 0) {
		p->fd = STDIN_FILENO;
	} else {
		p->fd = open(p->local, O_RDONLY | O_CLOEXEC);
		if (p->fd < 0)
			return -errno;
	}
	if (fstat(p->fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	p->may_block = !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
	p->start = lseek(p->fd, 0, SEEK_CUR);
	p->seekable = !p->may_block && p->start >= 0;
	return 0;
}

static int put_create(struct cli_run *r, struct put *p, const struct nc_fh *dir,
		      const char *name)
{
	struct nc_sattr sa = {
		.set = NC_SET_MODE | NC_SET_SIZE,
		.mode = 0644 & ~r->umask,
		.size = 0,
	};
	struct nc_entry e;
	int rc;

	/* UNCHECKED: create, or truncate (size 0 above) what is there. */
	rc = nc_create(r->client, &r->cred, dir, name, NC_CREATE_UNCHECKED, &sa,
		       &e);
	if (rc < 0)
		return rc;
	if (!e.has_fh) {
		rc = nc_lookup(r->client, &r->cred, dir, name, &e);
		if (rc < 0)
			return rc;
		if (!e.has_fh)
			return cli_fail_detail(
				r, -EIO, "the server returned no handle for %s",
				name);
	}
	p->fh = e.fh;
	if (e.has_attr && S_ISDIR(e.attr.mode))
		return -EISDIR;
	if (e.has_attr && !S_ISREG(e.attr.mode))
		return cli_fail_detail(r, -EINVAL, "%s exists and is a %s",
				       name, cli_type_name(e.attr.mode));
	/* A server that kept the old data gets an explicit truncation. */
	if (!e.has_attr || e.attr.size != 0)
		return put_truncate(r, p);
	return 0;
}

int cli_cmd_put(struct cli_run *r, char **argv)
{
	struct put p = { .local = argv[0], .fd = -1 };
	struct cli_remote rem;
	struct nc_fh dir;
	bool lost = true;
	int rc;

	r->what = argv[1];
	rc = cli_parse_remote(r, argv[1], &rem);
	if (rc < 0)
		return rc;
	rc = cli_need_name(r, argv[1], &rem);
	if (rc < 0)
		return rc;
	/* The input first: a missing local file must not empty the remote. */
	rc = put_open(&p);
	if (rc < 0) {
		r->what = argv[0];
		goto out_close;
	}
	rc = cli_mount_dir(r, rem.server, rem.parent, &dir);
	if (rc < 0)
		goto out_close;
	rc = put_create(r, &p, &dir, rem.name);
	if (rc < 0)
		goto out_close;
	p.chunk = io_chunk(PUT_CHUNK_CALLS, nc_client_wsize(r->client));
	for (int pass = 0; pass < PUT_MAX_PASSES && lost; pass++) {
		if (pass > 0) {
			if (!p.seekable) {
				rc = cli_fail_detail(
					r, -EIO,
					"server restarted during put and "
					"the input cannot be re-read");
				goto out_close;
			}
			if (lseek(p.fd, p.start, SEEK_SET) < 0) {
				rc = -errno;
				r->what = argv[0];
				goto out_close;
			}
			rc = put_truncate(r, &p);
			if (rc < 0)
				goto out_close;
		}
		rc = put_pass(r, &p, &lost);
		if (rc < 0)
			goto out_close;
	}
	if (lost)
		rc = cli_fail_detail(r, -EIO,
				     "the server's write verifier changed "
				     "in each of %d passes; giving up",
				     PUT_MAX_PASSES);
out_close:
	if (p.fd > STDIN_FILENO)
		close(p.fd);
	return rc;
}
