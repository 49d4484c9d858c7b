/*
 * The attacker of tests/attack/ (attack_i.h): a child of the test that
 * drops to uid and gid 65534 and speaks NFS as uid 0; and the test's side
 * of it, its directory in the export, made and removed as root beneath
 * the export's root.
 */
#include "attack_i.h"

#include "beneath.h"
#include "test.h"
#include "testenv.h"

#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

void atk_say(struct attack *a, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(a->report, line, (size_t)n) < 0)
		_exit(BROKEN);
}

enum verdict atk_run(int (*fn)(struct attack *), struct attack *a, char *out,
		     size_t len)
{
	size_t got = 0;
	int p[2], st;
	pid_t pid;

	ASSERT_EQ(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		a->report = p[1];
		signal(SIGABRT, SIG_DFL);
		if (setgroups(0, NULL) < 0 ||
		    setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0 ||
		    geteuid() != NOBODY || getegid() != NOBODY) {
			atk_say(a, "could not become uid %d: %s", NOBODY,
				strerror(errno));
			_exit(BROKEN);
		}
		_exit(fn(a));
	}
	close(p[1]);
	for (;;) {
		ssize_t r = read(p[0], out + got, len - 1 - got);

		if (r <= 0 || got + (size_t)r >= len - 1) {
			if (r > 0)
				got += (size_t)r;
			break;
		}
		got += (size_t)r;
	}
	out[got] = '\0';
	close(p[0]);
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	for (char *l = out, *nl; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		if (!nl)
			nl = l + strlen(l) - 1;
		fprintf(stderr, "# attacker: %.*s\n", (int)(nl - l), l);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) > BROKEN)
		TEST__FAIL("the attacker died (status %#x): %s", st, out);
	return (enum verdict)WEXITSTATUS(st);
}

bool atk_nfs_open(struct attack *a, struct nfs *n)
{
	struct task_attr attr = { "attacker", REGION_POLICY_REGION, NULL };
	char opts[128], err[512];
	struct nc_opts o;
	int rc;

	memset(n, 0, sizeof(*n));
	n->task = region_task_create(&attr);
	region_task_enter(n->task);
	nc_opts_init(&o);
	snprintf(opts, sizeof(opts), "port=%u,mountport=%u,soft,timeo=20",
		 a->t.nfs_port, a->t.mount_port);
	if (nc_opts_parse(&o, opts, NULL, NULL, err, sizeof(err)) ||
	    nc_client_create(a->t.server, &o, &n->c, err, sizeof(err))) {
		atk_say(a, "no client: %s", err);
		return false;
	}
	rc = nc_client_mount(n->c, a->t.export_dir, &n->root, &n->top, err,
			     sizeof(err));
	if (rc) {
		atk_say(a, "MOUNT %s as uid 0: %s", a->t.export_dir, err);
		return false;
	}
	rc = nc_getattr(n->c, &n->root, &n->top, &n->top_attr);
	if (rc) {
		atk_say(a, "GETATTR of the export's root: %s", strerror(-rc));
		return false;
	}
	return true;
}

bool atk_own_dir(struct attack *a, struct nfs *n, struct nc_entry *d)
{
	struct nc_sattr sa = { .set = NC_SET_MODE, .mode = 0755 };
	struct nc_sattr own = { .set = NC_SET_UID | NC_SET_GID,
				.uid = NOBODY,
				.gid = NOBODY };
	int rc = nc_mkdir(n->c, &n->root, &n->top, a->name, &sa, d);

	if (rc) {
		atk_say(a, "MKDIR %s as uid 0: %s", a->name, strerror(-rc));
		return false;
	}
	rc = nc_setattr(n->c, &n->root, &d->fh, &own, NULL);
	if (rc) {
		atk_say(a, "SETATTR uid %d of %s: %s", NOBODY, a->name,
			strerror(-rc));
		return false;
	}
	atk_say(a, "made %s over NFS as uid 0, now the attacker's", a->name);
	return true;
}

int atk_add_name(void *arg, const char *name, uint64_t fileid, uint64_t cookie,
		 const struct nc_fh *fh, const struct nc_attr *attr)
{
	struct names *l = arg;
	size_t at = strlen(l->list);

	(void)fileid;
	(void)cookie;
	(void)fh;
	(void)attr;
	if (l->n++ < 12)
		snprintf(l->list + at, sizeof(l->list) - at, " %s", name);
	return 0;
}

void atk_init(struct attack *a, const char *what)
{
	struct test_server s;

	memset(a, 0, sizeof(*a));
	testenv_server(&s);
	a->t.server = s.server;
	a->t.export_dir = s.export_dir;
	a->t.nfs_port = s.nfs_port;
	a->t.mount_port = s.mount_port;
	a->fd = -1;
	snprintf(a->name, sizeof(a->name), "attack-%s-%d", what, (int)getpid());
}

void atk_clean(struct attack *a)
{
	int top = beneath_root(a->t.export_dir), rc;

	ASSERT_GE(top, 0);
	rc = beneath_remove_tree(top, a->name);
	if (rc)
		fprintf(stderr, "# removing %s/%s: %s\n", a->t.export_dir,
			a->name, beneath_strerror(rc));
	close(top);
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}

int atk_root_opens(const struct attack *a, const char *rel)
{
	int top = beneath_root(a->t.export_dir), fd;

	ASSERT_GE(top, 0);
	fd = beneath_open(top, rel, O_PATH, 0);
	close(top);
	if (fd < 0) {
		fprintf(stderr, "# root cannot open %s/%s: %s\n",
			a->t.export_dir, rel, beneath_strerror(fd));
		return -1;
	}
	return fd;
}
