/*
 * The test rigs' network side, one copy for the mount tests, the scenario
 * runner and the integrity exerciser: netfault's control socket
 * (netfault/CONTROL.md), partitions as nftables tables, and the numbers of
 * the JSON answers both give.  Nothing here asserts: each call returns an
 * error with a message, and its caller decides.
 */
#ifndef INTRFS_TEST_NETRIG_H
#define INTRFS_TEST_NETRIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One request on netfault's control socket sock, its one-line answer in
 * ans (the newline dropped), within deadline_ms.  0 when the answer is
 * {"ok":true...}; -1 otherwise, ans then holding the answer or why there
 * was none.
 */
int netrig_ask(const char *sock, const char *req, char *ans, size_t len,
	       int deadline_ms);

/*
 * The number after "key": in a JSON text (the first such key); false when
 * there is none.
 */
bool netrig_json_number(const char *json, const char *key, long long *out);
/* The same number, or -1 when there is none (for counts and ids). */
long netrig_json_long(const char *json, const char *key);

/*
 * A partition: an nftables table named PREFIX_PID (tests/run deletes the
 * tables of its prefixes whatever happened to the process), on TCP port
 * port of the loopback.  DROP: every packet to or from it is dropped;
 * REJECT: a connection to it gets an RST (counted as the "syns" counter),
 * the server's packets are dropped but for RSTs.
 */
enum netrig_cut { NETRIG_DROP, NETRIG_REJECT };
struct netrig_partition {
	char table[64];
	bool loaded;
};
int netrig_partition(struct netrig_partition *p, const char *prefix,
		     unsigned port, enum netrig_cut cut, char *err, size_t len);
/* Drops the one flow between local_port and remote_port, both ways. */
int netrig_block_flow(struct netrig_partition *p, const char *prefix,
		      unsigned local_port, unsigned remote_port, char *err,
		      size_t len);
/* The connection attempts a REJECT partition has turned away. */
int netrig_partition_syns(const struct netrig_partition *p, uint64_t *n,
			  char *err, size_t len);
/* Lifts p (nothing when none is loaded): 0, or -1 when nft failed. */
int netrig_heal(struct netrig_partition *p);

#endif
