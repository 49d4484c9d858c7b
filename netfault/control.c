/*
 * netfault's control socket: a Unix stream socket on the proxy's libuv
 * loop through which netfault-ctl (or anything that writes lines) adds and
 * removes rules and reads the counters and the log of faults applied.
 * netfault/CONTROL.md documents the protocol.
 *
 * This file owns the listening socket, the connections it accepted and the
 * JSON answers.  It never blocks the loop: every read and write goes
 * through libuv, and the only blocking-looking call, the probe for a live
 * server at start, is a non-blocking connect.  It trusts nobody else's
 * uid: the socket is made with mode 0600 and a peer whose uid (by
 * SO_PEERCRED) is not ours is refused with an error line before a byte of
 * its is read.  Memory is bounded per connection: a request line longer
 * than CTL_LINE_MAX is answered with an error and the connection closed,
 * and a peer that sends requests without reading the answers is no
 * longer read once CTL_QUEUE_MAX bytes of answers wait for it.  A line
 * with a NUL byte is refused whole, never read as the C string before it.
 * netfault may run as root: the socket's directory is walked by
 * safepath's rule (no link anywhere on the path, every directory root's or
 * the invoking user's) and held, and the socket is made, probed and
 * removed through that held directory, never by the path again.
 * A request is applied to the ruleset before its answer is written, so an
 * answer means "in force".  No locks: everything runs on the loop thread.
 */
#include "netfault_i.h"
#include "safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

/* The longest request line, newline excluded. */
#define CTL_LINE_MAX 4096
#define CTL_BACKLOG 16
/* Answers waiting to be written past which a peer is no longer read. */
#define CTL_QUEUE_MAX (1u << 20)
/* Events are copied out of the ring this many at a time. */
#define EVENTS_CHUNK 64

struct conn {
	uv_pipe_t pipe;
	struct nf_control *c;
	struct conn *next, **pprev;
	unsigned writes; /* answers queued and not yet written */
	bool closing; /* close once the queued answers are out */
	bool closed; /* uv_close() was called */
	bool paused; /* reading stopped until the answers drain */
	size_t len; /* bytes of the partial line in line */
	size_t rpos, rend; /* bytes of rbuf not yet looked at */
	char line[CTL_LINE_MAX + 1];
	char rbuf[CTL_LINE_MAX];
};

struct nf_control {
	uv_loop_t *loop;
	uv_pipe_t server;
	char *path; /* the socket through dirfd; NULL once removed */
	int dirfd; /* the socket's directory, held (O_PATH) */
	char *name; /* the socket's name in it */
	struct nf_ruleset *rs;
	struct nf_events *ev;
	const struct nf_stats *st;
	struct conn *conns;
	unsigned handles; /* the server and the connections not yet closed */
};

struct answer {
	uv_write_t req;
	struct conn *conn;
	size_t len;
	char data[];
};

/* A growable string for an answer; failed is sticky. */
struct sbuf {
	char *s;
	size_t len, cap;
	bool failed;
};

static void sb_grow(struct sbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 256;
	char *s;

	if (b->failed)
		return;
	while (cap < b->len + more + 1)
		cap *= 2;
	if (cap == b->cap)
		return;
	s = realloc(b->s, cap);
	if (!s) {
		b->failed = true;
		return;
	}
	b->s = s;
	b->cap = cap;
}

