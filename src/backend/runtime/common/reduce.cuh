// ---- coconet_runtime.cuh, part 4 of 6: reductions along one dimension ----
// ---- Reductions along one dimension -------------------------------------------------------
// x viewed as [outer, len, inner]; output o = (o / inner, o % inner) reduces x[o/inner, :, o%inner].
// Op (generated per stage) gives Acc, init(), element(v) (v already in Acc), combine(a, b) and
// finish(r, count). The partition of each output's elements depends only on the sizes, so
// results are deterministic. Three shapes of work:
//   reduce_thread: one thread per output (short reductions, or many outputs along an inner
//                  dimension: neighbouring threads read neighbouring elements);
//   reduce_block:  one block per output (many long rows);
//   reduce_split:  few outputs with long reductions (a whole-tensor norm): `parts` blocks per
//                  output write partial results, reduce_final combines them in order.
// The reduced elements come from a source: Ptr reads a stored tensor; a generated Src_<id>
// computes each element from the element-wise stages that only the reduction reads (they are
// never stored). x(i) is element i of the reduced tensor's local storage.
template <class T> struct Ptr {
  const T* __restrict__ p;
  __device__ __forceinline__ auto operator()(long long i) const { return to_f(p[i]); }
};
template <class Op, class Src, class YT>
__global__ void reduce_thread(Src x, YT* __restrict__ y, long long outer, long long len, long long inner, double count) {
  const long long outs = outer * inner;
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < outs; o += (long long)gridDim.x * blockDim.x) {
    const long long base = (o / inner) * len * inner + o % inner;
    typename Op::Acc acc = Op::init();
    for (long long j = 0; j < len; ++j) acc = Op::combine(acc, Op::element(static_cast<typename Op::Acc>(x(base + j * inner))));
    y[o] = Store<YT>::from(Op::finish(acc, count));
  }
}
// The block's values combined as a tree (blockDim.x a power of two): element i with element i + w,
// w halving from blockDim.x / 2, through shared memory while w >= 32, then the last five levels by
// shuffles in warp 0 (the same pairs, so the same bits, with five barriers fewer).
// blockReduceEach<OpA, OpB, ...>(shA, shB, ..., a, b, ...) runs that tree for several values at
// once, each with its own operator and shared array: every value gets exactly the bits it would
// get alone, and the barriers are taken once for all (a fused group's folded reductions at its
// end, a scalar chain's neighbouring reductions). Every thread gets the results, in place.
template <class Op>
__device__ __forceinline__ void warpTreeTail(typename Op::Acc* sh, int w, unsigned lanes) {
  typename Op::Acc x = sh[threadIdx.x];
  for (; w > 0; w /= 2) {
    const typename Op::Acc y = __shfl_down_sync(lanes, x, w);
    if (static_cast<int>(threadIdx.x) < w) x = Op::combine(x, y);
  }
  if (threadIdx.x == 0) sh[0] = x;
}
template <class... Ops>
__device__ void blockReduceEach(typename Ops::Acc*... sh, typename Ops::Acc&... v) {
  ((sh[threadIdx.x] = v), ...);
  __syncthreads();
  int w = blockDim.x / 2;
  for (; w >= 32; w /= 2) {
    if (threadIdx.x < w) ((sh[threadIdx.x] = Ops::combine(sh[threadIdx.x], sh[threadIdx.x + w])), ...);
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    const unsigned lanes = blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1u;
    (warpTreeTail<Ops>(sh, w, lanes), ...);
  }
  __syncthreads();
  ((v = sh[0]), ...);
  __syncthreads();
}
template <class Op>
__device__ typename Op::Acc blockReduce(typename Op::Acc v, typename Op::Acc* sh) {
  blockReduceEach<Op>(sh, v);
  return v;
}
template <class Op, class Src, class YT>
__global__ void reduce_block(Src x, YT* __restrict__ y, long long outer, long long len, long long inner, double count) {
  __shared__ typename Op::Acc sh[256];
  for (long long o = blockIdx.x; o < outer * inner; o += gridDim.x) {
    const long long base = (o / inner) * len * inner + o % inner;
    typename Op::Acc acc = Op::init();
    for (long long j = threadIdx.x; j < len; j += blockDim.x)
      acc = Op::combine(acc, Op::element(static_cast<typename Op::Acc>(x(base + j * inner))));
    acc = blockReduce<Op>(acc, sh);
    if (threadIdx.x == 0) y[o] = Store<YT>::from(Op::finish(acc, count));
  }
}
template <class Op, class Src>
__global__ void reduce_split(Src x, typename Op::Acc* __restrict__ part, long long outer, long long len, long long inner, long long parts) {
  __shared__ typename Op::Acc sh[256];
  const long long per = (len + parts - 1) / parts;
  for (long long b = blockIdx.x; b < outer * inner * parts; b += gridDim.x) {
    const long long o = b / parts, q = b % parts;
    const long long base = (o / inner) * len * inner + o % inner;
    const long long end = (q + 1) * per < len ? (q + 1) * per : len;
    typename Op::Acc acc = Op::init();
    for (long long j = q * per + threadIdx.x; j < end; j += blockDim.x)
      acc = Op::combine(acc, Op::element(static_cast<typename Op::Acc>(x(base + j * inner))));
    acc = blockReduce<Op>(acc, sh);
    if (threadIdx.x == 0) part[b] = acc;
  }
}
template <class Op, class YT>
__global__ void reduce_final(const typename Op::Acc* __restrict__ part, YT* __restrict__ y, long long outs, long long parts,
                             double count) {
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < outs; o += (long long)gridDim.x * blockDim.x) {
    typename Op::Acc acc = Op::init();
    for (long long q = 0; q < parts; ++q) acc = Op::combine(acc, part[o * parts + q]);
    y[o] = Store<YT>::from(Op::finish(acc, count));
  }
}

