/*
 * intrfs-client: a command-line NFSv3 client without FUSE, built on the
 * netclient API.  It lists, reads, writes, removes and makes files on a
 * server and shows what the transport did (-v), so the netclient and its
 * interrupt handling can be used and tested without a mount.
 *
 * This file owns the program's frame: the command line and --help, the
 * table of commands, the tasks and the signal thread, the messages and the
 * exit status; the commands themselves live in the files cli_i.h lists.
 * It never makes a netclient call for a command, only around one (the -v
 * counters, the client's end).  No locks: the signal thread shares only its
 * stop flag (an atomic) and the tasks it interrupts.
 *
 * Every netclient call runs in one task, the main thread's.  SIGINT and
 * SIGTERM are blocked in every thread and taken by a small signal thread
 * with sigwait(), which raises the task's interrupts with region_task_interrupt()
 * (not async-signal-safe, hence no handler): SIGINT raises a normal
 * interrupt, a second SIGINT or a SIGTERM a fatal one too, so a killable
 * wait can still be cut short.  The program's own waits on stdin and stdout
 * are task waits too, so an interrupt ends them as well.
 *
 * Exit status: 0 success, 1 failure, 2 usage error, 130 interrupted, 141
 * the reader of stdout went away (quietly, as a cat killed by SIGPIPE).
 */
#include "cli_i.h"
#include "intrfs/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef INTRFS_VERSION
#define INTRFS_VERSION "unknown"
#endif

#define PROG "intrfs-client"

enum {
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_INTR = 130,
	EXIT_PIPE = 141,
};

int cli_usage_fail(struct cli_run *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", PROG, r->cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: %s %s %s\n", PROG, r->cmd->name,
		r->cmd->args);
	r->usage_error = true;
	return -EINVAL;
}

int cli_fail_detail(struct cli_run *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return rc;
}

static const struct cli_cmd cmds[] = {
	{ "ls", "[-l] SERVER:/PATH", 1, "l", cli_cmd_ls,
	  "list a directory (-l: as ls -l)" },
	{ "stat", "SERVER:/PATH", 1, "", cli_cmd_stat,
	  "print the attributes as name=value lines" },
	{ "cat", "SERVER:/PATH", 1, "", cli_cmd_cat,
	  "copy the file to stdout" },
	{ "put", "LOCAL SERVER:/PATH", 2, "", cli_cmd_put,
	  "copy a local file (- for stdin) to the server,\n"
	  "create or truncate, COMMIT to stable storage" },
	{ "rm", "SERVER:/PATH", 1, "", cli_cmd_rm, "remove a file" },
	{ "mkdir", "SERVER:/PATH", 1, "", cli_cmd_mkdir,
	  "make a directory (mode 0755 minus the umask)" },
	{ "exports", "SERVER", 1, "", cli_cmd_exports,
	  "list the server's exports" },
	{ "df", "SERVER:/PATH", 1, "", cli_cmd_df,
	  "file system size and use (FSSTAT)" },
};

#define NCMDS (ARRAY_SIZE(cmds))

/*
 * The options netclient takes, as its table says them (nc_opt_help()):
 * one row each, the help at HELP_COLUMN; after a syntax wider than its
 * column when the help's first line fits there, else under it.
 */
#define OPT_INDENT 5
#define HELP_COLUMN 24
#define HELP_WIDTH 79
static void put_nc_options(FILE *f)
{
	const char *key, *syntax;
	char help[512];

	for (unsigned i = 0; (key = nc_opt_help_key(i)); i++) {
		const char *h = help;
		int col;

		if (nc_opt_help(key, &syntax, help, sizeof(help)) <= 0)
			continue;
		col = fprintf(f, "%*s%s", OPT_INDENT, "", syntax);
		if (col <= HELP_COLUMN - 2)
			fprintf(f, "%*s", HELP_COLUMN - col, "");
		else if (col + 2 + strcspn(help, "\n") <= HELP_WIDTH)
			fprintf(f, "  ");
		else
			fprintf(f, "\n%*s", HELP_COLUMN, "");
		for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
			fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COLUMN,
				"");
		fprintf(f, "%s\n", h);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-o OPTIONS] [-v] COMMAND ARGS...\n"
		"       %s --help | --version\n\ncommands:\n",
		PROG, PROG);
	for (size_t i = 0; i < NCMDS; i++) {
		const char *h = cmds[i].help;
		int col =
			fprintf(f, "  %-7s %-20s ", cmds[i].name, cmds[i].args);

		/* Further lines of a help text start at its column. */
		for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
			fprintf(f, "%.*s\n%*s", (int)(nl - h), h, col, "");
		fprintf(f, "%s\n", h);
	}
	fprintf(f, "\noptions:\n"
		   "  -o OPTIONS   comma-separated, as for the mount; may "
		   "repeat:\n");
	put_nc_options(f);
	fprintf(f,
		"  -v           after the command, print on stderr the export, "
		"rsize, wsize,\n"
		"               the transport counters and the calls of each "
		"procedure\n"
		"               (calls.WRITE=...), one name=value a line\n"
		"  -h, --help   show this help\n"
		"  --version    show the version\n"
		"\nSIGINT interrupts the command; a second SIGINT, or SIGTERM, "
		"interrupts it\nfatally (through killable waits too).\n"
		"Exit status: 0 success, 1 failure, 2 usage error, 130 "
		"interrupted,\n141 stdout closed by its reader.\n");
}

