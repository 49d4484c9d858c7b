/*
 * The control endpoint's address, shared by the daemon (control.c) and
 * intrfsctl: a Unix socket per mount in CTL_DIR (not the private
 * directory of silly.c's journals: anyone may connect, to be told whether
 * they may ask), named after a hash of the mount point's canonical path.
 * A socket a dead daemon left is replaced at the next mount there; a live
 * one (a mount stacked on the same point) is left alone, and the new mount
 * goes without an endpoint.
 *
 * The protocol: one request line ("tasks", "stats", "policy percall", each
 * with " table" appended for a table instead of JSON); the answer is
 * "ok\n" or "error\n" and then the text, and the daemon closes.
 */
#ifndef INTRFS_CTL_H
#define INTRFS_CTL_H

#include <stdint.h>
#include <stdio.h>

#define CTL_DIR "/run/intrfs-ctl"
/* Longest request line the daemon reads. */
#define CTL_LINE_MAX 512

static inline void ctl_path(const char *mountpoint, char *buf, size_t len)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)mountpoint; *p;
	     p++)
		h = (h ^ *p) * 1099511628211ull;
	snprintf(buf, len, CTL_DIR "/ctl-%016llx.sock", (unsigned long long)h);
}

#endif
