#!/usr/bin/python3
"""tests/bench/figures.py: every figure of the benchmarks, in one place.

tests/bench/run starts, runs and stops things, and records what it read
as it read it: nanoseconds, clock ticks, bytes, calls.  This tool makes
the figures of them (MiB/s, CPU-seconds per GiB, microseconds an
operation, ratios round by round), holds the checks and their targets as
one table, and reads the JSON the tools around the benchmarks write.

Usage:
  figures.py summary SAMPLES [--param NAME=VALUE]... [--json FILE]
      the figures and the checks: name=value lines, then the table
  figures.py ops STATS.json PROC
      the calls of one NFS procedure (READ) in `intrfsctl MNT stats`'s
      JSON
  figures.py counter STATS.json COUNTER
      one of the daemon's counters (spliced_writes) in the same JSON
  figures.py rpcs BEFORE.json AFTER.json OPS WORKLOAD [SAMPLES CONTROL]
      RPCs per operation between two stats (less CONTROL's, as recorded
      in SAMPLES), as sample lines
  figures.py kernel BENCH.json
      the guest benchmark's runs (tests/kernel/guest-bench): medians per
      variant, as name=value lines
  figures.py check-quick BENCH.json REPORT_DIR
      what tests/run asks of a --quick run: every section's figures, CPU
      really measured, the report and its charts

SAMPLES: one line per measurement: metric, round, value, unit (tabs).  A
raw unit says how its figure is made:
  ns@NMiB     nanoseconds to move N MiB            -> MiB/s
  ticks@NMiB  clock ticks of CPU to move N MiB     -> CPU-s/GiB
  calls@NMiB  calls made to move N MiB             -> calls/GiB
  s@Nops      seconds for N operations             -> us/op
  s           seconds (a listing)                  -> ms
  ticks       clock ticks of CPU                   -> ms
  kB, B       a memory size                        -> MiB
anything else is a figure already.  Parameters (--param) fill the checks'
texts: churn (create/unlink cycles), mib (the size of a transfer).
"""
import json
import os
import re
import statistics
import sys
from typing import NamedTuple, Optional

CLK_TCK = os.sysconf("SC_CLK_TCK")
NCPU = os.cpu_count() or 1


def spread(values):
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.2f" % v


# --- raw samples into figures ------------------------------------------

RAW = re.compile(r"^(ns|ticks|calls|s)@([0-9.]+)(MiB|ops)$")


def figure(value, unit):
    """A raw sample as its figure: (value, unit)."""
    m = RAW.match(unit)
    if m:
        kind, n = m.group(1), float(m.group(2))
        if kind == "ns":
            return n / (value / 1e9), "MiB/s"
        if kind == "ticks":
            return value / CLK_TCK / (n / 1024), "CPU-s/GiB"
        if kind == "calls":
            return value * 1024 / n, "calls/GiB"
        return value * 1e6 / n, "us/op"
    if unit == "s":
        return value * 1e3, "ms"
    if unit == "ticks":
        return value * 1000 / CLK_TCK, "ms"
    if unit == "kB":
        return value / 1024, "MiB"
    if unit == "B":
        return value / 1048576, "MiB"
    return value, unit


def load_samples(path):
    """{metric: {"unit": u, "rounds": {round: figure}}}, in recorded order."""
    metrics = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            name, rnd, value, unit = line.split("\t")
            v, u = figure(float(value), unit)
            m = metrics.setdefault(name, {"unit": u, "rounds": {}})
            m["rounds"][rnd] = v
    return metrics


