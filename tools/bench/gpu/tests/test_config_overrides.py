"""The workloads' developer overrides of their configs: megatron's decode token counts
(MEGATRON_DECODE_TOKENS) and allreduce's sizes (ALLREDUCE_SIZES).

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


if __name__ == "__main__":
    unittest.main()
