#!/usr/bin/env python3
"""Prototype (session 46): session 45's proto_ownprefetch.py on the generated code of this
session's compiler, whose roles kernels already leave the own slice in the input when they run
without movers (`movers > 0 ? stage : rsIn`). With movers, LAMB's `moments` movers here skip the
own slice too and ask L2 for its chunk instead (`prefetch.global.L2`, after pushing the other
slices, before the round's barrier); the workers read it from the input: an L2 hit on their path,
as when the movers copied it into the staging window, with no write (and no write-back) of 2
bytes per element.

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


once("slots{stage, (movers > 0 ? stage : rsIn) + static_cast<long long>(me) * nSlice, me};",
     "slots{stage, rsIn + static_cast<long long>(me) * nSlice, me};  // proto_ownprefetch.py")
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
s = s[:start] + k + s[end:]
cu.write_text(s)
print(f"proto_ownprefetch: {cu}")
