// One GPU, no NCCL calls: why the generated layer norm's register kernel takes ~68-71 us alone
// (Nsight Compute, caches flushed or as the previous launch left them) but ~80 us a step back to
// back, where torch.compile's kernel takes ~71 either way (session 57, session 59 call b). The
// generated kernel (tools/bench/programs/layernorm.cnet, T = H = 8192 f16: one row a block of 128
// threads, 8 packs a thread) is included from the compiled program and launched directly:
//   b2b     200 launches back to back between two events (per launch)
//   each    launches each between its own events (median), as the bench's medians
//   gapN    each launch after a one-block sleep of ~N us (the sleep's own time, measured alone
//           the same way, subtracted)
//   alt     back to back over two input/output pairs in turn
//   occK    back to back with dynamic shared memory that holds the kernel to K blocks an SM
//   split2  back to back, each launch as two launches of half the rows
//   run     (with argument 3 `program`) the generated program's own step back to back
//   carveP  back to back with the kernel's preferred shared memory carveout P (-1: none, 0: the
//           most L1), alone, after one launch of a kernel using the most shared memory a block may
//           have, and with such a one-block kernel before every launch (its own time subtracted)
// Every variant's output is compared with the first launch's, bit for bit.
// Build (from the repository root, on the GPU machine):
//   coconetc compile tools/bench/programs/layernorm.cnet -o /tmp/ln
//   nvcc -std=c++17 -O3 -arch=sm_90a -I/tmp/ln -I$NCCL/include -Itools/bench/gpu
//     tools/bench/gpu/rows-b2b-micro.cu -L$NCCL/lib -lnccl -lcublas -o /tmp/rows-b2b
#include "layernorm.cu"
#include "micro.cuh"

#include <cstring>

__global__ void sleepKernel(unsigned ns) {
  if (threadIdx.x == 0) {
    for (unsigned t = 0; t < ns; t += 1000) __nanosleep(1000);
  }
}

// Uses `smem` bytes of dynamic shared memory (so the SMs are configured for it) and writes nothing
// unless `w` is set.
__global__ void bigShared(__half* out, int w) {
  extern __shared__ float buf[];
  buf[threadIdx.x] = threadIdx.x;
  __syncwarp();
  if (w) out[threadIdx.x] = __float2half(buf[31 - threadIdx.x]);
}

