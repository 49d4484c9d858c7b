/*
 * netfault's command line: it owns the options, the usage text, the exit
 * status and the signals that end the proxy (SIGINT, SIGTERM: everything
 * is closed, the loop runs dry, exit 0).  It never applies a fault itself
 * and never touches a connection: proxy.c does, on the one loop this file
 * runs.  A bad option or rule exits 2 before anything listens.
 */
#include "netfault_i.h"
#include "safepath.h"

#include <uv.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVENTS_MAX 4096u
#define LISTEN_MAX 16

static const char usage_text[] =
	"NAME\n"
	"    netfault - an RPC-aware fault proxy for ONC RPC over TCP\n"
	"\n"
	"SYNOPSIS\n"
	"    netfault --listen LOCALPORT=HOST:PORT [--listen ...]\n"
	"             [--rule RULE]... [--control PATH] [--log FILE]\n"
	"             [--seed N]\n"
	"    netfault --help | --version\n"
	"\n"
	"DESCRIPTION\n"
	"    Forwards every connection accepted on 127.0.0.1:LOCALPORT to\n"
	"    HOST:PORT (a new upstream connection for each), parses the ONC\n"
	"    RPC records going each way (calls and replies, matched by XID)\n"
	"    and applies the faults the rules ask for to chosen records or\n"
	"    to whole streams.  Once every listener listens it prints\n"
	"    'netfault: listening 127.0.0.1:P -> HOST:PORT' on stderr, one\n"
	"    line per listener.  Every fault applied is logged with its time,\n"
	"    connection, rule id, fault, direction, XID and procedure.\n"
	"\n"
	"OPTIONS\n"
	"    -l, --listen LOCALPORT=HOST:PORT\n"
	"        Listen on 127.0.0.1:LOCALPORT and forward to HOST:PORT (an\n"
	"        IPv4 address or an IPv6 one in brackets).  Give it once per\n"
	"        port to proxy (NFS and MOUNT, say); at least once.\n"
	"    -r, --rule RULE\n"
	"        Apply RULE from the start; rules get ids 1, 2... in order.\n"
	"    -c, --control PATH\n"
	"        Serve the control socket at PATH (mode 0600) for\n"
	"        netfault-ctl: add, clear, list, stats, events.\n"
	"    -o, --log FILE\n"
	"        Append the log of faults to FILE instead of stderr; as root\n"
	"        never through a symbolic link anywhere on its path, every\n"
	"        directory root's or the invoking user's and writable by\n"
	"        nobody else unless sticky.\n"
	"    -s, --seed N\n"
	"        The seed of every rule that draws random numbers (prob=, a\n"
	"        delay's jitter) and gives no seed= of its own.\n"
	"    -h, --help\n"
	"        Print this text and exit.\n"
	"    -V, --version\n"
	"        Print the version and exit.\n"
	"\n"
	"RULES\n"
	"    FAULT [ARG...] [KEY=VALUE...]   (netfault/RULES.md has it all)\n"
	"    record faults: delay MS [JITTER_MS], drop, duplicate, reorder N,\n"
	"        reset [after=BYTES], slice BYTES,\n"
	"        corrupt [header|body] [bytes=N], short-read BYTES\n"
	"    stream faults: stall, throttle KIBPS, blackhole, refuse,\n"
	"        close-after BYTES\n"
	"    targets: dir=call|reply prog=NAME proc=NAME xid=X nth=N\n"
	"        count=N|all prob=P seed=N\n"
	"    schedules: from=DUR until=DUR at=DUR after=N:PROC[:DIR]\n"
	"        for=DUR flip=ON/OFF   (DUR: 500ms, 2s, 1m)\n"
	"\n"
	"EXAMPLES\n"
	"    Delay every READ reply by 50 ms:\n"
	"        netfault --listen 2049=10.0.0.5:2049 \\\n"
	"                 --listen 20048=10.0.0.5:20048 \\\n"
	"                 --rule 'delay 50 dir=reply proc=READ'\n"
	"    Lose the reply to the first REMOVE, stall replies at 2 s for 5 s:\n"
	"        netfault --listen 12049=127.0.0.1:2049 \\\n"
	"                 --rule 'drop proc=REMOVE dir=reply nth=1' \\\n"
	"                 --rule 'stall dir=reply at=2s for=5s'\n"
	"\n"
	"EXIT STATUS\n"
	"    0   ended by SIGINT or SIGTERM, or --help, --version\n"
	"    1   a listener, the log or the control socket could not start\n"
	"    2   a bad option or rule\n";

struct listen_arg {
	unsigned port, up_port;
	char host[64];
};

static struct nf_proxy *proxy;
static struct nf_control *control;
static uv_signal_t sig[2];

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "netfault: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'netfault --help'.\n");
	return 2;
}

static bool parse_port(const char *s, size_t len, unsigned *port)
{
	unsigned long v = 0;

	if (len == 0 || len > 5)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*port = (unsigned)v;
	return true;
}

/* LOCALPORT=HOST:PORT, HOST an IPv4 address or [an IPv6 one]. */
static bool parse_listen(const char *arg, struct listen_arg *l)
{
	const char *eq = strchr(arg, '='), *host, *colon;
	size_t hlen;

	if (!eq || !parse_port(arg, (size_t)(eq - arg), &l->port))
		return false;
	host = eq + 1;
	colon = strrchr(host, ':');
	if (!colon || !parse_port(colon + 1, strlen(colon + 1), &l->up_port))
		return false;
	hlen = (size_t)(colon - host);
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
		host++;
		hlen -= 2;
	}
	if (hlen == 0 || hlen >= sizeof(l->host))
		return false;
	memcpy(l->host, host, hlen);
	l->host[hlen] = '\0';
	return true;
}

