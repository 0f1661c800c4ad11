"""The headline (headline.py, bench.py --headline): figures by GPU time, the strongest peer, the
floor, verdicts with the runs' spread ("level" inside it), provisional verdicts, failed checks,
every peer always run; without GPUs or PyTorch.

    python3 -m unittest discover -s tools/bench/gpu/tests
"""
import json
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path

GPU = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(GPU))
import bench  # noqa: E402
import headline  # noqa: E402
from workloads import FASTER, headline as spec  # noqa: E402
from fakes import OneRank  # noqa: E402

FLOOR = ("floor", "<=", 1.15, "x floor <= 1.15")


def row(name, gpu=None, median=None, graph=False, check="pass", after=None, queued_ok=True):
    r = {"name": name, "check": {"status": check}}
    if gpu is not None or median is not None:
        r["time"] = {"status": "ok", "median_us": median if median is not None else gpu * 1.5}
        if gpu is not None:
            r["time"].update(queued_us=gpu, queued_ok=queued_ok)
    if graph:
        r["graph"] = True
    if after:
        r["check_after"] = {"status": after}
    return r


def raw(workload, world, rows, s, rep=None, date="2026-12-06T10:00:00Z", name="N=2^24"):
    return {"workload": workload, "world": world, "status": "complete",
            "meta": {"date": date, "gpu": "NVIDIA H100 80GB HBM3", "gpu_count": world, "world": world, "rep": rep,
                     "command": "bash tools/bench/gpu/run.sh --headline"},
            "configs": [{"name": name, "params": {"N": 1 << 24}, "headline": s, "rows": rows}]}