static void __attribute__((format(printf, 2, 3)))
sb_put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	sb_grow(b, (size_t)n);
	if (b->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* s as a JSON string, quotes included. */
/*
 * The length of the UTF-8 sequence at p (1 to 4), or 0 when it is not
 * one: a stray continuation byte, a truncated or overlong sequence, a
 * surrogate or a code point past U+10FFFF.
 */
static size_t utf8_len(const unsigned char *p)
{
	size_t n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc2 ? 2 : 0;
	uint32_t cp;

	if (*p > 0xf4 || !n)
		return 0;
	cp = *p & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/*
 * s as a JSON string.  Requests quoted back in answers are the peer's
 * bytes: what is not UTF-8 becomes U+FFFD, so the answer stays JSON.
 */
static void sb_json(struct sbuf *b, const char *s)
{
	const unsigned char *p;

	sb_put(b, "\"");
	for (p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x80) {
			size_t n = utf8_len(p);

			if (n)
				sb_put(b, "%.*s", (int)n, (const char *)p);
			else
				sb_put(b, "\\ufffd");
			p += n ? n - 1 : 0;
			continue;
		}
		if (*p == '"' || *p == '\\')
			sb_put(b, "\\%c", *p);
		else if (*p == '\n')
			sb_put(b, "\\n");
		else if (*p == '\t')
			sb_put(b, "\\t");
		else if (*p == '\r')
			sb_put(b, "\\r");
		else if (*p < 0x20 || *p == 0x7f)
			sb_put(b, "\\u%04x", *p);
		else
			sb_put(b, "%c", *p);
	}
	sb_put(b, "\"");
}

static void __attribute__((format(printf, 2, 3)))
sb_error(struct sbuf *b, const char *fmt, ...)
{
	char msg[CTL_LINE_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b->len = 0;
	sb_put(b, "{\"ok\":false,\"error\":");
	sb_json(b, msg);
	sb_put(b, "}");
}

static void put_rules(struct sbuf *b, const struct nf_ruleset *rs)
{
	char text[NF_RULE_TEXT_MAX];
	const struct nf_rule *r = NULL;
	unsigned id;
	bool first = true;

	sb_put(b, "\"rules\":[");
	while ((r = nf_ruleset_next(rs, r, &id))) {
		nf_rule_format(r, text, sizeof(text));
		sb_put(b, "%s{\"id\":%u,\"rule\":", first ? "" : ",", id);
		sb_json(b, text);
		sb_put(b, ",\"matched\":%" PRIu64 ",\"hits\":%" PRIu64 "}",
		       nf_rule_matched(r), nf_rule_hits(r));
		first = false;
	}
	sb_put(b, "]");
}

static void put_pair(struct sbuf *b, const char *key, const uint64_t v[2])
{
	sb_put(b, "\"%s\":{\"call\":%" PRIu64 ",\"reply\":%" PRIu64 "}", key,
	       v[NF_CALL], v[NF_REPLY]);
}

static void put_stats(struct sbuf *b, const struct nf_stats *st)
{
	static const struct nf_stats zero;

	if (!st)
		st = &zero;
	sb_put(b,
	       "\"stats\":{\"conns\":%" PRIu64 ",\"open\":%" PRIu64
	       ",\"faults\":%" PRIu64 ",",
	       st->conns, st->open, st->faults);
	put_pair(b, "bytes", st->bytes);
	sb_put(b, ",");
	put_pair(b, "records", st->records);
	sb_put(b, ",");
	put_pair(b, "unparsed", st->unparsed);
	sb_put(b, "}");
}

static void put_event(struct sbuf *b, const struct nf_event *e)
{
	const struct nf_msg *m = &e->msg;
	const char *name;

	sb_put(b,
	       "{\"seq\":%" PRIu64 ",\"at_ms\":%" PRIu64
	       ",\"rule\":%u,\"fault\":\"%s\",\"conn\":%u,\"dir\":\"%s\"",
	       e->seq, e->at_ns / 1000000u, e->rule, nf_fault_name(e->fault),
	       e->conn, m->dir == NF_CALL ? "call" : "reply");
	if (m->rpc) {
		sb_put(b, ",\"xid\":\"0x%08" PRIx32 "\"", m->xid);
		/* A reply's program is known only from its call. */
		if (m->dir == NF_CALL || m->matched) {
			name = nf_prog_name(m->prog);
			if (name)
				sb_put(b, ",\"prog\":\"%s\"", name);
			else
				sb_put(b, ",\"prog\":%" PRIu32, m->prog);
			sb_put(b, ",\"vers\":%" PRIu32, m->vers);
			name = nf_proc_name(m->prog, m->vers, m->proc);
			if (name)
				sb_put(b, ",\"proc\":\"%s\"", name);
			else
				sb_put(b, ",\"proc\":%" PRIu32, m->proc);
		}
	}
	sb_put(b, "}");
}

static void put_events(struct sbuf *b, const struct nf_events *ev,
		       uint64_t after)
{
	struct nf_event chunk[EVENTS_CHUNK];
	bool first = true;
	size_t n, i;

	sb_put(b, "\"events\":[");
	while ((n = nf_events_since(ev, after, chunk, EVENTS_CHUNK)) > 0) {
		for (i = 0; i < n; i++) {
			if (!first)
				sb_put(b, ",");
			put_event(b, &chunk[i]);
			first = false;
		}
		after = chunk[n - 1].seq;
	}
	sb_put(b, "]");
}

/* An unsigned decimal that is the whole of s. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* Applies one request (line, blanks trimmed at both ends) and writes its
 * answer into b. */
static void apply(struct nf_control *c, char *line, struct sbuf *b)
{
	char err[1024];
	char *cmd = line, *arg;
	uint64_t v;
	unsigned id, n;
	int rc;

	arg = cmd + strcspn(cmd, " \t");
	if (*arg) {
		*arg++ = '\0';
		arg += strspn(arg, " \t");
	}
	if (!*cmd) {
		sb_error(b, "empty request");
	} else if (strcmp(cmd, "add") == 0) {
		if (!*arg) {
			sb_error(b, "add needs a rule");
			return;
		}
		rc = nf_ruleset_add(c->rs, arg, &id, err, sizeof(err));
		if (rc == -ENOMEM)
			sb_error(b, "out of memory");
		else if (rc)
			sb_error(b, "%s", err);
		else
			sb_put(b, "{\"ok\":true,\"id\":%u}", id);
	} else if (strcmp(cmd, "clear") == 0) {
		if (!*arg) {
			n = nf_ruleset_count(c->rs);
			nf_ruleset_remove(c->rs, 0);
			sb_put(b, "{\"ok\":true,\"removed\":%u}", n);
		} else if (!parse_u64(arg, UINT32_MAX, &v) || v == 0) {
			sb_error(b, "clear: '%s' is not a rule id", arg);
		} else if (nf_ruleset_remove(c->rs, (unsigned)v) != 0) {
			sb_error(b, "clear: no rule %" PRIu64, v);
		} else {
			sb_put(b, "{\"ok\":true,\"removed\":1}");
		}
	} else if (strcmp(cmd, "list") == 0 || strcmp(cmd, "stats") == 0) {
		if (*arg) {
			sb_error(b, "%s takes no argument", cmd);
			return;
		}
		sb_put(b, "{\"ok\":true,");
		if (cmd[0] == 's') {
			put_stats(b, c->st);
			sb_put(b, ",");
		}
		put_rules(b, c->rs);
		sb_put(b, "}");
	} else if (strcmp(cmd, "events") == 0) {
		v = 0;
		if (*arg && !parse_u64(arg, UINT64_MAX, &v)) {
			sb_error(b, "events: '%s' is not a sequence number",
				 arg);
			return;
		}
		sb_put(b, "{\"ok\":true,\"last\":%" PRIu64 ",",
		       nf_events_last(c->ev));
		put_events(b, c->ev, v);
		sb_put(b, "}");
	} else {
		sb_error(b, "unknown command '%s'", cmd);
	}
}

static void conn_closed(uv_handle_t *h)
{
	struct conn *cn = h->data;
	struct nf_control *c = cn->c;

	*cn->pprev = cn->next;
	if (cn->next)
		cn->next->pprev = cn->pprev;
	free(cn);
	if (--c->handles == 0)
		free(c);
}

static void conn_close(struct conn *cn)
{
	if (cn->closed)
		return;
	cn->closed = true;
	uv_close((uv_handle_t *)&cn->pipe, conn_closed);
}

/* Closes cn once the answers queued are written. */
static void conn_finish(struct conn *cn)
{
	cn->closing = true;
	uv_read_stop((uv_stream_t *)&cn->pipe);
	if (cn->writes == 0)
		conn_close(cn);
}

static void conn_process(struct conn *cn);

static void answer_written(uv_write_t *req, int status)
{
	struct answer *a = req->data;
	struct conn *cn = a->conn;

	free(a);
	cn->writes--;
	if (status < 0)
		cn->closing = true;
	if (cn->closing && cn->writes == 0)
		conn_close(cn);
	else if (cn->paused && !cn->closing &&
		 uv_stream_get_write_queue_size((uv_stream_t *)&cn->pipe) <=
			 CTL_QUEUE_MAX)
		conn_process(cn);
}

/* Queues text and a newline; a failure closes the connection. */
static void conn_send(struct conn *cn, const char *text, size_t len)
{
	struct answer *a = malloc(sizeof(*a) + len + 1);
	uv_buf_t buf;

	if (!a) {
		conn_finish(cn);
		return;
	}
	memcpy(a->data, text, len);
	a->data[len] = '\n';
	a->len = len + 1;
	a->conn = cn;
	a->req.data = a;
	buf = uv_buf_init(a->data, (unsigned)a->len);
	if (uv_write(&a->req, (uv_stream_t *)&cn->pipe, &buf, 1,
		     answer_written) != 0) {
		free(a);
		conn_finish(cn);
		return;
	}
	cn->writes++;
}

static const char oom_answer[] = "{\"ok\":false,\"error\":\"out of memory\"}";

static void conn_request(struct conn *cn, char *line)
{
	struct sbuf b = { 0 };
	size_t len = strlen(line);

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
		       line[len - 1] == '\t'))
		line[--len] = '\0';
	line += strspn(line, " \t");
	apply(cn->c, line, &b);
	if (b.failed)
		conn_send(cn, oom_answer, sizeof(oom_answer) - 1);
	else
		conn_send(cn, b.s, b.len);
	free(b.s);
}

