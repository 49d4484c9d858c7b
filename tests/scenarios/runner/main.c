/*
 * intrfs-scenario: runs scenario files (tests/scenarios/README.md)
 * against real intrfs mounts of a real server, through netfault.
 */
#include "safepath.h"
#include "scenario.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern volatile sig_atomic_t run_stop;

static const char usage_text[] =
	"Usage: intrfs-scenario [OPTIONS] FILE...\n"
	"\n"
	"Runs each scenario file (tests/scenarios/README.md) against a real\n"
	"intrfs mount of a real NFSv3 server, through netfault, and prints one\n"
	"line per scenario: PASS or FAIL, what the processes got, how long it\n"
	"took, the connections made again, the export's state, and every\n"
	"expectation that did not hold.\n"
	"\n"
	"The server:\n"
	"  --server-dir DIR     the run directory of mount-scripts/start-server\n"
	"                       (needed by the pause and restart faults)\n"
	"  --server HOST --export PATH --nfs-port P --mount-port Q\n"
	"                       a server given by hand; PATH must be this\n"
	"                       machine's directory (the export is checked there)\n"
	"\n"
	"Options:\n"
	"  --mount-opts OPTS    appended to every scenario's mount options\n"
	"                       (e.g. policy=percall)\n"
	"  --client intrfs|kernel\n"
	"                       who mounts: intrfs (default), or the kernel's\n"
	"                       own NFSv3 client (mount -t nfs; the options it\n"
	"                       does not have are dropped, and named in the\n"
	"                       JSON; a region is held with prctl(PR_REGION)\n"
	"                       on a kernel with regions (kernel/patches/),\n"
	"                       else dropped too);\n"
	"                       mount-scripts/oracle runs this in a VM\n"
	"  --json FILE          one JSON object per scenario, a line each\n"
	"                       (appended; - for stdout)\n"
	"  --check              only parse the files; print them in canonical form\n"
	"  --keep               keep every scenario's directory on the export\n"
	"                       (a failed one's is always kept)\n"
	"  --out DIR            where a failed scenario's logs are kept, in\n"
	"                       DIR/NNN-NAME/: the daemon's log (intrfs.log),\n"
	"                       netfault's, and, for a daemon that did not exit\n"
	"                       after its unmount, its task table (in its log)\n"
	"                       and every thread's stack before it was killed\n"
	"                       (stacks.txt; user side by gdb or eu-stack);\n"
	"                       made 0700 if missing (default: made at the first\n"
	"                       failure, $TMPDIR/intrfs-scn-failed.XXXXXX)\n"
	"  --intrfs BIN, --netfault BIN, --scripts DIR\n"
	"                       the daemon, the proxy and mount-scripts/\n"
	"                       (default: this build tree's)\n"
	"  -v, --verbose        say what happens while it happens\n"
	"  -h, --help           this help\n"
	"\n"
	"Exit status: 0 every scenario passed, 1 one failed, 2 a bad option or a\n"
	"scenario that does not parse, 130 interrupted.  Run as root: it mounts,\n"
	"pauses and restarts the server, and loads nftables rules.  Its files\n"
	"(netfault's socket and logs, mount points, overlay layers) are in a\n"
	"directory of its own, $TMPDIR/intrfs-scn.XXXXXX (else /tmp), made 0700\n"
	"and removed at the end.  --json FILE: no symbolic link anywhere on its\n"
	"path, every directory root's or the invoking user's (SUDO_UID) and\n"
	"writable by nobody else unless sticky; in that user's own directory it\n"
	"is written as that user.\n";

static void on_stop(int sig)
{
	(void)sig;
	run_stop = 1;
}

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "intrfs-scenario: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'intrfs-scenario --help'.\n");
	return 2;
}

