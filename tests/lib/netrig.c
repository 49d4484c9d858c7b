/*
 * The test rigs' network side (netrig.h): netfault's control client,
 * nftables partitions, JSON numbers.
 */
#include "netrig.h"

#include "mntrig.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int netrig_ask(const char *sock, const char *req, char *ans, size_t len,
	       int deadline_ms)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int64_t end = (int64_t)mntrig_now_ms() + deadline_ms;
	size_t got = 0;
	int fd;

	ans[0] = '\0';
	if (strlen(sock) >= sizeof(a.sun_path)) {
		snprintf(ans, len, "netfault's socket path is too long: %s",
			 sock);
		return -1;
	}
	memcpy(a.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		snprintf(ans, len, "cannot reach netfault at %s: %s", sock,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (dprintf(fd, "%s\n", req) < 0) {
		snprintf(ans, len, "write to netfault: %s", strerror(errno));
		close(fd);
		return -1;
	}
	while (got < len - 1 && !memchr(ans, '\n', got)) {
		struct pollfd p = { fd, POLLIN, 0 };
		int left = (int)(end - (int64_t)mntrig_now_ms());
		ssize_t n;

		if (left <= 0)
			break;
		n = poll(&p, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != 1)
			break;
		n = read(fd, ans + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		ans[got] = '\0';
	}
	close(fd);
	ans[strcspn(ans, "\n")] = '\0';
	return strncmp(ans, "{\"ok\":true", 10) == 0 ? 0 : -1;
}

bool netrig_json_number(const char *json, const char *key, long long *out)
{
	char needle[96];
	const char *p;
	char *end;

	snprintf(needle, sizeof(needle), "\"%s\":", key);
	p = strstr(json, needle);
	if (!p)
		return false;
	p += strlen(needle);
	*out = strtoll(p, &end, 10);
	return end != p;
}

long netrig_json_long(const char *json, const char *key)
{
	long long n;

	return netrig_json_number(json, key, &n) ? (long)n : -1;
}

static int load(struct netrig_partition *p, const char *prefix,
		const char *rules, char *err, size_t len)
{
	char cmd[2048];

	if (p->loaded && netrig_heal(p) != 0) {
		snprintf(err, len, "could not lift the partition before");
		return -1;
	}
	snprintf(p->table, sizeof(p->table), "%s_%d", prefix, (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "nft -f - <<'EOF'\n"
		 "table inet %s {\n%s}\n"
		 "EOF",
		 p->table, rules);
	/* Loaded or not, a heal deletes it: a table half there goes too. */
	p->loaded = true;
	if (system(cmd) != 0) {
		snprintf(err, len,
			 "nft could not load the partition (is nftables "
			 "installed? tests/run installs it)");
		return -1;
	}
	return 0;
}

/*
 * Every packet crosses the input hook on loopback, so one chain there
 * does a REJECT: the client's packets get an RST; the server's are
 * dropped but for RSTs, among them the ones the reject sends back to the
 * client with the server's port as their source.  The counter sees the
 * client's connection attempts (SYN without ACK).
 */
int netrig_partition(struct netrig_partition *p, const char *prefix,
		     unsigned port, enum netrig_cut cut, char *err, size_t len)
{
	char rules[768];

	if (cut == NETRIG_REJECT)
		snprintf(rules, sizeof(rules),
			 "  counter syns { }\n"
			 "  chain in { type filter hook input priority -10; "
			 "tcp dport %u tcp flags & (syn | ack) == syn "
			 "counter name \"syns\"; "
			 "tcp dport %u reject with tcp reset; "
			 "tcp sport %u tcp flags & rst == rst accept; "
			 "tcp sport %u drop; }\n",
			 port, port, port, port);
	else
		snprintf(rules, sizeof(rules),
			 "  chain in { type filter hook input priority -10; "
			 "tcp dport %u drop; tcp sport %u drop; }\n"
			 "  chain out { type filter hook output priority -10; "
			 "tcp dport %u drop; tcp sport %u drop; }\n",
			 port, port, port, port);
	return load(p, prefix, rules, err, len);
}

int netrig_block_flow(struct netrig_partition *p, const char *prefix,
		      unsigned local_port, unsigned remote_port, char *err,
		      size_t len)
{
	char rules[512];

	snprintf(rules, sizeof(rules),
		 "  chain in { type filter hook input priority -10; "
		 "tcp sport %u tcp dport %u drop; }\n"
		 "  chain out { type filter hook output priority -10; "
		 "tcp sport %u tcp dport %u drop; }\n",
		 remote_port, local_port, local_port, remote_port);
	return load(p, prefix, rules, err, len);
}

int netrig_partition_syns(const struct netrig_partition *p, uint64_t *n,
			  char *err, size_t len)
{
	char cmd[256], line[256];
	bool found = false;
	FILE *f;

	if (!p->loaded) {
		snprintf(err, len,
			 "no partition to count connection attempts of");
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "nft list counter inet %s syns", p->table);
	f = popen(cmd, "r");
	if (!f) {
		snprintf(err, len, "popen %s: %s", cmd, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " packets %" SCNu64, n) == 1)
			found = true;
	if (pclose(f) != 0 || !found) {
		snprintf(err, len, "%s: no count (not a reject partition?)",
			 cmd);
		return -1;
	}
	return 0;
}

int netrig_heal(struct netrig_partition *p)
{
	char cmd[128];

	if (!p->loaded)
		return 0;
	p->loaded = false;
	snprintf(cmd, sizeof(cmd), "nft delete table inet %s 2>/dev/null",
		 p->table);
	return system(cmd) == 0 ? 0 : -1;
}
