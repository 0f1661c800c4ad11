#!/usr/bin/env python3
"""Prototype (session 27): %globaltimer stamps in the device-API kernels of a generated folder
(block 0 and the grid's last block; every thread runs the stamp, thread 0 writes) at the kernel's
entry, after its PDL wait, after every statement of its shared rounds loop, after the tail's
scalar chain, and at the kernel's end. Each kernel counts its completed launches (the last block
to end adds 1), so that only call K's launches (K = STAMP_CALL, default 200) write stamps; the
first device kernel of call K+1 prints them in microseconds from call K's first kernel's entry on
block 0: `ST rank R kernel KID block B: index:us ...` (index 0 entry, 1 after the PDL wait, 2 after
the scalar chain, 8 + 4r + j the j-th statement of round r, 47 the end).
Usage: proto_stamps.py GENERATED_DIR OUT_DIR NAME
"""
import pathlib, re, shutil, sys
src, dst, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
if dst.exists(): shutil.rmtree(dst)
shutil.copytree(src, dst)
cu = dst / f"{name}.cu"
t = cu.read_text()
pre = r'''
// proto stamps
#ifndef STAMP_CALL
#define STAMP_CALL 200
#endif
__device__ unsigned long long stT[4][2][48];
__device__ unsigned stLaunch[4], stExit[4];
__device__ __forceinline__ unsigned long long stNow() { unsigned long long x; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(x)); return x; }
__device__ __forceinline__ int stBlock() { return blockIdx.x == 0 ? 0 : blockIdx.x == gridDim.x - 1 ? 1 : -1; }
__device__ __forceinline__ void stamp(int kid, int k, unsigned call) {
  __syncthreads();
  if (call == STAMP_CALL && stBlock() >= 0 && threadIdx.x == 0 && k < 48) stT[kid][stBlock()][k] = stNow();
}
__device__ __forceinline__ unsigned stEnter(int kid, unsigned long long t0) {
  const unsigned call = *static_cast<volatile unsigned*>(&stLaunch[kid]);
  if (call == STAMP_CALL && stBlock() >= 0 && threadIdx.x == 0) stT[kid][stBlock()][0] = t0;
  return call;
}
__device__ __forceinline__ void stExitK(int kid) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&stExit[kid], 1u) == gridDim.x - 1) { stExit[kid] = 0; __threadfence(); atomicAdd(&stLaunch[kid], 1u); }
  }
}
__device__ __forceinline__ void stampPrint(int me, int kernels, unsigned call) {
  if (call == STAMP_CALL + 1 && blockIdx.x == 0 && threadIdx.x == 0) {
    const unsigned long long z = stT[0][0][0];
    for (int kid = 0; kid < kernels; ++kid)
      for (int b = 0; b < 2; ++b) {
        printf("ST rank %d kernel %d block %d:", me, kid, b);
        for (int k = 0; k < 48; ++k) if (stT[kid][b][k] >= z && stT[kid][b][k] - z < 100000000ull) printf(" %d:%.1f", k, (stT[kid][b][k] - z) / 1000.0);
        printf("\n");
      }
  }
}
'''
i = t.index("template <")
t = t[:i] + pre + t[i:]
kernels = [m.start() for m in re.finditer(r"__global__ void [^\n]*_device\(ncclDevComm", t)]
nk = len(kernels)
out, last = [], 0
for kid, start in enumerate(kernels):
    end = t.index("\n}\n", start) + 3
    lines = t[start:end].split("\n")
    res, j, inloop = [], 0, False
    for ln in lines:
        if re.match(r"^  for \(int r = 0;", ln): inloop = True
        if ln.strip() == "coconet_rt::pdlWait();":
            res.append("  const unsigned long long stT0 = stNow();")
            res.append(ln)
            res.append(f"  const unsigned stc = stEnter({kid}, stT0);")
            res.append(f"  stamp({kid}, 1, stc);")
            if kid == 0: res.append(f"  stampPrint(dc.lsaRank, {nk}, stc);")
            continue
        if ln.startswith("  __half* mine = static_cast<__half*>") and kid > 0:
            res.append(f"  stamp({kid}, 2, stc);")
        res.append(ln)
        if inloop and re.match(r"^    (if \(r[^)]*\) )?(coconet_rt::pushSlices|coconet_rt::pullSlices|compute\(edge|bar\.sync)", ln):
            res.append(f"    stamp({kid}, 8 + 4 * r + {j}, stc);"); j += 1
    body = "\n".join(res)
    body = body[:-3] + "\n" + f"  stamp({kid}, 47, stc);\n  stExitK({kid});" + "\n}\n"
    out.append(t[last:start]); out.append(body); last = end
out.append(t[last:])
cu.write_text("".join(out))
print(f"stamps: {nk} kernels in {cu}")
