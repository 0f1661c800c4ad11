"""report.py's optimizer targets against the bare all-reduce by the medians and by GPU time with
the host ahead (bench.py's queued_us), without GPUs or PyTorch.

    python3 -m unittest discover -s tools/bench/gpu/tests
"""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import report  # noqa: E402


def row(name, median, queued=None, queued_ok=True, check="pass"):
    t = {"status": "ok", "median_us": median, "p10_us": median, "p90_us": median, "iters": 5}
    if queued is not None:
        t.update(queued_us=queued, queued_ok=queued_ok, host_us=5.0)
    return {"name": name, "check": {"status": check}, "time": t}


def raw(workload, configs):
    return {"workload": workload, "world": 4, "status": "complete", "meta": {},
            "configs": [{"name": f"N=2^{e}", "params": {"N": 1 << e}, "rows": rows}
                        for e, rows in configs]}


def target(res, start):
    return [t for t in report.targets(res, None) if t[0].startswith(start)]


class TargetsByGpuTime(unittest.TestCase):
    def test_host_bound_floor(self):
        # The all-reduce's median has host gaps (40 us) but its GPU time is 27: by the medians
        # coconetc is within 1.15x at 2^20, by GPU time it is not.
        cfgs = [(e, [row("eager", 300.0, 120.0), row("coconetc", 40.0 * (e - 19), 36.0 * (e - 19)),
                     row("nccl_allreduce", 40.0 * (e - 19), 27.0 * (e - 19))])
                for e in (20, 22, 24, 26, 28)]
        res = report.Results([raw("lamb", cfgs)])
        (med,) = target(res, "lamb, 4 GPUs: best coconetc row within 1.15x")
        (gpu,) = target(res, "lamb, 4 GPUs: the same by GPU time")
        self.assertEqual(med[1], "MET")
        self.assertEqual(gpu[1], "MISSED")
        self.assertIn("2^20: 1.33x (coconetc)", gpu[2])  # the default the fastest: nothing beside it
        self.assertNotIn("; coconetc", gpu[2])

    def test_fastest_row_by_gpu_time_and_host_bound_rows_skipped(self):
        # coconetc_b is faster by GPU time; coconetc_c's queued figure has host gaps (not
        # queued_ok) and does not count; a row that failed its check never does.
        cfgs = [(e, [row("eager", 900.0), row("coconetc", 100.0, 110.0), row("coconetc_b", 105.0, 100.0),
                     row("coconetc_c", 90.0, 50.0, queued_ok=False), row("coconetc_d", 80.0, 40.0, check="fail"),
                     row("nccl_allreduce", 100.0, 100.0)])
                for e in (20, 22, 24, 26, 28)]
        (gpu,) = target(report.Results([raw("adam", cfgs)]), "adam, 4 GPUs: the same by GPU time")
        self.assertEqual(gpu[1], "MET")
        # the program's own schedule (the row coconetc) beside the fastest where that is another
        self.assertIn("2^28: 1.00x (coconetc_b; coconetc 1.10x)", gpu[2])
        (med,) = target(report.Results([raw("adam", cfgs)]), "adam, 4 GPUs: best coconetc row within 1.15x")
        self.assertIn("2^28: 0.90x (coconetc_c; coconetc 1.00x)", med[2])

    def test_no_queued_figures_no_line(self):
        # Raw files from before session 24 have no queued_us: no second line (rather than a
        # NOT MEASURED one).
        cfgs = [(e, [row("eager", 300.0), row("coconetc", 40.0), row("nccl_allreduce", 40.0)])
                for e in (20, 22, 24, 26, 28)]
        self.assertEqual(target(report.Results([raw("adam", cfgs)]), "adam, 4 GPUs: the same by GPU time"), [])

    def test_twenty_percent_less_by_gpu_time(self):
        # moe_gemm: 21% less by the medians, 18% by GPU time; the other config's coconetc row
        # has no GPU time (its host waited on the queue), which is said.
        r = {"workload": "moe_gemm", "world": 4, "status": "complete", "meta": {},
             "configs": [{"name": "F=8192", "params": {}, "rows": [
                             row("unfused", 2256.0, 2200.0), row("coconetc", 1789.0, 1804.0)]},
                         {"name": "F=2048", "params": {}, "rows": [
                             row("unfused", 945.0, 930.0), row("coconetc", 505.0, 498.0, queued_ok=False)]}]}
        res = report.Results([r])
        (med,) = target(res, "moe_gemm: GEMM + all-to-all")
        (gpu,) = target(res, "moe_gemm: the same by GPU time")
        self.assertEqual(med[1], "MET")
        self.assertIn("P=4 F=8192: 21% less (coconetc)", med[2])
        self.assertEqual(gpu[1], "MISSED")
        self.assertIn("P=4 F=8192: 18% less (coconetc)", gpu[2])
        self.assertIn("the host did not get ahead of the queued steps", gpu[2])


if __name__ == "__main__":
    unittest.main()


class RunLine(unittest.TestCase):
    """A workload's run line says how its rows were timed: in turns, or one after another (rows
    timed one after another compare the GPUs' power states too: session 59 found the GPU at its
    700-W limit after 2 s of layer norms, its SMs slower, and a 10% gap between two equal kernels)."""

    def line(self, meta):
        r = raw("lamb", [(20, [row("eager", 10.0), row("coconetc", 5.0)])])
        r["meta"] = meta
        return report.workload_section(r, None)[2]

    def test_rows_taking_turns(self):
        line = self.line({"interleave": 10})
        self.assertIn("the rows taking turns in 10 rounds", line)
        self.assertNotIn("one after another", line)

    def test_rows_one_after_another(self):
        self.assertIn("the rows one after another", self.line({}))
        self.assertIn("the rows one after another", self.line({"interleave": 1}))

    def test_cpu_run_says_nothing_of_power(self):
        self.assertNotIn("one after another", self.line({"device": "cpu"}))

    def test_run_without_configs(self):
        # a run that failed before its first config still gets its section
        r = raw("lamb", [])
        r["status"] = "failed"
        self.assertNotIn("one after another", report.workload_section(r, None)[2])