static int port_arg(const char *arg, unsigned *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*arg == '\0' || *end || v < 1 || v > 65535)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	enum {
		O_SERVER_DIR = 256,
		O_SERVER,
		O_EXPORT,
		O_NFS_PORT,
		O_MOUNT_PORT,
		O_MOUNT_OPTS,
		O_JSON,
		O_CHECK,
		O_KEEP,
		O_INTRFS,
		O_NETFAULT,
		O_SCRIPTS,
		O_CLIENT,
		O_OUT
	};
	static const struct option longopts[] = {
		{ "server-dir", required_argument, NULL, O_SERVER_DIR },
		{ "server", required_argument, NULL, O_SERVER },
		{ "export", required_argument, NULL, O_EXPORT },
		{ "nfs-port", required_argument, NULL, O_NFS_PORT },
		{ "mount-port", required_argument, NULL, O_MOUNT_PORT },
		{ "mount-opts", required_argument, NULL, O_MOUNT_OPTS },
		{ "json", required_argument, NULL, O_JSON },
		{ "check", no_argument, NULL, O_CHECK },
		{ "keep", no_argument, NULL, O_KEEP },
		{ "intrfs", required_argument, NULL, O_INTRFS },
		{ "netfault", required_argument, NULL, O_NETFAULT },
		{ "scripts", required_argument, NULL, O_SCRIPTS },
		{ "client", required_argument, NULL, O_CLIENT },
		{ "out", required_argument, NULL, O_OUT },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct scenario s;
	struct rig_server srv = { 0 };
	struct rig_paths paths;
	struct rig rig = { 0 };
	const char *server_dir = NULL, *extra = "", *json_path = NULL;
	const char *out_dir = NULL;
	bool check_only = false, keep = false, bad = false;
	unsigned passed = 0, failed = 0, seq = 0;
	struct sigaction sa;
	char err[1024];
	FILE *json = NULL;
	int c;

	rig.out_fd = rig.cell_fd = -1;
	snprintf(paths.intrfs, sizeof(paths.intrfs), "%s", SCN_INTRFS_BIN);
	snprintf(paths.netfault, sizeof(paths.netfault), "%s",
		 SCN_NETFAULT_BIN);
	snprintf(paths.scripts, sizeof(paths.scripts), "%s", SCN_SCRIPTS);
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (c) {
		case O_SERVER_DIR:
			server_dir = optarg;
			break;
		case O_SERVER:
			snprintf(srv.host, sizeof(srv.host), "%s", optarg);
			break;
		case O_EXPORT:
			snprintf(srv.export_dir, sizeof(srv.export_dir), "%s",
				 optarg);
			break;
		case O_NFS_PORT:
			if (port_arg(optarg, &srv.nfs_port) < 0)
				return usage_error("--nfs-port: '%s' is not "
						   "a port (1-65535)",
						   optarg);
			break;
		case O_MOUNT_PORT:
			if (port_arg(optarg, &srv.mount_port) < 0)
				return usage_error("--mount-port: '%s' is not "
						   "a port (1-65535)",
						   optarg);
			break;
		case O_MOUNT_OPTS:
			extra = optarg;
			break;
		case O_JSON:
			json_path = optarg;
			break;
		case O_OUT:
			out_dir = optarg;
			break;
		case O_CHECK:
			check_only = true;
			break;
		case O_KEEP:
			keep = true;
			break;
		case O_INTRFS:
			snprintf(paths.intrfs, sizeof(paths.intrfs), "%s",
				 optarg);
			break;
		case O_NETFAULT:
			snprintf(paths.netfault, sizeof(paths.netfault), "%s",
				 optarg);
			break;
		case O_SCRIPTS:
			snprintf(paths.scripts, sizeof(paths.scripts), "%s",
				 optarg);
			break;
		case O_CLIENT:
			if (!strcmp(optarg, "kernel")) {
				rig.kernel = true;
				rig.kernel_regions = work_kernel_has_regions();
			} else if (strcmp(optarg, "intrfs"))
				return usage_error("--client: '%s' is neither "
						   "intrfs nor kernel",
						   optarg);
			break;
		case 'v':
			rig.verbose = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'intrfs-scenario --help'.\n");
			return 2;
		}
	}
	if (optind == argc)
		return usage_error("no scenario file given");
	/* Every file parses, or nothing runs. */
	for (int i = optind; i < argc; i++) {
		if (scn_parse_file(argv[i], &s, stderr) < 0) {
			bad = true;
			continue;
		}
		if (check_only) {
			printf("# %s\n", argv[i]);
			scn_print(&s, stdout);
		}
	}
	if (bad)
		return 2;
	if (check_only)
		return 0;
	if (server_dir) {
		if (rig_server_from_dir(&srv, server_dir, err, sizeof(err)) <
		    0) {
			fprintf(stderr, "intrfs-scenario: %s\n", err);
			return 2;
		}
	} else if (!srv.host[0] || !srv.export_dir[0] || !srv.nfs_port ||
		   !srv.mount_port) {
		return usage_error("no server: give --server-dir DIR, or "
				   "--server, --export, --nfs-port and "
				   "--mount-port");
	}
	if (geteuid() != 0) {
		fprintf(stderr, "intrfs-scenario: run it as root: it mounts, "
				"pauses and restarts the server, and loads "
				"nftables rules\n");
		return 2;
	}
	if (json_path && strcmp(json_path, "-") == 0) {
		json = stdout;
	} else if (json_path) {
		/*
		 * Root appends here: safepath's walk and checks (no link
		 * anywhere on the path; in the invoking user's directory,
		 * as that user).
		 */
		char msg[SAFEPATH_MSG_MAX];
		int fd = safepath_open(json_path, O_WRONLY | O_CREAT | O_APPEND,
				       0644, msg, sizeof(msg));

		if (fd < 0) {
			fprintf(stderr, "intrfs-scenario: --json %s\n", msg);
			return 2;
		}
		json = fdopen(fd, "a");
		if (!json) {
			fprintf(stderr, "intrfs-scenario: %s: %s\n", json_path,
				strerror(errno));
			close(fd);
			return 2;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	rig.srv = &srv;
	rig.paths = &paths;
	if (out_dir && rig_out_open(&rig, out_dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "intrfs-scenario: %s\n", err);
		return 2;
	}
	if (rig_run_dir_make(&rig, err, sizeof(err)) < 0) {
		fprintf(stderr, "intrfs-scenario: %s\n", err);
		return 2;
	}
	for (int i = optind; i < argc && !run_stop; i++) {
		if (scn_parse_file(argv[i], &s, stderr) < 0) {
			bad = true; /* changed since it was checked */
			break;
		}
		if (run_scenario(&s, &rig, extra, json, keep, ++seq))
			passed++;
		else
			failed++;
	}
	rig_run_dir_remove(&rig);
	if (bad)
		return 2;
	if (json && json != stdout)
		fclose(json);
	if (argc - optind > 1 || run_stop)
		printf("%u passed, %u failed%s\n", passed, failed,
		       run_stop ? ", interrupted" : "");
	if (run_stop)
		return 130;
	return failed ? 1 : 0;
}
