#!/usr/bin/env python3
"""Prototype (session 44): in LAMB's `moments` kernel with roles split, the movers join the
computation of the last J chunks once they have pushed every chunk. Those chunks are divided over
every block of the grid (Part{blockIdx.x, gridDim.x}) instead of the workers alone, so each block's
partial norms stay in a fixed place (part[blockIdx.x]) and apply's combine stays in one order.

    proto_join.py GENERATED_LAMB_DIR J   (edits lamb.cu in place)
"""
import pathlib
import sys

d, J = pathlib.Path(sys.argv[1]), int(sys.argv[2])
cu = d / "lamb.cu"
s = cu.read_text()
start = s.index("k_5_moments_device(ncclDevComm")
end = s.index("\n}\n", start)
k = s[start:end]


def sub(old, new, count=1):
    global k
    assert k.count(old) == count, (old, k.count(old))
    k = k.replace(old, new)


sub("  const coconet_rt::Part pt = movers == 0", "  coconet_rt::Part pt = movers == 0")
# a worker: its part of the whole grid from chunk rounds - join on
sub("""      coconet_rt::roleWait(coconet_rt::roleReady(roles, r), static_cast<unsigned>(movers));
      compute(edge(r), edge(r + 1));""",
    """      coconet_rt::roleWait(coconet_rt::roleReady(roles, r), static_cast<unsigned>(movers));
      if (r == rounds - join) pt = coconet_rt::Part{static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x)};
      compute(edge(r), edge(r + 1));""")
# a mover: after its last push, its part of the last join chunks (every mover's pushes landed)
sub("""    // every worker read its slots (each computes the rounds in order: done with the last, done
    // with all); then every rank's (before any rank's next call pushes), unless a later group orders that
    if (lastBarrier) {""",
    """    if (join > 0) {
      coconet_rt::roleWait(coconet_rt::roleReady(roles, rounds - 1), static_cast<unsigned>(movers));
      pt = coconet_rt::Part{static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x)};
      for (int r = rounds - join; r < rounds; ++r) compute(edge(r), edge(r + 1));
      {
        __shared__ Op_15_w_new_w1_trust_ratio_wnorm_partial::Acc sh15[coconet_rt::kDevThreads];
        __shared__ Op_19_w_new_w1_trust_ratio_unorm_partial::Acc sh19[coconet_rt::kDevThreads];
        coconet_rt::blockReduceEach<Op_15_w_new_w1_trust_ratio_wnorm_partial, Op_19_w_new_w1_trust_ratio_unorm_partial>(sh15, sh19, acc15, acc19);
        if (threadIdx.x == 0) { part15[pt.index] = acc15; part19[pt.index] = acc19; }
      }
    }
    // every worker read its slots (each computes the rounds in order: done with the last, done
    // with all); then every rank's (before any rank's next call pushes), unless a later group orders that
    if (lastBarrier) {""")
sub("""  const bool mover = static_cast<int>(blockIdx.x) < movers;""",
    f"""  const bool mover = static_cast<int>(blockIdx.x) < movers;
  const int join = movers > 0 ? min({J}, rounds) : 0;  // proto_join.py""")
s = s[:start] + k + s[end:]
old = "      devFold0Blocks = blocks;\n"
assert s.count(old) == 1
s = s.replace(old, f"      devFold0Blocks = movers > 0 && {J} > 0 ? movers + blocks : blocks;  // proto_join.py\n")
cu.write_text(s)
print(f"proto_join: J = {J} in {cu}")