/* A rule with the default seed when it takes one and names none. */
static int add_rule(struct nf_ruleset *rs, const char *text, const char *seed,
		    char *err, size_t errlen)
{
	unsigned id;

	if (seed && !strstr(text, "seed=")) {
		char buf[NF_RULE_TEXT_MAX * 2];
		struct nf_rule *r;

		snprintf(buf, sizeof(buf), "%s seed=%s", text, seed);
		if (nf_rule_parse(buf, &r, err, errlen) == 0) {
			nf_rule_free(r);
			return nf_ruleset_add(rs, buf, &id, err, errlen);
		}
	}
	return nf_ruleset_add(rs, text, &id, err, errlen);
}

static void on_signal(uv_signal_t *s, int signum)
{
	(void)signum;
	(void)s;
	nf_proxy_close(proxy);
	if (control)
		nf_control_stop(control);
	control = NULL;
	for (int i = 0; i < 2; i++)
		uv_close((uv_handle_t *)&sig[i], NULL);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "rule", required_argument, NULL, 'r' },
		{ "control", required_argument, NULL, 'c' },
		{ "log", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct listen_arg listens[LISTEN_MAX];
	const char *rules[256], *control_path = NULL, *log_path = NULL;
	const char *seed = NULL;
	unsigned nlisten = 0, nrules = 0;
	struct nf_ruleset *rs;
	struct nf_events *ev;
	char err[1024];
	int c, rc, log_fd = STDERR_FILENO, status = 0;
	uv_loop_t loop;

	while ((c = getopt_long(argc, argv, "l:r:c:o:s:hV", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'l':
			if (nlisten == LISTEN_MAX)
				return usage_error("too many --listen (%s)",
						   optarg);
			if (!parse_listen(optarg, &listens[nlisten++]))
				return usage_error("bad --listen '%s': want "
						   "LOCALPORT=HOST:PORT",
						   optarg);
			break;
		case 'r':
			if (nrules == ARRAY_SIZE(rules))
				return usage_error("too many --rule (%s)",
						   optarg);
			rules[nrules++] = optarg;
			break;
		case 'c':
			control_path = optarg;
			break;
		case 'o':
			log_path = optarg;
			break;
		case 's': {
			char *end;

			errno = 0;
			(void)strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-')
				return usage_error("bad --seed '%s'", optarg);
			seed = optarg;
			break;
		}
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("netfault %s\n", INTRFS_VERSION);
			return 0;
		default:
			fprintf(stderr, "Try 'netfault --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (nlisten == 0)
		return usage_error("%s", "no --listen given");

	rs = nf_ruleset_new();
	ev = nf_events_new(EVENTS_MAX);
	if (!rs || !ev) {
		fprintf(stderr, "netfault: out of memory\n");
		status = 1;
		goto out_free;
	}
	for (unsigned i = 0; i < nrules; i++) {
		rc = add_rule(rs, rules[i], seed, err, sizeof(err));
		if (rc) {
			if (rc == -EINVAL)
				fprintf(stderr, "netfault: %s\n", err);
			else
				fprintf(stderr, "netfault: rule '%s': %s\n",
					rules[i], strerror(-rc));
			status = 2;
			goto out_free;
		}
	}
	if (log_path) {
		/*
		 * It may run as root: safepath's walk and checks (no link
		 * anywhere on the path; in the invoking user's directory,
		 * as that user).
		 */
		char msg[SAFEPATH_MSG_MAX];

		log_fd = safepath_open(log_path, O_WRONLY | O_CREAT | O_APPEND,
				       0644, msg, sizeof(msg));
		if (log_fd < 0) {
			fprintf(stderr, "netfault: --log %s\n", msg);
			status = 1;
			goto out_free;
		}
	}

	rc = uv_loop_init(&loop);
	if (rc) {
		fprintf(stderr, "netfault: %s\n", uv_strerror(rc));
		status = 1;
		goto out_log;
	}
	rc = nf_proxy_new(&loop, rs, ev, log_fd, &proxy);
	if (rc) {
		fprintf(stderr, "netfault: %s\n", uv_strerror(rc));
		status = 1;
		goto out_loop;
	}
	for (unsigned i = 0; i < nlisten && !status; i++) {
		struct listen_arg *l = &listens[i];

		rc = nf_proxy_listen(proxy, l->port, l->host, l->up_port, NULL);
		if (rc) {
			fprintf(stderr,
				"netfault: cannot listen on 127.0.0.1:%u for "
				"%s:%u: %s\n",
				l->port, l->host, l->up_port, uv_strerror(rc));
			status = 1;
		}
	}
	if (!status && control_path) {
		char msg[SAFEPATH_MSG_MAX];

		rc = nf_control_start(&loop, control_path, rs, ev,
				      nf_proxy_stats(proxy), &control, msg,
				      sizeof(msg));
		if (rc) {
			fprintf(stderr, "netfault: control socket %s\n", msg);
			control = NULL;
			status = 1;
		}
	}
	if (status) {
		nf_proxy_close(proxy);
	} else {
		for (int i = 0; i < 2; i++) {
			uv_signal_init(&loop, &sig[i]);
			uv_signal_start(&sig[i], on_signal,
					i ? SIGTERM : SIGINT);
		}
		for (unsigned i = 0; i < nlisten; i++)
			fprintf(stderr,
				"netfault: listening 127.0.0.1:%u -> %s:%u\n",
				listens[i].port, listens[i].host,
				listens[i].up_port);
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	nf_proxy_free(proxy);
out_loop:
	uv_loop_close(&loop);
out_log:
	if (log_path)
		close(log_fd);
out_free:
	nf_events_free(ev);
	nf_ruleset_free(rs);
	return status;
}
