// ---- coconet_device.cuh, part 6 of 7: allreduce, barrier, copy-engine sum, send and all-to-all kernels ----
// Two-shot allreduce (sum) of P*m elements: push slices, barrier, sum this rank's slice into
// `out` and the slice window, barrier, pull the other ranks' slices. The staging area is at
// byte 0 of `stage`, the slice at byte 0 of `slice`.
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_allreduce_two_shot(ncclDevComm dc, ncclWindow_t stage, ncclWindow_t slice, const T* __restrict__ in, T* __restrict__ out, long long m,
                           int vec) {
  pdlLaunchDependents();
  pdlWait();  // launched with PDL (launchDependent): the kernel before this one is done
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  const int P = dc.lsaSize, me = dc.lsaRank;
  pushSlices<T, V>(stage, 0, P, me, in, m, 0, m, vec);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every rank's slot of my slice has arrived
  // (my own slot: my input's slice me, which the push left there)
  const OwnSlots<T> st{static_cast<const T*>(ncclGetLocalPointer(stage, 0)), in + me * m, me};
  T* mine = static_cast<T*>(ncclGetLocalPointer(slice, 0));
  forUnits<V>(
      0, m, vec,
      [&](long long i0) {
        const Vec<T, V> y = sumSlotsRounded<T, V>(st, m, P, i0);
        store_vec(mine + i0, y);
        store_vec(out + me * m + i0, y);
      },
      [&](long long i) {
        const T y = Store<T>::from(sumSlot(st, m, P, i));
        mine[i] = y;
        out[me * m + i] = y;
      });
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every rank published its slice
  pullSlices<T, V>(slice, 0, P, me, out, m, 0, m, vec);
}

// Every rank of the device communicator reaches this point before any goes on (one CTA, LSA
// barrier `index`): copy-engine transfers issued before it on each rank's stream are complete
// and visible everywhere after it. No other device-API kernel using the same barrier may run
// beside it: the all_to_all pipeline launches it on its second stream (index 0); the
// copy-engine allreduce on its copy stream (index 0) and on the main stream (index 1).
static __global__ void __launch_bounds__(kDevThreads) dev_barrier(ncclDevComm dc, int index) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, static_cast<uint32_t>(index)};
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
}

// The copy-engine allreduce's sum of one round: this rank's part of the round, `piece`
// elements, summed over the ranks in rank order (rank me's from `own`, this rank's input; rank
// q's from slot q of `stage`, where q's copy engine put it), rounded once, stored into `out`
// (this rank's result) and `red` (the window the other ranks' copy engines pull it from).
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads) ce_sum_parts(T* __restrict__ out, T* __restrict__ red, const T* __restrict__ own,
                                                            const T* __restrict__ stage, long long piece, int P, int me, int vec) {
  forUnits<V>(
      0, piece, vec,
      [&](long long i0) {
        float s[V];
#pragma unroll
        for (int e = 0; e < V; ++e) s[e] = 0.0f;
        for (int q = 0; q < P; ++q) {
          Vec<T, V> x;
          load_vec(x, (q == me ? own : stage + q * piece) + i0);
#pragma unroll
          for (int e = 0; e < V; ++e) s[e] = __fadd_rn(s[e], to_f(x.v[e]));
        }
        Vec<T, V> y;
#pragma unroll
        for (int e = 0; e < V; ++e) y.v[e] = Store<T>::from(s[e]);
        store_vec(out + i0, y);
        store_vec(red + i0, y);
      },
      [&](long long i) {
        float s = 0.0f;
        for (int q = 0; q < P; ++q) s = __fadd_rn(s, to_f(q == me ? own[i] : stage[q * piece + i]));
        const T y = Store<T>::from(s);
        out[i] = y;
        red[i] = y;
      });
}

