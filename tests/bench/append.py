#!/usr/bin/python3
"""tests/bench/append.py: what writers appending to one log left in it.

tests/bench/append starts, runs and stops things, and records a line a
run (the client, the configuration, the round, where the log it left is,
and what append_bench printed: the writers, their appends, the lock, the
times).  This reads each run's log and makes the figures: per client and
configuration the lines kept, lost, torn and duplicated and the NUL bytes,
as medians with min-max over the runs, the appends a second, and the cost
of the lock, taken round by round against the same writers without it.

A line is kept when it is one a writer wrote: "wK-NNNN" with K a writer,
NNNN one of its appends, and 3*(K-1) dots (the padding append_bench gives
writer K, "pad_step" in its record).  Anything else between two newlines
(a line cut by another written over it, NUL bytes, an empty line) is torn.

Usage:
  append.py check LOG --writers N --count N [--pad-step N]
      one log's counts, as JSON
  append.py summary [--json FILE] RUNS.jsonl...
      the table; with the cache check (cache.jsonl beside a RUNS file,
      which the oracle's guest writes) said in words under it
  append.py cache KIND A B
      whether mounts A and B of one export keep one cache or two: a line
      written through A and held in its page cache (not closed, not
      synced) read through B, then B's size of the file after A's close
      (its attribute cache, when it has one of its own); as JSON, KIND
      its label.  No process is forked while A's file is open: a child's
      exit closes its copy of the descriptor, and on NFS every close
      writes the file's cached data to the server
"""
import argparse
import json
import os
import re
import statistics
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

LINE = re.compile(rb"w([0-9]+)-([0-9]{4})(\.*)")


@dataclass
class Counts:
    """What one log holds, against what its writers wrote."""

    expected: int  # lines written: writers x appends
    kept: int  # distinct lines written that are in the log
    lost: int  # expected - kept
    torn: int  # lines that are not a line written
    duplicates: int  # copies of a kept line beyond its first
    nul_bytes: int  # NUL bytes (holes) in the log
    out_of_order: int  # kept lines after a later one of the same writer
    size: int  # bytes


def classify(data: bytes, writers: int, count: int, pad_step: int) -> Counts:
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()  # what follows the last newline
    seen: dict[tuple[int, int], int] = {}
    last: dict[int, int] = {}
    torn = disorder = 0
    for p in pieces:
        m = LINE.fullmatch(p)
        k = int(m[1]) if m else 0
        n = int(m[2]) if m else 0
        if not m or not 1 <= k <= writers or not 1 <= n <= count or len(
            m[3]
        ) != pad_step * (k - 1):
            torn += 1
            continue
        seen[(k, n)] = seen.get((k, n), 0) + 1
        if n < last.get(k, 0):
            disorder += 1
        last[k] = max(n, last.get(k, 0))
    expected = writers * count
    return Counts(
        expected=expected,
        kept=len(seen),
        lost=expected - len(seen),
        torn=torn,
        duplicates=sum(c - 1 for c in seen.values()),
        nul_bytes=data.count(b"\0"),
        out_of_order=disorder,
        size=len(data),
    )


@dataclass
class Run:
    client: str
    config: str
    clients: int
    run: int
    writers: int
    count: int
    lock: str
    order: str
    wall_ns: int
    failed: int  # calls that failed, all writers
    first_failure: str
    counts: Counts

    @property
    def appends_per_s(self) -> float:
        return self.writers * self.count / (self.wall_ns / 1e9)

    def describe(self) -> str:
        what = f"{self.writers} writers, " + (
            "2 clients" if self.clients == 2 else "1 client"
        )
        what += ", in turns" if self.order == "turns" else ", at once"
        if self.lock != "none":
            what += f", {self.lock} each append"
        return what


def load_runs(path: Path) -> list[Run]:
    runs = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        data = (path.parent / r["log"]).read_bytes()
        runs.append(
            Run(
                client=r["client"],
                config=r["config"],
                clients=r["clients"],
                run=r["run"],
                writers=r["writers"],
                count=r["count"],
                lock=r["lock"],
                order=r["order"],
                wall_ns=r["wall_ns"],
                failed=sum(r["failed"]),
                first_failure=r["first_failure"],
                counts=classify(data, r["writers"], r["count"], r["pad_step"]),
            )
        )
    return runs


@dataclass
class Spread:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: list[float]) -> "Spread":
        return cls(statistics.median(values), min(values), max(values))

    def text(self, fmt: str = "{:g}") -> str:
        med = fmt.format(self.median)
        if self.min == self.max:
            return med
        return f"{med} ({fmt.format(self.min)}–{fmt.format(self.max)})"


def group(runs: list[Run]) -> dict[tuple[str, str], list[Run]]:
    groups: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        groups.setdefault((r.client, r.config), []).append(r)
    return groups


