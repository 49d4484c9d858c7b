#!/usr/bin/python3
"""tests/bench/test_figures.py: figures.py makes the figures it says.

Raw samples become the figures the docstring promises, the derived ones
(every side's CPU, the ceiling it allows, both floors) come out round by
round, a check compares round by round and is left out when a section
did not run, and the tools' JSON is read as intrfsctl and the guest
write it.  Run by tests/run's bench suite: /usr/bin/python3 test_figures.py
"""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures  # noqa: E402


def samples(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False)
    f.write(text)
    f.close()
    return f.name


def run(*args):
    out = io.StringIO()
    with redirect_stdout(out):
        rc = figures.main(["figures.py"] + list(args))
    return rc, out.getvalue()


class Raw(unittest.TestCase):
    def test_units(self):
        tck = figures.CLK_TCK
        cases = [
            (2e9, "ns@512MiB", 256.0, "MiB/s"),
            (tck * 2, "ticks@512MiB", 4.0, "CPU-s/GiB"),
            (128, "calls@512MiB", 256.0, "calls/GiB"),
            (0.5, "s@1000ops", 500.0, "us/op"),
            (0.25, "s", 250.0, "ms"),
            (tck, "ticks", 1000.0, "ms"),
            (65536, "kB", 64.0, "MiB"),
            (3 * 1048576, "B", 3.0, "MiB"),
            (57.5, "us", 57.5, "us"),
        ]
        for value, unit, want, want_unit in cases:
            with self.subTest(unit=unit):
                v, u = figures.figure(value, unit)
                self.assertAlmostEqual(v, want)
                self.assertEqual(u, want_unit)


class Summary(unittest.TestCase):
    def test_derived_and_checks(self):
        tck = figures.CLK_TCK
        rows = []
        for r, (ns_i, ns_n) in enumerate([(1e9, 2e9), (2e9, 2e9),
                                          (1e9, 1e9)], 1):
            rows.append("mount_write_1_mibs\t%d\t%d\tns@512MiB" % (r, ns_i))
            rows.append("nfscp_write_1_mibs\t%d\t%d\tns@512MiB" % (r, ns_n))
            rows.append("cpu_mount_write_1_client\t%d\t%d\tticks@512MiB" %
                        (r, tck))
            rows.append("cpu_mount_write_1_daemon\t%d\t%d\tticks@512MiB" %
                        (r, 3 * tck))
            rows.append("cpu_fuse_write_1_client\t%d\t%d\tticks@512MiB" %
                        (r, tck))
            rows.append("cpu_nfscp_write_1_client\t%d\t%d\tticks@512MiB" %
                        (r, tck))
            rows.append("cpu_nfscp_write_1_server\t%d\t%d\tticks@512MiB" %
                        (r, tck))
            rows.append("meta_create_floor\t%d\t0.1\ts@1000ops" % r)
            rows.append("meta_create_fuse\t%d\t0.05\ts@1000ops" % r)
        path = samples("\n".join(rows) + "\n")
        out = path + ".json"
        try:
            rc, text = run("summary", path, "--json", out)
            self.assertEqual(rc, 0)
            d = json.load(open(out))
        finally:
            os.unlink(path)
            if os.path.exists(out):
                os.unlink(out)
        m = d["metrics"]
        self.assertEqual(m["mount_write_1_mibs"]["unit"], "MiB/s")
        self.assertAlmostEqual(m["mount_write_1_mibs"]["median"], 512.0)
        # client 2 + daemon 6 CPU-s a GiB; the ceiling is NCPU GiB / 8 s.
        self.assertAlmostEqual(m["cpu_mount_write_1_total"]["median"], 8.0)
        self.assertAlmostEqual(m["cpu_mount_write_1_ceiling_mibs"]["median"],
                               figures.NCPU * 1024 / 8.0)
        self.assertAlmostEqual(m["meta_create_floors"]["median"], 150.0)
        # FUSE alone 2 + nfs-cp 4 CPU-s a GiB: the floors' 6; intrfs's 8.
        self.assertAlmostEqual(m["cpu_floors_write_1_total"]["median"], 6.0)
        c = {x["name"]: x for x in d["checks"]}
        # Ratios round by round: 2, 1, 1.
        w = c["mount_write_1_vs_nfscp"]
        self.assertEqual((w["median"], w["min"], w["max"]), (1.0, 1.0, 2.0))
        self.assertFalse(w["met"])
        self.assertEqual(text.splitlines()[-1], "0 of 1 targets met")
        # No sshfs, no intrfs meta figures: those checks are left out.
        self.assertNotIn("mount_write_1_vs_sshfs", c)
        self.assertNotIn("meta_create_vs_floor", c)
        self.assertIn("cpu_mount_write_1", c)
        self.assertAlmostEqual(c["cpu_mount_write_1_vs_floors"]["median"],
                               8.0 / 6.0)
        self.assertAlmostEqual(c["cpu_bound_write_1_vs_nfscp"]["median"],
                               4.0 / 6.0)

    def test_bad_usage(self):
        import contextlib
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(run("summary")[0], 2)
            self.assertEqual(run("nonesuch")[0], 2)
            self.assertEqual(run("ops", "only-one")[0], 2)


class Tools(unittest.TestCase):
    def stats(self, procs, daemon=None):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"procedures": {k: {"ops": v} for k, v in procs.items()},
                   "daemon": daemon or {}}, f)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_ops(self):
        s = self.stats({"COMMIT": 7, "WRITE": 90})
        self.assertEqual(run("ops", s, "COMMIT")[1], "7\n")
        self.assertEqual(run("ops", s, "RENAME")[1], "0\n")

    def test_daemon_counter(self):
        s = self.stats({"WRITE": 90}, {"interrupts": 0, "spliced_writes": 8})
        self.assertEqual(run("counter", s, "spliced_writes")[1], "8\n")
        self.assertEqual(run("counter", s, "interrupts")[1], "0\n")
        import contextlib
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(run("counter", s, "nonesuch")[0], 1)
            self.assertEqual(run("counter", s)[0], 2)

    def test_rpcs_less_control(self):
        a = self.stats({"CREATE": 10, "REMOVE": 10, "RENAME": 0})
        b = self.stats({"CREATE": 1010, "REMOVE": 1010, "RENAME": 1000})
        ctl = samples("rpcs_create_CREATE\t1\t1.00\tRPCs/op\n"
                      "rpcs_create_REMOVE\t1\t1.00\tRPCs/op\n"
                      "rpcs_create_total\t1\t2.00\tRPCs/op\n")
        self.addCleanup(os.unlink, ctl)
        rc, text = run("rpcs", a, b, "1000", "rename", ctl, "create")
        self.assertEqual(rc, 0)
        self.assertEqual(text.splitlines(),
                         ["rpcs_rename_RENAME\t1\t1.00\tRPCs/op",
                          "rpcs_rename_total\t1\t1.00\tRPCs/op"])

    def test_kernel(self):
        f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        for v, g in (("none", 100), ("none", 300), ("off", 110),
                     ("state", 120)):
            f.write(json.dumps({"variant": v, "getpid_ns": g}) + "\n")
        f.close()
        self.addCleanup(os.unlink, f.name)
        self.assertEqual(run("kernel", f.name)[1].split(),
                         ["stock_getpid=200.0", "off_getpid=110.0",
                          "state_getpid=120.0"])


if __name__ == "__main__":
    unittest.main()
