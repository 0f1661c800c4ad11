// Optimizer-update micro-benchmark: the element loop of Adam's fused kernel on one GPU (what the
// one-rank branch of the generated k_*_f_device runs: f16 gradient in, f32 w, m, v updated in
// place, f16 weights out, 28 bytes per parameter), without any transfer, in forms that differ in
// how the loop is laid out, against a kernel that moves the same bytes with no arithmetic:
//   grid     the generated form: units of 8 elements, a grid-stride loop over blocks of 512
//            threads, as many blocks as are resident (coconet_rt::soloBlocks); occupancy 1 or 2
//            (__launch_bounds__ minimum blocks per SM; alone this loop needs 56 registers, so two
//            blocks fit either way), or one block per SM (the generated kernel's grid at its 116)
//   flat     one unit per thread, no loop, blocks of 256 threads (how Triton's pointwise kernels,
//            and so torch.compile's, are laid out); flat512 the same with blocks of 512
//   grid 8/SM the grid form with 8 blocks per SM's worth (more than are resident)
//   prefetch the grid form with the next unit's loads issued before this unit's stores (the
//            compiler may not move them there itself: the stores might alias the loads)
//   recip    the grid form with the divisions by element-invariant values (1 - beta^t, nranks)
//            done as a product by the rounded reciprocal and one correction (Markstein): the
//            same results bit for bit where the dividend lies in [2^-62, 2^62], __fdiv_rn else
//   copy     the same loads and stores, no arithmetic (w, m, v rotated); on one H100 it ran
//            slower than the update itself (2,998 against 2,733 us at 2^28), so it is no floor
// Every form's results are checked bit for bit against `grid`'s (copy excepted). Times: median of
// 20 launches between CUDA events, after 3 untimed ones.
//   nvcc -O3 -std=c++17 -arch=sm_90a -Isrc/backend/runtime tools/bench/gpu/micro/optim-micro.cu -o optim-micro
//   ./optim-micro [log2 N ...]     (default 24 26 28)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coconet_runtime.cuh"

#include "micro.cuh"

using coconet_rt::Vec;
constexpr int V = 8;
constexpr int kThreads = 512;

struct Params {
  float b1, b2, lr, eps, wd, c1, c2, bc1, bc2, nr;  // c = 1 - beta, bc = 1 - beta^t
  float rbc1, rbc2, rnr;                             // their reciprocals, rounded
};

// a / b by the rounded reciprocal rb of b and one correction: exact (Markstein) when a, b and the
// quotient are normal; b's range is checked by the host (rb's use), a's here.
__device__ __forceinline__ float divInv(float a, float b, float rb) {
  const float aa = fabsf(a);
  if (!(aa >= 0x1p-62f && aa <= 0x1p62f)) return __fdiv_rn(a, b);
  const float q = __fmul_rn(a, rb);
  const float r = __fmaf_rn(-q, b, a);
  return __fmaf_rn(r, rb, q);
}

template <bool kRecip>
__device__ __forceinline__ void adamUnit(const Params& p, const Vec<__half, V>& g, Vec<float, V>& w, Vec<float, V>& m,
                                         Vec<float, V>& v, Vec<__half, V>& w16) {
#pragma unroll
  for (int e = 0; e < V; ++e) {
    const float gf = __half2float(__float2half_rn(__half2float(g.v[e])));
    const float gg = kRecip ? divInv(gf, p.nr, p.rnr) : __fdiv_rn(gf, p.nr);
    const float m1 = __fadd_rn(__fmul_rn(p.b1, m.v[e]), __fmul_rn(p.c1, gg));
    const float v1 = __fadd_rn(__fmul_rn(p.b2, v.v[e]), __fmul_rn(__fmul_rn(p.c2, gg), gg));
    const float mh = kRecip ? divInv(m1, p.bc1, p.rbc1) : __fdiv_rn(m1, p.bc1);
    const float vh = kRecip ? divInv(v1, p.bc2, p.rbc2) : __fdiv_rn(v1, p.bc2);
    const float d = __fdiv_rn(mh, __fadd_rn(sqrtf(vh), p.eps));
    const float u = __fadd_rn(d, __fmul_rn(p.wd, w.v[e]));
    const float w1 = __fsub_rn(w.v[e], __fmul_rn(p.lr, u));
    m.v[e] = m1;
    v.v[e] = v1;
    w.v[e] = w1;
    w16.v[e] = __float2half_rn(w1);
  }
}
__device__ __forceinline__ void copyUnit(const Vec<__half, V>& g, Vec<float, V>& w, Vec<float, V>& m, Vec<float, V>& v,
                                         Vec<__half, V>& w16) {
  // every array stored with what another held (so that no store writes back what it loaded)
  const Vec<float, V> w0 = w;
  w = m, m = v, v = w0;
#pragma unroll
  for (int e = 0; e < V; ++e) w16.v[e] = g.v[e];
}

