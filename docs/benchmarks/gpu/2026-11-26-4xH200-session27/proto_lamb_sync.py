#!/usr/bin/env python3
"""Prototype (session 27): LAMB's synchronization between its two device kernels, hand-applied to
a folder that `coconetc compile samples/lamb/lamb.cnet --schedule samples/lamb/lamb.sched` wrote.
  p1  `moments` without its last barrier ("every rank read its slots before any rank's next call
      pushes"): `apply`'s exchange already orders that (a rank's next call starts after its `apply`
      waited for every rank's norms, which each rank sends only after its `moments` grid ended).
  p2  p1, and the norms' exchange moved to `moments`' end: the last block of the grid to write its
      partial sums (a counter) combines them as `apply`'s prologue did (same order, same bits) and
      stores the rank's sums into every rank's slots; `apply`'s blocks only wait for the slots.
Usage: proto_lamb_sync.py GENERATED_DIR OUT_DIR p1|p2
"""
import pathlib, re, shutil, sys

def sub(text, old, new, count=1):
    n = text.count(old)
    if n != count:
        raise SystemExit(f"proto: expected {count} of {old[:90]!r}, found {n}")
    return text.replace(old, new)

src, dst, variant = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
if dst.exists(): shutil.rmtree(dst)
shutil.copytree(src, dst)
cu = dst / "lamb.cu"
t = cu.read_text()
# p1: moments' last barrier only between rounds
t = sub(t, "    // every rank pushed chunk r of this block's elements (r = rounds: every rank read its slots)\n"
           "    bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n",
           "    // every rank pushed chunk r of this block's elements (proto p1: no barrier after the last round)\n"
           "    if (r < rounds) bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n")