class Folder:
    """A runs/ folder of raw files made up in a temporary directory."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name) / "runs"

    def add(self, run, name, data):
        p = self.root / run / "raw"
        p.mkdir(parents=True, exist_ok=True)
        (p / name).write_text(json.dumps(data))

    def entries(self):
        return headline.entries(headline.load_runs(self.root))


class Judge(unittest.TestCase):
    def s(self, values):
        return headline.spread(values)

    def test_met_missed_and_level_against_the_peer(self):
        t = spec(targets=[FASTER])["targets"][0]
        c = self.s([100.0, 101.0, 102.0])
        self.assertEqual(headline.judge(t, c, self.s([110.0, 111.0, 112.0]), None)[0], "met")
        self.assertEqual(headline.judge(t, c, self.s([90.0, 91.0, 92.0]), None)[0], "missed")
        # the peer's median is above coconetc's, but its fastest run beats coconetc's slowest
        verdict, ratio = headline.judge(t, c, self.s([101.5, 103.0, 104.0]), None)
        self.assertEqual(verdict, "level")
        self.assertAlmostEqual(ratio, 103.0 / 101.0)

    def test_floor_target(self):
        t = spec(targets=[FLOOR])["targets"][0]
        floor = self.s([100.0, 100.0, 100.0])
        self.assertEqual(headline.judge(t, self.s([110.0, 112.0, 114.0]), None, floor)[0], "met")
        self.assertEqual(headline.judge(t, self.s([120.0, 121.0, 122.0]), None, floor)[0], "missed")
        self.assertEqual(headline.judge(t, self.s([113.0, 115.0, 117.0]), None, floor)[0], "level")
        self.assertEqual(headline.judge(t, self.s([110.0]), None, None)[0], "not measured")

    def test_combine(self):
        self.assertEqual(headline.combine(["met", "level"]), "level")
        self.assertEqual(headline.combine(["met", "missed", "level"]), "missed")
        self.assertEqual(headline.combine(["met", "met"]), "met")

    def test_figure_by_gpu_time_or_graph_median(self):
        self.assertEqual(headline.figure(row("eager", gpu=40.0, median=90.0)), (40.0, "gpu"))
        self.assertEqual(headline.figure(row("eager_graph", median=12.0, graph=True)), (12.0, "graph"))
        # a graph whose replays cost the host more than the GPU: its GPU time, the peer's better figure
        self.assertEqual(headline.figure(row("torch.compile_graphs", gpu=15.0, median=120.0, graph=True)), (15.0, "graph"))
        # the host did not get ahead: no GPU time, and the host-bound median is not used instead
        self.assertIsNone(headline.figure(row("eager", gpu=40.0, median=90.0, queued_ok=False)))
        self.assertIsNone(headline.figure(row("eager", median=90.0)))


class Entries(unittest.TestCase):
    def setUp(self):
        self.f = Folder()
        self.spec = spec(peers=["eager", "torch.compile"], floors=["copy"], targets=[FASTER])

    def tearDown(self):
        self.f.tmp.cleanup()

    def three(self, c, eager, compiled, floor=50.0, **kw):
        for k in range(3):
            self.f.add("2026-12-06-1xH100", f"adam-p1-r{k + 1}.json",
                       raw("adam", 1, [row("eager", eager[k]), row("torch.compile", compiled[k]),
                                       row("coconetc", c[k], **kw), row("copy", floor)], self.spec, rep=k + 1))

    def test_the_strongest_peer_and_the_median_of_three_runs(self):
        self.three([100, 104, 102], [300, 310, 305], [95, 96, 97])
        (e,) = self.f.entries()
        self.assertEqual(e["strongest"], "torch.compile")
        self.assertEqual(e["coconetc"]["median"], 102)
        self.assertEqual((e["coconetc"]["min"], e["coconetc"]["max"], e["coconetc"]["n"]), (100, 104, 3))
        self.assertEqual(e["verdict"], "missed")
        self.assertEqual(e["provisional"], [])
        self.assertAlmostEqual(e["ratio_peer"], 96 / 102)
        self.assertAlmostEqual(e["ratio_floor"], 102 / 50)

    def test_a_target_inside_the_spread_is_level(self):
        self.three([100, 104, 102], [300, 310, 305], [101, 106, 103])
        (e,) = self.f.entries()
        self.assertEqual(e["verdict"], "level")

    def test_a_failed_check_after_the_timed_steps_fails_the_config(self):
        self.three([100, 100, 100], [300, 300, 300], [200, 200, 200], after="fail")
        (e,) = self.f.entries()
        self.assertEqual(e["verdict"], "FAILED")

    def test_a_peer_without_figures_makes_a_met_verdict_provisional(self):
        for k in range(3):
            self.f.add("2026-12-06-1xH100", f"adam-p1-r{k + 1}.json",
                       raw("adam", 1, [row("eager", 300), row("coconetc", 100), row("copy", 50)], self.spec, rep=k + 1))
        (e,) = self.f.entries()
        self.assertEqual(e["verdict"], "met")
        self.assertEqual(e["lacking"], ["torch.compile"])
        self.assertIn("peers not measured", e["provisional"])
        self.assertIn("| met, provisional", "\n".join(headline.table([e])))

    def test_missed_stays_missed_without_every_peer(self):
        # a peer not measured could only be faster: the miss is final, the run count still counts
        for k in range(3):
            self.f.add("2026-12-06-1xH100", f"adam-p1-r{k + 1}.json",
                       raw("adam", 1, [row("eager", 80), row("coconetc", 100), row("copy", 50)], self.spec, rep=k + 1))
        (e,) = self.f.entries()
        self.assertEqual((e["verdict"], e["provisional"]), ("missed", []))

    def test_one_run_is_provisional(self):
        self.f.add("2026-12-06-1xH100", "adam-p1-r1.json",
                   raw("adam", 1, [row("eager", 300), row("torch.compile", 200), row("coconetc", 100), row("copy", 50)],
                       self.spec, rep=1))
        (e,) = self.f.entries()
        self.assertEqual((e["verdict"], e["provisional"]), ("met", ["1 run"]))

    def test_the_newest_run_of_a_workload_is_used(self):
        self.f.add("2026-11-01-1xH100", "adam-p1.json",
                   raw("adam", 1, [row("eager", 300), row("torch.compile", 200), row("coconetc", 100), row("copy", 50)],
                       self.spec, date="2026-11-01T00:00:00Z"))
        self.three([100, 100, 100], [300, 300, 300], [90, 90, 90])
        (e,) = self.f.entries()
        self.assertEqual(e["run"], "2026-12-06-1xH100")

    def test_a_run_made_before_headlines_gets_the_modules_headline_and_names_what_it_lacked(self):
        old = raw("lamb", 4, [row("eager", 900.0), row("coconetc", 220.0), row("nccl_allreduce", 175.0)], None,
                  date="2026-11-29T00:00:00Z")
        del old["configs"][0]["headline"]
        self.f.add("2026-11-29-4xH200", "lamb-p4.json", old)
        (e,) = self.f.entries()
        self.assertEqual(e["spec"]["floors"], ["nccl_allreduce"])
        self.assertIn("zero", e["lacking"])
        self.assertIn("torch.compile", e["lacking"])
        self.assertEqual(e["verdict"], "missed")          # 220 / 175 = 1.26x the all-reduce
        self.assertEqual(e["provisional"], ["1 run"])

    def test_the_readme_names_the_run_and_the_command(self):
        self.three([100, 104, 102], [300, 310, 305], [95, 96, 97])
        text, es = headline.readme(self.f.root, plots_rel="plots")
        self.assertIn("runs/2026-12-06-1xH100/", text)
        self.assertIn("`bash tools/bench/gpu/run.sh --headline`", text)
        self.assertIn("**missed**", text)


class BenchHeadlineRows(unittest.TestCase):
    """bench.py --headline runs exactly the headline's rows and refuses to run without one."""

    class Ctx(OneRank):
        rank = 0
        skip_coconetc = False

    def run_config(self, names, s):
        ran = []

        def make(name):
            def factory():
                ran.append(name)
                return types.SimpleNamespace(step=lambda: None, check=False, outputs=lambda: {})
            return factory
        module = types.SimpleNamespace(rows=lambda cfg, ctx, mode: [(n, make(n)) for n in names])
        rec = {"name": "c", "rows": [], "headline": s}
        args = types.SimpleNamespace(rows="coconetc", check_repeats=1, interleave=0, warmup=1, iters=2,
                                     warmup_seconds=0.0)

        def rowrec(name):
            r = {"name": name}
            rec["rows"].append(r)
            return r
        bench.run_config(module, {"name": "c"}, self.Ctx(), args, rec, lambda: None, lambda m: None, lambda m: None)
        return rec, ran

    def test_every_headline_row_and_no_other(self):
        s = spec(peers=["eager", "torch.compile"], floors=["copy"], targets=[FASTER])
        rec, ran = self.run_config(["eager", "torch.compile", "coconetc", "coconetc_split", "copy"], s)
        # --rows coconetc was given: a headline ignores it and runs every peer, never the variant
        self.assertEqual(sorted(set(ran)), ["coconetc", "copy", "eager", "torch.compile"])
        self.assertNotIn("error", rec)

    def test_a_missing_peer_fails_the_config(self):
        s = spec(peers=["eager", "embedding_bag"], targets=[FASTER])
        rec, ran = self.run_config(["eager", "coconetc"], s)
        self.assertIn("embedding_bag", rec["error"])
        self.assertEqual(ran, [])

    def test_rows_and_configs_are_refused_with_headline(self):
        for extra in (["--rows", "coconetc"], ["--configs", "N=2^24"]):
            p = subprocess.run([sys.executable, str(GPU / "bench.py"), "--headline", *extra, "--pending",
                                "--world", "1"], capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("refused", p.stderr)

    def test_every_workloads_headline_names_rows_its_module_makes(self):
        # the peers and floors a headline names are rows of the module (checked on the GPU too)
        for w in bench.workload_names(None):
            module = headline.import_workload(w)
            src = Path(module.__file__).read_text() + (GPU / "workloads" / "_optim.py").read_text()
            for world in (1, 2, 4):
                for cfg in module.configs(world, False):
                    s = module.headline(cfg, world)
                    if s is None:
                        continue
                    for name in bench.headline_rows(s):
                        self.assertIn(f'"{name}"', src, f"{w}: headline row {name} is no row of the module")
                    self.assertTrue(s["peers"] and s["targets"], f"{w} {cfg['name']}: a headline needs peers and targets")


if __name__ == "__main__":
    unittest.main()
