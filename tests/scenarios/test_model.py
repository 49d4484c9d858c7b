#!/usr/bin/python3
"""tests/scenarios/test_model.py: the fault matrix's model, checked.

Names round-trip, the cell lists hold what MATRIX.md says they hold, and
the outcomes of the cells the seeds are about are what the seeds say:
the partly sent WRITE of hard,nointr (a SIGKILL waits under region, dies
at once under percall), the handled SIGINT of hard,intr (EINTR under
percall, the write completes under region), and the soft mount's EIO at
its major timeout.  Run: /usr/bin/python3 tests/scenarios/test_model.py
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model  # noqa: E402
from model import Bounds, Cell, Fault, Mode, Op, Policy, Signal  # noqa: E402


def cell(name):
    return Cell.parse(name)


class Names(unittest.TestCase):
    def test_round_trip(self):
        for c in model.all_cells():
            self.assertEqual(Cell.parse(c.name), c)

    def test_bad_names(self):
        for bad in ["", "hard-intr", "hard-intr.region/stall/read-direct",
                    "hard-intr.region/wait/read-direct/none/x",
                    "hard-intr.region/stall/read-direct/none/caller-none",
                    "hard-intr.region/stall/read-direct/sigterm",
                    "hard-intr/stall/read-direct/none"]:
            with self.assertRaises(ValueError, msg=bad):
                Cell.parse(bad)

    def test_is_cell(self):
        # A lock fault only with the lock op, and a real cell is one.
        self.assertFalse(model.is_cell(cell("hard-intr.region/wait/read-direct/none")))
        self.assertTrue(model.is_cell(cell("hard-intr.region/stall/read-direct/none")))


class Lists(unittest.TestCase):
    def test_all(self):
        cells = list(model.all_cells())
        self.assertEqual(len(cells), 13636)
        self.assertEqual(len(set(cells)), len(cells))
        self.assertTrue(all(model.is_cell(c) for c in cells))

    def test_ci_is_a_subset(self):
        everything = set(model.all_cells())
        ci = list(model.ci_cells())
        self.assertEqual(len(ci), 95)
        self.assertEqual(len(set(ci)), len(ci))
        self.assertLessEqual(set(ci), everything)

    def test_sigmask_only_where_policies_differ(self):
        for c in model.all_cells():
            if c.policy is Policy.SIGMASK:
                base = c._replace(policy=Policy.REGION)
                self.assertTrue(model.differs(base), c.name)


class Outcomes(unittest.TestCase):
    def test_partly_sent_write_sigkill(self):
        # The seed: a WRITE stuck mid-record on hard,nointr.
        per = model.outcome(cell("hard-nointr.percall/stall/write/sigkill"))
        reg = model.outcome(cell("hard-nointr.region/stall/write/sigkill"))
        self.assertEqual(per.result, ("killed",))
        self.assertEqual(per.latency, Bounds(None, 1000))
        self.assertEqual(per.where, model.Where.SEND)
        self.assertEqual(reg.result, ("killed",))
        self.assertEqual(reg.latency, Bounds(1200, 15000))

    def test_handled_sigint(self):
        per = model.outcome(cell("hard-intr.percall/stall/write/sigint-handler"))
        reg = model.outcome(cell("hard-intr.region/stall/write/sigint-handler"))
        self.assertEqual(per.result, ("EINTR",))
        self.assertEqual(reg.result, ("ok",))
        self.assertEqual(reg.elapsed, Bounds(1800, 12000))

    def test_soft_major_timeout(self):
        o = model.outcome(cell("soft.region/stall/read-direct/none"))
        self.assertEqual(o.result, ("EIO",))
        self.assertEqual(o.elapsed, Bounds(900, 5000))
        self.assertIn("major timeout", o.why)

    def test_every_cell_has_an_outcome(self):
        for c in model.all_cells():
            o = model.outcome(c)
            self.assertTrue(o.result, c.name)
            self.assertTrue(o.why, c.name)
            self.assertTrue(o.expect().startswith("result="), c.name)


class Files(unittest.TestCase):
    def test_file_states_the_outcome(self):
        c = cell("hard-nointr.region/stall/write/sigkill")
        text = model.scenario(c)
        self.assertIn("expect   result=killed latency>=1200ms latency<=15s\n", text)
        self.assertIn("mount ", text)


if __name__ == "__main__":
    unittest.main(verbosity=1)
