#!/usr/bin/python3
"""tests/bench/summary.py: the benchmarks' figures, from the samples
tests/bench/run recorded, as name=value lines, a summary table and JSON.

Usage: summary.py SAMPLES CHECKS [--json FILE]

SAMPLES: one line per measurement: metric, round, value, unit (tabs).
CHECKS: one line per comparison: name, a, b, target, what (tabs).  With a
metric b, the comparison is a/b round by round (rounds are interleaved,
so each ratio compares moments of the same machine); its median, min and
max are shown.  With b '-', a's own median is held to the target.  A
target is '>=X', '<=X' or '-' (shown, not held).
"""
import json
import os
import statistics
import sys


def load(path, fields):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                rows.append(dict(zip(fields, line.split("\t"))))
    return rows


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


def holds(target, v):
    if target == "-" or v is None:
        return None
    op, x = target[:2], float(target[2:])
    return v >= x if op == ">=" else v <= x


def main(argv):
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--json"):
        sys.stderr.write(__doc__)
        return 2
    samples = load(argv[1], ["metric", "round", "value", "unit"])
    checks = load(argv[2], ["name", "a", "b", "target", "what"])
    metrics, order = {}, []
    for s in samples:
        m = metrics.get(s["metric"])
        if m is None:
            m = metrics[s["metric"]] = {"unit": s["unit"], "rounds": {}}
            order.append(s["metric"])
        m["rounds"][s["round"]] = float(s["value"])
    out = {"metrics": {}, "checks": []}
    for name in order:
        m = metrics[name]
        st = spread(list(m["rounds"].values()))
        out["metrics"][name] = dict(st, unit=m["unit"],
                                    rounds=m["rounds"])
        print("%s=%s" % (name, fmt(st["median"])))
    rows = []
    for c in checks:
        a = metrics.get(c["a"])
        b = metrics.get(c["b"]) if c["b"] != "-" else None
        if a is None or (c["b"] != "-" and b is None):
            continue
        if b is None:
            vals = list(a["rounds"].values())
        else:
            common = [r for r in a["rounds"] if r in b["rounds"]
                      and b["rounds"][r] > 0]
            vals = [a["rounds"][r] / b["rounds"][r] for r in common]
        if not vals:
            continue
        st = spread(vals)
        ok = holds(c["target"], st["median"])
        out["checks"].append(dict(st, name=c["name"], a=c["a"], b=c["b"],
                                  target=c["target"], what=c["what"],
                                  met=ok))
        print("%s=%s" % (c["name"], fmt(st["median"])))
        rows.append((c["name"], fmt(st["median"]), fmt(st["min"]),
                     fmt(st["max"]), c["target"],
                     {None: "", True: "met", False: "NOT MET"}[ok],
                     c["what"]))
    if rows:
        head = ("check", "median", "min", "max", "target", "", "what")
        w = [max(len(str(r[i])) for r in rows + [head]) for i in range(6)]
        print()
        print("  ".join(h.ljust(w[i]) if i < 6 else h
                        for i, h in enumerate(head)).rstrip())
        for r in rows:
            print("  ".join(str(x).ljust(w[i]) if i < 6 else str(x)
                            for i, x in enumerate(r)).rstrip())
        missed = sum(1 for c in out["checks"] if c["met"] is False)
        held = sum(1 for c in out["checks"] if c["met"] is not None)
        print("\n%d of %d targets met" % (held - missed, held))
    if len(argv) == 5:
        # Written as root: never through a symbolic link.
        fd = os.open(argv[4], os.O_WRONLY | os.O_CREAT | os.O_TRUNC |
                     os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