int main(int argc, char** argv) {
  const long long T = argc > 1 ? atoll(argv[1]) : 8192, H = argc > 2 ? atoll(argv[2]) : 8192;
  const long long n = T * H;
  const int R = coconet_rt::rowThreads(H / 8, 8);
  if (R <= 0) {
    std::printf("rows of %lld do not fit the register kernel\n", H);
    return 1;
  }
  const int threads = R < 128 ? 128 : R, rpb = threads / R;
  const int blocks = static_cast<int>((T + rpb - 1) / rpb);
  __half *x[2], *y[2], *g, *b;
  for (int i = 0; i < 2; ++i) {
    CK(cudaMalloc(&x[i], n * 2));
    CK(cudaMalloc(&y[i], n * 2));
    fill<<<1024, 256>>>(x[i], n, 11 + i, 4.f);
  }
  CK(cudaMalloc(&g, H * 2));
  CK(cudaMalloc(&b, H * 2));
  fill<<<64, 256>>>(g, H, 3, 0.2f);
  fill<<<64, 256>>>(b, H, 5, 0.2f);
  CK(cudaDeviceSynchronize());
  int dev = 0, sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  int perSm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, k_3_y_reg<8>, threads, 0));
  std::printf("T=%lld H=%lld: %d blocks of %d threads (R=%d), %d blocks an SM, %d SMs\n", T, H, blocks,
              threads, R, perSm, sms);
  // argv[3]: "plain" (default) or "program": NCCL set up over one rank and the generated program
  // created on it first (cuBLAS handle and all), then the variants, and `run` (the program's
  // own step, back to back), as the generated driver and the bench run it
  const bool withProgram = argc > 3 && std::strcmp(argv[3], "program") == 0;
  ncclComm_t comm = nullptr;
  coconet_gen::layernorm* prog = nullptr;
  if (withProgram) {
    ncclUniqueId id;
    CK(ncclGetUniqueId(&id));
    CK(ncclCommInitRank(&comm, 1, id, 0));
    prog = new coconet_gen::layernorm(comm, 0);
  }
  const float eps = 1e-5f;
  int maxOptin = 0;
  CK(cudaDeviceGetAttribute(&maxOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const int bigSmem = maxOptin;
  CK(cudaFuncSetAttribute(bigShared, cudaFuncAttributeMaxDynamicSharedMemorySize, bigSmem));
  auto launch = [&](int i, size_t smem, long long r0, long long rows) {
    const int bl = static_cast<int>((rows + rpb - 1) / rpb);
    k_3_y_reg<8><<<bl, threads, smem>>>(x[i] + r0 * H, y[i] + r0 * H, g, b, rows, H, eps, R);
  };
  // reference output of pair 0
  launch(0, 0, 0, T);
  CK(cudaDeviceSynchronize());
  std::vector<__half> ref(n), got(n);
  CK(cudaMemcpy(ref.data(), y[0], n * 2, cudaMemcpyDeviceToHost));
  auto check = [&](const char* what) {
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(got.data(), y[0], n * 2, cudaMemcpyDeviceToHost));
    if (std::memcmp(got.data(), ref.data(), n * 2) != 0) {
      std::printf("%s: OUTPUT DIFFERS\n", what);
      std::exit(1);
    }
  };
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int iters = 200;
  // `body(k)` issued `iters` times back to back between two events: us per iteration
  auto b2b = [&](auto body) {
    for (int k = 0; k < 20; ++k) body(k);
    CK(cudaEventRecord(e0));
    for (int k = 0; k < iters; ++k) body(k);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaGetLastError());
    return ms * 1000.f / iters;
  };
  for (int round = 0; round < 2; ++round) {
    std::printf("round %d\n", round);
    std::printf("  b2b      %7.1f us\n", b2b([&](int) { launch(0, 0, 0, T); }));
    check("b2b");
    if (prog) {
      coconet_gen::layernorm_sizes sz;
      sz.s_T = T;
      sz.s_H = H;
      coconet_gen::layernorm_tensors tt;
      tt.x = x[0];
      tt.gamma = g;
      tt.beta = b;
      tt.y = y[0];
      std::printf("  run      %7.1f us\n", b2b([&](int) { prog->run(sz, {}, tt, 0); }));
      check("run");
    }
    auto each = timeLaunches([&] { launch(0, 0, 0, T); }, 20, iters);
    std::printf("  each     %7.1f us (median; fastest %.1f)\n", each[iters / 2] * 1000.f, each[0] * 1000.f);
    for (unsigned gap : {2000u, 10000u, 40000u}) {
      float sleepOnly = b2b([&](int) { sleepKernel<<<1, 32>>>(gap); });
      float both = b2b([&](int) {
        sleepKernel<<<1, 32>>>(gap);
        launch(0, 0, 0, T);
      });
      std::printf("  gap%-5u  %7.1f us (sleep %.1f, both %.1f)\n", gap / 1000, both - sleepOnly, sleepOnly, both);
    }
    check("gap");
    std::printf("  alt      %7.1f us\n", b2b([&](int k) { launch(k & 1, 0, 0, T); }));
    check("alt");
    for (int k : {8, 6, 4, 2}) {
      if (k > perSm) continue;
      int dsm = 0;
      CK(cudaDeviceGetAttribute(&dsm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
      size_t smem = static_cast<size_t>(dsm / k) - 1024 - 128;  // per-block reserve and the kernel's own 128 B
      CK(cudaFuncSetAttribute(k_3_y_reg<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      int got_ = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got_, k_3_y_reg<8>, threads, smem));
      std::printf("  occ%d     %7.1f us (%d blocks an SM)\n", k, b2b([&](int) { launch(0, smem, 0, T); }), got_);
      check("occ");
    }
    CK(cudaFuncSetAttribute(k_3_y_reg<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 0));
    std::printf("  split2   %7.1f us\n", b2b([&](int) {
                  launch(0, 0, 0, T / 2);
                  launch(0, 0, T / 2, T - T / 2);
                }));
    check("split2");
    // The L1 / shared memory split: the kernel's preference, and what a kernel with a large
    // shared memory leaves configured before it (a Triton or cuBLAS kernel in a PyTorch process)
    for (int pref : {-1, 100, 50, 0}) {
      CK(cudaFuncSetAttribute(k_3_y_reg<8>, cudaFuncAttributePreferredSharedMemoryCarveout, pref));
      std::printf("  carve%-4d %7.1f us", pref, b2b([&](int) { launch(0, 0, 0, T); }));
      bigShared<<<sms, 32, bigSmem>>>(y[1], 0);
      std::printf("  after big shared %7.1f us", b2b([&](int) { launch(0, 0, 0, T); }));
      std::printf("  big shared between %7.1f us\n", b2b([&](int) {
                    bigShared<<<1, 32, bigSmem>>>(y[1], 0);
                    launch(0, 0, 0, T);
                  }) - b2b([&](int) { bigShared<<<1, 32, bigSmem>>>(y[1], 0); }));
      check("carveout");
    }
    CK(cudaFuncSetAttribute(k_3_y_reg<8>, cudaFuncAttributePreferredSharedMemoryCarveout, -1));
  }
  delete prog;
  if (comm) CK(ncclCommDestroy(comm));
  std::printf("ok\n");
  return 0;
}

#ifdef ROWS_B2B_SHARED
// Built as a shared library with -DROWS_B2B_SHARED -Dmain=rows_b2b_main, to run inside another
// process (a PyTorch one: docs/benchmarks/gpu/2026-11-29-2xH200-1xH200-session59/in_torch.py).
extern "C" int rows_b2b_entry(int argc, char** argv) { return rows_b2b_main(argc, argv); }
#endif