static void print_verbose(const struct cli_run *r)
{
	const nc_client_t *c = r->client;
	struct nc_proc_stats ps[NC_NPROCS];
	struct nc_stats st;
	char opts[512];

	nc_client_stats(c, &st);
	nc_opts_format(nc_client_opts(c), opts, sizeof(opts));
	fprintf(stderr, "server=%s\n", nc_client_server(c));
	fprintf(stderr, "export=%s\n", nc_client_export(c));
	fprintf(stderr, "rsize=%u\n", nc_client_rsize(c));
	fprintf(stderr, "wsize=%u\n", nc_client_wsize(c));
	fprintf(stderr, "options=%s\n", opts);
	fprintf(stderr, "policy=%s\n", region_policy_name(r->opts.policy));
#define X(f, what) \
	fprintf(stderr, #f "=%" PRIu64 "\n", r->stats_before.f + st.f);
	NC_STATS_FIELDS(X)
#undef X
	/* The calls of each NFS procedure, of those that were called. */
	nc_client_proc_stats(c, ps);
	for (unsigned i = 0; i < NC_NPROCS; i++)
		if (ps[i].ops)
			fprintf(stderr, "calls.%s=%" PRIu64 "\n",
				nc_proc_name(i), ps[i].ops);
}

/* The signal thread: SIGINT and SIGTERM become the task's interrupts. */

struct sig_thread {
	pthread_t thread;
	task_t *tasks[3]; /* the command's, the second lane's, beside's */
	sigset_t set;
	_Atomic bool stop;
	unsigned sigints; /* only the signal thread touches it */
};

static void *sig_main(void *arg)
{
	struct sig_thread *s = arg;

	for (;;) {
		int sig;

		if (sigwait(&s->set, &sig) != 0)
			continue;
		/* Acquire: pairs with the release in sig_thread_stop(). */
		if (atomic_load_explicit(&s->stop, memory_order_acquire))
			break;
		/*
		 * A second Ctrl-C is fatal, as SIGINT is to a process without
		 * a handler: otherwise a hard, killable mount would ignore it.
		 */
		bool fatal = sig == SIGTERM || ++s->sigints > 1;

		for (size_t i = 0; i < ARRAY_SIZE(s->tasks); i++) {
			region_task_interrupt(s->tasks[i], TASK_INTR_NORMAL);
			if (fatal)
				region_task_interrupt(s->tasks[i],
						      TASK_INTR_FATAL);
		}
	}
	return NULL;
}

static int sig_thread_start(struct sig_thread *s, const struct cli_run *r)
{
	s->tasks[0] = r->task;
	s->tasks[1] = r->lane_task;
	s->tasks[2] = r->beside_task;
	atomic_init(&s->stop, false);
	s->sigints = 0;
	return -pthread_create(&s->thread, NULL, sig_main, s);
}

static void sig_thread_stop(struct sig_thread *s)
{
	atomic_store_explicit(&s->stop, true, memory_order_release);
	pthread_kill(s->thread, SIGINT);
	pthread_join(s->thread, NULL);
}

/* Runs the command in argv (the command name first); returns the status. */
static int run_command(struct cli_run *r, int argc, char **argv)
{
	int opt, rc, status = 0;

	opterr = 0;
	optind = 0; /* glibc: start over, argv[0] is the command name */
	while ((opt = getopt(argc, argv, "+:l")) != -1) {
		if (opt == 'l' && strchr(r->cmd->flags, 'l')) {
			r->long_list = true;
			continue;
		}
		cli_usage_fail(r, "unknown option '-%c'",
			       opt == '?' || opt == ':' ? optopt : opt);
		return EXIT_USAGE;
	}
	if (argc - optind != r->cmd->nargs) {
		cli_usage_fail(r, "expected %d argument%s", r->cmd->nargs,
			       r->cmd->nargs == 1 ? "" : "s");
		return EXIT_USAGE;
	}

	rc = r->cmd->fn(r, argv + optind);
	if (fflush(stdout) == EOF && rc == 0) {
		rc = -errno;
		r->what = "stdout";
		r->err[0] = '\0';
		if (rc == -EPIPE)
			r->stdout_gone = true;
	}
	if (r->verbose && r->client)
		print_verbose(r);
	if (rc == 0)
		status = 0;
	else if (r->usage_error)
		status = EXIT_USAGE;
	else if (rc == -EINTR)
		status = EXIT_INTR;
	else if (r->stdout_gone)
		status = EXIT_PIPE;
	else
		status = EXIT_FAIL;
	if (status == EXIT_INTR) {
		fprintf(stderr, "interrupted\n");
	} else if (status == EXIT_FAIL) {
		fprintf(stderr, "%s: %s %s: %s%s%s\n", PROG, r->cmd->name,
			r->what ? r->what : "", strerror(-rc),
			r->err[0] ? ": " : "", r->err);
	}
	return status;
}

static const struct cli_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

/* Global options; returns -1 to go on, else the exit status. */
static int parse_options(struct cli_run *r, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	char err[256];
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:o:vh", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'o':
			if (nc_opts_parse(&r->opts, optarg, NULL, NULL, err,
					  sizeof(err)) < 0) {
				fprintf(stderr, "%s: %s\n", PROG, err);
				return EXIT_USAGE;
			}
			break;
		case 'v':
			r->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("%s %s\n", PROG, INTRFS_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "%s: option '%s' needs an argument\n",
				PROG, argv[optind - 1]);
			fprintf(stderr, "Try '%s --help'.\n", PROG);
			return EXIT_USAGE;
		default:
			if (optopt)
				fprintf(stderr, "%s: unknown option '-%c'\n",
					PROG, optopt);
			else
				fprintf(stderr, "%s: unknown option '%s'\n",
					PROG, argv[optind - 1]);
			fprintf(stderr, "Try '%s --help'.\n", PROG);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	r->cmd = find_cmd(argv[optind]);
	if (!r->cmd) {
		fprintf(stderr, "%s: unknown command '%s'; try '%s --help'.\n",
			PROG, argv[optind], PROG);
		return EXIT_USAGE;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct task_attr attr = { .name = PROG };
	struct cli_run r = { 0 };
	struct sig_thread sigs;
	int rc, status;

	nc_opts_init(&r.opts);
	status = parse_options(&r, argc, argv);
	if (status >= 0)
		return status;
	r.umask = umask(0);
	umask(r.umask);
	nc_cred_self(&r.cred);

	/* Before any thread exists, so that every thread inherits the mask. */
	sigemptyset(&sigs.set);
	sigaddset(&sigs.set, SIGINT);
	sigaddset(&sigs.set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs.set, NULL);
	/* A closed stdout or socket is an EPIPE to handle, not a death. */
	signal(SIGPIPE, SIG_IGN);

	attr.policy = r.opts.policy;
	r.task = region_task_create(&attr);
	attr.name = PROG " lane";
	r.lane_task = r.task ? region_task_create(&attr) : NULL;
	attr.name = PROG " beside";
	r.beside_task = r.lane_task ? region_task_create(&attr) : NULL;
	if (!r.task || !r.lane_task || !r.beside_task) {
		fprintf(stderr, "%s: cannot create a task: %s\n", PROG,
			strerror(errno));
		return EXIT_FAIL;
	}
	region_task_enter(r.task);
	rc = sig_thread_start(&sigs, &r);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot start the signal thread: %s\n",
			PROG, strerror(-rc));
		status = EXIT_FAIL;
		goto out_leave;
	}

	/*
	 * The command runs in the region its mode asks for, as a FUSE request
	 * does in the daemon: killable (SIGINT waits for the server, a second
	 * one or SIGTERM ends the call), nointr (nothing does), intr (no
	 * region: any signal ends the call).  Each lane's task has its own.
	 */
	NC_MODE_REGION_BEGIN(r.opts.intr_mode, "intrfs-client: command");
	status = run_command(&r, argc - optind, argv + optind);
	NC_MODE_REGION_END(r.opts.intr_mode);

	if (r.client)
		nc_client_destroy(r.client);
	sig_thread_stop(&sigs);
out_leave:
	region_task_leave(r.task);
	region_task_put(r.task);
	region_task_put(r.lane_task);
	region_task_put(r.beside_task);
	return status;
}
