/*
 * What the integrity exerciser's files share: its options, the operations
 * a worker does, the page of counters each worker shares with the parent,
 * the model of a file (model.c) and the worker's entry point (worker.c).
 *
 * The parent (exercise.c) owns everything started (netfault, the daemon,
 * the workers) and the faults and signals; a worker owns its namespace on
 * the mount, its model and its ring of recent operations, and is the only
 * one that can say whether what it reads is right.  No threads, no locks:
 * the shared page is written by its worker only and read by the parent.
 */
#ifndef INTRFS_EXERCISE_I_H
#define INTRFS_EXERCISE_I_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct xopts {
	uint64_t seed;
	unsigned procs;
	uint64_t ops; /* per worker; 0: run for seconds */
	double seconds;
	const char *server, *export_dir;
	unsigned nfs_port, mount_port;
	const char *intrfs, *netfault, *mount_opts;
	bool faults, signals, keep, verbose;
	bool self_test_corrupt; /* flip one byte on the export before checking */
	bool self_test_link; /* a file made a link to its bytes, over NFS */
	unsigned stuck_s; /* a worker that makes no progress this long fails */
};

/* The operations, in the order the summary prints them (xop_names). */
enum xop {
	XOP_CREATE,
	XOP_OPEN,
	XOP_CLOSE,
	XOP_WRITE,
	XOP_PWRITE,
	XOP_SPARSE,
	XOP_DWRITE,
	XOP_TRUNC,
	XOP_READ,
	XOP_DREAD,
	XOP_STAT,
	XOP_FSYNC,
	XOP_RENAME,
	XOP_UNLINK,
	XOP_MKDIR,
	XOP_RMDIR,
	XOP_READDIR,
	XOP_N
};

extern const char *const xop_names[XOP_N];

/* One worker's page, shared with the parent (MAP_SHARED before fork). */
struct xshared {
	uint64_t count[XOP_N]; /* operations done, by kind */
	uint64_t ops; /* operations started */
	uint64_t eintr; /* calls that failed with EINTR */
	uint64_t retries; /* calls repeated to learn what an EINTR did */
	uint64_t replays; /* namespace calls the server did twice (worker.c) */
	uint64_t sigs; /* signals its handlers saw */
	uint64_t bytes_written, bytes_read;
	uint64_t progress_ns; /* CLOCK_MONOTONIC at the last completed call */
	char cur[240]; /* the operation in progress */
	char why[400]; /* a failed worker's first line, repeated at the end */
};

/* A splitmix64 stream: every random choice of a run comes from one. */
struct xrand {
	uint64_t s;
};

uint64_t xrand_next(struct xrand *r);
/* Uniform in [0, n) (n > 0). */
uint64_t xrand_below(struct xrand *r, uint64_t n);
/* The mixing function alone: a hash of x. */
uint64_t xmix(uint64_t x);
uint64_t xnow_ns(void);

/*
 * The model of one file: its size is somewhere in [lo, hi], and each byte
 * one of a few candidate values.  A byte with one candidate is certain; a
 * failed (interrupted) write or truncate adds candidates to the range it
 * touched ("either old or new"), and a later successful write makes them
 * certain again.  A byte at or past hi is 0 if the file is ever extended
 * over it.  Past MODEL_CAND candidates a byte may be anything.
 */
#define MODEL_MAX (512u * 1024u) /* bytes a file may reach */
#define MODEL_CAND 3
#define MODEL_ANY 0xff

struct model_cand {
	uint8_t v[MODEL_CAND];
	uint8_t n; /* 1..MODEL_CAND, or MODEL_ANY */
};

struct model_file {
	uint64_t lo, hi;
	struct model_cand *c; /* MODEL_MAX of them */
};

int model_init(struct model_file *m);
void model_free(struct model_file *m);
/* A copy (for a rename over another file, the source's model moves). */
void model_move(struct model_file *dst, struct model_file *src);
void model_write_ok(struct model_file *m, uint64_t off, const uint8_t *buf,
		    size_t len);
void model_write_failed(struct model_file *m, uint64_t off, const uint8_t *buf,
			size_t len);
void model_trunc_ok(struct model_file *m, uint64_t size);
void model_trunc_failed(struct model_file *m, uint64_t size);
/* Whether byte off may hold v (off < hi). */
bool model_byte_ok(const struct model_file *m, uint64_t off, uint8_t v);
/* Whether the byte at off is certain. */
bool model_certain(const struct model_file *m, uint64_t off);
/* "0x12" or "0x12 or 0x34" or "anything": what the model allows at off. */
void model_describe(const struct model_file *m, uint64_t off, char *buf,
		    size_t len);

/* netfault in front of the server (faults.c). */
#define NF_MAX_RULES 3 /* random rules in force at once */

enum {
	NF_KIND_DELAY,
	NF_KIND_DROP,
	NF_KIND_DUPLICATE,
	NF_KIND_REORDER,
	NF_KIND_RESET,
	NF_KIND_SLICE,
	NF_KIND_N
};

struct nf {
	pid_t pid;
	unsigned nfs_port, mount_port; /* where it listens */
	char sock[600], log[600], err[600]; /* control, faults, stderr */
	uint64_t start_ns; /* CLOCK_MONOTONIC when started: its time 0 */
	struct xrand r; /* the rules' stream */
	unsigned kinds; /* the NF_KIND_ bits the rules may be */
	int ids[NF_MAX_RULES]; /* the random rules in force, oldest first */
	unsigned nrules;
	uint64_t added;
};

/* "delay,drop,...": the NF_KIND_ bits; 0 with the bad name in bad. */
unsigned nf_parse_kinds(const char *list, char *bad, size_t len);
/*
 * Starts netfault on two free ports in front of o's server (nf's paths
 * set); 0, -EAGAIN when it could not listen (try again), -ETIMEDOUT (or
 * *stop set) when it did not start, or a negative errno.
 */
int nf_start(struct nf *nf, const struct xopts *o, volatile sig_atomic_t *stop);
/* Stops it by its pid (SIGTERM) and reaps it. */
void nf_stop(struct nf *nf);
/* One request on the control socket: 0 when the answer (in ans) is ok. */
int nf_ctl(const struct nf *nf, const char *req, char *ans, size_t len);
/* The number of "key": in a JSON answer, -1 if none. */
/*
 * Adds a random rule (the rule in rule), removing the oldest one past
 * NF_MAX_RULES; 0, or -1 with netfault's answer in ans.
 */
int nf_add_random(struct nf *nf, char *rule, size_t rlen, char *ans,
		  size_t alen);
/* Removes every rule. */
int nf_clear(struct nf *nf, char *ans, size_t len);

/*
 * A worker: runs its operations, then the end phases; returns its exit
 * code.  Its namespace is mnt/wK through the mount, local/wK on the
 * export, read there only beneath top (the export's root, O_PATH) as
 * sub/wK.
 */
int worker_main(const struct xopts *o, unsigned k, struct xshared *sh, int ctl,
		const char *mnt, const char *local, int top, const char *sub);

#endif
