#!/usr/bin/env python3
"""Prototype (session 45, not yet run): LAMB's `moments` (roles split) without the own slice's
local copy. Session 45 measured that reading the own slice from the input on the workers' path
costs 10.8 us at 2^26 on 4 H200 (the workers' last chunk is HBM-bound), so the landed form has
the movers copy it into the staging window as before (a 2-byte HBM read early, under the
transfers, a 2-byte write, and the workers read it from L2). Here the movers instead ask L2 for
the own slice's chunk (`prefetch.global.L2`, after pushing the other slices, before the round's
barrier) and the workers read it from the input (OwnSlots): the same L2 hit on the workers' path
with no write (and no write-back) of 2 bytes per element. Where every block both pushes and sums
(movers = 0 at run time) the own slice is skipped as in Adam's kernel.

    proto_ownprefetch.py GENERATED_LAMB_DIR   (edits lamb.cu in place)
"""
import pathlib
import sys

cu = pathlib.Path(sys.argv[1]) / "lamb.cu"
s = cu.read_text()
start = s.index("k_5_moments_device(ncclDevComm")
end = s.index("\n}\n", start)
k = s[start:end]


def once(old: str, new: str) -> None:
    global k
    assert k.count(old) == 1, old
    k = k.replace(old, new)


once("  const __half* slots = kSolo ? rsIn : static_cast<const __half*>(ncclGetLocalPointer(stageWin, 0));\n",
     "  const coconet_rt::OwnSlots<__half> slots{kSolo ? rsIn : static_cast<const __half*>(ncclGetLocalPointer(stageWin, 0)), "
     "rsIn + static_cast<long long>(me) * nSlice, me};\n")
once("      coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec, -1);\n",
     "      coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec, me);\n"
     "      {  // proto_ownprefetch.py: the own slice's chunk r into L2, the movers' 128-byte lines in turn\n"
     "        const char* base = reinterpret_cast<const char*>(rsIn + static_cast<long long>(me) * nSlice);\n"
     "        const long long l0 = edge(r) * static_cast<long long>(sizeof(__half)) / 128;\n"
     "        const long long l1 = edge(r + 1) * static_cast<long long>(sizeof(__half)) / 128;  // (none past the slice)\n"
     "        for (long long l = l0 + static_cast<long long>(pt.index) * blockDim.x + threadIdx.x; l < l1;\n"
     "             l += static_cast<long long>(pt.count) * blockDim.x)\n"
     "          asm volatile(\"prefetch.global.L2 [%0];\" ::\"l\"(base + l * 128));\n"
     "      }\n")
once("    if (r < rounds) coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec, -1);\n",
     "    if (r < rounds) coconet_rt::pushSlices<__half, V>(pt, stageWin, 0, P, me, rsIn, nSlice, edge(r), edge(r + 1), vec, me);\n")
s = s[:start] + k + s[end:]
cu.write_text(s)
print(f"proto_ownprefetch: {cu}")
