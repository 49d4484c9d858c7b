#!/usr/bin/python3
"""demo.d/check.py OUTDIR: what tests/run asks of `demo --quick --out OUTDIR`.

Every quick scenario ran under every policy, the report and its charts
were written, and the seed's cases came out as they are: the hard mount's
stuck send leaks EINTR under percall and not under region or linux (the
kernel's send is not where a signal reaches); the copy-up with its region
taken by the upper layer fails under percall and finishes under region
and sigmask; and the report's overlayfs row points to the copy-up rows.
Prints what did not hold and exits 1; 0 and one line when all did.
"""
import json
import os
import sys

CELLS = 55  # 11 quick scenarios x 5 policies
# (scenario, policy, the first process's result)
OUTCOMES = [
    ("01-hard-send", "percall", "EINTR"),
    ("01-hard-send", "region", "ok"),
    ("01-hard-send", "linux", "ok"),
    ("14-copy-up-region", "percall", "EINTR"),
    ("14-copy-up-region", "region", "ok"),
    ("14-copy-up-region", "sigmask", "ok"),
]


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out, bad = argv[1], []
    for f in ("report.md", "report.json", "latency.svg", "outcomes.svg"):
        p = os.path.join(out, f)
        if not os.path.isfile(p) or os.path.getsize(p) == 0:
            bad.append("the demo wrote no %s" % f)
    runs = {}
    with open(os.path.join(out, "results.jsonl")) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                if isinstance(r.get("run"), dict) and "name" in r["run"]:
                    runs[(r["scenario"], r["policy"])] = r["run"]
    if len(runs) != CELLS:
        bad.append("the demo ran %d cells, not %d (11 scenarios x 5 "
                   "policies)" % (len(runs), CELLS))
    for s, p, want in OUTCOMES:
        run = runs.get((s, p))
        got = run["procs"][0]["result"] if run and run.get("procs") else None
        if got != want:
            bad.append("the demo's %s under %s is %s, not %s" %
                       (s, p, got, want))
    with open(os.path.join(out, "report.md")) as f:
        if "14-copy-up-region to 16-copy-up-unint-kill" not in f.read():
            bad.append("the report's 12-overlay-copy-up does not point to "
                       "the copy-up rows")
    for b in bad:
        print(b)
    if bad:
        return 1
    print("the demo: %d cells, the seed's outcomes as measured" % len(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
