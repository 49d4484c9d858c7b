/*
 * What the attacks of tests/attack/ share: the attacker (a child of the
 * test as uid and gid 65534 with no groups, which says what it did and
 * saw on a pipe and exits with its verdict), its NFS client speaking as
 * uid 0, its directory in the export, and what the test prepares for it.
 */
#ifndef INTRFS_ATTACK_I_H
#define INTRFS_ATTACK_I_H

#include "intrfs/netclient.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define NOBODY 65534

/* An attacker's verdict: its exit status. */
enum verdict { REFUSED = 0, GAINED = 1, BROKEN = 2 };

/* Where the attacker's NFS calls go: the server, or netfault before it. */
struct target {
	const char *server;
	const char *export_dir;
	unsigned nfs_port, mount_port;
};

/* A kernel file handle, as name_to_handle_at() gives it. */
struct khandle {
	int type;
	unsigned len;
	unsigned char data[MAX_HANDLE_SZ];
};

struct attack {
	struct target t;
	char name[64]; /* the attacker's directory in the export */
	const void *prog; /* attack-whoami's bytes */
	size_t prog_len;
	dev_t disk; /* root's disk, a loop device */
	int fd; /* a descriptor root opened, or -1 */
	/* attack_forged_handle */
	struct khandle fs_root, slash, secret;
	bool slash_fsid_ok; /* slash_fsid holds statfs("/")'s */
	uint32_t slash_fsid[2];
	bool secret_fsid_ok; /* the same of the secret's filesystem */
	uint32_t secret_fsid[2];
	char secret_text[64];
	/* attack_link_runner */
	pid_t runner;
	char decoy[PATH_MAX];
	bool hard;
	int report; /* the pipe the attacker tells what it saw on */
};

/* The attacker's NFS client, as uid 0, mounted on the export's root. */
struct nfs {
	task_t *task;
	nc_client_t *c;
	struct nc_cred root; /* AUTH_SYS uid 0, gid 0 */
	struct nc_fh top; /* the export's root */
	struct nc_attr top_attr;
};

/* The names a READDIR found, the first twelve of them in list. */
struct names {
	char list[512];
	unsigned n;
};

/* One line of what the attacker did or saw, on its pipe (the attacker's). */
void atk_say(struct attack *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/*
 * Runs fn(a) in a child as uid and gid 65534 with no groups; returns its
 * verdict, with what it said in out (each line a TAP comment too).
 */
enum verdict atk_run(int (*fn)(struct attack *), struct attack *a, char *out,
		     size_t len);
/* The attacker's NFS client, as uid 0, mounted on the export's root. */
bool atk_nfs_open(struct attack *a, struct nfs *n);
/* mkdir a->name in the export's root as uid 0, given to the attacker. */
bool atk_own_dir(struct attack *a, struct nfs *n, struct nc_entry *d);
/* nc_readdir()'s callback, into a struct names. */
int atk_add_name(void *arg, const char *name, uint64_t fileid, uint64_t cookie,
		 const struct nc_fh *fh, const struct nc_attr *attr);
/* a, for the test server, its directory named after what and the test. */
void atk_init(struct attack *a, const char *what);
/* The attacker's directory and everything in it, gone; as root. */
void atk_clean(struct attack *a);
/* Root's O_PATH descriptor of rel in the export, or -1 (said). */
int atk_root_opens(const struct attack *a, const char *rel);
/*
 * An attack that worked: what it made (a setuid program, a device node,
 * a hard link) removed first, then the test fails with the message.
 */
#define ATK_GAINED(a, ...)               \
	do {                             \
		atk_clean(a);            \
		TEST__FAIL(__VA_ARGS__); \
	} while (0)

#endif