/*
 * One whole line of len bytes.  A NUL byte in it is refused: everything
 * after it would be cut off unseen (`add delay 10\0 proc=READ` would add
 * a delay of every record), so the request is answered with an error and
 * nothing of it is applied.
 */
static void conn_line(struct conn *cn, char *line, size_t len)
{
	const char *nul = memchr(line, '\0', len);
	struct sbuf b = { 0 };

	if (!nul) {
		conn_request(cn, line);
		return;
	}
	sb_error(&b,
		 "a NUL byte at column %zu of the request (after '%s'): a "
		 "request is one line of text",
		 (size_t)(nul - line) + 1, line);
	if (b.failed)
		conn_send(cn, oom_answer, sizeof(oom_answer) - 1);
	else
		conn_send(cn, b.s, b.len);
	free(b.s);
}

static void conn_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct conn *cn = h->data;

	(void)hint;
	*buf = uv_buf_init(cn->rbuf, sizeof(cn->rbuf));
}

/*
 * Answers the whole lines among the bytes read and not yet looked at
 * (rbuf[rpos, rend)), keeping a partial line for the next read.  While
 * more than CTL_QUEUE_MAX bytes of answers wait to be written (a peer
 * that sends and does not read), it stops reading and leaves the rest
 * for answer_written() to resume.
 */