if variant == "p2":
    A15 = "Op_15_w_new_w1_trust_ratio_wnorm_partial"
    A19 = "Op_19_w_new_w1_trust_ratio_unorm_partial"
    # moments: chain parameters
    t = sub(t, "int vec, int rounds, int movers, unsigned* __restrict__ roles) {\n  (void)seed;\n  // launched to overlap the previous kernel's end: wait for it, then let the next one be scheduled\n  coconet_rt::pdlWait();\n  coconet_rt::pdlLaunchDependents();\n  const int P = dc.lsaSize, me = dc.lsaRank;\n  (void)P;\n  (void)me;\n  constexpr int V = 8;\n  // this block's elements: with roles split (movers > 0), part b of the movers' or of the\n  // workers' (coconet_device.cuh, roleReady)\n  const bool mover = static_cast<int>(blockIdx.x) < movers;\n  const coconet_rt::Part pt = movers == 0 ? coconet_rt::gridPart()\n                            : mover     ? coconet_rt::Part{static_cast<int>(blockIdx.x), movers}\n                                        : coconet_rt::Part{static_cast<int>(blockIdx.x) - movers, static_cast<int>(gridDim.x) - movers};\n  const __half* slots = kSolo",
            "int vec, int rounds, int movers, unsigned* __restrict__ roles, ncclWindow_t chainWin, size_t chainHalf, unsigned chainEpoch, double count15, double count19) {\n  (void)seed;\n  // launched to overlap the previous kernel's end: wait for it, then let the next one be scheduled\n  coconet_rt::pdlWait();\n  coconet_rt::pdlLaunchDependents();\n  const int P = dc.lsaSize, me = dc.lsaRank;\n  (void)P;\n  (void)me;\n  constexpr int V = 8;\n  // this block's elements: with roles split (movers > 0), part b of the movers' or of the\n  // workers' (coconet_device.cuh, roleReady)\n  const bool mover = static_cast<int>(blockIdx.x) < movers;\n  const coconet_rt::Part pt = movers == 0 ? coconet_rt::gridPart()\n                            : mover     ? coconet_rt::Part{static_cast<int>(blockIdx.x), movers}\n                                        : coconet_rt::Part{static_cast<int>(blockIdx.x) - movers, static_cast<int>(gridDim.x) - movers};\n  const __half* slots = kSolo")
    finish = f"""    if constexpr (!kSolo) {{
      // proto p2: the last block to write its partial sums combines them and sends the rank's sums
      __shared__ bool last;
      __syncthreads();
      if (threadIdx.x == 0) {{
        __threadfence();
        last = atomicAdd(&p2Count, 1u) == static_cast<unsigned>(pt.count) - 1;
      }}
      __syncthreads();
      if (last) {{
        __threadfence();
        {A15}::Acc c15 = {A15}::init();
        for (int q = threadIdx.x; q < pt.count; q += blockDim.x) c15 = {A15}::combine(c15, __ldcg(&part15[q]));
        {{ __shared__ {A15}::Acc sh[coconet_rt::kDevThreads]; c15 = coconet_rt::blockReduce<{A15}>(c15, sh); }}
        const float s15 = coconet_rt::Store<float>::from(static_cast<double>({A15}::finish(c15, count15)));
        {A19}::Acc c19 = {A19}::init();
        for (int q = threadIdx.x; q < pt.count; q += blockDim.x) c19 = {A19}::combine(c19, __ldcg(&part19[q]));
        {{ __shared__ {A19}::Acc sh[coconet_rt::kDevThreads]; c19 = coconet_rt::blockReduce<{A19}>(c19, sh); }}
        const float s19 = coconet_rt::Store<float>::from(static_cast<double>({A19}::finish(c19, count19)));
        if (threadIdx.x == 0) {{
          for (int p = 0; p < P; ++p) {{
            coconet_rt::putEpochSlot(chainWin, chainHalf + ((0 * P + me) * 2 + 0) * sizeof(unsigned long long), p, coconet_rt::to_f(s15), chainEpoch);
            coconet_rt::putEpochSlot(chainWin, chainHalf + ((0 * P + me) * 2 + 1) * sizeof(unsigned long long), p, coconet_rt::to_f(s19), chainEpoch);
          }}
          p2Count = 0;
        }}
      }}
    }}
"""
    # the workers' partials (roles) and the shared path's partials: both followed by the finish
    part19_store = "      if (threadIdx.x == 0) part19[pt.index] = acc19;\n    }\n    coconet_rt::roleExit(roles, rounds);\n"
    t = sub(t, part19_store, "      if (threadIdx.x == 0) part19[pt.index] = acc19;\n    }\n" + finish + "    coconet_rt::roleExit(roles, rounds);\n")
    shared_end = "    if (threadIdx.x == 0) part19[pt.index] = acc19;\n  }\n}\n\n// g = f32(rs) / world.size"
    t = sub(t, shared_end, "    if (threadIdx.x == 0) part19[pt.index] = acc19;\n  }\n" + finish.replace("\n    ", "\n  ").replace("    if constexpr", "  if constexpr", 1) + "}\n\n// g = f32(rs) / world.size")
    t = sub(t, "template <int kOccupancy, bool kSolo>\n", "__device__ unsigned p2Count = 0;  // proto p2\ntemplate <int kOccupancy, bool kSolo>\n")
    # apply: the prologue's combine and put only in the one-rank form
    a0 = t.index("k_23_apply_device(ncclDevComm")
    m = re.compile(r"  Op_15_w_new_w1_trust_ratio_wnorm_partial::Acc acc15 = .*?\n    }\n(?=  const unsigned long long\* slots0)", re.S).search(t, a0)
    if not m: raise SystemExit("proto: apply prologue not found")
    body = m.group(0)
    t = t[:m.start()] + "  float r15 = 0.0f, r19 = 0.0f;\n  if constexpr (kSolo) {\n" + body.replace("const auto r15 =", "r15 =").replace("const auto r19 =", "r19 =") + "  }\n" + t[m.end():]
    # host: the chain window and epoch before moments' launch; moments gets them
    ens = re.search(r"  if \(devReady\(\"w_new.w1.trust_ratio.wnorm.partial\", true\)\) \{\n(.*?)    if \(\+\+dev_->epoch\[4\] == 0\) dev_->epoch\[4\] = 1;  // \(0: a slot never written\)\n    dev_->parity\[4\] \^= 1;\n", t, re.S)
    if not ens: raise SystemExit("proto: chain set-up not found")
    setup = ens.group(1)
    t = t[:ens.start()] + "  if (devReady(\"w_new.w1.trust_ratio.wnorm.partial\", true)) {\n    // proto p2: set up before moments' launch\n" + t[ens.end():]
    launch = "      CHECK(coconet_rt::launchDependent(k_5_moments_device_k,"
    t = sub(t, launch, "      {\n" + setup + "      if (++dev_->epoch[4] == 0) dev_->epoch[4] = 1;\n      dev_->parity[4] ^= 1;\n      }\n" + launch)
    t = sub(t, "movers > 0 ? dev_->roles.get(stream_, \"lamb\", \"moments\") : nullptr), \"moments\");",
               "movers > 0 ? dev_->roles.get(stream_, \"lamb\", \"moments\") : nullptr, dev_->oneShot[4].win, dev_->parity[4] * (dev_->oneShot[4].bytes / 2), dev_->epoch[4], 1.0 * static_cast<double>((sz.s_N)), 1.0 * static_cast<double>((sz.s_N))), \"moments\");")
cu.write_text(t)
print(f"proto {variant}: wrote {cu}")