def derive(metrics):
    """The figures made of others, round by round."""

    def put(name, unit, rounds):
        if rounds:
            metrics[name] = {"unit": unit, "rounds": rounds}

    # The CPU of every side of a transfer (cpu_PEER_DIR_N_SIDE), all
    # sides together, and the throughput it allows on every core.
    groups = {}
    for name in list(metrics):
        m = re.match(r"^(cpu_.*)_(client|daemon|server)$", name)
        if m:
            groups.setdefault(m.group(1), []).append(metrics[name])
    for g, sides in groups.items():
        total = {}
        for s in sides:
            for r, v in s["rounds"].items():
                total[r] = total.get(r, 0.0) + v
        put(g + "_total", "CPU-s/GiB", total)
        put(g + "_ceiling_mibs", "MiB/s",
            {r: NCPU * 1024 / t for r, t in total.items() if t > 0})
    # The floors' CPU for a transfer: FUSE alone (fuse_floor: the
    # command's side and a daemon that does nothing) plus an RPC client
    # and the server doing the same (nfs-cp: its side and ganesha's).
    # intrfs has to do both; it counts the local file's copy twice
    # (nfs-cp reads or writes one, and so does the dd on fuse_floor but
    # for /dev/null), so it errs low.
    for d in ("write", "read"):
        for n in (1, 4):
            a = metrics.get("cpu_fuse_%s_%d_total" % (d, n))
            b = metrics.get("cpu_nfscp_%s_%d_total" % (d, n))
            if a and b:
                put("cpu_floors_%s_%d_total" % (d, n), "CPU-s/GiB",
                    {r: v + b["rounds"][r] for r, v in a["rounds"].items()
                     if r in b["rounds"]})
    # Both floors: what the server costs plus what FUSE costs.
    for w in ("create", "mkdir", "rename", "readdir", "lsl"):
        a = metrics.get("meta_%s_floor" % w)
        b = metrics.get("meta_%s_fuse" % w)
        if a and b:
            put("meta_%s_floors" % w, a["unit"],
                {r: v + b["rounds"][r] for r, v in a["rounds"].items()
                 if r in b["rounds"]})


# --- the checks ----------------------------------------------------------


class Check(NamedTuple):
    name: str
    a: str  # a metric
    b: Optional[str]  # the metric a is divided by, round by round; or None
    target: str  # '>=X', '<=X' or '-' (shown, not held)
    what: str