static void conn_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);

static void conn_process(struct conn *cn)
{
	const char *p, *end, *nl;
	struct sbuf b = { 0 };
	size_t take;

	while (cn->rpos < cn->rend && !cn->closing) {
		if (uv_stream_get_write_queue_size((uv_stream_t *)&cn->pipe) >
		    CTL_QUEUE_MAX) {
			if (!cn->paused)
				uv_read_stop((uv_stream_t *)&cn->pipe);
			cn->paused = true;
			return;
		}
		p = cn->rbuf + cn->rpos;
		end = cn->rbuf + cn->rend;
		nl = memchr(p, '\n', (size_t)(end - p));
		take = (size_t)((nl ? nl : end) - p);
		if (cn->len + take > CTL_LINE_MAX) {
			sb_error(&b, "request longer than %d bytes",
				 CTL_LINE_MAX);
			if (!b.failed)
				conn_send(cn, b.s, b.len);
			free(b.s);
			conn_finish(cn);
			return;
		}
		memcpy(cn->line + cn->len, p, take);
		cn->len += take;
		cn->rpos += take;
		if (!nl)
			break;
		cn->rpos++;
		cn->line[cn->len] = '\0';
		take = cn->len;
		cn->len = 0;
		conn_line(cn, cn->line, take);
	}
	if (cn->paused && !cn->closing) {
		cn->paused = false;
		if (uv_read_start((uv_stream_t *)&cn->pipe, conn_alloc,
				  conn_read) != 0)
			conn_finish(cn);
	}
}

