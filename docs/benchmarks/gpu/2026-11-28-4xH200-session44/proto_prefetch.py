#!/usr/bin/env python3
"""Prototype (session 44, not yet run): LAMB's `apply` kernel asks L2 for its first chunk's w and u
at its entry, so that the update of that chunk, which must wait for the norms' exchange (the
scalar chain, ~3.5 us at 2^24) and before it for `moments` to end (PDL, ~1.8 us), reads them
from L2 rather than HBM: its first pull waits for that update (docs/benchmarks/gpu/
2026-11-28-4xH200-session44: `apply`'s 17 us from entry to its first pull at 2^24). A prefetch
has no effect on what any load returns (L2 is where this GPU's writes meet), so it may precede
the PDL wait.

    proto_prefetch.py GENERATED_LAMB_DIR   (edits lamb.cu in place)
"""
import pathlib
import sys

cu = pathlib.Path(sys.argv[1]) / "lamb.cu"
s = cu.read_text()
start = s.index("k_23_apply_device(ncclDevComm")
end = s.index("\n}\n", start)
k = s[start:end]
old = "  coconet_rt::pdlWait();\n"
assert k.count(old) == 1
new = """  {
    // proto_prefetch.py: chunk 0's w (a0) and u (a2) into L2, one 128-byte line per thread and step
    const long long n0 = coconet_rt::chunkLo(1, rounds, nSlice, 8);
    const long long lines = n0 * static_cast<long long>(sizeof(float)) / 128;  // (whole lines: none past the slice)
    for (long long l = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; l < lines;
         l += static_cast<long long>(gridDim.x) * blockDim.x) {
      asm volatile("prefetch.global.L2 [%0];" ::"l"(a0 + b0 + l * 32));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(a2 + b2 + l * 32));
    }
  }
""" + old
k = k.replace(old, new)
s = s[:start] + k + s[end:]
cu.write_text(s)
print(f"proto_prefetch: {cu}")
