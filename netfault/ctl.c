/*
 * netfault-ctl: the client of netfault's control socket.  It sends one
 * request line, prints the one-line JSON answer, and exits 0 when the
 * answer says ok, 1 when it does not (the error goes to stderr too) or
 * the socket cannot be reached, 2 on a usage error.  `events --follow`
 * asks for new events every 200 ms and prints each as a JSON line until
 * SIGINT or SIGTERM.
 *
 * This file owns the command line and the client side of the protocol
 * (netfault/CONTROL.md).  It links nothing of the proxy and never changes
 * anything but through the socket; it never waits for an answer forever
 * (ANSWER_TIMEOUT_MS), and never holds more than ANSWER_MAX bytes.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/run/netfault.sock"
#define ANSWER_TIMEOUT_MS 10000
#define ANSWER_MAX (64u << 20)
#define FOLLOW_MS 200
/* What the server accepts on one line (control.c's CTL_LINE_MAX). */
#define REQUEST_MAX 4096

#define PROG "netfault-ctl"
static const char *prog = PROG;
static volatile sig_atomic_t stop;

static void usage(FILE *f)
{
	fputs("Usage: " PROG " [--socket PATH] COMMAND [ARG...]\n"
	      "\n"
	      "Adds and removes the fault rules of a running netfault, and "
	      "reads its\n"
	      "counters and the log of the faults it applied, through its "
	      "control socket.\n"
	      "Every answer is one line of JSON on stdout; a command is "
	      "answered only once\n"
	      "netfault applied it.\n"
	      "\n"
	      "Commands:\n"
	      "  add RULE...           add a rule (the arguments joined by "
	      "blanks; the\n"
	      "                        language is in netfault/RULES.md); "
	      "prints its id:\n"
	      "                        {\"ok\":true,\"id\":3}\n"
	      "  clear [ID]            remove rule ID, or every rule; prints "
	      "how many went:\n"
	      "                        {\"ok\":true,\"removed\":1}\n"
	      "  list                  the rules in force, in canonical form, "
	      "with their\n"
	      "                        counters (records matched, faults "
	      "applied)\n"
	      "  stats                 netfault's counters (connections, "
	      "bytes, records,\n"
	      "                        streams not parsed, faults) and the "
	      "rules'\n"
	      "  events [AFTER]        the faults applied whose sequence "
	      "number is above\n"
	      "                        AFTER (default 0: every one still "
	      "kept), each with\n"
	      "                        its time, rule, connection, "
	      "direction, XID and\n"
	      "                        procedure\n"
	      "  events --follow [AFTER]\n"
	      "                        the same, then every new event as it "
	      "comes (asked\n"
	      "                        every 200 ms), one JSON object a line, "
	      "until\n"
	      "                        interrupted (Ctrl-C)\n"
	      "\n"
	      "Options:\n"
	      "  -s, --socket PATH     the control socket (default: "
	      "$NETFAULT_CONTROL,\n"
	      "                        else " DEFAULT_SOCKET ")\n"
	      "  -h, --help            print this help and exit\n"
	      "  -V, --version         print the version and exit\n"
	      "\n"
	      "Exit status: 0 the answer says ok; 1 it does not (the error "
	      "is printed on\n"
	      "stderr too), or the socket cannot be reached; 2 usage "
	      "error.\n"
	      "\n"
	      "The socket is made with mode 0600 and refuses other users: "
	      "run " PROG "\n"
	      "as the user netfault runs as.\n"
	      "\n"
	      "Examples:\n"
	      "  " PROG " add delay 200 proc=WRITE dir=reply\n"
	      "  " PROG " add drop nth=3 proc=COMMIT\n"
	      "  " PROG " list\n"
	      "  " PROG " clear 2\n"
	      "  NETFAULT_CONTROL=/tmp/nf.sock " PROG " events --follow\n",
	      f);
}