static void conn_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct conn *cn = s->data;

	(void)buf;
	if (n < 0) {
		/* EOF or an error: the answers queued still go out. */
		conn_finish(cn);
		return;
	}
	cn->rpos = 0;
	cn->rend = (size_t)n;
	conn_process(cn);
}

/* Whether the peer of the accepted connection runs as our uid. */
static int peer_uid(struct conn *cn, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uv_os_fd_t fd;

	if (uv_fileno((uv_handle_t *)&cn->pipe, &fd) != 0)
		return -EBADF;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return -errno;
	*uid = cred.uid;
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct nf_control *c = server->data;
	struct conn *cn;
	struct sbuf b = { 0 };
	uid_t uid = (uid_t)-1;
	int rc;

	if (status < 0)
		return;
	cn = calloc(1, sizeof(*cn));
	if (!cn)
		return;
	if (uv_pipe_init(c->loop, &cn->pipe, 0) != 0) {
		free(cn);
		return;
	}
	cn->c = c;
	cn->pipe.data = cn;
	cn->next = c->conns;
	if (c->conns)
		c->conns->pprev = &cn->next;
	cn->pprev = &c->conns;
	c->conns = cn;
	c->handles++;
	if (uv_accept(server, (uv_stream_t *)&cn->pipe) != 0) {
		conn_close(cn);
		return;
	}
	rc = peer_uid(cn, &uid);
	if (rc) {
		sb_error(&b, "cannot check the peer's uid: %s", strerror(-rc));
	} else if (uid != geteuid()) {
		sb_error(&b, "uid %u may not use this socket (only uid %u)",
			 (unsigned)uid, (unsigned)geteuid());
	} else if (uv_read_start((uv_stream_t *)&cn->pipe, conn_alloc,
				 conn_read) != 0) {
		conn_close(cn);
		return;
	} else {
		return;
	}
	if (!b.failed)
		conn_send(cn, b.s, b.len);
	free(b.s);
	conn_finish(cn);
}

static void server_closed(uv_handle_t *h)
{
	struct nf_control *c = h->data;

	if (--c->handles == 0) {
		close(c->dirfd);
		free(c->name);
		free(c);
	}
}

/*
 * Clears the way for a socket at path: nothing there, or a socket nobody
 * listens on (left by a netfault that died), which is removed.  A socket
 * that answers is another netfault's: -EADDRINUSE.  Anything else at path
 * is not ours to remove: -EEXIST.
 */