struct Bufs {
  const __half* g;
  float *w, *m, *v;
  __half* w16;
};

// MODE 0: Adam, 1: Adam with recip divisions, 2: copy
template <int MODE>
__device__ __forceinline__ void unitAt(const Params& p, const Bufs& b, long long i0) {
  Vec<__half, V> g, w16;
  Vec<float, V> w, m, v;
  coconet_rt::load_vec(g, b.g + i0);
  coconet_rt::load_vec_rw(w, b.w + i0);
  coconet_rt::load_vec_rw(m, b.m + i0);
  coconet_rt::load_vec_rw(v, b.v + i0);
  if constexpr (MODE == 2) copyUnit(g, w, m, v, w16); else adamUnit<MODE == 1>(p, g, w, m, v, w16);
  coconet_rt::store_vec(b.w + i0, w);
  coconet_rt::store_vec(b.m + i0, m);
  coconet_rt::store_vec(b.v + i0, v);
  coconet_rt::store_vec(b.w16 + i0, w16);
}

template <int MODE, int OCC>
__global__ void __launch_bounds__(kThreads, OCC) gridKernel(Params p, Bufs b, long long units) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < units; j += (long long)gridDim.x * blockDim.x)
    unitAt<MODE>(p, b, j * V);
}
template <int MODE, int kT = 256>
__global__ void __launch_bounds__(kT) flatKernel(Params p, Bufs b, long long units) {
  const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j < units) unitAt<MODE>(p, b, j * V);
}
__global__ void __launch_bounds__(kThreads) prefetchKernel(Params p, Bufs b, long long units) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= units) return;
  Vec<__half, V> g, w16;
  Vec<float, V> w, m, v;
  coconet_rt::load_vec(g, b.g + j * V);
  coconet_rt::load_vec_rw(w, b.w + j * V);
  coconet_rt::load_vec_rw(m, b.m + j * V);
  coconet_rt::load_vec_rw(v, b.v + j * V);
  for (; j < units; j += stride) {
    const long long n = j + stride;
    Vec<__half, V> g2;
    Vec<float, V> w2, m2, v2;
    if (n < units) {
      coconet_rt::load_vec(g2, b.g + n * V);
      coconet_rt::load_vec_rw(w2, b.w + n * V);
      coconet_rt::load_vec_rw(m2, b.m + n * V);
      coconet_rt::load_vec_rw(v2, b.v + n * V);
    }
    adamUnit<false>(p, g, w, m, v, w16);
    coconet_rt::store_vec(b.w + j * V, w);
    coconet_rt::store_vec(b.m + j * V, m);
    coconet_rt::store_vec(b.v + j * V, v);
    coconet_rt::store_vec(b.w16 + j * V, w16);
    g = g2, w = w2, m = m2, v = v2;
  }
}

__global__ void fillF(float* p, long long n, unsigned seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)(i * 2654435761u) ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    p[i] = (h & 0xffffff) / 16777216.f;  // [0, 1): moments stay valid
  }
}

struct Form {
  const char* name;
  const void* kernel;
  int threads;
  bool flat;
  bool checked;
  int perSm;  // blocks per SM of the grid forms: 0 as many as are resident
};

