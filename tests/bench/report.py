#!/usr/bin/python3
"""tests/bench/report.py: the benchmarks' report, for a person to read.

Usage: report.py BENCH.json OUTDIR

BENCH.json is what figures.py summary --json wrote (every sample, every
figure's median, min and max, every check).  Writes OUTDIR/bench.md (the checks as
tables, section by section, with what bounds each throughput), and two
charts beside it: OUTDIR/throughput.svg (each sequential figure against
every peer and the ceilings: the export's disk, what the CPU per GiB
allows, one loopback TCP stream) and OUTDIR/metadata.svg (each metadata
operation's time over the bare-RPC floor's, with FUSE's own floor, the
two together, sshfs and the local directory).  Bars are medians; the whiskers span min to max.
"""
import json
import os
import platform
import sys
from xml.sax.saxutils import escape

from figures import fmt  # the same numbers as the summary table

PEERS = [  # (label, metric pattern, colour)
    ("intrfs", "mount_{d}_{n}_mibs", "#2ca02c"),
    ("intrfs nconnect=1", "mount_nc1_{d}_{n}_mibs", "#98df8a"),
    ("nfs-cp", "nfscp_{d}_{n}_mibs", "#1f77b4"),
    ("sshfs", "sshfs_{d}_{n}_mibs", "#ff7f0e"),
    ("the export's disk", "local_{d}_{n}_mibs", "#7f7f7f"),
    ("FUSE alone (fuse_floor)", "fuse_{d}_{n}_mibs", "#bcbd22"),
    ("intrfs's CPU allows", "cpu_mount_{d}_{n}_ceiling_mibs", "#c5b0d5"),
]
META_PEERS = [
    ("intrfs", "meta_{w}_intrfs", "#2ca02c"),
    ("FUSE's floor", "meta_{w}_fuse", "#bcbd22"),
    ("both floors", "meta_{w}_floors", "#17becf"),
    ("floor, Linux's RPCs", "meta_{w}_floor_linux", "#9467bd"),
    ("sshfs", "meta_{w}_sshfs", "#ff7f0e"),
    ("local directory", "meta_{w}_local", "#7f7f7f"),
]
SECTIONS = [  # (title, check-name prefixes)
    ("Sequential I/O", ("mount_", "client_")),
    ("CPU per GiB", ("cpu_", "nfscp_")),
    ("Metadata", ("meta_", "rpcs_")),
    ("Interrupts", ("intr_", "kill_")),
    ("Scale", ("scale_",)),
    ("Policies and regions", ("overhead_", "region_")),
    ("The regions series in the kernel", ("kernel_",)),
]


def section_of(name):
    for title, prefixes in SECTIONS:
        if name.startswith(prefixes):
            return title
    return "Other"