static int __attribute__((format(printf, 1, 2)))
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
	return 2;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int connect_to(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "%s: cannot connect to %s: %s\n", prog, path,
			strerror(ENAMETOOLONG));
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		fprintf(stderr, "%s: cannot connect to %s: %s%s\n", prog, path,
			strerror(errno),
			errno == ENOENT || errno == ECONNREFUSED ?
				" (is netfault running with this control "
				"socket?)" :
				"");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int send_line(int fd, const char *line)
{
	size_t len = strlen(line), off = 0;
	ssize_t n;

	while (off < len) {
		n = send(fd, line + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		/* A refused peer is told why before the socket closes:
		 * the answer is read even when the send failed. */
		if (n < 0)
			return errno == EPIPE || errno == ECONNRESET ? 0 :
								       -errno;
		off += (size_t)n;
	}
	return 0;
}

/*
 * Reads one answer line (newline dropped) into *ans; *have holds the
 * bytes already read past the last line.  Returns 0, or -errno
 * (-ETIMEDOUT, -ECONNRESET for a close before a whole line, -EINTR when
 * interrupted, -EMSGSIZE).
 */
struct reader {
	char *buf;
	size_t len, cap;
};

static int read_line(int fd, struct reader *r, char **line)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char *nl, *p;
	ssize_t n;
	int rc;

	for (;;) {
		nl = r->len ? memchr(r->buf, '\n', r->len) : NULL;
		if (nl) {
			*nl = '\0';
			*line = r->buf;
			return 0;
		}
		if (r->len + 4096 + 1 > r->cap) {
			if (r->cap >= ANSWER_MAX)
				return -EMSGSIZE;
			p = realloc(r->buf, r->cap ? 2 * r->cap : 65536);
			if (!p)
				return -ENOMEM;
			r->buf = p;
			r->cap = r->cap ? 2 * r->cap : 65536;
		}
		rc = poll(&pfd, 1, ANSWER_TIMEOUT_MS);
		if (rc < 0)
			return stop ? -EINTR : (errno == EINTR ? 0 : -errno);
		if (rc == 0)
			return -ETIMEDOUT;
		n = recv(fd, r->buf + r->len, r->cap - r->len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		r->len += (size_t)n;
	}
}

/* Forgets the line read_line() returned last. */
static void consume_line(struct reader *r, const char *line)
{
	size_t used = strlen(line) + 1;

	memmove(r->buf, r->buf + used, r->len - used);
	r->len -= used;
}

static bool answer_ok(const char *ans)
{
	return strncmp(ans, "{\"ok\":true", 10) == 0;
}

/* Prints the "error" string of an answer, unescaped, on stderr. */
static void print_error(const char *ans)
{
	const char *p = strstr(ans, "\"error\":\"");
	unsigned c;

	fprintf(stderr, "%s: ", prog);
	if (!p) {
		fprintf(stderr, "%s\n", ans);
		return;
	}
	for (p += 9; *p && *p != '"'; p++) {
		if (*p != '\\') {
			fputc(*p, stderr);
			continue;
		}
		p++;
		if (*p == 'n')
			fputc('\n', stderr);
		else if (*p == 't')
			fputc('\t', stderr);
		else if (*p == 'r')
			fputc('\r', stderr);
		else if (*p == 'u' && sscanf(p + 1, "%4x", &c) == 1) {
			fputc(c < 0x80 ? (int)c : '?', stderr);
			p += 4;
		} else if (*p)
			fputc(*p, stderr);
		else
			break;
	}
	fputc('\n', stderr);
}

/*
 * Prints each object of the answer's "events" array on a line of its own
 * and returns the highest seq printed (after if none was).
 */
static uint64_t print_events(const char *ans, uint64_t after)
{
	const char *p = strstr(ans, "\"events\":["), *start = NULL;
	bool in_str = false;
	uint64_t seq;
	int depth = 0;

	if (!p)
		return after;
	for (p += 10; *p; p++) {
		if (in_str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"') {
			in_str = true;
		} else if (*p == '{') {
			if (depth++ == 0)
				start = p;
		} else if (*p == '}' && depth > 0) {
			if (--depth > 0)
				continue;
			printf("%.*s\n", (int)(p - start + 1), start);
			/* netfault writes seq first in every event. */
			if (!strncmp(start, "{\"seq\":", 7)) {
				seq = strtoull(start + 7, NULL, 10);
				if (seq > after)
					after = seq;
			}
		} else if (*p == ']' && depth == 0) {
			break;
		}
	}
	fflush(stdout);
	return after;
}

static int follow(int fd, const char *path, uint64_t after)
{
	struct reader r = { 0 };
	char req[64], *ans;
	int rc;

	while (!stop) {
		snprintf(req, sizeof(req), "events %llu\n",
			 (unsigned long long)after);
		rc = send_line(fd, req);
		if (rc == 0)
			rc = read_line(fd, &r, &ans);
		if (rc == -EINTR || stop)
			break;
		if (rc) {
			fprintf(stderr, "%s: %s: %s\n", prog, path,
				rc == -ECONNRESET ? "netfault closed the "
						    "connection" :
						    strerror(-rc));
			free(r.buf);
			return 1;
		}
		if (!answer_ok(ans)) {
			puts(ans);
			print_error(ans);
			free(r.buf);
			return 1;
		}
		after = print_events(ans, after);
		consume_line(&r, ans);
		/* poll() as a sleep that a signal ends at once. */
		poll(NULL, 0, FOLLOW_MS);
	}
	free(r.buf);
	return 0;
}

static bool parse_number(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !*end && errno == 0;
}

int main(int argc, char **argv)
{
	const char *path = getenv("NETFAULT_CONTROL");
	const char *cmd;
	char req[REQUEST_MAX + 2], *ans;
	struct reader r = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	bool follow_mode = false;
	uint64_t after = 0, v;
	size_t len;
	int i, fd, rc;

	if (!path || !*path)
		path = DEFAULT_SOCKET;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-V") ||
			   !strcmp(argv[i], "--version")) {
			printf("%s %s\n", prog, INTRFS_VERSION);
			return 0;
		} else if (!strcmp(argv[i], "-s") ||
			   !strcmp(argv[i], "--socket")) {
			if (++i == argc)
				return usage_error("%s needs a path",
						   argv[i - 1]);
			path = argv[i];
		} else if (!strncmp(argv[i], "--socket=", 9)) {
			path = argv[i] + 9;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			return usage_error("unknown option '%s'", argv[i]);
		}
	}
	if (i == argc)
		return usage_error("no command given");
	if (!*path)
		return usage_error("the socket path is empty");
	cmd = argv[i++];

	if (!strcmp(cmd, "add")) {
		if (i == argc)
			return usage_error("add needs a rule");
		len = (size_t)snprintf(req, sizeof(req), "add");
		for (; i < argc; i++) {
			if (strpbrk(argv[i], "\n\r"))
				return usage_error("a rule is one line");
			len += (size_t)snprintf(req + len, sizeof(req) - len,
						" %s", argv[i]);
			if (len >= REQUEST_MAX)
				return usage_error("the rule is longer than "
						   "%d bytes",
						   REQUEST_MAX - 4);
		}
	} else if (!strcmp(cmd, "clear")) {
		if (argc - i > 1)
			return usage_error("clear takes at most one id");
		if (i < argc &&
		    (!parse_number(argv[i], &v) || v == 0 || v > UINT32_MAX))
			return usage_error("'%s' is not a rule id", argv[i]);
		snprintf(req, sizeof(req), "clear%s%s", i < argc ? " " : "",
			 i < argc ? argv[i] : "");
	} else if (!strcmp(cmd, "list") || !strcmp(cmd, "stats")) {
		if (i < argc)
			return usage_error("%s takes no argument", cmd);
		snprintf(req, sizeof(req), "%s", cmd);
	} else if (!strcmp(cmd, "events")) {
		v = 0; /* AFTER given */
		for (; i < argc; i++) {
			if (!strcmp(argv[i], "--follow") ||
			    !strcmp(argv[i], "-f"))
				follow_mode = true;
			else if (!v && parse_number(argv[i], &after))
				v = 1;
			else
				return usage_error("events: unexpected '%s'",
						   argv[i]);
		}
		snprintf(req, sizeof(req), "events %llu",
			 (unsigned long long)after);
	} else {
		return usage_error("unknown command '%s'", cmd);
	}
	strcat(req, "\n");

	fd = connect_to(path);
	if (fd < 0)
		return 1;
	if (follow_mode) {
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		rc = follow(fd, path, after);
		close(fd);
		return rc;
	}
	rc = send_line(fd, req);
	if (rc == 0)
		rc = read_line(fd, &r, &ans);
	close(fd);
	if (rc) {
		fprintf(stderr, "%s: %s: %s\n", prog, path,
			rc == -ECONNRESET ? "netfault closed the connection "
					    "without an answer" :
					    strerror(-rc));
		free(r.buf);
		return 1;
	}
	puts(ans);
	rc = answer_ok(ans) ? 0 : 1;
	if (rc)
		print_error(ans);
	free(r.buf);
	return rc;
}