// Point-to-point exchange of n elements where every rank sends to one rank (`to`) and receives
// from one (the ranks' targets are a permutation: a send to the next or previous rank or group):
// push into `to`'s window at byte `base`, a barrier, then copy what arrived into `out`. Callers
// alternate between two such areas, as for the one-shot allreduce.
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_send_recv(ncclDevComm dc, ncclWindow_t w, size_t base, const T* __restrict__ in, T* __restrict__ out, long long n, int to, int vec) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  forUnits<V>(
      0, n, vec,
      [&](long long i0) {
        Vec<T, V> x;
        load_vec(x, in + i0);
        store_vec(peerPtr<T>(w, base + i0 * sizeof(T), to), x);
      },
      [&](long long i) { *peerPtr<T>(w, base + i * sizeof(T), to) = in[i]; });
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // what this block's elements of every rank's window receive has arrived
  const T* got = static_cast<const T*>(ncclGetLocalPointer(w, base));
  forUnits<V>(
      0, n, vec,
      [&](long long i0) {
        Vec<T, V> x;
        load_vec_rw(x, got + i0);
        store_vec(out + i0, x);
      },
      [&](long long i) { out[i] = got[i]; });
}

// All-to-all within a group of `size` ranks, world ranks first..first+size-1, this rank at `pos`:
// block j (`chunk` elements) of `in` goes to slot `pos` of group rank j's window at byte `base`,
// a barrier, then the window's `size` slots are this rank's output. The blocks of every rank
// take the same elements i of each slot (forUnits over one chunk), so after block b's barrier
// what it reads was written by block b everywhere. Callers alternate between two areas, as for
// the one-shot allreduce.
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_all_to_all(ncclDevComm dc, ncclWindow_t w, size_t base, const T* __restrict__ in, T* __restrict__ out, long long chunk,
                   int first, int size, int pos, int vec) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  forUnits<V>(
      0, chunk, vec,
      [&](long long i0) {
        for (int j = 0; j < size; ++j) {
          Vec<T, V> x;
          load_vec(x, in + j * chunk + i0);
          store_vec(peerPtr<T>(w, base + (pos * chunk + i0) * sizeof(T), first + j), x);
        }
      },
      [&](long long i) {
        for (int j = 0; j < size; ++j) *peerPtr<T>(w, base + (pos * chunk + i) * sizeof(T), first + j) = in[j * chunk + i];
      });
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // this block's elements of every slot have arrived
  const T* got = static_cast<const T*>(ncclGetLocalPointer(w, base));
  forUnits<V>(
      0, chunk, vec,
      [&](long long i0) {
        for (int j = 0; j < size; ++j) {
          Vec<T, V> x;
          load_vec_rw(x, got + j * chunk + i0);
          store_vec(out + j * chunk + i0, x);
        }
      },
      [&](long long i) {
        for (int j = 0; j < size; ++j) out[j * chunk + i] = got[j * chunk + i];
      });
}

// One-shot allreduce (sum) of n elements: push, barrier, sum the P slots locally. The slots
// start at byte `base` of w; callers alternate between two such areas, so that a fast rank's next call cannot
// overwrite a slot that a slow rank still reads (it would first have to pass the next call's
// barrier, which the slow rank reaches only after this call's kernel ended).
template <class T, int V>
__global__ void __launch_bounds__(kDevThreads)
    dev_allreduce_one_shot(ncclDevComm dc, ncclWindow_t w, size_t base, const T* __restrict__ in, T* __restrict__ out, long long n, int vec) {
  pdlLaunchDependents();
  pdlWait();  // launched with PDL (launchDependent): the kernel before this one is done
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, blockIdx.x};
  const int P = dc.lsaSize, me = dc.lsaRank;
  pushWhole<T, V>(gridPart(), w, base, P, me, in, n, 0, n, vec);
  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);  // every rank's buffer has arrived
  const T* stage = static_cast<const T*>(ncclGetLocalPointer(w, base));
  forUnits<V>(
      0, n, vec,
      [&](long long i0) { store_vec(out + i0, sumSlotsRounded<T, V>(stage, n, P, i0)); },
      [&](long long i) { out[i] = Store<T>::from(sumSlot(stage, n, P, i)); });
}