static int clear_stale(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat sb;
	int fd, rc;

	if (lstat(path, &sb) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(sb.st_mode))
		return -EEXIST;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A full backlog (EAGAIN) is a live server too. */
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ? 0 :
								      -errno;
	close(fd);
	if (rc == 0 || rc == -EAGAIN)
		return -EADDRINUSE;
	if (rc != -ECONNREFUSED)
		return rc;
	if (unlink(path) != 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/*
 * path's directory, walked and held (safepath_dir()) into *dirfd, and its
 * last component into name: 0, or -errno with msg.
 */
static int hold_dir(const char *path, int *dirfd, char *name, size_t nlen,
		    char *msg, size_t mlen)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int fd;

	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		snprintf(msg, mlen, "%s: names a directory, not a socket",
			 path);
		return -EINVAL;
	}
	snprintf(name, nlen, "%s", base);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 (int)(slash == path ? 1 : slash - path), path);
	fd = safepath_dir(dir, msg, mlen);
	if (fd < 0)
		return fd;
	*dirfd = fd;
	return 0;
}

int nf_control_start(struct uv_loop_s *loop, const char *path,
		     struct nf_ruleset *rs, struct nf_events *ev,
		     const struct nf_stats *st, struct nf_control **out,
		     char *msg, size_t mlen)
{
	char name[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char through[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char ignored[SAFEPATH_MSG_MAX];
	struct nf_control *c;
	int dirfd = -1;
	mode_t old;
	int rc;

	if (!msg || !mlen) {
		msg = ignored;
		mlen = sizeof(ignored);
	}
	msg[0] = '\0';
	rc = -ENAMETOOLONG;
	if (strlen(path) >= sizeof(through))
		goto out_say;
	rc = -EINVAL;
	if (!*path)
		goto out_say;
	rc = hold_dir(path, &dirfd, name, sizeof(name), msg, mlen);
	if (rc)
		return rc;
	/* The directory held: every later use of the name goes through it. */
	rc = -ENAMETOOLONG;
	if (snprintf(through, sizeof(through), "/proc/self/fd/%d/%s", dirfd,
		     name) >= (int)sizeof(through))
		goto out_close_dir;
	rc = clear_stale(through);
	if (rc)
		goto out_close_dir;
	rc = -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_close_dir;
	c->path = strdup(through);
	c->name = strdup(name);
	c->dirfd = dirfd;
	if (!c->path || !c->name)
		goto out_free_c;
	c->loop = loop;
	c->rs = rs;
	c->ev = ev;
	c->st = st;
	rc = uv_pipe_init(loop, &c->server, 0);
	if (rc)
		goto out_free_c;
	c->server.data = c;
	c->handles = 1;
	/*
	 * The umask makes the socket 0600 from its first moment, so no other
	 * user can connect in the window before the chmod; the chmod makes it
	 * so whatever umask the caller had.  The loop thread is the only one
	 * that creates files, so the process-wide umask is safe to touch.
	 */
	old = umask(0177);
	rc = uv_pipe_bind(&c->server, c->path);
	umask(old);
	if (rc)
		goto out_close;
	if (fchmodat(c->dirfd, c->name, 0600, 0) != 0) {
		rc = -errno;
		goto out_unlink;
	}
	rc = uv_listen((uv_stream_t *)&c->server, CTL_BACKLOG, on_connection);
	if (rc)
		goto out_unlink;
	*out = c;
	return 0;

out_unlink:
	unlinkat(c->dirfd, c->name, 0);
out_close:
	/* The handle is freed with c in server_closed(). */
	free(c->path);
	c->path = NULL;
	uv_close((uv_handle_t *)&c->server, server_closed);
	snprintf(msg, mlen, "%s: %s", path, strerror(-rc));
	return rc;
out_free_c:
	free(c->name);
	free(c->path);
	free(c);
out_close_dir:
	close(dirfd);
out_say:
	snprintf(msg, mlen, "%s: %s", path, strerror(-rc));
	return rc;
}

void nf_control_stop(struct nf_control *c)
{
	struct conn *cn;

	if (!c)
		return;
	if (c->path) {
		unlinkat(c->dirfd, c->name, 0);
		free(c->path);
		c->path = NULL;
	}
	for (cn = c->conns; cn; cn = cn->next)
		conn_close(cn);
	uv_close((uv_handle_t *)&c->server, server_closed);
}
