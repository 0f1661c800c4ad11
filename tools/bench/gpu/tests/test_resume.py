"""The bench runner's bookkeeping when a worker dies (bench.py --pending / --mark-failed, and
report.py's account of it), without GPUs or PyTorch: run.sh's loop in miniature over raw files.

    python3 -m unittest discover -s tools/bench/gpu/tests
"""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

GPU = Path(__file__).resolve().parents[1]


def bench(*args) -> str:
    return subprocess.run([sys.executable, str(GPU / "bench.py"), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def row(name, us=None):
    r = {"name": name, "check": {"status": "pass"}}
    if us is not None:
        r["time"] = {"status": "ok", "median_us": us, "p10_us": us, "p90_us": us, "iters": 5}
    return r


class Resume(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = Path(self.tmp.name)
        (self.out / "raw").mkdir()
        self.path = self.out / "raw" / "lamb-p4.json"

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, raw):
        self.path.write_text(json.dumps(raw))

    def read(self):
        return json.loads(self.path.read_text())

    def pending(self):
        return bench("--pending", "--out", str(self.out), "--world", "4", "--workloads", "lamb,adam")

    def mark(self, *extra):
        return bench("--mark-failed", "--out", str(self.out), "--world", "4", "--workloads", "lamb",
                     "--reason", "the worker exited with status 1", *extra)

    def running(self, configs):
        return {"schema": "coconet-bench-raw/1", "workload": "lamb", "world": 4, "status": "running",
                "meta": {}, "configs": configs}

    def test_death_inside_a_started_config_interrupts_and_stays_pending(self):
        done = {"name": "N=2^22", "params": {"N": 4194304}, "rows": [row("eager", 90.0)], "seconds": 3.0}
        started = {"name": "N=2^24", "params": {"N": 16777216}, "rows": [row("eager", 800.0), row("coconetc_split")]}
        self.write(self.running([done, started]))
        self.assertEqual(self.pending(), "adam")   # adam has no file; lamb is still "running"
        self.assertIn("interrupted in N=2^24", self.mark())
        raw = self.read()
        self.assertEqual(raw["status"], "interrupted")
        self.assertEqual(raw["interruptions"][0]["config"], "N=2^24")
        last = raw["configs"][-1]
        self.assertIn("status 1", last["error"])
        self.assertEqual(last["rows"][0]["time"]["status"], "ok")        # timed before the death
        self.assertEqual(last["rows"][1]["time"]["status"], "error")     # the row it died in
        self.assertNotIn("error", raw["configs"][0])
        self.assertEqual(self.pending(), "lamb,adam")                   # resumed by the next worker

    def test_death_before_a_new_config_fails_the_workload(self):
        # The resumed worker rewrote the file ("running") but started nothing new: no progress.
        crashed = {"name": "N=2^24", "rows": [], "error": "earlier death"}
        self.write(self.running([crashed]))
        self.assertIn("marked failed", self.mark())
        self.assertEqual(self.read()["status"], "failed")
        self.assertEqual(self.pending(), "adam")

    def test_no_progress_after_an_interruption_fails_it(self):
        raw = self.running([{"name": "N=2^24", "rows": [], "error": "x"}])
        raw["status"] = "interrupted"
        self.write(raw)
        self.mark("--absent")      # run.sh: the worker wrote nothing at all
        self.assertEqual(self.read()["status"], "failed")
        self.assertEqual(self.pending(), "adam")

    def test_report_names_the_interruption(self):
        raw = self.running([{"name": "N=2^24", "params": {"N": 16777216}, "reference": "eager",
                             "rows": [row("eager", 800.0), {"name": "coconetc", "check": {"status": "pass"},
                                      "time": {"status": "error", "error": "the worker died in this config: x"}}],
                             "error": "x"},
                            {"name": "N=2^26", "params": {"N": 67108864}, "reference": "eager",
                             "rows": [row("eager", 2900.0), row("coconetc", 800.0)], "seconds": 5.0}])
        raw["status"] = "complete"
        raw["interruptions"] = [{"config": "N=2^24", "reason": "the worker exited with status 1"}]
        self.write(raw)
        subprocess.run([sys.executable, str(GPU / "report.py"), "--results", str(self.out)], check=True,
                       capture_output=True, text=True)
        text = (self.out / "results.md").read_text()
        self.assertIn("**Worker died** in config N=2^24", text)
        self.assertIn("error (timing)", text)


if __name__ == "__main__":
    unittest.main()
