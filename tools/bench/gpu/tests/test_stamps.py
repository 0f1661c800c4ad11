"""stamps.py on a generated program's source: which lines it stamps, without a GPU.

    python3 -m unittest discover -s tools/bench/gpu/tests
"""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import stamps  # noqa: E402

REPO = Path(__file__).resolve().parents[4]

# The shape of a generated head kernel (emitDevKernel): PDL wait, a shared rounds loop, the end.
HEAD = """// a helper
template <bool kSolo>
__global__ void __launch_bounds__(512) k_5_f_device(ncclDevComm dc, int rounds) {
  coconet_rt::pdlWait();
  coconet_rt::pdlLaunchDependents();
  if (movers > 0) {
    for (int r = 0; r < rounds; ++r) {
      coconet_rt::roleWait(coconet_rt::roleDone(roles, r), workers);
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    }
    if (lastBarrier) {
      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
    }
    coconet_rt::roleExit(roles, rounds);
    return;
  }
  for (int r = 0; r <= rounds; ++r) {
    if (r < rounds) coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec);
    if (r >= 1) compute(edge(r - 1), edge(r));
    if (r < rounds || lastBarrier) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
  }
}

__global__ void k_6_f(float* out) {
  out[0] = 1;
}
"""


class StampSource(unittest.TestCase):
    def test_head_kernel(self):
        text, n = stamps.stamp_source(HEAD)
        self.assertEqual(n, 1)
        # the runtime before the kernel's template, once
        self.assertEqual(text.count("__device__ unsigned long long stT["), 1)
        self.assertLess(text.index("stT["), text.index("template <bool kSolo>"))
        # entry, PDL wait, the print of the last call by the first kernel
        self.assertIn("const unsigned long long stT0 = stNow();\n  coconet_rt::pdlWait();\n  const unsigned long long stT1 = stNow();\n"
                      "  const unsigned stc = stEnter(0, stT0);\n  stSpreadAt(0, 2, stc, stT1);\n  stamp(0, 1, stc);\n"
                      "  stampPrint(dc.lsaRank, 1, stc);", text)
        # every block's time past the wait and its entry spread over the blocks (52-55)
        self.assertIn("atomicMax(&stSpreadHi[kid][3], t0);", text)
        self.assertIn("for (int s = 0; s < 4; ++s)", text)
        # the shared loop's three statements
        for j in range(3):
            self.assertIn(f"\n    stamp(0, 8 + 4 * r + {j}, stc);", text)
        self.assertNotIn("    stamp(0, 8 + 4 * r + 3, stc);", text)
        # the movers' loop (six spaces) on its own count, not the barrier after it
        self.assertIn("      coconet_rt::roleWait(coconet_rt::roleDone(roles, r), workers);\n      stamp(0, 8 + 4 * r + 0, stc);\n"
                      "      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n      stamp(0, 8 + 4 * r + 1, stc);\n    }", text)
        self.assertIn("    if (lastBarrier) {\n      bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n    }", text)
        # every block's entry and end of the stamped call feed the kernel's earliest entry and latest end
        self.assertIn("atomicMin(&stFirst[kid], t0);", text)
        self.assertIn("atomicMax(&stLast[kid], stNow());", text)
        self.assertIn("stT[kid][b][3] = stFirst[kid];", text)
        # a block returning early stamps its end and counts its exit
        self.assertIn("    stamp(0, 47, stc);\n    stExitK(0);\n    return;", text)
        self.assertIn("  stamp(0, 47, stc);\n  stExitK(0);\n}\n\n__global__ void k_6_f", text)
        # kernels without the device communicator untouched
        self.assertIn("__global__ void k_6_f(float* out) {\n  out[0] = 1;\n}", text)

    def test_no_device_kernel(self):
        self.assertEqual(stamps.stamp_source("__global__ void k(float* x) {\n}\n"), ("__global__ void k(float* x) {\n}\n", 0))

    @unittest.skipUnless((REPO / "build" / "coconetc").exists(), "coconetc not built")
    def test_lamb(self):
        with tempfile.TemporaryDirectory() as tmp:
            gen = Path(tmp) / "lamb"
            subprocess.run([str(REPO / "build" / "coconetc"), "compile", str(REPO / "samples/lamb/lamb.cnet"), "-o", str(gen)],
                           check=True, stdout=subprocess.DEVNULL)
            out = Path(tmp) / "lamb-st"
            self.assertEqual(stamps.main(["stamps.py", str(gen), str(out)]), 0)
            text = (out / "lamb.cu").read_text()
            # moments and apply; apply's scalar chain stamped before its elements
            self.assertIn("stExitK(0);", text)
            self.assertIn("stExitK(1);", text)
            self.assertIn("  stamp(1, 2, stc);\n  stSpread(1, 0, stc);\n  __half* mine", text)
            # the spread of apply's first chunk, which every block computes: after its workerDone
            self.assertRegex(text, r"coconet_rt::workerDone\(roles, 0, gridDim.x,[^\n]*\n +stSpread\(1, 1, stc\);\n")
            # the workers' loop from chunk 1 stamped
            self.assertRegex(text, r"for \(int r = 1; r < rounds; \+\+r\) \{\n +compute\(edge\(r\), edge\(r \+ 1\)\);\n"
                                   r" +stamp\(1, 8 \+ 4 \* r \+ 0, stc\);")
            # the movers' pulls, both forms (claimed tiles, fixed parts), stamped per round
            self.assertRegex(text, r"coconet_rt::pullTiles<[^\n]*\n +stamp\(1, 8 \+ 4 \* r \+ 0, stc\);\n")
            self.assertRegex(text, r"coconet_rt::needChunk\([^\n]*\n +stamp\(1, 8 \+ 4 \* r \+ 0, stc\);\n"
                                   r" +coconet_rt::pullSlices<[^\n]*\n +stamp\(1, 8 \+ 4 \* r \+ 1, stc\);\n")
            self.assertEqual(text.count("stampPrint(dc.lsaRank, 2, stc);"), 1)
            self.assertEqual((out / "lamb_main.cu").read_text(), (gen / "lamb_main.cu").read_text())


if __name__ == "__main__":
    unittest.main()
