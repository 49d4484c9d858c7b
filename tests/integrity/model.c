/*
 * The model of a file's contents under interrupted calls (exercise_i.h),
 * and the exerciser's seeded random numbers.  Pure computation: it never
 * does I/O, so the same calls always give the same model.
 */
#include "exercise_i.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t xmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t xrand_next(struct xrand *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	return xmix(r->s);
}

uint64_t xrand_below(struct xrand *r, uint64_t n)
{
	return xrand_next(r) % n;
}

uint64_t xnow_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void cand_set(struct model_cand *c, uint8_t v)
{
	c->v[0] = v;
	c->n = 1;
}

static void cand_add(struct model_cand *c, uint8_t v)
{
	if (c->n == MODEL_ANY)
		return;
	for (unsigned i = 0; i < c->n; i++)
		if (c->v[i] == v)
			return;
	if (c->n == MODEL_CAND)
		c->n = MODEL_ANY;
	else
		c->v[c->n++] = v;
}

int model_init(struct model_file *m)
{
	m->lo = m->hi = 0;
	m->c = malloc(MODEL_MAX * sizeof(*m->c));
	if (!m->c)
		return -1;
	for (size_t i = 0; i < MODEL_MAX; i++)
		cand_set(&m->c[i], 0);
	return 0;
}

void model_free(struct model_file *m)
{
	free(m->c);
	m->c = NULL;
}

void model_move(struct model_file *dst, struct model_file *src)
{
	model_free(dst);
	*dst = *src;
	src->c = NULL;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * Extending the file to end (or past it) zero-fills from its actual size:
 * the bytes in [lo, hi) that may not exist now may be 0 afterwards.  Those
 * at or past hi are already 0.
 */
static void maybe_zero_filled(struct model_file *m, uint64_t end)
{
	for (uint64_t i = m->lo; i < min64(m->hi, end); i++)
		cand_add(&m->c[i], 0);
}

void model_write_ok(struct model_file *m, uint64_t off, const uint8_t *buf,
		    size_t len)
{
	maybe_zero_filled(m, off);
	for (size_t i = 0; i < len; i++)
		cand_set(&m->c[off + i], buf[i]);
	if (off + len >= m->hi)
		m->lo = m->hi = off + len;
	else if (off + len > m->lo)
		m->lo = off + len;
}

/* Any part of it may have reached the server, and the size with it. */
void model_write_failed(struct model_file *m, uint64_t off, const uint8_t *buf,
			size_t len)
{
	maybe_zero_filled(m, off);
	for (size_t i = 0; i < len; i++)
		cand_add(&m->c[off + i], buf[i]);
	if (off + len > m->hi)
		m->hi = off + len;
}

void model_trunc_ok(struct model_file *m, uint64_t size)
{
	maybe_zero_filled(m, size);
	for (uint64_t i = size; i < m->hi; i++)
		cand_set(&m->c[i], 0);
	m->lo = m->hi = size;
}

/*
 * It happened or not: the size is either, and the bytes it would have cut
 * off either stay or come back as 0 when the file grows again.
 */
void model_trunc_failed(struct model_file *m, uint64_t size)
{
	uint64_t from = min64(m->lo, size);
	uint64_t to = m->hi > size ? m->hi : size;

	for (uint64_t i = from; i < to; i++)
		cand_add(&m->c[i], 0);
	m->lo = from;
	m->hi = to;
}

bool model_byte_ok(const struct model_file *m, uint64_t off, uint8_t v)
{
	const struct model_cand *c;

	if (off >= m->hi)
		return false;
	c = &m->c[off];
	if (c->n == MODEL_ANY)
		return true;
	for (unsigned i = 0; i < c->n; i++)
		if (c->v[i] == v)
			return true;
	return false;
}

bool model_certain(const struct model_file *m, uint64_t off)
{
	return off < m->lo && m->c[off].n == 1;
}

void model_describe(const struct model_file *m, uint64_t off, char *buf,
		    size_t len)
{
	const struct model_cand *c = &m->c[off];
	size_t used = 0;

	if (off >= m->hi) {
		snprintf(buf, len, "no byte (the file ends at most at %llu)",
			 (unsigned long long)m->hi);
		return;
	}
	if (c->n == MODEL_ANY) {
		snprintf(buf, len, "anything");
		return;
	}
	buf[0] = '\0';
	for (unsigned i = 0; i < c->n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s0x%02x",
					 i ? " or " : "", c->v[i]);
	if (off >= m->lo && used < len)
		snprintf(buf + used, len - used, " (if the file reaches it)");
}