def bar_chart(path, title, groups, unit, clip=None, lines=()):
    """groups: [(label, [(peer, colour, fig or None)])]; fig has median,
    min, max.  Values past clip are drawn to the edge with their number;
    lines: [(value, label)] drawn across every group."""
    bar_h, gap, left, right, width = 14, 10, 190, 170, 900
    height = 40 + sum(16 + len(b) * bar_h + gap for _, b in groups) + 40
    vmax = clip or max(f["max"] for _, bars in groups
                       for _, _, f in bars if f) or 1
    scale = (width - left - right) / vmax
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'font-family="sans-serif" font-size="11">' % (width, height),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="20" font-size="14">%s</text>' % escape(title)]
    y = 40
    for label, bars in groups:
        o.append('<text x="10" y="%d" font-weight="bold">%s</text>' %
                 (y + 10, escape(label)))
        y += 16
        for peer, colour, f in bars:
            o.append('<text x="%d" y="%d" text-anchor="end">%s</text>' %
                     (left - 6, y + bar_h - 3, escape(peer)))
            if f:
                med = min(f["median"], vmax)
                o.append('<rect x="%d" y="%d" width="%.1f" height="%d" '
                         'fill="%s"/>' % (left, y + 1, med * scale,
                                          bar_h - 2, colour))
                lo, hi = min(f["min"], vmax), min(f["max"], vmax)
                o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" '
                         'stroke="black"/>' % (left + lo * scale,
                                               left + hi * scale,
                                               y + bar_h // 2,
                                               y + bar_h // 2))
                more = " (off the scale)" if f["median"] > vmax else ""
                o.append('<text x="%.1f" y="%d">%s %s%s</text>' %
                         (left + max(med, hi) * scale + 4, y + bar_h - 3,
                          fmt(f["median"]), escape(unit), more))
            else:
                o.append('<text x="%d" y="%d" fill="#999">not measured'
                         '</text>' % (left + 4, y + bar_h - 3))
            y += bar_h
        y += gap
    for i, (value, text) in enumerate(lines):
        x = left + value * scale
        o.append('<line x1="%.1f" x2="%.1f" y1="36" y2="%d" stroke="#d62728" '
                 'stroke-dasharray="4,3"/>' % (x, x, y + 14 * i))
        o.append('<text x="%.1f" y="%d" fill="#d62728">%s</text>' %
                 (x + 3, y + 12 + 14 * i, escape(text)))
    o.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def throughput_svg(m, path):
    groups = []
    for n in (1, 4):
        for d in ("write", "read"):
            what = "write + fsync" if d == "write" else "cold read"
            bars = [(p, c, m.get(k.format(d=d, n=n))) for p, k, c in PEERS
                    if n == 4 or "nc1" not in k]
            groups.append(("%s, %d stream%s%s" %
                           (what, n, "s" if n > 1 else "",
                            " (intrfs: nconnect=4)" if n == 4 else ""),
                           bars))
    if not any(f for _, b in groups for _, _, f in b):
        return False
    tcp = m.get("ceiling_tcp_mibs")
    clip = max(f["max"] for _, b in groups for _, _, f in b if f) * 1.1
    title = "Sequential throughput, MiB/s (medians, min-max)"
    if tcp:
        title += "; one loopback TCP stream: %s MiB/s" % fmt(tcp["median"])
    bar_chart(path, title, groups, "MiB/s", clip=clip)
    return True


def metadata_svg(m, path):
    groups = []
    for w, what in (("create", "create+stat+unlink"), ("mkdir", "mkdir+rmdir"),
                    ("rename", "rename"),
                    ("readdir", "readdir of a big directory"),
                    ("lsl", "ls -l of it (an lstat each)")):
        floor = m.get("meta_%s_floor" % w)
        if not floor or floor["median"] <= 0:
            continue
        f0 = floor["median"]
        bars = []
        for p, k, c in META_PEERS:
            f = m.get(k.format(w=w))
            bars.append((p, c, f and {x: f[x] / f0 for x in
                                      ("median", "min", "max")}))
        groups.append(("%s (floor %s %s)" % (what, fmt(f0), floor["unit"]),
                       bars))
    if not groups:
        return False
    clip = min(6.0, max(f["max"] for _, b in groups for _, _, f in b if f))
    bar_chart(path, "Metadata: time over the bare-RPC floor's (the same "
              "RPCs, no FUSE), medians", groups, "x", clip=clip * 1.05,
              lines=[(1.0, "floor"), (1.25, "target 1.25")])
    return True


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    out = argv[2]
    os.makedirs(out, exist_ok=True)
    m = data.get("metrics", {})
    checks = data.get("checks", [])
    md = ["# intrfs benchmarks", ""]
    rounds = max((v.get("n", 0) for v in m.values()), default=0)
    md.append("%s, %d cores, Linux %s; %d interleaved rounds at most per "
              "figure (medians, min and max of the rounds)." %
              (platform.node() or "this machine", os.cpu_count() or 0,
               platform.release(), rounds))
    md.append("")
    held = [c for c in checks if c.get("met") is not None]
    md.append("**%d of %d targets met.**" %
              (sum(1 for c in held if c["met"]), len(held)))
    md.append("")
    if throughput_svg(m, os.path.join(out, "throughput.svg")):
        md += ["![throughput](throughput.svg)", ""]
    if metadata_svg(m, os.path.join(out, "metadata.svg")):
        md += ["![metadata](metadata.svg)", ""]
    by = {}
    for c in checks:
        by.setdefault(section_of(c["name"]), []).append(c)
    for title in [t for t, _ in SECTIONS] + ["Other"]:
        rows = by.get(title)
        if not rows:
            continue
        md += ["## " + title, "",
               "| check | median | min | max | target | | what |",
               "|---|---|---|---|---|---|---|"]
        for c in rows:
            met = {None: "", True: "met", False: "**not met**"}[c["met"]]
            md.append("| %s | %s | %s | %s | %s | %s | %s |" %
                      (c["name"], fmt(c["median"]), fmt(c["min"]),
                       fmt(c["max"]), c["target"], met, c["what"]))
        md.append("")
        if title == "Sequential I/O":
            md += bounds(m)
    with open(os.path.join(out, "bench.md"), "w") as f:
        f.write("\n".join(md))
    print("report: %s" % os.path.join(out, "bench.md"))
    return 0


def bounds(m):
    """What bounds each throughput, in sentences made from the figures."""
    out = []
    for n in (1, 4):
        for d in ("write", "read"):
            got = m.get("mount_%s_%d_mibs" % (d, n))
            cpu = m.get("cpu_mount_%s_%d_total" % (d, n))
            cap = m.get("cpu_mount_%s_%d_ceiling_mibs" % (d, n))
            disk = m.get("local_%s_%d_mibs" % (d, n))
            tcp = m.get("ceiling_tcp_mibs")
            if not (got and cpu and cap):
                continue
            parts = ["%s, %d stream%s: intrfs %s MiB/s spends %s CPU-s per "
                     "GiB (daemon %s, ganesha %s, the command %s), which "
                     "allows %s MiB/s on %d cores (%.0f%% of it used)" %
                     (d, n, "s" if n > 1 else "", fmt(got["median"]),
                      fmt(cpu["median"]),
                      fmt(m.get("cpu_mount_%s_%d_daemon" % (d, n),
                                {}).get("median")),
                      fmt(m.get("cpu_mount_%s_%d_server" % (d, n),
                                {}).get("median")),
                      fmt(m.get("cpu_mount_%s_%d_client" % (d, n),
                                {}).get("median")),
                      fmt(cap["median"]), os.cpu_count() or 0,
                      100.0 * got["median"] / cap["median"])]
            fuse = m.get("fuse_%s_%d_mibs" % (d, n))
            fcpu = m.get("cpu_fuse_%s_%d_total" % (d, n))
            floors = m.get("cpu_floors_%s_%d_total" % (d, n))
            if fuse and fcpu:
                parts.append("FUSE alone (fuse_floor) gives %s MiB/s at %s "
                             "CPU-s per GiB" % (fmt(fuse["median"]),
                                                fmt(fcpu["median"])))
            if floors:
                parts.append("FUSE alone and nfs-cp together spend %s CPU-s "
                             "per GiB, what intrfs must spend adding "
                             "nothing" % fmt(floors["median"]))
            if disk:
                parts.append("the disk gives %s" % fmt(disk["median"]))
            if tcp:
                parts.append("one TCP stream %s" % fmt(tcp["median"]))
            out.append("- " + "; ".join(parts) + ".")
    if out:
        out.append("")
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
