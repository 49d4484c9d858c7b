"""measured.py: what the oracle's tools share about a scenario runner's
JSON (one run): how long it took, whether two runs agree, and where a
blocked process slept, from its /proc/PID/stack.  Used by oracle.d/table,
tests/oracle/compare and mount-scripts/demo-report."""
import json

# A cell is "quick" under this many ms (from the signal, or from time 0).
QUICK_MS = 200.0

# Frames that only say "asleep": the first frame after them says why.
GENERIC = ("__schedule", "schedule", "schedule_timeout", "io_schedule",
           "do_wait", "bit_wait", "out_of_line_wait_on_bit",
           "__wait_on_bit", "__wait_on_bit_lock", "wait_woken",
           "folio_wait_bit_common", "wait_for_completion_killable",
           "rpc_wait_bit_killable")


def runs(path):
    """The JSON objects of a file with one a line (blank lines skipped)."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def outcome(run):
    """What a run's first process got, and how long it took: "EIO 1.02 s"."""
    if not run.get("procs"):
        return "could not run"
    p = run["procs"][0]
    return "%s %s" % (p["result"], show_ms(took(p)))


def took(p):
    """A process's time: from the signal, or from time 0 with none."""
    return p.get("latency_ms", p.get("elapsed_ms", 0.0))


def show_ms(v):
    if v is None:
        return "-"
    return "%.1f ms" % v if v < 1000 else "%.2f s" % (v / 1000)


def agree(a, b):
    """Whether runs a and b of one scenario agree: every process got the
    same result, both quick or both slow, and a failure with no signal
    came within a third of the other's time."""
    pa, pb = a.get("procs") or [], b.get("procs") or []
    if len(pa) != len(pb) or not pa:
        return False
    for p, q in zip(pa, pb):
        if p.get("result") != q.get("result"):
            return False
        tp, tq = took(p), took(q)
        if (tp < QUICK_MS) != (tq < QUICK_MS):
            return False
        if a.get("signal") == "none" and p.get("result") != "ok" and \
                tp >= QUICK_MS and not 0.75 <= tq / tp <= 1.34:
            return False
    return True


def why(where):
    """Where a process slept: the first frame of its stack that is not the
    scheduler's own, and the filesystem's own frame below it, with its
    state ("folio_wait_writeback < nfs_file_fsync (D)"); "-" if not
    looked at (it had ended)."""
    if not where:
        return "-"
    frames = [f for f in where.get("stack", [])
              if f.split() and f.split()[0] not in GENERIC
              and not f.startswith("__x64") and not f.startswith("entry_")
              and not f.startswith("do_syscall")]
    if not frames:
        return where.get("wchan") or "-"
    shown = [frames[0].split()[0]]
    for f in frames[1:]:
        if "[nfs" in f or "[sunrpc" in f or "fuse" in f:
            shown.append(f.split()[0])
            break
    return "%s (%s)" % (" < ".join(shown), where.get("state", "?"))
