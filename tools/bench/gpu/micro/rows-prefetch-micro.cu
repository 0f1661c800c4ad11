// One GPU, no NCCL calls: would the row kernels in registers stream faster if each block stayed
// resident and loaded its next row while it reduces and writes the current one? The generated
// RMSNorm (tools/bench/programs/rmsnorm.cnet, f16) takes ~71 us at T = H = 8192 where
// torch.compile's takes ~67 (rows taking turns): both move the same 268 MB. The
// generated register kernel gives each row R threads of up to 8 packs of 8 halves, a block a row
// (or several short rows), and the SM overlaps one block's loads with another's reduction and
// stores only across its resident blocks. Variants, each launched back to back between two events
// (us per launch), in turns for several rounds:
//   gen      the generated kernel (k_2_y_reg<8, false>, R = coconet_rt::rowThreads(H / 8, 8))
//   genP     the same kernel with at most P packs a thread (R = rowThreads(H / 8, P))
//   genS     its streaming instance (k_2_y_reg<8, true>: evict_first loads, .cs stores)
//   genlong  the generated kernel for rows too long for registers (k_2_y_long<8>: a block of 256
//            threads a row, the statistics in one pass, then the row read again to write)
//   pfK      a block of R = H / 8 / K threads per row, resident blocks only (the occupancy's
//            worth), each looping over rows: the next row's K packs a thread are loaded before the
//            current row is reduced and written (two register buffers), gamma loaded per row
//   pfKg     as pfK with gamma's packs kept in registers for every row
//   tpN      torch.compile's form (its RMSNorm at T = H = 8192 is a
//            looped two-pass): a block of N threads a row, the row read twice, the first read's
//            lines kept in L2 (evict_last), the second from L2 (evict_first); tpNcs / tpNef with
//            streaming (st.global.cs) / evict_first stores
//   reg*     the generated form (R threads of 8 packs a row): reg as generated (ld.global.nc,
//            plain stores), regcs with streaming stores (st.global.cs), regsef with evict_first
//            stores, regef with ld.global evict_first loads, regefcs both, regnef ld.global.nc
//            with evict_first, regnefcs with streaming stores too
// Outputs are compared with the generated kernel's (the sums group differently: max |diff|).
// Build (from the repository root, on the GPU machine):
//   coconetc compile tools/bench/programs/rmsnorm.cnet -o /tmp/rms
//   nvcc -std=c++17 -O3 -arch=sm_90a -I/tmp/rms -I$NCCL/include -Itools/bench/gpu/micro
//     tools/bench/gpu/micro/rows-prefetch-micro.cu -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-prefetch
// Run: /tmp/rows-prefetch T H [rounds] [names: prefixes, comma-separated; NAME$ for NAME alone]
#include "rmsnorm.cu"
#include "micro.cuh"

#include <cstring>
#include <functional>
#include <string>

namespace {

using coconet_rt::Pack;

// The sum of squares of a row's packs in registers, combined over the block (one row a block).
template <int K>
__device__ __forceinline__ float rowSumSq(const Pack<__half, 8> (&v)[K], int kn, float* sh) {
  float q = 0;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (k >= kn) continue;
    float xs[8];
    coconet_rt::unpack(v[k], xs);
#pragma unroll
    for (int j = 0; j < 8; ++j) q += xs[j] * xs[j];
  }
  return coconet_rt::groupCombine<coconet_rt::SumOp<float>>(q, blockDim.x, sh);
}

template <int K, bool G>
__device__ __forceinline__ void rowWrite(const Pack<__half, 8> (&v)[K], const Pack<__half, 8> (&g)[K], int kn, __half* yr,
                                         const __half* gamma, float inv) {
  const int R = blockDim.x, t = threadIdx.x;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (k >= kn) continue;
    const long long u = t + static_cast<long long>(k) * R;
    float xs[8], gs[8], o[8];
    coconet_rt::unpack(v[k], xs);
    if constexpr (G) coconet_rt::unpack(g[k], gs);
    else coconet_rt::unpack(coconet_rt::loadPack<8>(gamma + u * 8), gs);
#pragma unroll
    for (int j = 0; j < 8; ++j) o[j] = xs[j] * inv * gs[j];
    coconet_rt::storeRounded<__half>(yr + u * 8, o);
  }
}

