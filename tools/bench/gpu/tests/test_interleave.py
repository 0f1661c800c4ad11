"""bench.py's --interleave: the rows of a config timed in rounds, taking turns, without GPUs or
PyTorch (a one-rank stand-in for the worker's Ctx; the host-clock path of developer runs).

    python3 -m unittest discover -s tools/bench/gpu/tests
"""
import sys
import types
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench  # noqa: E402


from fakes import OneRank  # noqa: E402


class Steps:
    """A row that logs each step's turn: (row name, steps taken so far)."""

    def __init__(self, name, log, fail_at=None):
        self.name, self.log, self.n, self.fail_at, self.resets = name, log, 0, fail_at, 0

    def reset(self):
        self.resets += 1

    def step(self):
        self.n += 1
        if self.fail_at is not None and self.n == self.fail_at:
            raise RuntimeError(f"{self.name} failed at step {self.n}")
        self.log.append(self.name)


def run(iters, k, rows, checks=None, warmup=2):
    rec = {"name": "N=4", "rows": []}
    recs = {}

    def rowrec(name):
        if name not in recs:
            recs[name] = {"name": name, "check": {"status": (checks or {}).get(name, "pass")}}
            rec["rows"].append(recs[name])
        return recs[name]

    args = types.SimpleNamespace(interleave=k, iters=iters, warmup=warmup, warmup_seconds=0.0)
    factories = [(r.name, (lambda r=r: r)) for r in rows]
    bench.time_interleaved(OneRank(), args, rec, factories, rowrec, lambda: None, lambda m: None,
                           lambda *a: None)
    return recs


class Interleave(unittest.TestCase):
    def test_rows_take_turns(self):
        log = []
        a, b = Steps("a", log), Steps("b", log)
        recs = run(iters=7, k=3, rows=[a, b])
        # warm-up (2 steps each), then 3 rounds of 3, 2, 2 timed steps, each turn after one untimed step
        expect = ["a"] * 2 + ["b"] * 2
        for n in (3, 2, 2):
            expect += ["a"] * (n + 1) + ["b"] * (n + 1)
        self.assertEqual(log, expect)
        for r in (a, b):
            self.assertEqual(r.resets, 1)
        for name in ("a", "b"):
            t = recs[name]["time"]
            self.assertEqual(t["status"], "ok")
            self.assertEqual(t["iters"], 7)
            self.assertEqual(len(t["iters_us"]), 7)
            self.assertEqual(t["interleaved"], {"rounds": 3, "rows": ["a", "b"]})

    def test_failed_check_is_not_timed(self):
        log = []
        recs = run(iters=4, k=2, rows=[Steps("a", log), Steps("b", log)], checks={"b": "fail"})
        self.assertEqual(recs["b"]["time"]["status"], "skipped")
        self.assertNotIn("b", log)
        self.assertEqual(recs["a"]["time"]["iters"], 4)

    def test_a_step_failing_in_the_rounds_stops_every_row(self):
        log = []
        recs = run(iters=6, k=3, rows=[Steps("a", log), Steps("b", log, fail_at=5)])
        for name in ("a", "b"):
            self.assertEqual(recs[name]["time"]["status"], "error")
            self.assertIn("b failed at step 5", recs[name]["time"]["error"][0])

    def test_a_row_failing_its_warm_up_leaves_the_others(self):
        log = []
        recs = run(iters=4, k=2, rows=[Steps("a", log, fail_at=1), Steps("b", log)])
        self.assertEqual(recs["a"]["time"]["status"], "error")
        self.assertEqual(recs["b"]["time"]["status"], "ok")
        self.assertEqual(recs["b"]["time"]["iters"], 4)

    def test_more_rounds_than_steps(self):
        log = []
        recs = run(iters=2, k=5, rows=[Steps("a", log)], warmup=0)
        self.assertEqual(recs["a"]["time"]["interleaved"]["rounds"], 2)
        self.assertEqual(log, ["a"] * 4)




class FakeCuda:
    """torch.cuda's calls that bench.queued makes, on the host."""

    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            import time
            self.t = time.perf_counter()

        def elapsed_time(self, other):
            return (other.t - self.t) * 1000.0

    @staticmethod
    def _sleep(cycles):
        pass

    @staticmethod
    def synchronize(device=None):
        pass


class Queued(unittest.TestCase):
    def ctx(self):
        c = OneRank()
        c.torch = types.SimpleNamespace(cuda=FakeCuda)
        c.device = types.SimpleNamespace(type="cuda")
        return c

    def test_halves_the_steps_while_the_host_waits(self):
        import time

        class Slow:
            n = 0

            def step(self):
                self.n += 1
                time.sleep(0.001)  # the host waits 1 ms a step: never ahead of a 2-ms sleep
        row = Slow()
        r = bench.queued(self.ctx(), row, 40, 0.0)
        self.assertEqual(r["queued_steps"], 10)
        self.assertFalse(r["queued_ok"])
        self.assertEqual(row.n, (1 + 40) + (1 + 20) + (1 + 10))

    def test_keeps_every_step_when_the_host_gets_ahead(self):
        class Fast:
            n = 0

            def step(self):
                self.n += 1
        row = Fast()
        r = bench.queued(self.ctx(), row, 40, 0.0)
        self.assertEqual(r["queued_steps"], 40)
        self.assertTrue(r["queued_ok"])
        self.assertEqual(row.n, 41)


if __name__ == "__main__":
    unittest.main()
