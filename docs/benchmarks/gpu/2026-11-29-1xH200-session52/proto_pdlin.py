#!/usr/bin/env python3
"""Session 52 prototype: pdl-micro's pair of kernels inside a generated driver's process.

Copies a folder that `coconetc compile` wrote and adds to its driver (NAME_main.cu) a probe that
runs pdl-micro's question on the program's own stream: a primary of one 512-thread block per SM
(held by its registers), 32 blocks leaving after 10 us and the rest after 60 us, every block first
saying `griddepcontrol.launch_dependents`; a secondary of 2 x SMs blocks launched next with
programmatic stream serialization, which fits on no SM the primary holds. The probe runs (20
repetitions, medians) right after the stream is made, after the --bench warm-up (the program's
kernels loaded, its device communicator made) and after the timed calls, and prints

    PDLPROBE WHEN: early exit E | primary exit X | secondary first entry F | first past wait W

in microseconds from the primary's first entry. If PDL places blocks early there, F follows E.

    proto_pdlin.py GENERATED_DIR OUT_DIR
"""
import pathlib
import shutil
import sys

KERNELS = r'''
// ---- proto_pdlin: pdl-micro's pair in the driver's process ----
struct PdlProbeStamps {
  unsigned long long primEntry, earlyExit, primExit, secEntry, secWait;
};
__device__ __forceinline__ unsigned long long pdlProbeNow() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void __launch_bounds__(512, 1) pdlProbePrimary(PdlProbeStamps* s) {
  const unsigned long long t0 = pdlProbeNow();
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (threadIdx.x == 0) atomicMin(&s->primEntry, t0);
  const unsigned long long until = t0 + (blockIdx.x < 32 ? 10000ull : 60000ull);
  float r[112];
#pragma unroll
  for (int j = 0; j < 112; ++j) r[j] = __int_as_float(static_cast<int>(threadIdx.x) + j);
  while (pdlProbeNow() < until) {
#pragma unroll
    for (int j = 0; j < 112; ++j) r[j] = fmaf(r[j], 1.0001f, r[(j + 1) % 112]);
  }
  float sum = 0.f;
#pragma unroll
  for (int j = 0; j < 112; ++j) sum += r[j];
  if (sum == 1.2345f) s->secWait = 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned long long t1 = pdlProbeNow();
    if (blockIdx.x < 32) atomicMax(&s->earlyExit, t1);
    atomicMax(&s->primExit, t1);
  }
}
__global__ void __launch_bounds__(512) pdlProbeSecondary(PdlProbeStamps* s) {
  const unsigned long long t0 = pdlProbeNow();
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned long long t1 = pdlProbeNow();
  if (threadIdx.x == 0) {
    atomicMin(&s->secEntry, t0);
    atomicMin(&s->secWait, t1);
  }
}
static void pdlProbe(cudaStream_t st, const char* when) {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  PdlProbeStamps* s = nullptr;
  cudaMalloc(&s, sizeof(PdlProbeStamps));
  const PdlProbeStamps init{~0ull, 0, 0, ~0ull, ~0ull};
  std::vector<double> col[4];
  for (int k = 0; k < 25; ++k) {
    cudaMemcpyAsync(s, &init, sizeof init, cudaMemcpyHostToDevice, st);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t c = {};
    c.blockDim = dim3(512);
    c.stream = st;
    c.attrs = attr;
    c.gridDim = dim3(static_cast<unsigned>(sms));
    c.numAttrs = 0;
    cudaLaunchKernelEx(&c, pdlProbePrimary, s);
    c.gridDim = dim3(static_cast<unsigned>(2 * sms));
    c.numAttrs = 1;
    cudaLaunchKernelEx(&c, pdlProbeSecondary, s);
    PdlProbeStamps h;
    cudaMemcpyAsync(&h, s, sizeof h, cudaMemcpyDeviceToHost, st);
    if (cudaStreamSynchronize(st) != cudaSuccess) { std::printf("PDLPROBE %s: failed\n", when); return; }
    if (k < 5) continue;
    const double z = static_cast<double>(h.primEntry);
    col[0].push_back((h.earlyExit - z) / 1000.0);
    col[1].push_back((h.primExit - z) / 1000.0);
    col[2].push_back((h.secEntry - z) / 1000.0);
    col[3].push_back((h.secWait - z) / 1000.0);
  }
  cudaFree(s);
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::printf("PDLPROBE %s: early exit %.1f | primary exit %.1f | secondary first entry %.1f | first past wait %.1f\n",
              when, med(col[0]), med(col[1]), med(col[2]), med(col[3]));
  std::fflush(stdout);
}
'''


def main() -> int:
    src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("ab-build*"))
    mains = list(dst.glob("*_main.cu"))
    if len(mains) != 1:
        print(f"proto_pdlin: expected one driver in {dst}", file=sys.stderr)
        return 1
    text = mains[0].read_text()
    edits = [
        ("  DRIVER_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), \"setup\");\n",
         "  DRIVER_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), \"setup\");\n"
         "  pdlProbe(stream, \"before the program\");\n"),
        ("        std::vector<double> us;\n",
         "        pdlProbe(stream, \"after the warm-up\");\n        std::vector<double> us;\n"),
        ("        std::sort(us.begin(), us.end());\n",
         "        pdlProbe(stream, \"after the timed calls\");\n        std::sort(us.begin(), us.end());\n"),
    ]
    for old, new in edits:
        if text.count(old) != 1:
            print(f"proto_pdlin: expected one {old.strip()!r} in the driver", file=sys.stderr)
            return 1
        text = text.replace(old, new)
    anchor = text.index("\nint runRank(")
    text = text[:anchor] + "\n" + KERNELS + text[anchor:]
    mains[0].write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
