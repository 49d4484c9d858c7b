/*
 * The event trace (-o trace=FILE, intrfsctl trace on FILE|off): one JSON
 * object a line for every region begin and end, interrupt raised, deferred
 * and delivered (the region API's event hook), and every retransmission,
 * major timeout, connection reset and reply (netclient's), each with the
 * time since the trace started and the task or call it concerns.
 *
 * The hooks run on the thread of the event, some with a transport's lock
 * held, so they must not wait on anything of ours: each line is formatted
 * on the stack and written with one write() to a descriptor opened
 * O_APPEND, which keeps lines whole.  So the file must be a regular file
 * off the mount (trace_on() and trace_on_fd() refuse the others): a line
 * written to the mount itself would be a request that begins a region,
 * whose line...  The file of -o trace= is opened here by safepath's rule
 * (lib/safepath.h: the daemon may be root, so no symbolic link anywhere
 * on the path and no directory another user may change); the file of
 * "intrfsctl trace on" is opened by the one who asks, with their rights,
 * and comes as a descriptor.  That descriptor (slot) stays open for the daemon's life:
 * switching the trace off points it at /dev/null with dup2(), so a hook
 * that is writing as it happens never writes to a descriptor that was
 * closed and reused.
 */
#include "fusefs_i.h"
#include "safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int slot = -1; /* set once, before the hooks */
static _Atomic bool on;
static _Atomic uint64_t t0;

static uint64_t since(void)
{
	return region_now_ns() -
	       atomic_load_explicit(&t0, memory_order_relaxed);
}

static void emit(const char *line, int len)
{
	if (len > 0)
		(void)!write(slot, line, (size_t)len);
}

static const char *intr_name(enum task_intr k)
{
	return k == TASK_INTR_FATAL ? "fatal" : "normal";
}

void json_escape(char *out, size_t len, const char *s)
{
	size_t o = 0;

	for (; s && *s && o + 7 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c < 0x20) {
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
}

/* A line cut to the buffer still ends the line. */
static void emit_line(char *line, int n, size_t size)
{
	if (n < 0)
		return;
	if ((size_t)n >= size) {
		n = (int)size - 1;
		line[n - 1] = '\n';
	}
	emit(line, n);
}

static void on_region(const struct region_event *ev, void *arg)
{
	static const char *const names[] = {
		[REGION_EV_BEGIN] = "region_begin",
		[REGION_EV_END] = "region_end",
		[REGION_EV_INTR_RAISED] = "interrupt_raised",
		[REGION_EV_INTR_DEFERRED] = "interrupt_deferred",
		[REGION_EV_INTR_DELIVERED] = "interrupt_delivered",
	};
	char line[768], reason[200], file[200];
	int n;

	(void)arg;
	/* relaxed: a line more or less around a switch does not matter. */
	if (!atomic_load_explicit(&on, memory_order_relaxed))
		return;
	if (ev->type == REGION_EV_BEGIN || ev->type == REGION_EV_END) {
		json_escape(reason, sizeof(reason), ev->site->reason);
		json_escape(file, sizeof(file), ev->site->file);
		if (caller_site(ev->site))
			/* The caller's region, around the request's. */
			n = snprintf(line, sizeof(line),
				     "{\"t_ns\":%" PRIu64
				     ",\"ev\":\"%s\",\"task\":%" PRIu64
				     ",\"kind\":\"%s\",\"reason\":\"%s\","
				     "\"site\":\"caller\",\"by\":\"%s\","
				     "\"depth\":%u}\n",
				     since(), names[ev->type], ev->task_id,
				     region_kind_name(ev->site->kind), reason,
				     ev->site->func, ev->depth);
		else
			n = snprintf(line, sizeof(line),
				     "{\"t_ns\":%" PRIu64
				     ",\"ev\":\"%s\",\"task\":%" PRIu64
				     ",\"kind\":\"%s\",\"reason\":\"%s\","
				     "\"site\":\"%s:%d\",\"depth\":%u}\n",
				     since(), names[ev->type], ev->task_id,
				     region_kind_name(ev->site->kind), reason,
				     file, ev->site->line, ev->depth);
	} else {
		n = snprintf(line, sizeof(line),
			     "{\"t_ns\":%" PRIu64
			     ",\"ev\":\"%s\",\"task\":%" PRIu64
			     ",\"intr\":\"%s\",\"deferral_ns\":%" PRIu64 "}\n",
			     since(), names[ev->type], ev->task_id,
			     intr_name(ev->intr), ev->deferral_ns);
	}
	emit_line(line, n, sizeof(line));
}

static void on_net(const struct nc_event *ev, void *arg)
{
	static const char *const names[] = {
		[NC_EV_RETRANSMIT] = "retransmit",
		[NC_EV_MAJOR_TIMEOUT] = "major_timeout",
		[NC_EV_RESET] = "reset",
		[NC_EV_REPLY] = "reply",
	};
	char line[256];
	int n;

	(void)arg;
	if (!atomic_load_explicit(&on, memory_order_relaxed))
		return;
	n = snprintf(line, sizeof(line),
		     "{\"t_ns\":%" PRIu64 ",\"ev\":\"%s\",\"prog\":%" PRIu32,
		     since(), names[ev->type], ev->prog);
	if (ev->xid)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      ",\"xid\":%" PRIu32 ",\"proc\":\"%s\"", ev->xid,
			      ev->prog == 100003 ? nc_proc_name(ev->proc) :
						   "?");
	if (ev->type == NC_EV_RESET)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      ",\"by\":\"%s\",\"record_cut\":%s",
			      ev->by_client ? "client" : "server",
			      ev->partial ? "true" : "false");
	if (ev->type == NC_EV_REPLY)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      ",\"rtt_ns\":%" PRIu64, ev->rtt_ns);
	n += snprintf(line + n, sizeof(line) - (size_t)n, "}\n");
	emit_line(line, n, sizeof(line));
}

