"""The workloads' developer overrides of their configs: megatron's decode token counts
(MEGATRON_DECODE_TOKENS), allreduce's sizes (ALLREDUCE_SIZES) and the optimizers' schedule
variants (BENCH_SCHED_ROWS), compiler variants (BENCH_COMPILER_ROWS, with build.py's
per-program compiler) and tuning-file variants (BENCH_TUNING_ROWS); norms' long-row build.

    python3 -m unittest discover -s tools/bench/gpu/tests
"""
import os
import sys
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from workloads import megatron  # noqa: E402

try:
    from workloads import allreduce  # imports torch.distributed
except ImportError:  # no PyTorch here (CI): its configs need none, so a stand-in module will do
    import types
    torch = types.ModuleType("torch")
    torch.distributed = types.ModuleType("torch.distributed")
    with mock.patch.dict(sys.modules, {"torch": torch, "torch.distributed": torch.distributed}):
        try:
            from workloads import allreduce
        except ImportError:
            allreduce = None


def decode_names(world: int) -> list[str]:
    return [c["name"] for c in megatron.configs(world, quick=False) if c["kind"] == "decode"]


class DecodeTokens(unittest.TestCase):
    def test_default_tokens(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(megatron.DECODE_TOKENS_ENV, None)
            names = decode_names(4)
        self.assertEqual(names, [f"decode T={t} H=4096 {d}" for d in ("f16", "bf16") for t in (1, 8, 64)])

    def test_override_replaces_the_tokens(self):
        with mock.patch.dict(os.environ, {megatron.DECODE_TOKENS_ENV: "128,512"}):
            configs = [c for c in megatron.configs(2, quick=False) if c["kind"] == "decode"]
        self.assertEqual([c["T"] for c in configs], [128, 512, 128, 512])
        # B = T, S = 1; the all-reduce's payload is T * H f16/bf16 elements
        self.assertEqual(configs[0]["sizes"], {"B": 128, "S": 1, "H": 4096})
        self.assertEqual(configs[1]["bytes"], 512 * 4096 * 2)

    def test_bad_override_is_refused(self):
        for text in ("128,x", "0", "-4", ","):
            with mock.patch.dict(os.environ, {megatron.DECODE_TOKENS_ENV: text}):
                with self.assertRaisesRegex(ValueError, megatron.DECODE_TOKENS_ENV):
                    megatron.configs(2, quick=False)

    def test_one_shot_row_has_its_programs(self):
        for key in ("megatron_row_one_shot", "megatron_row_bf16_one_shot"):
            self.assertIn("tune(f, algorithm = one_shot);", megatron.PROGRAMS[key]["schedule_append"])
        for key in ("megatron_row_ll", "megatron_row_bf16_ll"):
            self.assertIn("tune(f, algorithm = ll);", megatron.PROGRAMS[key]["schedule_append"])



@unittest.skipIf(allreduce is None, "workloads/allreduce.py needs torch")
class AllReduceSizes(unittest.TestCase):
    def test_default_sizes(self):
        with mock.patch.dict(os.environ, {}):
            os.environ.pop(allreduce.SIZES_ENV, None)
            names = [c["name"] for c in allreduce.configs(4, quick=False)]
        self.assertEqual(names[0], "64 KiB")
        self.assertEqual(names[-1], "1 GiB")

    def test_override(self):
        with mock.patch.dict(os.environ, {allreduce.SIZES_ENV: "512K, 2m,1G,4096"}):
            configs = allreduce.configs(2, quick=False)
        self.assertEqual([c["name"] for c in configs], ["512 KiB", "2 MiB", "1 GiB", "4 KiB"])
        self.assertEqual(configs[1]["N"], (2 << 20) // 2)

    def test_bad_override_is_refused(self):
        for text in ("512X", "K", "0M", "3", "1.5M"):
            with mock.patch.dict(os.environ, {allreduce.SIZES_ENV: text}):
                with self.assertRaisesRegex(ValueError, allreduce.SIZES_ENV):
                    allreduce.configs(2, quick=False)


class SchedRows(unittest.TestCase):
    """BENCH_SCHED_ROWS: schedule variants of Adam and LAMB as rows coconetc_NAME."""

    def load(self, text: str):
        import importlib
        from workloads import _optim, lamb
        with mock.patch.dict(os.environ, {"BENCH_SCHED_ROWS": text}):
            importlib.reload(_optim)
            return importlib.reload(lamb)

    def tearDown(self):
        self.load("")

    def test_rows_and_programs(self):
        lamb = self.load("t2=tune(moments, taper = 2); tune(apply, taper = 2);|"
                         " ends = tune(moments, taper = 2, taper_ends = last);")
        self.assertEqual(lamb.PROGRAMS["lamb_x_t2"]["schedule_append"],
                         "tune(moments, taper = 2); tune(apply, taper = 2);\n")
        self.assertEqual(lamb.PROGRAMS["lamb_x_ends"]["schedule_append"],
                         "tune(moments, taper = 2, taper_ends = last);\n")
        self.assertEqual(lamb.PROGRAMS["lamb_x_t2"]["schedule"], "samples/lamb/lamb.sched")
        names = [name for name, _ in lamb.rows({"N": 1 << 20}, mock.Mock(world=4), "time")]
        self.assertIn("coconetc_t2", names)
        self.assertIn("coconetc_ends", names)

    def test_none_by_default(self):
        lamb = self.load("")
        self.assertFalse([k for k in lamb.PROGRAMS if "_x_" in k])

    def test_bad_entries_are_refused(self):
        from workloads import _optim
        for text in ("t2", "t 2=tune(f, taper = 2);", "t2=tune(f, taper = 2)", "a=x;|a=y;", "=x;"):
            with self.assertRaisesRegex(ValueError, "BENCH_SCHED_ROWS"):
                _optim.sched_rows(text)


class CompilerRows(unittest.TestCase):
    """BENCH_COMPILER_ROWS: Adam and LAMB compiled by another coconetc as rows coconetc_NAME."""

    def load(self, env: dict):
        import importlib
        from workloads import _optim, adam
        with mock.patch.dict(os.environ, env):
            importlib.reload(_optim)
            return importlib.reload(adam)

    def tearDown(self):
        self.load({"BENCH_COMPILER_ROWS": "", "BENCH_SCHED_ROWS": ""})

    def test_rows_and_programs(self):
        adam = self.load({"BENCH_COMPILER_ROWS": "base=/x/coconetc-main| own = bin/coconetc", "BENCH_SCHED_ROWS": ""})
        self.assertEqual(adam.PROGRAMS["adam_x_base"]["compiler"], "/x/coconetc-main")
        self.assertEqual(adam.PROGRAMS["adam_x_own"]["compiler"], "bin/coconetc")
        self.assertEqual(adam.PROGRAMS["adam_x_own"]["schedule"], adam.PROGRAMS["adam"]["schedule"])
        self.assertNotIn("schedule_append", adam.PROGRAMS["adam_x_own"])
        self.assertNotIn("compiler", adam.PROGRAMS["adam"])
        names = [name for name, _ in adam.rows({"N": 1 << 20}, mock.Mock(world=4), "time")]
        self.assertIn("coconetc_base", names)
        self.assertIn("coconetc_own", names)

    def test_bad_entries_are_refused(self):
        from workloads import _optim
        for text in ("base", "b c=/x", "base=", "a=/x|a=/y", "=/x"):
            with self.assertRaisesRegex(ValueError, "BENCH_COMPILER_ROWS"):
                _optim.compiler_rows(text)

    def test_build_runs_the_programs_compiler(self):
        import tempfile
        import types
        import build
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            for name in ("default", "other"):  # each says who it is and fails
                (d / name).write_text(f"#!/bin/sh\necho compiled-by-{name}\nexit 1\n")
                (d / name).chmod(0o755)
            args = types.SimpleNamespace(coconetc=str(d / "default"), work=d / "work", arch=None)
            spec = dict(workload="adam", source="samples/adam/adam.cnet", schedule="samples/adam/adam.sched")
            rec = build.compile_program("adam", spec, args, d)
            self.assertIn("compiled-by-default", rec["error"])
            self.assertNotIn("compiler", rec)
            rec = build.compile_program("adam_x_b", dict(spec, compiler=str(d / "other")), args, d)
            self.assertIn("compiled-by-other", rec["error"])
            self.assertEqual(rec["compiler"], str(d / "other"))

    def test_programs_keeps_the_rows_variants(self):
        # build.py --programs adam: adam and the programs of its compiler and schedule rows (a
        # compiler row's program left out was a row failing as not built)
        import build
        adam = self.load({"BENCH_COMPILER_ROWS": "c8=/x", "BENCH_SCHED_ROWS": "t2=tune(f, taper = 2);"})
        programs = dict(adam.PROGRAMS, lamb=dict(source="a"), adamw_x_c8=dict(source="b"))
        kept, unknown = build.select_programs(programs, "adam")
        self.assertEqual(sorted(kept), ["adam", "adam_x_c8", "adam_x_t2"])
        self.assertEqual(unknown, [])
        kept, unknown = build.select_programs(programs, "adam_x_c8,nope")
        self.assertEqual(sorted(kept), ["adam_x_c8"])
        self.assertEqual(unknown, ["nope"])

    def test_a_name_of_a_schedule_row_is_refused(self):
        with self.assertRaisesRegex(ValueError, "given twice"):
            self.load({"BENCH_COMPILER_ROWS": "t2=/x", "BENCH_SCHED_ROWS": "t2=tune(f, taper = 2);"})


class TuningRows(unittest.TestCase):
    """BENCH_TUNING_ROWS: Adam and LAMB compiled with a tuning file as rows coconetc_NAME."""

    def load(self, env: dict):
        import importlib
        from workloads import _optim, lamb
        base = {"BENCH_COMPILER_ROWS": "", "BENCH_SCHED_ROWS": "", "BENCH_TUNING_ROWS": ""}
        with mock.patch.dict(os.environ, dict(base, **env)):
            importlib.reload(_optim)
            return importlib.reload(lamb)

    def tearDown(self):
        self.load({})

    def test_rows_and_programs(self):
        from workloads import REPO
        lamb = self.load({"BENCH_TUNING_ROWS": "fixed=tuned/fixed.json| flags = /x/flags.json"})
        self.assertEqual(lamb.PROGRAMS["lamb_x_fixed"]["flags"], ["--tuning", str(REPO / "tuned/fixed.json")])
        self.assertEqual(lamb.PROGRAMS["lamb_x_flags"]["flags"], ["--tuning", "/x/flags.json"])
        self.assertEqual(lamb.PROGRAMS["lamb_x_fixed"]["schedule"], lamb.PROGRAMS["lamb"]["schedule"])
        self.assertNotIn("flags", lamb.PROGRAMS["lamb"])
        names = [name for name, _ in lamb.rows({"N": 1 << 20}, mock.Mock(world=4), "time")]
        self.assertIn("coconetc_fixed", names)
        self.assertIn("coconetc_flags", names)
        self.assertEqual(len(names), len(set(names)))

    def test_none_by_default(self):
        lamb = self.load({})
        self.assertFalse([k for k in lamb.PROGRAMS if "_x_" in k])

    def test_bad_entries_are_refused(self):
        from workloads import _optim
        for text in ("fixed", "fixed=", "a b=x.json", "f=x.json|f=y.json", "=x.json"):
            with self.assertRaisesRegex(ValueError, "BENCH_TUNING_ROWS"):
                _optim.tuning_rows(text)

    def test_a_name_of_the_workloads_own_rows_is_refused(self):
        from workloads import _optim
        for name in ("barriers", "sync", "chunks8", "split", "unscheduled", "barriers_tail"):
            with self.assertRaisesRegex(ValueError, f"BENCH_TUNING_ROWS: row '{name}' would be named as the workload's own row"):
                _optim.tuning_rows(f"{name}=x.json")
        self.assertEqual(_optim.tuning_rows("barriers2=x.json|nobarriers=y.json")[0][0], "barriers2")

    def test_a_name_of_a_compiler_or_schedule_row_is_refused(self):
        with self.assertRaisesRegex(ValueError, "given twice"):
            self.load({"BENCH_COMPILER_ROWS": "base=/x", "BENCH_TUNING_ROWS": "base=x.json"})
        with self.assertRaisesRegex(ValueError, "given twice"):
            self.load({"BENCH_SCHED_ROWS": "t2=tune(f, taper = 2);", "BENCH_TUNING_ROWS": "t2=x.json"})

    def test_programs_keeps_the_rows_variants(self):
        import build
        lamb = self.load({"BENCH_TUNING_ROWS": "fixed=x.json"})
        kept, unknown = build.select_programs(lamb.PROGRAMS, "lamb")
        self.assertIn("lamb_x_fixed", kept)
        self.assertEqual(unknown, [])


class NormsLongRows(unittest.TestCase):
    """norms' coconetc_long: each program's own build with the tuning table's row_long = 1."""

    def test_long_builds_take_the_tuning_file(self):
        import json
        import build
        from workloads import norms
        for key in ("layernorm_f16", "rmsnorm_bf16", "softmax_f16"):
            long = norms.PROGRAMS[f"{key}_x_long"]
            self.assertEqual(long["flags"], ["--tuning", str(norms.ROW_LONG_TUNING)])
            self.assertEqual({k: v for k, v in long.items() if k != "flags"}, norms.PROGRAMS[key])
            self.assertIn(f"{key}_x_long", build.select_programs(norms.PROGRAMS, key)[0])
        entries = json.loads(norms.ROW_LONG_TUNING.read_text())["entries"]
        self.assertEqual([(e["name"], e["rules"]) for e in entries], [("row_long", [{"value": 1}])])
        self.assertFalse([k for k in norms.HEADLINE_PROGRAMS if k.endswith("_x_long")])


if __name__ == "__main__":
    unittest.main()