def checks(params):
    """Every comparison the benchmarks make; those whose metrics were not
    measured (a section not run) are left out of the summary."""
    c = []
    add = lambda *a: c.append(Check(*a))  # noqa: E731
    # region: region_bench's figures stand alone.
    add("client_write_vs_nfscp", "client_write_mibs",
        "client_nfscp_write_mibs", ">=1.2", "intrfs-client put / nfs-cp")
    add("client_read_vs_nfscp", "client_read_mibs", "client_nfscp_read_mibs",
        ">=1.2", "intrfs-client cat / nfs-cp")
    # mount
    for n in (1, 4):
        s = "%d stream(s)" % n
        for d in ("write", "read"):
            nc = " (nconnect=4)" if n == 4 else ""
            add("mount_%s_%d_vs_nfscp" % (d, n), "mount_%s_%d_mibs" % (d, n),
                "nfscp_%s_%d_mibs" % (d, n), ">=1.2",
                "%s, %s: intrfs%s / nfs-cp" % (d, s, nc))
            add("mount_%s_%d_vs_sshfs" % (d, n), "mount_%s_%d_mibs" % (d, n),
                "sshfs_%s_%d_mibs" % (d, n), ">=2",
                "%s, %s: intrfs / sshfs" % (d, s))
            add("mount_%s_%d_of_local" % (d, n), "mount_%s_%d_mibs" % (d, n),
                "local_%s_%d_mibs" % (d, n), "-",
                "%s, %s: intrfs / the export's disk (the same dd's on a "
                "twin of the export's ext4 image)" % (d, s))
            add("mount_%s_%d_of_tcp" % (d, n), "mount_%s_%d_mibs" % (d, n),
                "ceiling_tcp_mibs", "-",
                "%s, %s: intrfs / one loopback TCP stream" % (d, s))
            add("mount_%s_%d_of_fuse" % (d, n), "mount_%s_%d_mibs" % (d, n),
                "fuse_%s_%d_mibs" % (d, n), "-",
                "%s, %s: intrfs / FUSE alone (the same dd's through "
                "fuse_floor, which keeps no bytes)" % (d, s))
    for d in ("write", "read"):
        add("mount_nc1_%s_4_vs_nfscp" % d, "mount_nc1_%s_4_mibs" % d,
            "nfscp_%s_4_mibs" % d, "-",
            "%s, 4 streams: intrfs with nconnect=1 / 4 nfs-cp" % d)
    add("mount_rss_mib", "mount_rss_mib", None, "<=64",
        "the daemon's peak RSS during mount (1 and 4 streams, "
        "nconnect=1), MiB")
    add("mount_nc4_rss_mib", "mount_nc4_rss_mib", None, "<=64",
        "the same with nconnect=4 (4 streams), MiB")
    add("mount_commits_1_per_gib", "mount_commits_1_per_gib", None, "-",
        "COMMITs per GiB written, 1 stream (wbuf= bounds the uncommitted "
        "data: 4 MiB a file, 16 the mount)")
    add("mount_commits_4_per_gib", "mount_commits_4_per_gib", None, "-",
        "COMMITs per GiB written, 4 streams (nconnect=4)")
    add("mount_spliced_1_per_gib", "mount_spliced_1_per_gib", None, "-",
        "write requests per GiB whose bytes came through a pipe, 1 stream "
        "(1024: every one; 0: copied, the daemon's log says why)")
    add("mount_cg_peak_mib", "mount_cg_peak_mib", None, "<=64",
        "the daemon's memory cgroup's peak (nconnect=1), MiB")
    add("mount_nc4_cg_peak_mib", "mount_nc4_cg_peak_mib", None, "<=64",
        "the same with nconnect=4, MiB")
    for n in (1, 4):
        for d in ("write", "read"):
            s = "%s, %d stream(s)" % (d, n)
            for p in ("mount", "nfscp", "local", "fuse"):
                add("cpu_%s_%s_%d" % (p, d, n), "cpu_%s_%s_%d_total" % (p, d, n),
                    None, "-", "%s: CPU-s per GiB, %s (all sides)" % (s, p))
            add("cpu_mount_%s_%d_daemon" % (d, n),
                "cpu_mount_%s_%d_daemon" % (d, n), None, "-",
                "%s: CPU-s per GiB, intrfs's daemon" % s)
            add("cpu_mount_%s_%d_server" % (d, n),
                "cpu_mount_%s_%d_server" % (d, n), None, "-",
                "%s: CPU-s per GiB, ganesha serving intrfs" % s)
            add("cpu_fuse_%s_%d_daemon" % (d, n),
                "cpu_fuse_%s_%d_daemon" % (d, n), None, "-",
                "%s: CPU-s per GiB, fuse_floor's daemon (FUSE alone)" % s)
            add("cpu_nfscp_%s_%d_server" % (d, n),
                "cpu_nfscp_%s_%d_server" % (d, n), None, "-",
                "%s: CPU-s per GiB, ganesha serving nfs-cp" % s)
            add("cpu_mount_%s_%d_vs_floors" % (d, n),
                "cpu_mount_%s_%d_total" % (d, n),
                "cpu_floors_%s_%d_total" % (d, n), "-",
                "%s: intrfs's CPU per GiB (all sides) / FUSE alone's plus "
                "nfs-cp's (what it must spend adding nothing)" % s)
            add("cpu_bound_%s_%d_vs_nfscp" % (d, n),
                "cpu_nfscp_%s_%d_total" % (d, n),
                "cpu_floors_%s_%d_total" % (d, n), "-",
                "%s: nfs-cp's CPU per GiB / the floors': the most intrfs "
                "/ nfs-cp can reach where both are bound by the CPU" % s)
            add("mount_%s_%d_of_cpu" % (d, n), "mount_%s_%d_mibs" % (d, n),
                "cpu_mount_%s_%d_ceiling_mibs" % (d, n), "-",
                "%s: intrfs / what its CPU per GiB allows on %d cores" %
                (s, NCPU))
            add("nfscp_%s_%d_of_cpu" % (d, n), "nfscp_%s_%d_mibs" % (d, n),
                "cpu_nfscp_%s_%d_ceiling_mibs" % (d, n), "-",
                "%s: nfs-cp / what its CPU per GiB allows" % s)
    # meta
    for w in ("create", "mkdir", "rename", "readdir", "lsl"):
        m = "meta_%s_" % w
        add(m + "vs_floor", m + "intrfs", m + "floor", "<=1.25",
            "%s: intrfs / the bare-RPC floor (the same RPCs)" % w)
        add(m + "fuse_of_floor", m + "fuse", m + "floor", "-",
            "%s: FUSE's own floor (fuse_floor, in memory) / the bare-RPC "
            "floor (time)" % w)
        add(m + "vs_floors", m + "intrfs", m + "floors", "<=1.25",
            "%s: intrfs / both floors (the bare-RPC floor + FUSE's)" % w)
        add(m + "sshfs_vs_floors", m + "sshfs", m + "floors", "-",
            "%s: sshfs / both floors" % w)
        add(m + "sshfs_vs", m + "sshfs", m + "intrfs", ">=2",
            "%s: sshfs / intrfs (time)" % w)
        add(m + "vs_local", m + "intrfs", m + "local", "-",
            "%s: intrfs / the local directory (time)" % w)
        add("rpcs_%s_vs_linux" % w, "rpcs_%s_total" % w,
            "linux_rpcs_%s_total" % w, "<=1",
            "%s: RPCs per operation, intrfs / Linux 6.1 (measured)" % w)
    add("meta_relist_vs_fuse", "meta_relist_intrfs", "meta_relist_fuse", "-",
        "the same listing again: intrfs / FUSE's floor (time)")
    add("meta_relist_vs_local", "meta_relist_intrfs", "meta_relist_local",
        "-", "the same listing again: intrfs / the local directory (time)")
    add("meta_relist_sshfs_vs", "meta_relist_sshfs", "meta_relist_intrfs",
        "-", "the same listing again: sshfs / intrfs (time)")
    add("rpcs_relist_total", "rpcs_relist_total", None, "<=2",
        "the same listing again: RPCs (a GETATTR, no READDIRPLUS)")
    for w in ("create", "mkdir", "rename"):
        add("meta_%s_linux_floor_vs" % w, "meta_%s_floor_linux" % w,
            "meta_%s_floor" % w, "-",
            "%s: the floor for Linux's RPCs / for intrfs's (time)" % w)
    add("meta_rss_growth_kib", "meta_rss_growth_kib", None, "<=1024",
        "the daemon's RSS growth over %s create/unlink, KiB" %
        params.get("churn", "the"))
    # interrupt
    for b in (1, 64):
        for p in ("p50", "p99"):
            add("intr_%d_%s_vs_floor" % (b, p), "intr_%d_intrfs_%s_us" % (b, p),
                "intr_%d_floor_%s_us" % (b, p), "<=1.2",
                "kill -> EINTR %s, %d blocked: intrfs / bare FUSE" % (p, b))
    add("kill_hard_p50_ms", "kill_hard_p50_ms", None, "<=5",
        "SIGKILL -> reaped p50, stalled hard,killable, ms")
    # scale
    add("scale_16_interrupted", "scale_16_intr_mibs", "scale_16_calm_mibs",
        ">=0.95", "16 readers beside a reader interrupted every ms / "
        "beside it unsignalled")
    add("scale_read_16_vs_1", "scale_read_16_mibs", "scale_read_1_mibs", "-",
        "16 readers / 1 reader")
    add("scale_write_16_vs_1", "scale_write_16_mibs", "scale_write_1_mibs",
        "-", "16 writers / 1 writer")
    # overhead
    for d in ("write", "read"):
        add("overhead_%s_region" % d, "overhead_%s_region" % d,
            "overhead_%s_percall" % d, ">=0.98",
            "%s: region / percall (within 2%%)" % d)
        add("overhead_%s_sigmask" % d, "overhead_%s_sigmask" % d,
            "overhead_%s_percall" % d, "-", "%s: sigmask / percall" % d)
    # The daemon's CPU for the same bytes: what a policy costs, without
    # the disk's and the server's noise in it.
    add("overhead_cpu_region", "overhead_cpu_region", "overhead_cpu_percall",
        "<=1.02", "the daemon's CPU per %s MiB each way: region / percall "
        "(within 2%%)" % params.get("mib", "run's"))
    add("overhead_cpu_sigmask", "overhead_cpu_sigmask",
        "overhead_cpu_percall", "-", "the daemon's CPU: sigmask / percall")
    # kernel
    for f in ("getpid", "read", "pipe"):
        add("kernel_%s_off" % f, "kernel_off_" + f, "kernel_stock_" + f, "-",
            "%s: 6.12 with regions=off / stock 6.12 (TCG; two boots)" % f)
        add("kernel_%s_state" % f, "kernel_state_" + f, "kernel_off_" + f,
            "-", "%s: regions=state / off (one boot)" % f)
        add("kernel_%s_delivery" % f, "kernel_delivery_" + f,
            "kernel_off_" + f, "-", "%s: regions=delivery / off (one boot)" % f)
    add("kernel_region_pair", "kernel_state_region_pair",
        "kernel_state_getpid", "-",
        "a prctl region begin+end pair / one getpid (state)")
    return c