template <int K>
__device__ __forceinline__ void rowLoad(Pack<__half, 8> (&v)[K], int kn, const __half* xr) {
  const int R = blockDim.x, t = threadIdx.x;
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (k < kn) v[k] = coconet_rt::loadPack<8>(xr + (t + static_cast<long long>(k) * R) * 8);
}

// Resident blocks of R threads, each over rows blockIdx.x, + gridDim.x, ...: two buffers in
// turn, the next row's loads issued before the current row's reduction and stores.
template <int K, bool G>
__global__ void __launch_bounds__(512) rms_pf(const __half* __restrict__ x, __half* __restrict__ y,
                                              const __half* __restrict__ gamma, long long rows, long long n, float eps) {
  __shared__ float sh[32];
  const int R = blockDim.x, t = threadIdx.x;
  const long long units = n / 8;
  const int kn = t < units ? static_cast<int>((units - t + R - 1) / R) : 0;
  Pack<__half, 8> a[K], b[K], g[K];
  if constexpr (G) rowLoad(g, kn, gamma);
  const long long step = gridDim.x;
  long long row = blockIdx.x;
  if (row < rows) rowLoad(a, kn, x + row * n);
  const float rn = 1.0f / static_cast<float>(n);
  while (row < rows) {
    const long long r1 = row + step;
    if (r1 < rows) rowLoad(b, kn, x + r1 * n);
    {
      const float inv = 1.0f / sqrtf(rowSumSq(a, kn, sh) * rn + eps);
      rowWrite<K, G>(a, g, kn, y + row * n, gamma, inv);
    }
    if (r1 >= rows) break;
    const long long r2 = r1 + step;
    if (r2 < rows) rowLoad(a, kn, x + r2 * n);
    {
      const float inv = 1.0f / sqrtf(rowSumSq(b, kn, sh) * rn + eps);
      rowWrite<K, G>(b, g, kn, y + r1 * n, gamma, inv);
    }
    row = r2;
  }
}

// L2 eviction policies (createpolicy): a load or store that names one asks L2 to keep its line
// (evict_last: the row is read again) or to let it go first (evict_first: last use, as
// coconet_rt::evictFirstPolicy, which the runtime's streaming loads take).
__device__ __forceinline__ unsigned long long l2Policy(bool keep) {
  if (!keep) return coconet_rt::evictFirstPolicy();
  unsigned long long p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
// ld.global (coherent, unlike the runtime's ld.global.nc) with an L2 policy
__device__ __forceinline__ Pack<__half, 8> loadHint(const __half* p, unsigned long long pol) {
  uint4 w;
  asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
               : "l"(p), "l"(pol));
  Pack<__half, 8> v;
  __builtin_memcpy(&v, &w, sizeof w);
  return v;
}
// mode 0: the runtime's plain store, 2: its streaming one (st.global.cs), 1: st.global with an L2
// policy
__device__ __forceinline__ void storeHint(__half* p, const float (&o)[8], unsigned long long pol, int mode) {
  if (mode == 0) return coconet_rt::storeRounded<__half>(p, o);
  if (mode == 2) return coconet_rt::storeRounded<__half, true>(p, o);
  Pack<__half, 8> v;
#pragma unroll
  for (int j = 0; j < 8; j += 2) {
    const __half2 h = __floats2half2_rn(o[j], o[j + 1]);
    __builtin_memcpy(&v.e[j], &h, sizeof h);
  }
  uint4 w;
  __builtin_memcpy(&w, &v, sizeof w);
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z), "r"(w.w), "l"(pol)
               : "memory");
}

