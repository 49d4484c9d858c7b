/*
 * The mount in the format of Linux's /proc/self/mountstats (intrfsctl
 * mountstats), so that nfs-utils' mountstats(8) reads it unchanged:
 * "mountstats mountstats|iostat|nfsstat -f FILE [-S SINCE]".  This file
 * owns that text and the NFS event and byte counters only it shows
 * (struct nfs_iostats, counted where ops.c, writeback.c and silly.c see
 * them happen).
 *
 * The layout is Linux's (fs/nfs/super.c nfs_show_stats(), fs/nfs/iostat.h,
 * net/sunrpc/stats.c rpc_clnt_show_stats(), xprtsock.c
 * xs_tcp_print_stats()): the device line, opts, age, caps, sec, the 27
 * events and 8 byte counters, then "RPC iostats version: 1.1 p/v:
 * 100003/3 (nfs)", the "xprt: tcp" line's 13 counters and one line per
 * NFSv3 procedure (all 22, in procedure order) with its 8 fields.  What
 * intrfs has no counterpart for is 0: the events of the page cache the
 * kernel keeps for FUSE (vfsreadpage, vfswritepage...), pNFS, the RPC
 * backlog and queue utilisations.  What the events count here is written
 * beside each below.
 *
 * Every counter is atomic and read once, relaxed: a snapshot need not be
 * consistent across counters, as Linux's is not.
 */
#include "fusefs_i.h"

#include <inttypes.h>
#include <string.h>

/*
 * The local_lock= Linux shows for the kinds of lock kept in this kernel
 * (nolock keeps both, as Linux's nolock implies local_lock=all).
 */
static const char *local_lock_name(const struct fs_opts *o)
{
	if (o->local_posix && o->local_flock)
		return "all";
	if (o->local_flock)
		return "flock";
	if (o->local_posix)
		return "posix";
	return "none";
}

/*
 * Linux's names for the opts: line, from ours, in the order
 * nfs_show_mount_options() writes them: nocto and nolock after hard or
 * soft, local_lock= last.
 */
static void opts_out(struct intrfs *fs, FILE *f)
{
	const struct nc_opts *o = nc_client_opts(fs->nc);

	fprintf(f,
		"\topts:\trw,vers=3,rsize=%u,wsize=%u,namlen=255,"
		"acregmin=%.0f,acdirmin=%.0f,%s%s%s,proto=tcp,"
		"nconnect=%u,port=%u,timeo=%u,retrans=%u,sec=sys,"
		"mountaddr=%s,mountvers=3,mountport=%u,mountproto=tcp,"
		"local_lock=%s\n",
		nc_client_rsize(fs->nc), nc_client_wsize(fs->nc),
		fs->o.acregmin, fs->o.acdirmin,
		o->timeo_mode == NC_HARD ? "hard" :
		o->timeo_mode == NC_SOFT ? "soft" :
					   "softerr",
		fs->o.nocto ? ",nocto" : "", fs->o.nolock ? ",nolock" : "",
		o->nconnect ? o->nconnect : 1, nc_client_nfs_port(fs->nc),
		o->timeo, o->retrans, nc_client_server(fs->nc), o->mountport,
		local_lock_name(&fs->o));
}

void mountstats_out(struct intrfs *fs, FILE *f)
{
	struct nc_proc_stats ps[NC_NPROCS]; /* NFSv3's 22, in order */
	struct nc_stats st;
	uint64_t now = region_now_ns();

	nc_client_stats(fs->nc, &st);
	nc_client_proc_stats(fs->nc, ps);
	fprintf(f, "device %s mounted on %s with fstype nfs statvers=1.1\n",
		fs->source, fs->mountpoint);
	opts_out(fs, f);
	fprintf(f, "\tage:\t%" PRIu64 "\n",
		now > fs->mounted_ns ?
			(uint64_t)((now - fs->mounted_ns) / 1000000000u) :
			0);
	fprintf(f,
		"\tcaps:\tcaps=0x3fef,wtmult=512,dtsize=%u,bsize=0,"
		"namlen=255\n",
		nc_client_rsize(fs->nc));
	fprintf(f, "\tsec:\tflavor=1,pseudoflavor=1\n");
	fprintf(f, "\tevents:\t");
	for (unsigned i = 0; i < NFSEV_N; i++)
		fprintf(f, "%s%" PRIu64, i ? " " : "",
			atomic_load_explicit(&fs->iostats.events[i],
					     memory_order_relaxed));
	fprintf(f, " \n\tbytes:\t");
	for (unsigned i = 0; i < NFSB_N; i++)
		fprintf(f, "%s%" PRIu64, i ? " " : "",
			atomic_load_explicit(&fs->iostats.bytes[i],
					     memory_order_relaxed));
	fprintf(f, " \n\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)\n");
	/*
	 * port, bind_count, connect_count, connect_time (s), idle_time (s),
	 * sends, recvs, bad_xids, req_u (calls in flight, summed at each
	 * send), bklog_u, max_slots (the most in flight), sending_u,
	 * pending_u.
	 */
	fprintf(f,
		"\txprt:\ttcp %u %u %" PRIu64 " %" PRIu64 " %" PRIu64
		" %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " 0 %" PRIu64
		" 0 0\n",
		nc_client_local_port(fs->nc),
		nc_client_opts(fs->nc)->port ? 0u : 1u, st.connects,
		st.connect_ns / 1000000000u, st.idle_ns / 1000000000u, st.sends,
		st.receives, st.unknown_xids, st.inflight_sum, st.inflight_max);
	fprintf(f, "\tper-op statistics\n");
	/*
	 * ops, transmissions, major timeouts, bytes sent, bytes received,
	 * queue, RTT and execute times in ms, errors.
	 */
	for (unsigned i = 0; i < NC_NPROCS; i++) {
		const struct nc_proc_stats *p = &ps[i];

		fprintf(f,
			"\t%12s: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 "\n",
			nc_proc_name(i), p->ops, p->transmissions,
			p->major_timeouts, p->bytes_sent, p->bytes_recv,
			p->queue_ns / 1000000, p->rtt_ns / 1000000,
			p->execute_ns / 1000000, p->errors);
	}
	fprintf(f, "\n");
}