def holds(target, v):
    if target == "-" or v is None:
        return None
    op, x = target[:2], float(target[2:])
    return v >= x if op == ">=" else v <= x


def summary(args):
    samples, params, json_out = None, {}, None
    while args:
        a = args.pop(0)
        if a == "--param" and args:
            k, _, v = args.pop(0).partition("=")
            params[k] = v
        elif a == "--json" and args:
            json_out = args.pop(0)
        elif samples is None and not a.startswith("-"):
            samples = a
        else:
            return usage()
    if samples is None:
        return usage()
    metrics = load_samples(samples)
    derive(metrics)
    out = {"metrics": {}, "checks": []}
    for name, m in metrics.items():
        st = spread(list(m["rounds"].values()))
        out["metrics"][name] = dict(st, unit=m["unit"], rounds=m["rounds"])
        print("%s=%s" % (name, fmt(st["median"])))
    rows = []
    for c in checks(params):
        a = metrics.get(c.a)
        b = metrics.get(c.b) if c.b else None
        if a is None or (c.b and b is None):
            continue
        if b is None:
            vals = list(a["rounds"].values())
        else:
            vals = [a["rounds"][r] / b["rounds"][r] for r in a["rounds"]
                    if r in b["rounds"] and b["rounds"][r] > 0]
        if not vals:
            continue
        st = spread(vals)
        ok = holds(c.target, st["median"])
        out["checks"].append(dict(st, name=c.name, a=c.a, b=c.b or "-",
                                  target=c.target, what=c.what, met=ok))
        print("%s=%s" % (c.name, fmt(st["median"])))
        rows.append((c.name, fmt(st["median"]), fmt(st["min"]),
                     fmt(st["max"]), c.target,
                     {None: "", True: "met", False: "NOT MET"}[ok], c.what))
    if rows:
        head = ("check", "median", "min", "max", "target", "", "what")
        w = [max(len(str(r[i])) for r in rows + [head]) for i in range(6)]
        print()
        for r in [head] + rows:
            print("  ".join(str(x).ljust(w[i]) if i < 6 else str(x)
                            for i, x in enumerate(r)).rstrip())
        missed = sum(1 for c in out["checks"] if c["met"] is False)
        held = sum(1 for c in out["checks"] if c["met"] is not None)
        print("\n%d of %d targets met" % (held - missed, held))
    if json_out:
        # Written as root: never through a symbolic link.
        fd = os.open(json_out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC |
                     os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


# --- the tools' JSON ----------------------------------------------------


def procedures(path):
    """{PROC: calls} of `intrfsctl MNT stats`'s JSON."""
    with open(path) as f:
        return {k: v["ops"] for k, v in json.load(f)["procedures"].items()}


def daemon_counters(path):
    """{counter: value} of the daemon's in `intrfsctl MNT stats`'s JSON."""
    with open(path) as f:
        return json.load(f)["daemon"]


def ops(args):
    if len(args) != 2:
        return usage()
    print(procedures(args[0]).get(args[1], 0))
    return 0


def counter(args):
    if len(args) != 2:
        return usage()
    counters = daemon_counters(args[0])
    if args[1] not in counters:
        sys.stderr.write("figures.py: the daemon counts no %s (it counts "
                         "%s)\n" % (args[1], ", ".join(sorted(counters))))
        return 1
    print(counters[args[1]])
    return 0


def rpcs(args):
    """RPCs per operation of WORKLOAD, less CONTROL's per-op figures (as
    recorded in SAMPLES: rename's untimed set-up, a create and an unlink
    per file, is create's)."""
    if len(args) not in (4, 6):
        return usage()
    before, after = procedures(args[0]), procedures(args[1])
    n, w = float(args[2]), args[3]
    control = {}
    if len(args) == 6:
        prefix = "rpcs_%s_" % args[5]
        with open(args[4]) as f:
            for line in f:
                name, _, value, _ = line.rstrip("\n").split("\t")
                if name.startswith(prefix) and name != prefix + "total":
                    control[name[len(prefix):]] = float(value)
    total = 0.0
    for proc, calls in after.items():
        d = (calls - before.get(proc, 0)) / n - control.get(proc, 0.0)
        if d > 0.005:
            total += d
            print("rpcs_%s_%s\t1\t%.2f\tRPCs/op" % (w, proc, d))
    print("rpcs_%s_total\t1\t%.2f\tRPCs/op" % (w, total))
    return 0


def kernel(args):
    if len(args) != 1:
        return usage()
    with open(args[0]) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    for v in sorted({r["variant"] for r in runs}):
        mine = [r for r in runs if r["variant"] == v]
        for k in ("getpid_ns", "read_ns", "pipe_ns", "region_pair_ns"):
            if k in mine[0]:
                print("%s_%s=%.1f" % ("stock" if v == "none" else v, k[:-3],
                                     statistics.median(r[k] for r in mine)))
    return 0


def check_quick(args):
    """What a --quick run must have: each section's figures, the CPU
    measured (the command and the daemon both spent some), the report's
    sections and its charts' bars."""
    import xml.etree.ElementTree as ET

    if len(args) != 2:
        return usage()
    with open(args[0]) as f:
        d = json.load(f)
    want = ["region_", "client_write_mibs", "mount_write_4_mibs",
            "mount_nc1_read_4_mibs", "sshfs_read_1_mibs", "nfscp_read_4_mibs",
            "cpu_mount_read_1_daemon", "cpu_mount_write_4_server",
            "cpu_nfscp_read_1_client", "cpu_local_write_1_client",
            "cpu_mount_read_4_ceiling_mibs", "ceiling_tcp_mibs",
            "fuse_write_1_mibs", "fuse_read_4_mibs", "cpu_fuse_read_1_daemon",
            "meta_create_floor", "meta_lsl_sshfs", "rpcs_create_total",
            "intr_64_floor_p99_us", "kill_hard_p50_ms", "scale_16_intr_mibs",
            "overhead_read_sigmask", "mount_rss_mib", "mount_nc4_rss_mib",
            "meta_rss_growth_kib"]
    missing = [w for w in want if not any(k.startswith(w)
                                          for k in d["metrics"])]
    if missing or not d["checks"]:
        sys.exit("the benchmarks' JSON lacks: %s" %
                 ", ".join(missing or ["checks"]))
    for k in ("cpu_mount_read_1_client", "cpu_mount_read_1_daemon",
              "cpu_nfscp_write_1_client"):
        if d["metrics"][k]["median"] <= 0:
            sys.exit("%s is %s: the CPU was not measured" %
                     (k, d["metrics"][k]["median"]))
    md = open(os.path.join(args[1], "bench.md")).read()
    for w in ("targets met", "## Sequential I/O", "## Metadata",
              "CPU-s per GiB", "throughput.svg", "metadata.svg"):
        if w not in md:
            sys.exit("bench.md lacks %r" % w)
    for svg in ("throughput.svg", "metadata.svg"):
        root = ET.parse(os.path.join(args[1], svg)).getroot()
        if len(root.findall("{http://www.w3.org/2000/svg}rect")) < 10:
            sys.exit("%s has too few bars" % svg)
    print("bench: %d figures, %d comparisons; report in %s" %
          (len(d["metrics"]), len(d["checks"]), args[1]))
    return 0


COMMANDS = {"summary": summary, "ops": ops, "counter": counter, "rpcs": rpcs, "kernel": kernel,
            "check-quick": check_quick}


def usage():
    sys.stderr.write(__doc__)
    return 2


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        return usage()
    return COMMANDS[argv[1]](argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