int main(int argc, char** argv) {
  std::vector<int> logs;
  for (int a = 1; a < argc; ++a) logs.push_back(std::atoi(argv[a]));
  if (logs.empty()) logs = {24, 26, 28};
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs\n", prop.name, sms);
  const Form forms[] = {
      {"grid occ1", (const void*)gridKernel<0, 1>, kThreads, false, true},
      {"grid 1/SM", (const void*)gridKernel<0, 1>, kThreads, false, true, 1},
      {"grid occ2", (const void*)gridKernel<0, 2>, kThreads, false, true},
      {"grid 8/SM", (const void*)gridKernel<0, 1>, kThreads, false, true, 8},
      {"flat", (const void*)flatKernel<0>, 256, true, true},
      {"flat512", (const void*)flatKernel<0, 512>, 512, true, true},
      {"prefetch", (const void*)prefetchKernel, kThreads, false, true},
      {"recip occ1", (const void*)gridKernel<1, 1>, kThreads, false, true},
      {"recip 1/SM", (const void*)gridKernel<1, 1>, kThreads, false, true, 1},
      {"recip occ2", (const void*)gridKernel<1, 2>, kThreads, false, true},
      {"recip flat", (const void*)flatKernel<1>, 256, true, true},
      {"recip f512", (const void*)flatKernel<1, 512>, 512, true, true},
      {"copy grid", (const void*)gridKernel<2, 1>, kThreads, false, false},
      {"copy flat", (const void*)flatKernel<2>, 256, true, false},
  };
  for (const Form& f : forms) {
    cudaFuncAttributes at;
    CK(cudaFuncGetAttributes(&at, f.kernel));
    int per = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, f.kernel, f.threads, 0));
    std::printf("%-11s registers %3d, local %4zu B, %d blocks of %d per SM\n", f.name, at.numRegs, at.localSizeBytes, per, f.threads);
  }
  const float b1 = 0.9f, b2 = 0.999f;
  const int t = 7;
  Params p{b1, b2, 1e-3f, 1e-8f, 0.01f, 1.0f - b1, 1.0f - b2, 1.0f - powf(b1, (float)t), 1.0f - powf(b2, (float)t), 1.0f};
  p.rbc1 = 1.0f / p.bc1, p.rbc2 = 1.0f / p.bc2, p.rnr = 1.0f / p.nr;
  for (int lg : logs) {
    const long long n = 1LL << lg, units = n / V;
    __half *g, *w16, *ref16;
    float *w, *m, *v, *w0, *m0, *v0, *rw, *rm, *rv;
    CK(cudaMalloc(&g, n * 2));
    CK(cudaMalloc(&w16, n * 2));
    CK(cudaMalloc(&ref16, n * 2));
    for (float** q : {&w, &m, &v, &w0, &m0, &v0, &rw, &rm, &rv}) CK(cudaMalloc(q, n * 4));
    fill<<<1024, 256>>>(g, n, 1, 2.0f);
    fillF<<<1024, 256>>>(w0, n, 2);
    fillF<<<1024, 256>>>(m0, n, 3);
    fillF<<<1024, 256>>>(v0, n, 4);
    CK(cudaGetLastError());
    const Bufs bufs{g, w, m, v, w16};
    auto reset = [&] {
      CK(cudaMemcpy(w, w0, n * 4, cudaMemcpyDeviceToDevice));
      CK(cudaMemcpy(m, m0, n * 4, cudaMemcpyDeviceToDevice));
      CK(cudaMemcpy(v, v0, n * 4, cudaMemcpyDeviceToDevice));
    };
    std::printf("N = 2^%d (%.1f MB moved per step)\n", lg, n * 28.0 / 1e6);
    bool first = true;
    for (const Form& f : forms) {
      int per = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, f.kernel, f.threads, 0));
      const long long grid = f.flat ? (units + f.threads - 1) / f.threads
                                    : std::min<long long>((units + f.threads - 1) / f.threads, (long long)(f.perSm > 0 ? f.perSm : per) * sms);
      Params pp = p;
      Bufs bb = bufs;
      long long uu = units;
      void* args[] = {&pp, &bb, &uu};
      auto launch = [&] { CK(cudaLaunchKernel(f.kernel, dim3((unsigned)grid), dim3(f.threads), args, 0, 0)); };
      // one step from the initial state, compared bit for bit with the first form's
      reset();
      launch();
      CK(cudaDeviceSynchronize());
      const char* check = "not checked";
      if (first) {
        CK(cudaMemcpy(rw, w, n * 4, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(rm, m, n * 4, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(rv, v, n * 4, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(ref16, w16, n * 2, cudaMemcpyDeviceToDevice));
        check = "reference";
        first = false;
      } else if (f.checked) {
        std::vector<unsigned> a(n), r(n);
        bool same = true;
        struct Pair {
          const void *x, *y;
          long long bytes;
        };
        for (const Pair& q : {Pair{w, rw, n * 4}, Pair{m, rm, n * 4}, Pair{v, rv, n * 4}, Pair{w16, ref16, n * 2}}) {
          CK(cudaMemcpy(a.data(), q.x, q.bytes, cudaMemcpyDeviceToHost));
          CK(cudaMemcpy(r.data(), q.y, q.bytes, cudaMemcpyDeviceToHost));
          same = same && std::equal(a.begin(), a.begin() + q.bytes / 4, r.begin());
        }
        check = same ? "same bits" : "DIFFERENT";
      }
      const std::vector<float> ms = timeLaunches(launch, 3, 20);
      const double us = ms[ms.size() / 2] * 1e3;
      std::printf("  %-11s grid %7lld: median %9.1f us (min %9.1f), %5.2f TB/s  [%s]\n", f.name, grid, us, ms[0] * 1e3,
                  n * 28.0 / (us * 1e-6) / 1e12, check);
    }
    for (void* q : {(void*)g, (void*)w16, (void*)ref16, (void*)w, (void*)m, (void*)v, (void*)w0, (void*)m0, (void*)v0, (void*)rw, (void*)rm, (void*)rv})
      CK(cudaFree(q));
  }
  return 0;
}