def lock_costs(runs: list[Run]) -> list[dict]:
    """Each locked configuration over the same writers unlocked, by round."""
    plain = {
        (r.client, r.run, r.writers, r.clients, r.order): r
        for r in runs
        if r.lock == "none"
    }
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for r in runs:
        base = plain.get((r.client, r.run, r.writers, r.clients, r.order))
        if r.lock == "none" or base is None:
            continue
        key = (r.client, r.config, base.config)
        ratios.setdefault(key, []).append(r.appends_per_s / base.appends_per_s)
    return [
        {"client": c, "config": cfg, "against": base, "ratio": asdict(Spread.of(v))}
        for (c, cfg, base), v in ratios.items()
    ]


def cache_words(c: dict) -> str:
    two = not c["same_device"] and not c["unflushed_write_seen"]
    return (
        f"{c['mounts']}: "
        + ("one device" if c["same_device"] else "two devices")
        + "; a line held in A's page cache was "
        + ("read" if c["unflushed_write_seen"] else "not read")
        + f" through B; B's size after A's close: {c['size_seen_after_close']}"
        + (" (its own attribute cache)" if c["size_seen_after_close"] == 0 else "")
        + (" -> two clients" if two else " -> one client")
    )


def summary(args: argparse.Namespace) -> int:
    runs: list[Run] = []
    caches: list[dict] = []
    for p in map(Path, args.runs):
        runs += load_runs(p)
        cache = p.parent / "cache.jsonl"
        if cache.exists():
            caches += [json.loads(x) for x in cache.read_text().splitlines() if x]
    if not runs:
        print("append.py: no runs", file=sys.stderr)
        return 1
    out = {"groups": [], "lock_cost": lock_costs(runs), "cache": caches, "runs": []}
    print(
        "| client | configuration | runs | lines kept | lost | torn | duplicates "
        "| NUL bytes | appends/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (client, config), rs in group(runs).items():
        spreads = {
            f.name: Spread.of([getattr(r.counts, f.name) for r in rs])
            for f in fields(Counts)
        }
        rate = Spread.of([r.appends_per_s for r in rs])
        failed = sum(r.failed for r in rs)
        print(
            f"| {client} | {rs[0].describe()} | {len(rs)} "
            f"| {spreads['kept'].text()} of {rs[0].counts.expected} "
            f"| {spreads['lost'].text()} | {spreads['torn'].text()} "
            f"| {spreads['duplicates'].text()} | {spreads['nul_bytes'].text()} "
            f"| {rate.text('{:.0f}')} |"
        )
        out["groups"].append(
            {
                "client": client,
                "config": config,
                "description": rs[0].describe(),
                "runs": len(rs),
                "every_line_kept": all(
                    r.counts.lost == 0 and r.counts.torn == 0 and r.counts.duplicates == 0
                    for r in rs
                ),
                "appends_per_s": asdict(rate),
                "failed_calls": failed,
                **{k: asdict(v) for k, v in spreads.items()},
            }
        )
        if failed:
            print(f"|   | {failed} calls failed, e.g. {next(r.first_failure for r in rs if r.failed)} |")
    for c in out["lock_cost"]:
        s = Spread(**c["ratio"])
        print(
            f"{c['client']}: {c['config']} appends at {s.text('{:.2f}')} times "
            f"the rate of {c['against']} (round by round)"
        )
    for c in caches:
        print(f"linux mounts {cache_words(c)}")
    for r in runs:
        out["runs"].append(
            {
                "client": r.client,
                "config": r.config,
                "run": r.run,
                "appends_per_s": r.appends_per_s,
                **asdict(r.counts),
            }
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


def check(args: argparse.Namespace) -> int:
    c = classify(Path(args.log).read_bytes(), args.writers, args.count, args.pad_step)
    print(json.dumps(asdict(c)))
    return 0


def cache(args: argparse.Namespace) -> int:
    a = Path(args.a) / f"cache-{args.kind}"
    b = Path(args.b) / f"cache-{args.kind}"
    a.write_bytes(b"")
    b.read_bytes()  # B caches it: 0 bytes
    fd = os.open(a, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"x\n")
    seen = b.read_bytes()
    os.close(fd)
    result = {
        "mounts": args.kind,
        "same_device": os.stat(args.a).st_dev == os.stat(args.b).st_dev,
        "unflushed_write_seen": seen == b"x\n",
        "size_seen_after_close": os.stat(b).st_size,
    }
    print(json.dumps(result))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary", help="the table of RUNS files")
    s.add_argument("--json", help="every figure and run as JSON")
    s.add_argument("runs", nargs="+", help="runs.jsonl of tests/bench/append")
    s.set_defaults(fn=summary)
    c = sub.add_parser("check", help="one log's counts")
    c.add_argument("log")
    c.add_argument("--writers", type=int, required=True)
    c.add_argument("--count", type=int, required=True)
    c.add_argument("--pad-step", type=int, default=3)
    c.set_defaults(fn=check)
    k = sub.add_parser("cache", help="one cache or two: mounts A and B")
    k.add_argument("kind")
    k.add_argument("a")
    k.add_argument("b")
    k.set_defaults(fn=cache)
    args = ap.parse_args()
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