// torch.compile's form (Inductor's looped reduction): one row a block, the
// row read twice: its sum of squares first (loads asking L2 to keep the lines, U packs a thread
// in flight), then again (from L2, evict_first) to write. STORE: 0 plain, 1 L2 evict_first,
// 2 st.global.cs. Few registers: many rows an SM.
template <int U, int STORE>
__global__ void __launch_bounds__(512) rms_twopass(const __half* __restrict__ x, __half* __restrict__ y,
                                                   const __half* __restrict__ gamma, long long rows, long long n, float eps) {
  __shared__ float sh[32];
  const int R = blockDim.x, t = threadIdx.x;
  const long long units = n / 8;
  const unsigned long long keep = l2Policy(true), drop = l2Policy(false);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    const __half* xr = x + row * n;
    __half* yr = y + row * n;
    float q = 0;
#pragma unroll U
    for (long long u = t; u < units; u += R) {
      float xs[8];
      coconet_rt::unpack(loadHint(xr + u * 8, keep), xs);
#pragma unroll
      for (int j = 0; j < 8; ++j) q += xs[j] * xs[j];
    }
    const float inv = 1.0f / sqrtf(coconet_rt::groupCombine<coconet_rt::SumOp<float>>(q, R, sh) / static_cast<float>(n) + eps);
#pragma unroll U
    for (long long u = t; u < units; u += R) {
      float xs[8], gs[8], o[8];
      coconet_rt::unpack(loadHint(xr + u * 8, drop), xs);
      coconet_rt::unpack(coconet_rt::loadPack<8>(gamma + u * 8), gs);
#pragma unroll
      for (int j = 0; j < 8; ++j) o[j] = xs[j] * inv * gs[j];
      storeHint(yr + u * 8, o, drop, STORE);
    }
  }
}

// The generated register kernel's form (one row a block of R threads, K packs a thread, read
// once) with LOAD 0: ld.global.nc as generated, 1: ld.global with an L2 evict_first policy,
// 2: ld.global.nc with it (coconet_rt::loadPackEvictFirst); STORE as above.
template <int K, int LOAD, int STORE>
__global__ void __launch_bounds__(512, 2) rms_reg_hint(const __half* __restrict__ x, __half* __restrict__ y,
                                                       const __half* __restrict__ gamma, long long rows, long long n, float eps) {
  __shared__ float sh[32];
  const int R = blockDim.x, t = threadIdx.x;
  const long long units = n / 8;
  const int kn = t < units ? static_cast<int>((units - t + R - 1) / R) : 0;
  const unsigned long long drop = l2Policy(false);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    Pack<__half, 8> v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (k >= kn) continue;
      const __half* p = x + row * n + (t + static_cast<long long>(k) * R) * 8;
      v[k] = LOAD == 0 ? coconet_rt::loadPack<8>(p) : LOAD == 1 ? loadHint(p, drop) : coconet_rt::loadPackEvictFirst<8>(p, drop);
    }
    const float inv = 1.0f / sqrtf(rowSumSq(v, kn, sh) / static_cast<float>(n) + eps);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      if (k >= kn) continue;
      const long long u = t + static_cast<long long>(k) * R;
      float xs[8], gs[8], o[8];
      coconet_rt::unpack(v[k], xs);
      coconet_rt::unpack(coconet_rt::loadPack<8>(gamma + u * 8), gs);
