/*
 * I/O buffers: the data of writes kept until committed, and of reads.  They
 * are up to 1 MiB each and come and go thousands of times a second, from
 * every thread: left to malloc they scatter over its per-thread arenas,
 * which keep what is freed, and the daemon's resident size grows with the
 * I/O done rather than with the I/O in flight.  So buffers of POOL_MIN and
 * more are slabs mapped once and reused from a free list while I/O goes on
 * (no page faults, no zeroing); a slab idle for IDLE_NS is unmapped by the
 * trimmer thread, down to IDLE_KEEP of them.  Smaller buffers are
 * malloc's.  Every buffer starts with a header that says which it is.
 *
 * Each mount has its pool (struct bufpool in struct intrfs); a buffer's
 * header names the pool it came from, so that buf_free() needs no more.
 * It never waits for a buffer: one is mapped when none is idle.  The free
 * list (newest first) and the trimmer's state are protected by the pool's
 * lock, a leaf (taken under a node's wb.lock by buf_free()), never held
 * across a map or an unmap.
 */
#include "fusefs_i.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define POOL_MIN (64u * 1024)
/* A slab holds the largest write or read with its header. */
#define SLAB_SIZE (NC_MAX_IO + 4096u)
#define IDLE_NS 1000000000ull
#define IDLE_KEEP 16

struct buf_hdr {
	struct buf_hdr *next; /* on the free list */
	struct bufpool *pool;
	size_t size; /* of the allocation, header included */
	uint64_t idle_since; /* on the free list: when it got there */
	bool slab;
	/* The data follows, aligned as malloc aligns. */
} __attribute__((aligned(16)));

void *buf_alloc(struct bufpool *bp, size_t len)
{
	struct buf_hdr *h = NULL;

	if (len > SLAB_SIZE - sizeof(*h) || len < POOL_MIN) {
		h = malloc(sizeof(*h) + len);
		if (!h)
			return NULL;
		h->size = sizeof(*h) + len;
		h->slab = false;
	} else {
		pthread_mutex_lock(&bp->lock);
		if (bp->idle) {
			h = bp->idle;
			bp->idle = h->next;
		}
		pthread_mutex_unlock(&bp->lock);
		if (!h) {
			void *p = mmap(NULL, SLAB_SIZE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				return NULL;
			h = p;
			h->size = SLAB_SIZE;
			h->slab = true;
		}
	}
	h->pool = bp;
	/* Relaxed: gauges for write-behind and stats, nothing orders on them. */
	atomic_max_u64(&bp->busy_peak,
		       atomic_fetch_add_explicit(&bp->busy_bytes, h->size,
						 memory_order_relaxed) +
			       h->size);
	return h + 1;
}

void buf_free(void *p)
{
	struct buf_hdr *h;
	struct bufpool *bp;

	if (!p)
		return;
	h = (struct buf_hdr *)p - 1;
	bp = h->pool;
	atomic_fetch_sub_explicit(&bp->busy_bytes, h->size,
				  memory_order_relaxed);
	if (!h->slab) {
		free(h);
		return;
	}
	h->idle_since = region_now_ns();
	pthread_mutex_lock(&bp->lock);
	h->next = bp->idle;
	bp->idle = h;
	pthread_mutex_unlock(&bp->lock);
}

size_t buf_busy_bytes(const struct bufpool *bp)
{
	return atomic_load_explicit(&bp->busy_bytes, memory_order_relaxed);
}

size_t buf_busy_peak(const struct bufpool *bp)
{
	return (size_t)atomic_load_explicit(&bp->busy_peak,
					    memory_order_relaxed);
}

/* Unmaps the slabs idle too long, keeping the IDLE_KEEP newest. */
static void trim(struct bufpool *bp, uint64_t older_than)
{
	struct buf_hdr **p = &bp->idle, *gone = NULL;
	unsigned kept = 0;

	pthread_mutex_lock(&bp->lock);
	while (*p) {
		struct buf_hdr *h = *p;

		if (kept >= IDLE_KEEP && h->idle_since <= older_than) {
			/* Newest first: the rest are older still. */
			gone = h;
			*p = NULL;
			break;
		}
		kept++;
		p = &h->next;
	}
	pthread_mutex_unlock(&bp->lock);
	while (gone) {
		struct buf_hdr *next = gone->next;

		munmap(gone, SLAB_SIZE);
		gone = next;
	}
}

static void *trimmer_main(void *arg)
{
	struct bufpool *bp = arg;

	pthread_mutex_lock(&bp->lock);
	while (!bp->trimmer_stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&bp->cond, &bp->lock, &ts);
		if (bp->trimmer_stop)
			break;
		pthread_mutex_unlock(&bp->lock);
		trim(bp, region_now_ns() - IDLE_NS);
		pthread_mutex_lock(&bp->lock);
	}
	pthread_mutex_unlock(&bp->lock);
	return NULL;
}

int bufpool_start(struct bufpool *bp)
{
	int rc;

	pthread_mutex_init(&bp->lock, NULL);
	pthread_cond_init(&bp->cond, NULL);
	bp->idle = NULL;
	bp->trimmer_stop = false;
	atomic_init(&bp->busy_bytes, 0);
	atomic_init(&bp->busy_peak, 0);
	rc = -pthread_create(&bp->trimmer, NULL, trimmer_main, bp);
	bp->trimmer_running = rc == 0;
	bp->ready = true;
	return rc;
}

void bufpool_stop(struct bufpool *bp)
{
	if (!bp->ready)
		return;
	if (bp->trimmer_running) {
		pthread_mutex_lock(&bp->lock);
		bp->trimmer_stop = true;
		pthread_cond_signal(&bp->cond);
		pthread_mutex_unlock(&bp->lock);
		pthread_join(bp->trimmer, NULL);
		bp->trimmer_running = false;
	}
	pthread_mutex_lock(&bp->lock);
	while (bp->idle) {
		struct buf_hdr *h = bp->idle;

		bp->idle = h->next;
		munmap(h, SLAB_SIZE);
	}
	pthread_mutex_unlock(&bp->lock);
}
