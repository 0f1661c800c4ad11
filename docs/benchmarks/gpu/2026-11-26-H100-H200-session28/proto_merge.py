#!/usr/bin/env python3
"""Prototype (session 28): LAMB's two device kernels as one (`moments` then `apply` in one grid),
hand-applied to a folder that `coconetc compile samples/lamb/lamb.cnet` wrote.
The bodies of k_5_moments_device and k_23_apply_device become __device__ functions; a new kernel
runs the first, joins the grid (every block: fence, one atomic add on a call-monotonic counter,
wait until every block of the grid added), then runs the second. The host defers moments' launch
and launches the merged kernel where apply would launch, when both take the device path on more
than one rank with no movers, one block per SM and the same grid; else the two kernels as before.
Usage: proto_merge.py GENERATED_DIR OUT_DIR
"""
import pathlib, re, shutil, sys

def sub(text, old, new, count=1):
    n = text.count(old)
    if n != count:
        raise SystemExit(f"proto: expected {count} of {old[:90]!r}, found {n}")
    return text.replace(old, new)

def split_top(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{<" and not (ch == "<" and False): depth += ch in "([{"
        if ch in ")]}": depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip()); cur = ""
        else:
            cur += ch
    if cur.strip(): out.append(cur.strip())
    return out

def func(text, header):
    a = text.index(header)
    b = text.index("{", text.index(")", a + len(header) - 1) if False else a + len(header))
    # the signature's closing paren: first ") {" after the header
    sig_end = text.index(") {\n", a)
    b = sig_end + 2
    depth = 0
    for j in range(b, len(text)):
        if text[j] == "{": depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return a, j + 1, text[a + len(header):sig_end]
    raise SystemExit("proto: unbalanced " + header)

src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
flags = set(sys.argv[3:])  # noinline: the bodies compiled apart; ldg: apply reads u by the read-only path as before
if dst.exists(): shutil.rmtree(dst)
shutil.copytree(src, dst)
cu = dst / "lamb.cu"
t = cu.read_text()

MH = "template <int kOccupancy, bool kSolo>\n__global__ void __launch_bounds__(coconet_rt::kDevThreads, kOccupancy > 1 ? kOccupancy : 0) k_5_moments_device("
AH = "template <bool kSolo>\n__global__ void __launch_bounds__(coconet_rt::kDevThreads) k_23_apply_device("
ma, mb, mparams = func(t, MH)
aa, ab, aparams = func(t, AH)
mbody = t[ma:mb].replace(MH, "template <int kOccupancy, bool kSolo>\n__device__ __forceinline__ void k_5_moments_body(")
abody = t[aa:ab].replace(AH, "template <bool kSolo>\n__device__ __forceinline__ void k_23_apply_body(")
# in one grid, apply reads what other blocks of the same kernel wrote: coherent loads only
abody = sub(abody, "acc15 = Op_15_w_new_w1_trust_ratio_wnorm_partial::combine(acc15, part15[q]);",
                   "acc15 = Op_15_w_new_w1_trust_ratio_wnorm_partial::combine(acc15, __ldcg(&part15[q]));")
abody = sub(abody, "acc19 = Op_19_w_new_w1_trust_ratio_unorm_partial::combine(acc19, part19[q]);",
                   "acc19 = Op_19_w_new_w1_trust_ratio_unorm_partial::combine(acc19, __ldcg(&part19[q]));")
if "ldg" not in flags:
    abody = abody.replace("coconet_rt::load_vec(x2, a2 + b2 + i0);", "coconet_rt::load_vec_rw(x2, a2 + b2 + i0);")
if "noinline" in flags:
    mbody = mbody.replace("__device__ __forceinline__ void k_5", "__device__ __noinline__ void k_5")
    abody = abody.replace("__device__ __forceinline__ void k_23", "__device__ __noinline__ void k_23")
abody = abody.replace("const float* __restrict__ a2", "const float* a2").replace("const float* __restrict__ a1", "const float* a1")
abody = abody.replace("coconet_rt::to_f(a2[b2 + i])", "coconet_rt::to_f(__ldcg(&a2[b2 + i]))")

mp, ap = split_top(mparams), split_top(aparams)
def names(ps): return [re.split(r"[\s\*&]+", p)[-1] for p in ps]
def types(ps): return [p[: len(p) - len(re.split(r"[\s\*&]+", p)[-1])].strip() for p in ps]
mn, mt, an, at = names(mp), types(mp), names(ap), types(ap)
ms = "struct MomentsArgs {\n" + "".join(f"  {ty.replace('__restrict__', '')} {n};\n" for ty, n in zip(mt, mn)) + "};\n"
as_ = "struct ApplyArgs {\n" + "".join(f"  {ty.replace('__restrict__', '')} {n};\n" for ty, n in zip(at, an)) + "};\n"
merged = f"""
// proto (session 28): moments and apply in one grid
__device__ unsigned long long gJoin = 0;  // blocks joined, over every call (monotonic)
template <bool kSolo>
__global__ void __launch_bounds__(coconet_rt::kDevThreads) k_moments_apply(MomentsArgs m, ApplyArgs a, unsigned long long joinTarget) {{
  k_5_moments_body<1, kSolo>({", ".join("m." + n for n in mn)});
  // the grid joins: every block's writes (moments' outputs, its partial sums) before any block reads them
  __syncthreads();
  if (threadIdx.x == 0) {{
    __threadfence();
    atomicAdd(&gJoin, 1ull);
    unsigned long long v;
    do {{ asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(&gJoin) : "memory"); }} while (v < joinTarget);
    __threadfence();
  }}
  __syncthreads();
  k_23_apply_body<kSolo>({", ".join("a." + n for n in an)});
}}
"""
t = t[:ab] + "\n" + ms + as_ + mbody + "\n" + abody + "\n" + merged + t[ab:]

# host: defer moments' launch
ML = "      CHECK(coconet_rt::launchDependent(k_5_moments_device_k, movers + blocks, coconet_rt::kDevThreads, stream_, "
i = t.index(ML); j = t.index(', "moments");\n', i)
margs = t[i + len(ML): j - 1]  # without the launchDependent's closing paren
t = t[:i] + f"""      if (P_ > 1 && movers == 0 && k_5_moments_device_k == &k_5_moments_device<1, false>) {{
        protoDefer = true; protoGrid = blocks;
        protoM = MomentsArgs{{{margs}}};
      }} else
""" + t[i:]
# the declaration before the group
t = sub(t, "  int devFold0Blocks = 0;", "  bool protoDefer = false; int protoGrid = 0; MomentsArgs protoM{};  // proto: moments' launch deferred\n  int devFold0Blocks = 0;")
AL = "      CHECK(coconet_rt::launchDependent(k_23_apply_device_k, movers + blocks, coconet_rt::kDevThreads, stream_, "
i = t.index(AL); j = t.index(', "apply");\n', i)
aargs = t[i + len(AL): j - 1]
t = t[:i] + f"""      if (protoDefer && movers == 0 && blocks == protoGrid) {{
        static unsigned long long joined = 0;  // the counter's value after this call's grid joins
        joined += static_cast<unsigned long long>(blocks);
        protoM.dc = dev_->dc.comm;
        protoDefer = false;
        CHECK(coconet_rt::launchDependent(&k_moments_apply<false>, blocks, coconet_rt::kDevThreads, stream_, protoM, ApplyArgs{{{aargs}}}, joined), "moments+apply");
      }} else {{
      if (protoDefer) {{
        CHECK(coconet_rt::launchDependent(&k_5_moments_device<1, false>, protoGrid, coconet_rt::kDevThreads, stream_, {", ".join("protoM." + n for n in mn)}), "moments");
        protoDefer = false;
      }}
""" + t[i:j] + ', "apply");\n      }\n' + t[j + len(', "apply");\n'):]
cu.write_text(t)
print(f"proto merge: wrote {cu}")