void trace_caller(const char *ev, pid_t tid, const struct region_site *site,
		  unsigned depth)
{
	char line[512], reason[200];
	int n;

	if (!atomic_load_explicit(&on, memory_order_relaxed))
		return;
	json_escape(reason, sizeof(reason), site->reason);
	n = snprintf(line, sizeof(line),
		     "{\"t_ns\":%" PRIu64
		     ",\"ev\":\"%s\",\"tid\":%d,\"kind\":\"%s\","
		     "\"reason\":\"%s\",\"depth\":%u}\n",
		     since(), ev, (int)tid, region_kind_name(site->kind),
		     reason, depth);
	emit_line(line, n, sizeof(line));
}

int trace_init(void)
{
	slot = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (slot < 0)
		return -errno;
	region_set_event_hook(on_region, NULL);
	nc_set_event_hook(on_net, NULL);
	return 0;
}

/* Traces to fd from now on; fd stays the caller's. */
static int trace_use(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	/* O_APPEND keeps each line whole (see above). */
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_APPEND | O_NONBLOCK) < 0 ||
	    dup3(fd, slot, O_CLOEXEC) < 0)
		return -errno;
	atomic_store_explicit(&t0, region_now_ns(), memory_order_relaxed);
	atomic_store_explicit(&on, true, memory_order_relaxed);
	return 0;
}

int trace_on_fd(int fd, dev_t mount_dev)
{
	struct stat st;

	if (slot < 0)
		return -ENODEV;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) ||
	    (fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY)
		return -EINVAL;
	if (st.st_dev == mount_dev)
		return -EXDEV;
	return trace_use(fd);
}

int trace_on(const char *path, const char *mountpoint, char *msg, size_t len)
{
	size_t ml = strlen(mountpoint);
	char *dir, *slash, *real;
	int fd, rc = 0;

	if (slot < 0)
		return -ENODEV;
	if (path[0] != '/') {
		snprintf(msg, len, "%s: not an absolute path", path);
		return -EINVAL;
	}
	/*
	 * Not on the mount itself: a region's trace line would be a write
	 * to the mount, which begins a region...  The hooks write with locks
	 * held, so the file must be one a write never waits long on.
	 */
	dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	real = realpath(dir, NULL);
	rc = real ? 0 : -errno;
	if (!real)
		snprintf(msg, len, "%s: %s: %s", path, dir, strerror(-rc));
	free(dir);
	if (!real)
		return rc;
	if (strncmp(real, mountpoint, ml) == 0 &&
	    (real[ml] == '\0' || real[ml] == '/')) {
		snprintf(msg, len, "%s: it is on the mount point", path);
		rc = -EXDEV;
	}
	free(real);
	if (rc)
		return rc;
	/* The daemon may be root: safepath's walk and checks. */
	fd = safepath_open(path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK,
			   0644, msg, len);
	if (fd < 0)
		return fd;
	rc = trace_use(fd);
	if (rc)
		snprintf(msg, len, "%s: %s", path, strerror(-rc));
	close(fd);
	return rc;
}

void trace_off(void)
{
	int null;

	atomic_store_explicit(&on, false, memory_order_relaxed);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (null >= 0) {
		dup3(null, slot, O_CLOEXEC);
		close(null);
	}
}