#pragma unroll
      for (int j = 0; j < 8; ++j) o[j] = xs[j] * inv * gs[j];
      storeHint(y + row * n + u * 8, o, drop, STORE);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const long long T = argc > 1 ? atoll(argv[1]) : 8192, H = argc > 2 ? atoll(argv[2]) : 8192;
  const int rounds = argc > 3 ? atoi(argv[3]) : 3;
  const long long n = T * H, units = H / 8;
  if (H % 8 != 0) {
    std::printf("H must be a multiple of 8\n");
    return 1;
  }
  __half *x, *y, *yref, *g;
  CK(cudaMalloc(&x, n * 2));
  CK(cudaMalloc(&y, n * 2));
  CK(cudaMalloc(&yref, n * 2));
  CK(cudaMalloc(&g, H * 2));
  fill<<<1024, 256>>>(x, n, 11, 4.f);
  fill<<<64, 256>>>(g, H, 3, 2.f);
  CK(cudaDeviceSynchronize());
  int dev = 0, sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const float eps = 1e-6f;

  struct Variant {
    std::string name;
    std::function<void(__half*)> launch;
  };
  std::vector<Variant> vs;
  auto genVariant = [&](int packs, bool stream) {
    const int R = coconet_rt::rowThreads(units, packs);
    if (R <= 0) return;
    const int threads = R < 128 ? 128 : R, rpb = threads / R;
    const int blocks = static_cast<int>((T + rpb - 1) / rpb);
    auto kernel = stream ? k_2_y_reg<8, true> : k_2_y_reg<8, false>;
    int perSm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, 0));
    std::string name = std::string(packs == 8 ? "gen" : "gen" + std::to_string(packs)) + (stream ? "S" : "");
    std::printf("%-6s %d blocks of %d threads (R = %d), %d blocks an SM\n", name.c_str(), blocks, threads, R, perSm);
    vs.push_back({name, [=](__half* out) { kernel<<<blocks, threads>>>(x, out, g, nullptr, T, H, eps, R); }});
  };
  genVariant(8, false);
  genVariant(4, false);
  genVariant(8, true);
  // the generated kernel for rows too long for registers: a block of 256 threads a row, read twice
  {
    const int blocks = static_cast<int>(std::min<long long>(T, 65535));
    std::printf("genlong %d blocks of 256 threads\n", blocks);
    vs.push_back({"genlong", [=](__half* out) { k_2_y_long<8><<<blocks, 256>>>(x, out, g, nullptr, T, H, eps); }});
  }
  auto pfVariant = [&](auto kernel, int K, bool G) {
    const long long R = (units + K - 1) / K;
    if (R > 512 || R < 32 || R % 32 != 0) return;
    int perSm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, static_cast<int>(R), 0));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, kernel));
    const int blocks = static_cast<int>(std::min<long long>(T, static_cast<long long>(perSm) * sms));
    std::string name = "pf" + std::to_string(K) + (G ? "g" : "");
    std::printf("%-6s %d resident blocks of %lld threads, %d an SM, %d registers, %zu B local\n", name.c_str(), blocks, R, perSm,
                fa.numRegs, fa.localSizeBytes);
    vs.push_back({name, [=](__half* out) { kernel<<<blocks, static_cast<int>(R)>>>(x, out, g, T, H, eps); }});
  };
  pfVariant(rms_pf<4, false>, 4, false);
  pfVariant(rms_pf<4, true>, 4, true);
  pfVariant(rms_pf<8, false>, 8, false);
  pfVariant(rms_pf<8, true>, 8, true);
  pfVariant(rms_pf<2, true>, 2, true);

  auto twoPass = [&](auto kernel, int threads, const char* name) {
    int perSm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, 0));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, kernel));
    const int blocks = static_cast<int>(std::min<long long>(T, 1 << 20));
    std::printf("%-6s %d blocks of %d threads, %d an SM, %d registers\n", name, blocks, threads, perSm, fa.numRegs);
    vs.push_back({name, [=](__half* out) { kernel<<<blocks, threads>>>(x, out, g, T, H, eps); }});
  };
  twoPass(rms_twopass<4, 0>, 256, "tp256");
  twoPass(rms_twopass<4, 0>, 512, "tp512");
  twoPass(rms_twopass<4, 2>, 256, "tp256cs");
  twoPass(rms_twopass<4, 1>, 256, "tp256ef");
  twoPass(rms_twopass<2, 0>, 128, "tp128");
  {
    const int R = coconet_rt::rowThreads(units, 8);
    auto regHint = [&](auto kernel, const char* name) {
      if (R < 32 || R % 32 != 0 || (units + R - 1) / R > 8) return;
      int perSm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, R, 0));
      std::printf("%-6s %lld blocks of %d threads, %d an SM\n", name, T, R, perSm);
      vs.push_back({name, [=](__half* out) { kernel<<<static_cast<int>(std::min<long long>(T, 1 << 20)), R>>>(x, out, g, T, H, eps); }});
    };
    regHint(rms_reg_hint<8, 0, 0>, "reg");
    regHint(rms_reg_hint<8, 0, 2>, "regcs");
    regHint(rms_reg_hint<8, 0, 1>, "regsef");
    regHint(rms_reg_hint<8, 1, 0>, "regef");
    regHint(rms_reg_hint<8, 1, 2>, "regefcs");
    regHint(rms_reg_hint<8, 2, 0>, "regnef");
    regHint(rms_reg_hint<8, 2, 2>, "regnefcs");
  }
  // argv[4]: names to keep (comma-separated prefixes; default every variant); the first kept is
  // the reference of the others' outputs
  if (argc > 4) {
    const std::string keep = std::string(",") + argv[4] + ",";
    std::vector<Variant> kept;
    for (auto& v : vs) {
      bool k = false;
      for (size_t at = 0; !k && at < keep.size();) {
        const size_t next = keep.find(',', at + 1);
        const std::string p = keep.substr(at + 1, next - at - 1);
        // NAME$ keeps NAME alone, NAME every variant whose name starts with it
        if (!p.empty() && p.back() == '$') k = v.name == p.substr(0, p.size() - 1);
        else k = !p.empty() && v.name.rfind(p, 0) == 0;
        at = next == std::string::npos ? keep.size() : next;
      }
      if (k) kept.push_back(v);
    }
    vs = kept;
  }
  if (vs.empty()) {
    std::printf("no variant left\n");
    return 1;
  }
  vs[0].launch(yref);
  CK(cudaDeviceSynchronize());
  std::vector<__half> ref(n), got(n);
  CK(cudaMemcpy(ref.data(), yref, n * 2, cudaMemcpyDeviceToHost));
  for (auto& v : vs) {
    CK(cudaMemset(y, 0, n * 2));
    v.launch(y);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(got.data(), y, n * 2, cudaMemcpyDeviceToHost));
    float worst = 0;
    for (long long i = 0; i < n; ++i) worst = std::max(worst, std::fabs(__half2float(got[i]) - __half2float(ref[i])));
    std::printf("%-6s max |diff| against gen %.3g\n", v.name.c_str(), worst);
    if (!(worst < 0.05f)) {
      std::printf("%s: OUTPUT DIFFERS\n", v.name.c_str());
      return 1;
    }
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int iters = 200;
  std::printf("T=%lld H=%lld, us per launch, %d back to back:\n", T, H, iters);
  std::vector<std::vector<float>> times(vs.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < vs.size(); ++i) {
      for (int k = 0; k < 20; ++k) vs[i].launch(y);
      CK(cudaEventRecord(e0));
      for (int k = 0; k < iters; ++k) vs[i].launch(y);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      times[i].push_back(ms * 1000.f / iters);
    }
  }
  CK(cudaGetLastError());
  for (size_t i = 0; i < vs.size(); ++i) {
    std::printf("  %-6s", vs[i].name.c_str());
    for (float t : times[i]) std::printf(" %7.1f", t);
    std::printf("   (%.2f TB/s at the last)\n", 2.0 * n * 2 / (times[i].back() * 1e-6) / 1e12);
  }
  std::printf("ok\n");
  return 0;
}
