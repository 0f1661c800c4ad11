#!/usr/bin/env python3
"""Session 29 prototype: moe_gemm's own block in two parts, the second computed last.

Copies a folder that `coconetc compile samples/moe_gemm/moe_gemm.cnet --schedule
samples/moe_gemm/moe_gemm.sched` wrote and edits the rank-block pipeline: step 0 computes the
first half of this rank's block (experts [0, X/2), or rows [0, C/2) when X = 1), steps 1..G-1
the blocks the other ranks sent, and a last step the second half of this rank's block, so that
the last remote step's result travels (GEMM into the owner's window, barrier, the owner's copy
into place) while this rank still computes. X_OWNSPLIT=0 in the environment turns it off (the
committed order). Written for moe_gemm's chain (two GEMMs with per-expert weights and the GeLU
between); the compiler's version would handle any chain the overlap admits.

Usage: proto_moesplit.py GEN_DIR OUT_DIR
"""
import pathlib
import shutil
import sys

src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
if dst.exists():
    shutil.rmtree(dst)
shutil.copytree(src, dst)
for p in list(dst.glob("build*")):
    shutil.rmtree(p, ignore_errors=True)


def sub1(text, old, new, what):
    n = text.count(old)
    if n != 1:
        sys.exit(f"proto_moesplit: {what}: found {n} times")
    return text.replace(old, new)


c = (dst / "moe_gemm.cu").read_text()
c = sub1(c, "    for (long long i = 0; i < G; ++i) {\n      const long long blk = (me + G - i) % G;",
         """    // rows of every stage's block (the last dimension aside): X experts of C rows; the first part
    const long long U = (n3 / G) / sh3[3], M0 = sh3[2], Ba0 = U / M0, U1 = Ba0 >= 2 ? (Ba0 / 2) * M0 : M0 / 2;
    static const bool ownSplit = [] { const char* e = std::getenv("X_OWNSPLIT"); return !(e && e[0] == '0'); }();
    const long long parts = ownSplit && G > 1 && U1 > 0 && U1 < U ? 2 : 1;
    for (long long s = 0; s < G + parts - 1; ++s) {
      const long long i = s < G ? s : 0;  // s = G: the second part of this rank's own block
      const long long r0 = s == G ? U1 : 0, r1 = s == 0 && parts == 2 ? U1 : U;  // the block's rows this step computes
      const long long blk = (me + G - i) % G;""", "loop")
# GEMM 1 (h.matmul) and GEMM 2 (y): whole experts of the part (per-expert weights), or rows of one
for (na, nb, nc, cvar, bvar) in (("n3", "n1", "n4", "bv4", "v1"), ("n5", "n2", "n6", "yout", "v2")):
    c = sub1(c, f"const long long batchA = ({na} / G) / (M * K), batchB = {nb} / (K * N), batchC = ({nc} / G) / (M * N);",
             f"const long long Ba = ({na} / G) / (M * K), batchA = Ba > 1 ? (r1 - r0) / M : 1, batchB = {nb} / (K * N) == Ba && Ba > 1 ? batchA : {nb} / (K * N), batchC = batchA;\n"
             f"        const long long Mp = Ba > 1 ? M : r1 - r0;  // rows per GEMM of the part", f"batch {na}")
    c = sub1(c, f"baseA = blk * ({na} / G);  // this block of A",
             f"baseA = blk * ({na} / G) + r0 * K;  // this part of the block of A\n        if ({nb} / (K * N) == Ba && Ba > 1) baseB = (r0 / M) * K * N;", f"baseA {na}")
    c = sub1(c, f"{cvar} + blk * ({nc} / G) + r * stepC", f"{cvar} + blk * ({nc} / G) + r0 * N + r * stepC", f"C {nc}")
# the part's rows of M: Mx starts at M; the fold path uses M * batchC
c = c.replace("long long Mx = M, batch = batchC, strideA = M * K, strideB = K * N, strideC = M * N;",
              "long long Mx = Mp, batch = batchC, strideA = M * K, strideB = K * N, strideC = M * N;")
c = c.replace("if (batchB_ == 1) { Mx = M * batchC; batch = 1; strideB = 0; }", "if (batchB_ == 1) { Mx = Mp * batchC; batch = 1; strideB = 0; }")
# the GeLU over the part's rows
c = sub1(c, "        om.first = blk * (n5 / G);\n        om.n = n5 / G;",
         "        om.first = blk * (n5 / G) + r0 * sh5[3];\n        om.n = (r1 - r0) * sh5[3];", "gelu range")
c = sub1(c, "k_5_h<<<coconet_rt::gridFor(vec ? n5 / G / 8 + 1 : n5 / G), 256, 0, stream_>>>",
         "k_5_h<<<coconet_rt::gridFor(vec ? om.n / 8 + 1 : om.n), 256, 0, stream_>>>", "gelu grid")
if "#include <cstdlib>" not in c:
    c = "#include <cstdlib>\n" + c
(dst / "moe_gemm.cu").write_text(c)
print("proto_moesplit: wrote", dst)
