// Overlaps: a producer (matmul, GEMV, gather) chunked along its rows and pipelined with its
// collectives on a second stream (copy engines and device-API kernels where the ranks share NVLink).
#include <algorithm>

#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

std::string Emitter::handOff(const std::string& name) {
  return "      CHECK(cudaEventRecord(ovGemm_[k], stream_), " + name + ");\n      CHECK(cudaStreamWaitEvent(comm2_, ovGemm_[k], 0), " +
         name + ");\n";
}

void Emitter::emitChunkedBag(const Chunked& ch) {
  auto& b = body_;
  const Stage& rs = p_.stages[ch.bag];
  const Stage& x = p_.stages[ch.a2a];
  const GroupInfo* gr = x.type.group ? x.type.group : p_.world();
  const std::string op = reduceOpStruct(ch.bag);
  std::string name = "\"" + rs.name + "\"";
  emitReduceOp(ch.bag);
  emitBagKernel(ch.bag, op);
  b << "\n  // overlap: " << p_.stages[ch.producer].name << " (embedding, gathered inside " << rs.name << ") in " << ch.chunks
    << " chunks of dimension 0 per rank, pipelined with " << x.name << " (all_to_all):\n"
    << "  // chunk c+1 is gathered (stream_) while chunk c's pieces are exchanged (comm2_)\n"
    << "  if (" << countVar(ch.bag) << " > 0) {\n";
  emitBagSizes(ch.bag);
  b << "    const long long C = " << ch.chunks << ", G = " << g(gr, "size") << ", B0 = " << shapeVar(ch.bag) << "[0];\n"
    << "    const long long per = " << countVar(ch.bag) << " / B0, Bc = B0 / (G * C);  // elements per row of dimension 0; rows per piece\n"
    << forkComm(name) << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
    << "      k_" << ch.bag << "_" << ident(rs.name) << "_bag<<<coconet_rt::gridFor(G * Bc * per), 256, 0, stream_>>>"
    << bagArgs(ch.bag, "c * Bc * per, Bc * per, (B0 / G) * per, G * Bc * per") << ";\n"
    << "      CHECK(cudaGetLastError(), " << name << ");\n"
    << handOff(name) << "      CHECK(ncclGroupStart(), \"" << x.name << "\");\n"
    << "      for (long long j = 0; j < G; ++j) {\n"
    << "        const long long at = (j * (B0 / G) + c * Bc) * per;\n"
    << "        CHECK(ncclSend(" << var(ch.bag) << " + at, Bc * per, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
    << ", comm2_), \"" << x.name << "\");\n"
    << "        CHECK(ncclRecv(" << var(ch.a2a) << " + at, Bc * per, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
    << ", comm2_), \"" << x.name << "\");\n      }\n"
    << "      CHECK(ncclGroupEnd(), \"" << x.name << "\");\n"
    << "    }\n"
    << joinComm(name) << "  }\n";
}

void Emitter::emitChunkedAllToAll(const Chunked& ch) {
  auto& b = body_;
  const Stage& ps = p_.stages[ch.producer];
  const Stage& x = p_.stages[ch.a2a];
  int a = ps.operands[0], w = ps.operands[1];
  const TensorType& at = p_.stages[a].type;
  int ra = at.rank(), wb = p_.stages[w].type.rank() - 2;
  std::string T = storageType(ps.type.dtype), XT = storageType(x.type.dtype);
  std::string name = "\"" + ps.name + "\"";
  bool f64 = ps.type.dtype == DType::F64;
  const GroupInfo* gr = x.type.group ? x.type.group : p_.world();
  std::string A = shapeVar(a);
  b << "\n  // overlap: " << ps.name << " (matmul) in " << ch.chunks << " chunks of dimension " << ch.dim << ", pipelined with " << x.name
    << " (all_to_all):\n  // the GEMMs of chunk c+1 (stream_) run while chunk c is packed, exchanged and placed (comm2_)\n"
    << "  if (" << countVar(ch.producer) << " > 0) {\n"
    << "    const long long C = " << ch.chunks << ", G = " << g(gr, "size") << ";\n"
    << "    const long long K = " << A << "[" << ra - 1 << "], N = " << shapeVar(w) << "[" << wb + 1 << "];\n"
    << "    long long O = 1, R = 1;  // outer indices (dimensions before " << ch.dim << ") and GEMM rows per outer index\n"
    << "    for (int k = 0; k < " << ch.dim << "; ++k) O *= " << A << "[k];\n"
    << "    for (int k = " << ch.dim << "; k < " << ra - 1 << "; ++k) R *= " << A << "[k];\n"
    << "    const long long Rc = R / C;  // rows per outer index and chunk\n"
    << "    const long long Wn = " << countVar(w) << " / (K * N);  // weights (batched by the outer index)\n"
    << "    const long long calls = Wn == 1 ? 1 : O / Wn, batch = Wn == 1 ? O : Wn;  // GEMM calls and batch per call\n"
    << "    const size_t bytes = static_cast<size_t>(O * Rc * N) * sizeof(" << T << ");\n"
    << "    for (int k = 0; k < 2; ++k) {\n      stage_[k].ensure(bytes, \"" << p_.name << "\", " << name << ");\n"
    << "      gath_[k].ensure(bytes, \"" << p_.name << "\", " << name << ");\n    }\n"
    << forkComm(name) << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n"
    << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
    << "      // rows [c Rc, (c+1) Rc) of every outer index, written in place in the product\n"
    << "      for (long long q = 0; q < calls; ++q)\n"
    << "        "
    << gemmCall(ps.type.dtype, "Rc", var(w), "Wn == 1 ? 0 : K * N", var(a) + " + (q * batch * R + c * Rc) * K", "R * K",
                var(ch.producer) + " + (q * batch * R + c * Rc) * N", "R * N", "batch", name, false, readTransposed(w))
    << handOff(name) << "      // pack the chunk ([O, Rc * N], block j of dimension 0 = rows [j O/G, (j+1) O/G)), exchange, place\n"
    << "      " << T << "* snd = static_cast<" << T << "*>(stage_[k].ptr);\n"
    << "      " << XT << "* rcv = static_cast<" << XT << "*>(gath_[k].ptr);\n"
    << "      const size_t row = static_cast<size_t>(Rc * N) * sizeof(" << T << "), pitch = static_cast<size_t>(R * N) * sizeof(" << T
    << ");\n"
    << "      CHECK(cudaMemcpy2DAsync(snd, row, " << var(ch.producer) << " + c * Rc * N, pitch, row, static_cast<size_t>(O), "
    << "cudaMemcpyDeviceToDevice, comm2_), \"" << x.name << "\");\n"
    << "      const long long block = O * Rc * N / G;\n"
    << "      CHECK(ncclGroupStart(), \"" << x.name << "\");\n"
    << "      for (long long j = 0; j < G; ++j) {\n"
    << "        CHECK(ncclSend(snd + j * block, block, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
    << ", comm2_), \"" << x.name << "\");\n"
    << "        CHECK(ncclRecv(rcv + j * block, block, " << ncclType(x.type.dtype) << ", static_cast<int>(j), " << commOf(gr)
    << ", comm2_), \"" << x.name << "\");\n      }\n"
    << "      CHECK(ncclGroupEnd(), \"" << x.name << "\");\n"
    << "      CHECK(cudaMemcpy2DAsync(" << var(ch.a2a) << " + c * Rc * N, pitch, rcv, row, row, static_cast<size_t>(O), "
    << "cudaMemcpyDeviceToDevice, comm2_), \"" << x.name << "\");\n"
    << "    }\n"
    << joinComm(name) << "  }\n";
}

void Emitter::emitExchangePipeline(const Chunked& ch) {
  const Pipeline pl = pipelineOf(ch);
  emitPipelineSends(pl);
  const bool rows = emitOwnSplit(ch);
  emitPipelineStep(pl, rows);
  emitPipelineReturn(pl, rows);
}

Pipeline Emitter::pipelineOf(const Chunked& ch) const {
  const Stage& x = p_.stages[ch.producer];
  const Stage& back = p_.stages[ch.back];
  Pipeline pl(ch, x, back);
  pl.in = x.operands[0];
  pl.last = back.operands[0];
  pl.gr = x.type.group ? x.type.group : p_.world();
  pl.T = storageType(x.type.dtype);
  pl.BT = storageType(back.type.dtype);
  pl.xn = "\"" + x.name + "\"";
  pl.bn = "\"" + back.name + "\"";
  pl.prog = "\"" + p_.name + "\"";
  pl.ce = ch.devIndex >= 0;
  pl.gi = std::to_string(ch.devIndex);
  // A value only the pipeline reads need not exist whole: x's blocks are read where they arrived
  // (this rank's own in the input), and the result's where it goes (this rank's own in the
  // output; by copy engines, the last step's in the window of the rank it belongs to, so that no
  // transfer follows the last GEMM). The stages between hold one block (plan_.blockOnly).
  pl.xDirect = pipelineOnly(ch, ch.producer);
  pl.yDirect = pipelineOnly(ch, pl.last);
  return pl;
}

void Emitter::emitPipelineSends(const Pipeline& pl) {
  auto& b = body_;
  const Chunked& ch = pl.ch;
  [[maybe_unused]] const Stage &x = pl.x, &back = pl.back;
  [[maybe_unused]] const int in = pl.in, last = pl.last;
  [[maybe_unused]] const GroupInfo* gr = pl.gr;
  [[maybe_unused]] const std::string &T = pl.T, &BT = pl.BT, &xn = pl.xn, &bn = pl.bn, &prog = pl.prog, &gi = pl.gi;
  [[maybe_unused]] const bool ce = pl.ce, xDirect = pl.xDirect, yDirect = pl.yDirect;
  b << "\n  // overlap: " << x.name << " (all_to_all) pipelined rank block by rank block with";
  for (int q : ch.run) b << " " << p_.stages[q].name << ",";
  b << " " << back.name << " (all_to_all):\n"
    << "  // step i computes on the block that rank me - i sent (stream_) while the block of step i+1\n"
    << "  // arrives and the result of step i-1 goes back to its rank (comm2_); step 0 is this rank's own.\n"
    << "  if (" << countVar(ch.producer) << " > 0) {\n"
    << "    const long long G = " << g(gr, "size") << ", me = " << g(gr, "pos") << ";\n"
    << "    const long long inBlock = " << countVar(ch.producer) << " / G, outBlock = " << countVar(ch.back)
    << " / G;  // elements per rank block\n";
  if (ce)
    b << "    // copy engines where every rank is load/store reachable (tune algorithm = nccl: NCCL pairs): each\n"
      << "    // rank pushes into the others' windows (slot = the sender), barriers order the pushes and the reads\n"
      << "    const bool ce = devReady(" << bn << ");\n"
      << "    coconet_rt::Window& win = dev_->stage[" << gi << "];   // blocks sent to this rank\n"
      << "    coconet_rt::Window& wout = dev_->slice[" << gi << "];  // results returned to this rank\n"
      << "    const std::vector<void*>* outs = nullptr;  // every rank's part of wout\n";
  b << "    while (static_cast<long long>(ovSteps_.size()) < G) {\n"
    << "      cudaEvent_t e = nullptr;\n"
    << "      CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), " << xn << ");\n"
    << "      ovSteps_.push_back(e);\n    }\n"
    << forkComm(xn);
  if (!xDirect)
    b << "    CHECK(cudaMemcpyAsync(" << var(ch.producer) << " + me * inBlock, " << var(in) << " + me * inBlock, inBlock * sizeof(" << T
      << "), cudaMemcpyDeviceToDevice, stream_), " << xn << ");\n";
  std::string ind = "    ";
  if (ce) {
    ind = "      ";
    b << "    if (ce) {\n"
      << "      const bool grew = win.ensure(comm_, stream_, static_cast<size_t>(G * inBlock) * sizeof(" << T << "), " << prog << ", " << xn
      << ");\n"
      << "      if (wout.ensure(comm_, stream_, static_cast<size_t>(G * outBlock) * sizeof(" << BT << "), " << prog << ", " << bn
      << ") || grew)\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << xn << ");\n"
      << "      const std::vector<void*>& ins = win.peerBases(static_cast<int>(G), stream_, " << prog << ", " << xn << ");\n"
      << "      outs = &wout.peerBases(static_cast<int>(G), stream_, " << prog << ", " << bn << ");\n"
      << "      // every rank is past its previous call (its reads of both windows): they are free\n"
      << "      coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, comm2_>>>(dev_->dc.comm, 0);\n"
      << "      CHECK(cudaGetLastError(), " << xn << ");\n"
      << "      for (long long i = 1; i < G; ++i) {  // step i's block from rank me - i; ours to rank me + i\n"
      << "        const long long to = (me + i) % G;\n"
      << "        CHECK(cudaMemcpyAsync(static_cast<" << T << "*>(ins[to]) + me * inBlock, " << var(in)
      << " + to * inBlock, static_cast<size_t>(inBlock) * sizeof(" << T << "), cudaMemcpyDeviceToDevice, comm2_), " << xn << ");\n"
      << "        coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, comm2_>>>(dev_->dc.comm, 0);  // every rank's step-i block "
         "arrived\n"
      << "        CHECK(cudaGetLastError(), " << xn << ");\n";
    if (!xDirect)
      b << "        const long long from = (me + G - i) % G;\n"
        << "        CHECK(cudaMemcpyAsync(" << var(ch.producer) << " + from * inBlock, static_cast<const " << T
        << "*>(win.ptr) + from * inBlock, static_cast<size_t>(inBlock) * sizeof(" << T << "), cudaMemcpyDeviceToDevice, comm2_), " << xn
        << ");\n";
    b << "        CHECK(cudaEventRecord(ovSteps_[i], comm2_), " << xn << ");\n"
      << "      }\n"
      << "    } else {\n";
  }
  if (plan_.ncclOnly.count(ch.producer))
    b << ind << bufferEnsure(ch.producer) << ind << var(ch.producer) << " = static_cast<" << T << "*>(buf" << ch.producer << "_.ptr);\n";
  b << ind << "for (long long i = 1; i < G; ++i) {  // step i's block from rank me - i; ours to rank me + i\n"
    << ind << "  const int to = static_cast<int>((me + i) % G), from = static_cast<int>((me + G - i) % G);\n"
    << ind << "  CHECK(ncclGroupStart(), " << xn << ");\n"
    << ind << "  CHECK(ncclSend(" << var(in) << " + to * inBlock, inBlock, " << ncclType(x.type.dtype) << ", to, " << commOf(gr)
    << ", comm2_), " << xn << ");\n"
    << ind << "  CHECK(ncclRecv(" << var(ch.producer) << " + from * inBlock, inBlock, " << ncclType(x.type.dtype) << ", from, "
    << commOf(gr) << ", comm2_), " << xn << ");\n"
    << ind << "  CHECK(ncclGroupEnd(), " << xn << ");\n"
    << ind << "  CHECK(cudaEventRecord(ovSteps_[i], comm2_), " << xn << ");\n"
    << ind << "}\n";
  if (ce) b << "    }\n";
}

void Emitter::emitPipelineStep(const Pipeline& pl, bool rows) {
  auto& b = body_;
  const Chunked& ch = pl.ch;
  [[maybe_unused]] const Stage &x = pl.x, &back = pl.back;
  [[maybe_unused]] const int in = pl.in, last = pl.last;
  [[maybe_unused]] const GroupInfo* gr = pl.gr;
  [[maybe_unused]] const std::string &T = pl.T, &BT = pl.BT, &xn = pl.xn, &bn = pl.bn, &prog = pl.prog, &gi = pl.gi;
  [[maybe_unused]] const bool ce = pl.ce, xDirect = pl.xDirect, yDirect = pl.yDirect;
  b << "    for (long long step = 0; step < G + parts - 1; ++step) {\n"
    << "      const long long i = step < G ? step : 0;  // step G: the rest of this rank's own block\n"
    << "      const long long r0 = step == G ? U1 : 0, r1 = step == 0 && parts == 2 ? U1 : U;  // the block's rows this step computes\n"
    << "      const long long blk = (me + G - i) % G;  // the rank whose block this step computes on\n"
    << (rows ? "" : "      (void)r0;\n      (void)r1;\n") << "      if (i > 0) CHECK(cudaStreamWaitEvent(stream_, ovSteps_[i], 0), " << xn
    << ");\n";
  // The names the step's stages read x and write the result under.
  if (xDirect) {
    b << "      const " << T << "* xin = i == 0 ? " << var(in) << " : "
      << (ce ? "ce ? static_cast<const " + T + "*>(win.ptr) : " : std::string()) << var(ch.producer) << ";  // " << x.name
      << "'s block blk is at blk * inBlock\n";
    varAs_[ch.producer] = "xin";
  }
  if (yDirect) {
    b << "      " << BT << "* yout = i == 0 ? " << var(ch.back) << " : "
      << (ce ? "ce && i == G - 1 ? coconet_rt::shifted(static_cast<" + BT + "*>((*outs)[blk]), (me - blk) * outBlock) : " : std::string())
      << var(last) << ";  // " << p_.stages[last].name << "'s block blk goes to blk * outBlock\n";
    varAs_[last] = "yout";
  }
  for (int q : ch.run)
    if (plan_.blockOnly.count(q)) {
      b << "      " << storageType(p_.stages[q].type.dtype) << "* b" << var(q) << " = coconet_rt::shifted(" << var(q) << ", -blk * ("
        << countVar(q) << " / G));  // " << p_.stages[q].name << ": one block, addressed at block blk's offset\n";
      varAs_[q] = "b" + var(q);
    }
  for (int q : ch.run) {
    const Stage& s = p_.stages[q];
    b << "      " << stageComment(s) << "\n      {\n";
    // The stage's code is written for the top level of run(): indent it into the loop.
    emitIndented("    ", [&] {
      if (s.kind == StageKind::Matmul)
        emitBlockGemm(q, rows);
      else if (rows)
        emitComputeRun({q}, "stream_", "blk * (" + countVar(q) + " / G) + r0 * " + lastDim(q), "(r1 - r0) * " + lastDim(q));
      else
        emitComputeRun({q}, "stream_", "blk * (" + countVar(q) + " / G)", countVar(q) + " / G");
    });
    b << "      }\n";
  }
  varAs_.erase(ch.producer);
  for (int q : ch.run) varAs_.erase(q);
}

void Emitter::emitPipelineReturn(const Pipeline& pl, bool rows) {
  auto& b = body_;
  const Chunked& ch = pl.ch;
  [[maybe_unused]] const Stage &x = pl.x, &back = pl.back;
  [[maybe_unused]] const int in = pl.in, last = pl.last;
  [[maybe_unused]] const GroupInfo* gr = pl.gr;
  [[maybe_unused]] const std::string &T = pl.T, &BT = pl.BT, &xn = pl.xn, &bn = pl.bn, &prog = pl.prog, &gi = pl.gi;
  [[maybe_unused]] const bool ce = pl.ce, xDirect = pl.xDirect, yDirect = pl.yDirect;
  b << "      CHECK(cudaEventRecord(ovGemm_[0], stream_), " << bn << ");\n"
    << "      CHECK(cudaStreamWaitEvent(comm2_, ovGemm_[0], 0), " << bn << ");\n"
    << "      // the result goes back to rank blk; ours comes from rank me + i, which computed it at its step i\n";
  if (yDirect) {
    b << "      if (i == 0) continue;  // computed in place\n";
  } else {
    const std::string at = rows ? " + me * outBlock + r0 * " + lastDim(ch.back) : " + me * outBlock";
    const std::string count = rows ? "(r1 - r0) * " + lastDim(ch.back) : "outBlock";
    b << "      if (i == 0) {  // this part of our block into place\n"
      << "        CHECK(cudaMemcpyAsync(" << var(ch.back) << at << ", " << var(last) << at << ", " << count << " * sizeof(" << BT
      << "), cudaMemcpyDeviceToDevice, comm2_), " << bn << ");\n"
      << "        continue;\n      }\n";
  }
  std::string ind = "      ";
  if (ce) {
    ind = "        ";
    b << "      if (ce) {  // into slot me of rank blk's window; a barrier; what arrived in our slot me + i into place\n";
    const std::string push = "CHECK(cudaMemcpyAsync(static_cast<" + BT + "*>((*outs)[blk]) + me * outBlock, " + var(last) +
                             " + blk * outBlock, static_cast<size_t>(outBlock) * sizeof(" + BT + "), cudaMemcpyDeviceToDevice, comm2_), " +
                             bn + ");\n";
    if (yDirect)
      b << "        if (i < G - 1) " << push;  // the last step wrote there itself
    else
      b << "        " << push;
    b << "        coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, comm2_>>>(dev_->dc.comm, 0);\n"
      << "        CHECK(cudaGetLastError(), " << bn << ");\n"
      << "        const long long from = (me + i) % G;\n"
      << "        CHECK(cudaMemcpyAsync(" << var(ch.back) << " + from * outBlock, static_cast<const " << BT
      << "*>(wout.ptr) + from * outBlock, static_cast<size_t>(outBlock) * sizeof(" << BT << "), cudaMemcpyDeviceToDevice, comm2_), " << bn
      << ");\n"
      << "      } else {\n";
  }
  b << ind << "const int from = static_cast<int>((me + i) % G);\n"
    << ind << "CHECK(ncclGroupStart(), " << bn << ");\n"
    << ind << "CHECK(ncclSend(" << var(last) << " + blk * outBlock, outBlock, " << ncclType(back.type.dtype) << ", static_cast<int>(blk), "
    << commOf(gr) << ", comm2_), " << bn << ");\n"
    << ind << "CHECK(ncclRecv(" << var(ch.back) << " + from * outBlock, outBlock, " << ncclType(back.type.dtype) << ", from, " << commOf(gr)
    << ", comm2_), " << bn << ");\n"
    << ind << "CHECK(ncclGroupEnd(), " << bn << ");\n";
  if (ce) b << "      }\n";
  b << "    }\n" << joinComm(bn) << "  }\n";
}

std::string Emitter::blockRows(int a) const {
  const int ra = p_.stages[a].type.rank();
  return ra > 2 ? shapeVar(a) + "[" + std::to_string(ra - 2) + "]" : "(" + shapeVar(a) + "[0] / G)";
}

std::string Emitter::lastDim(int id) const {
  const int r = p_.stages[id].type.rank();
  return r >= 2 ? shapeVar(id) + "[" + std::to_string(r - 1) + "]" : std::string("1");
}

// Where every stage of the chain has x's leading dimensions (element-wise stages keep their
// operand's shape, a matmul its left operand's rows unless its weight's batches broadcast them),
// a block is U rows of each stage's last dimension (of one element at rank 1), and rows [r0, r1)
// of one stage's block are computed from the same rows of the stages before; otherwise (false)
// every step computes whole blocks.
// This rank's own block, which needs no transfer, is computed in two parts: the first at step 0
// (while the first remote block arrives, as before) and the rest after the last remote block, so
// that the last result sent to this rank (the GEMM into our window, the barrier, the copy into
// place) travels while this rank still computes instead of after it. A matmul's part is whole
// batches of the block, or rows of its one batch; where a weight that repeats over the batches
// would not start each part at its first batch, the block stays whole.
bool Emitter::emitOwnSplit(const Chunked& ch) {
  auto& b = body_;
  const ir::Shape& xs = p_.stages[ch.producer].type.shape;
  bool rows = true;
  for (int q : ch.run) {
    const ir::Shape& qs = p_.stages[q].type.shape;
    rows = rows && qs.size() == xs.size() && (xs.size() < 2 || std::equal(xs.begin(), xs.end() - 1, qs.begin()));
  }
  if (!rows) {
    b << "    const long long U = 1, U1 = 0, parts = 1;  // whole blocks: a stage's rows are not x's\n";
    return false;
  }
  b << "    // this rank's block in two parts where its rows split, the second computed last (after the\n"
    << "    // other ranks' blocks), so that the last result sent here arrives while this rank computes\n"
    << "    const long long U = (" << countVar(ch.producer) << " / G) / " << lastDim(ch.producer) << ";  // rows per block\n";
  int mm = -1;
  for (int q : ch.run)
    if (p_.stages[q].kind == StageKind::Matmul) {
      mm = q;
      break;
    }
  if (mm < 0) {
    b << "    const long long U1 = U / 2;\n"
      << "    const long long parts = G > 1 && U1 > 0 ? 2 : 1;\n";
    return true;
  }
  b << "    const long long Mr = " << blockRows(p_.stages[mm].operands[0]) << ", Br = U / Mr;  // " << p_.stages[mm].name
    << ": Br batches of Mr rows per block\n"
    << "    const long long U1 = Br >= 2 ? (Br / 2) * Mr : Mr / 2;  // whole batches, or rows of the one batch\n"
    << "    bool splits = true;\n";
  for (int q : ch.run) {
    const Stage& s = p_.stages[q];
    if (s.kind != StageKind::Matmul) continue;
    const int qa = s.operands[0], w = s.operands[1];
    const int qra = p_.stages[qa].type.rank(), rb = p_.stages[w].type.rank();
    const std::string kn = shapeVar(qa) + "[" + std::to_string(qra - 1) + "] * " + shapeVar(w) + "[" + std::to_string(rb - 1) + "]";
    b << "    {  // " << s.name << ": each part starts at the weight's first batch\n"
      << "      const long long kn = " << kn << ", wb = kn > 0 ? " << countVar(w) << " / kn : 1;\n"
      << "      splits = splits && (Br == 1 || wb == 1 || wb == Br || ((Br / 2) % wb == 0 && Br % wb == 0));\n"
      << "    }\n";
  }
  b << "    const long long parts = G > 1 && splits && U1 > 0 && U1 < U ? 2 : 1;\n";
  return true;
}

// Row-major C[M, N] = A[M, K] B[K, N] as column-major C^T = B^T A^T (as emitGemm) on block blk
// of the left operand and the product: its rows [r0, r1) where `rows`, else all of it.
void Emitter::emitBlockGemm(int id, bool rows) {
  auto& b = body_;
  const Stage& s = p_.stages[id];
  const int a = s.operands[0], w = s.operands[1];
  const int ra = p_.stages[a].type.rank(), rb = p_.stages[w].type.rank();
  const bool f64 = s.type.dtype == DType::F64;
  b << "    const long long M0 = " << blockRows(a) << ", K = " << shapeVar(a) << "[" << ra - 1 << "], N = " << shapeVar(w) << "[" << rb - 1
    << "];\n"
    << "    const long long Ba = M0 * K > 0 ? (" << countVar(a) << " / G) / (M0 * K) : 1, wb = K * N > 0 ? " << countVar(w)
    << " / (K * N) : 1;  // batches of the block, of the weight\n"
    << (rows ? "    // rows [r0, r1) of the block: whole batches, or rows of its one batch\n"
               "    const long long M = Ba > 1 ? M0 : r1 - r0, batchA = Ba > 1 ? (r1 - r0) / M0 : 1;\n"
               "    const long long batchB = wb == Ba && Ba > 1 ? batchA : wb;  // a weight per batch: the part's\n"
             : "    const long long M = M0, batchA = Ba, batchB = wb;\n")
    << "    const long long baseA = blk * (" << countVar(a) << " / G)" << (rows ? " + r0 * K" : "")
    << ", baseB = " << (rows ? "wb == Ba && Ba > 1 ? (r0 / M0) * K * N : 0" : "0") << ";\n"
    << "    long long Mx = M, batch = batchA, strideA = M0 * K, strideB = K * N, strideC = M0 * N, reps = 1, stepA = 0, stepC = 0;\n"
    << "    if (batchB == 1) { Mx = M * batchA; batch = 1; strideB = 0; }  // fold the batches into rows\n"
    << (rows ? ""
             : "    else if (batchA == 1) { batch = batchB; strideA = 0; }  // the left operand's one batch for each of the weight's\n")
    << "    else if (batchB < batchA && batchA % batchB == 0) {  // the weight repeats over the leading batches\n"
    << "      batch = batchB; reps = batchA / batchB; stepA = batchB * M0 * K; stepC = batchB * M0 * N;\n"
    << "    } else if (batchB != batchA) throw coconet_rt::Error(\"" << p_.name << ": stage '" << s.name
    << "': batch dimensions that broadcast partially are not supported\");\n"
    << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n"
    << "    for (long long r = 0; r < reps; ++r)\n"
    << "      "
    << gemmCall(s.type.dtype, "Mx", var(w) + " + baseB", "strideB", var(a) + " + baseA + r * stepA", "strideA",
                var(id) + " + blk * (" + countVar(id) + " / G)" + (rows ? " + r0 * N" : "") + " + r * stepC", "strideC", "batch",
                "\"" + s.name + "\"", false, readTransposed(w));
}

void Emitter::emitChunkedAllReduce(const Chunked& ch) {
  auto& b = body_;
  const Stage& ps = p_.stages[ch.producer];
  const Stage& ar = p_.stages[ch.ar];
  int a = ps.operands[0], w = ps.operands[1];
  std::string ty = cudaDataType(ps.type.dtype);
  std::string name = "\"" + ps.name + "\"";
  bool f64 = ps.type.dtype == DType::F64;
  bool gemv = ps.kind == StageKind::Gemv;
  b << "\n  // overlap: " << ps.name << " (" << stageKindName(ps.kind) << ") in " << ch.chunks << " chunks of rows, pipelined with "
    << ar.name;
  for (int r : ch.run) b << ", " << p_.stages[r].name;
  b << ":\n  // the GEMM of chunk c+1 (stream_) runs while chunk c is reduced and finished (comm2_)\n"
    << "  if (" << countVar(ch.producer) << " > 0) {\n"
    << "    const long long K = " << shapeVar(a) << "[" << p_.stages[a].type.rank() - 1
    << "], N = " << (gemv ? std::string("1") : shapeVar(w) + "[1]") << ", M = " << countVar(ch.producer)
    << " / N;  // the product's rows and columns\n"
    << "    // up to " << ch.chunks << " chunks: the most that divide the rows\n"
    << "    const long long C = coconet_rt::overlapChunks(" << ch.chunks << ", M, N * static_cast<long long>(sizeof("
    << storageType(ps.type.dtype) << ")), 0);\n"
    << "    const long long rg = M / C;  // rows per chunk\n"
    << forkComm(name) << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n"
    << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
    << "      "
    << gemmCall(ps.type.dtype, "rg", var(w), "0", var(a) + " + c * rg * K", "0", var(ch.producer) + " + c * rg * N", "0", "1", name, false,
                !gemv && readTransposed(w))
    << handOff(name) << "      CHECK(ncclAllReduce(" << var(ch.producer) << " + c * rg * N, " << var(ch.ar) << " + c * rg * N, rg * N, "
    << ncclType(ar.type.dtype) << ", " << ncclOp(ar.op) << ", " << commOf(ar.type.group ? ar.type.group : p_.world()) << ", comm2_), \""
    << ar.name << "\");\n";
  if (!ch.run.empty()) {
    b << "      {\n";
    emitComputeRun(ch.run, "comm2_", "c * rg * N", "rg * N");
    b << "      }\n";
  }
  b << "    }\n" << joinComm(name) << "  }\n";
}

void Emitter::emitChunked(const Chunked& ch) {
  if (ch.back >= 0) return emitExchangePipeline(ch);
  if (ch.ar >= 0) return emitChunkedAllReduce(ch);
  if (ch.bag >= 0) return emitChunkedBag(ch);
  if (ch.a2a >= 0) return emitChunkedAllToAll(ch);
  auto& b = body_;
  const Stage& ps = p_.stages[ch.producer];
  const Stage& rs = p_.stages[ch.rs];
  int a = ps.operands[0], w = ps.operands[1];
  std::string T = storageType(ps.type.dtype);
  std::string name = "\"" + ps.name + "\"";
  bool f64 = ps.type.dtype == DType::F64;
  b << "\n  // overlap: " << ps.name << " (matmul) in " << ch.chunks << " chunks of dimension 0, pipelined with " << rs.name;
  for (int r : ch.run) b << ", " << p_.stages[r].name;
  if (ch.ag >= 0) b << ", " << p_.stages[ch.ag].name;
  const bool device = plan_.devChunked.count(ch.producer) > 0;
  b << ":\n  // the GEMM of chunk c+1 (stream_) runs while chunk c is reduced, finished and gathered (comm2_)"
    << (device ? ";\n  // where every rank is load/store reachable, copy engines move chunk c's reduce-scatter while\n"
                 "  // the GEMM of chunk c+1 runs, and the fused group's device-API kernel then finishes and gathers"
               : "")
    << "\n"
    << "  if (" << countVar(ch.producer) << " > 0) {\n"
    << "    const long long P = " << g(rs.type.group, "size") << ";\n"
    << "    const long long K = " << shapeVar(a) << "[" << p_.stages[a].type.rank() - 1 << "], N = " << shapeVar(w)
    << "[1], M = " << countVar(ch.producer) << " / N;  // the product's rows and columns\n";
  // The chunk count C (at most the overlap's, dividing the rows per rank; where copy engines move
  // the chunks, also keeping each copy to a peer at 8 MiB or more, and one chunk on more than two
  // ranks under 32 MiB per peer, unless tune(f, merge = never): coconet_rt::mergedOverlapChunks),
  // rows per rank and chunk, and a chunk's staging bytes.
  const std::string Cs = std::to_string(ch.chunks);
  if (!device) b << "    // up to " << Cs << " chunks: the most that divide this rank's rows\n" << chunkDecls(ch, "    ", false);
  b << "    const " << (f64 ? "double" : "float") << " alpha = 1, beta = 0;\n";
  // Chunk c's GEMM on stream_ into stage_[k]: rows [lo, lo + rows) of every rank's block, P GEMMs
  // in one call (lo = c rg, rows = rg; with a split tail, the lambdas lo(c) and rows(c)).
  if (device) emitChunkedDevice(ch);
  if (device) {
    std::vector<int> members{ch.rs};
    members.insert(members.end(), ch.run.begin(), ch.run.end());
    b << fallbackStorage(members, "    ");
  }
  b << "    for (int k = 0; k < 2; ++k) {\n      stage_[k].ensure(slot, \"" << p_.name << "\", " << name
    << ");\n"
    // the gathered chunk in the all_gather's type (an epilogue may cast the reduced values)
    << (ch.ag >= 0 ? "      gath_[k].ensure(static_cast<size_t>(P * rg * N) * sizeof(" +
                         std::string(storageType(p_.stages[ch.ag].type.dtype)) + "), \"" + p_.name + "\", " + name + ");\n"
                   : "")
    << "    }\n"
    << forkComm(name) << "    for (long long c = 0; c < C; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
    << chunkGemm(ch, "c * rg", "rg", "[c rg, (c+1) rg)") << tlMark("      ", "stream_", "gemm", "c") << "      CHECK(ncclReduceScatter(st, "
    << var(ch.rs) << " + c * rg * N, rg * N, " << ncclType(rs.type.dtype) << ", " << ncclOp(rs.op) << ", " << commOf(rs.type.group)
    << ", comm2_), \"" << rs.name << "\");\n"
    << "      CHECK(cudaEventRecord(ovFree_[k], comm2_), " << name << ");\n";
  if (!ch.run.empty()) {
    b << "      {\n";
    emitComputeRun(ch.run, "comm2_", "c * rg * N", "rg * N");
    b << "      }\n";
  }
  if (ch.ag >= 0) {
    const Stage& ag = p_.stages[ch.ag];
    int src = ag.operands[0];
    std::string AT = storageType(ag.type.dtype);
    b << "      // gather the chunk, then put each rank's part in its block\n"
      << "      CHECK(ncclAllGather(" << var(src) << " + c * rg * N, gath_[k].ptr, rg * N, " << ncclType(ag.type.dtype) << ", "
      << commOf(ag.type.group) << ", comm2_), \"" << ag.name << "\");\n"
      << "      CHECK(cudaMemcpy2DAsync(" << var(ch.ag) << " + c * rg * N, static_cast<size_t>((M / P) * N) * sizeof(" << AT
      << "), gath_[k].ptr, static_cast<size_t>(rg * N) * sizeof(" << AT << "), static_cast<size_t>(rg * N) * sizeof(" << AT
      << "), static_cast<size_t>(P), cudaMemcpyDeviceToDevice, comm2_), \"" << ag.name << "\");\n";
  }
  b << tlMark("      ", "comm2_", "collectives", "c") << "    }\n" << joinComm(name) << (device ? "    }\n" : "") << "  }\n";
}
std::string Emitter::chunkDecls(const Chunked& ch, const std::string& ind, bool merge) const {
  const Stage& ps = p_.stages[ch.producer];
  const std::string T = storageType(ps.type.dtype), Cs = std::to_string(ch.chunks);
  return ind + "const long long C = coconet_rt::" + (merge ? "mergedOverlapChunks(" : "overlapChunks(") + Cs +
         ", M / P, N * static_cast<long long>(sizeof(" + T + ")), " + (merge ? "P" : "0") + ");\n" + ind +
         "const long long rg = M / (P * C);  // rows per rank and chunk (each rank's block is M / P rows)\n" + ind +
         "const size_t slot = static_cast<size_t>(P * rg * N) * sizeof(" + T + ");\n";
}

std::string Emitter::chunkGemm(const Chunked& ch, const std::string& lo, const std::string& rows, const std::string& range) const {
  const Stage& ps = p_.stages[ch.producer];
  const int a = ps.operands[0], w = ps.operands[1];
  const std::string T = storageType(ps.type.dtype), name = "\"" + ps.name + "\"";
  return "      " + T + "* st = static_cast<" + T +
         "*>(stage_[k].ptr);\n"
         "      if (c >= 2) CHECK(cudaStreamWaitEvent(stream_, ovFree_[k], 0), " +
         name +
         ");\n"
         "      // rows " +
         range +
         " of every rank's block: P GEMMs in one call\n"
         "      " +
         gemmCall(ps.type.dtype, rows, var(w), "0", var(a) + " + " + lo + " * K", "(M / P) * K", "st", rows + " * N", "P", name, false,
                  readTransposed(w)) +
         handOff(name);
}

ChunkedDevice Emitter::chunkedDevice(const Chunked& ch) {
  ChunkedDevice cd(ch, plan_.devChunked.at(ch.producer));
  const DevGroup& dg = cd.dg;
  const Stage& ps = p_.stages[ch.producer];
  const Stage& rs = p_.stages[ch.rs];
  cd.T = storageType(ps.type.dtype);
  cd.name = "\"" + ps.name + "\"";
  cd.Cs = std::to_string(ch.chunks);
  cd.kname = emitDevKernel(dg);
  // one chunk (below) may run the group's one-shot form (oneShotMode; -1 with copy_engines: dg.ceGather)
  cd.oneShot = oneShotMode(dg);
  cd.k1 = cd.oneShot >= 0 ? emitDevKernel(dg, true) : "";
  cd.gi = std::to_string(dg.index);
  cd.prog = "\"" + p_.name + "\"";
  cd.gname = "\"" + dg.name + "\"";
  const Stage& ag = p_.stages[ch.ag];
  cd.ST = storageType(p_.stages[ag.operands[0]].type.dtype);
  cd.pos = g(rs.type.group, "pos");
  // Once over this rank's whole block after the last chunk's copies (and its pulls), or per chunk
  // (elements [cc rg N, (cc+1) rg N) of the block; copy engines pull the other ranks' parts).
  // With tune(f, tail = T) the loop runs over pieces: chunks 0 .. C-2, then the last chunk's T
  // pieces (lo(c), rows(c): their first row and row count in each rank's block).
  cd.split = dg.tailPieces > 1;
  const bool split = cd.split;
  cd.cLo = split ? "lo(c)" : "c * rg";
  cd.cRows = split ? "rows(c)" : "rg";
  cd.ccLo = split ? "lo(cc)" : "cc * rg";
  cd.ccRows = split ? "rows(cc)" : "rg";
  cd.cRange = split ? "[lo(c), lo(c) + rows(c))" : "[c rg, (c+1) rg)";
  cd.whole = DevLaunch{"", "(M / P) * N", "0", "(M / P) * N"};
  DevLaunch part = cd.whole;
  part.lo = cd.ccLo + " * N";
  part.hi = split ? "(lo(cc) + rows(cc)) * N" : "(cc + 1) * rg * N";
  part.pull = "0";
  DevLaunch wholeNoPull = cd.whole;  // after the last chunk with the pulls left to copy engines
  wholeNoPull.pull = "0";
  // One chunk: the group's kernel in the form that pushes the GEMM's result itself, in rounds
  // (onePassForm), over the whole product (every rank's block contiguous in the staging buffer).
  cd.onePass = !dg.ceGather;
  if (cd.onePass) cd.pg = onePassForm(dg);
  cd.kPass = cd.onePass ? emitDevKernel(cd.pg) : "";
  cd.wholePush = cd.whole;
  cd.wholePush.rsIn = "static_cast<const " + cd.T + "*>(stage_[0].ptr)";
  std::vector<std::string> params;
  if (cd.onePass) devSignature(cd.pg, cd.wholePush, params, cd.wholePushArgs, cd.others);
  devSignature(dg, cd.whole, params, cd.wholeArgs, cd.others);
  devSignature(dg, part, params, cd.partArgs, cd.others);
  devSignature(dg, wholeNoPull, params, cd.wholeNoPullArgs, cd.others);
  cd.V = std::to_string(devVecWidth(dg));
  cd.mayPipe = dg.gather != 0;  // tune(f, gather = after): only the form after the last chunk
  // One chunk (a decode-sized product, merged) in the group's one-shot form needs only its
  // one-shot window: the staging and slice windows are made where another form runs.
  cd.one = "C == 1" + std::string(cd.mayPipe ? " && !pipelined" : "") + (split ? " && tp == 1" : "");
  return cd;
}

std::string Emitter::chunkedLaunch(const ChunkedDevice& cd, const std::vector<std::string>& args, const char* stream) const {
  std::string t = cd.kname + "<<<" + std::to_string(cd.dg.blocks) + ", coconet_rt::kDevThreads, 0, " + stream + ">>>(";
  for (size_t q = 0; q < args.size(); ++q) t += (q ? ", " : "") + args[q];
  return t + ");\n";
}

std::string Emitter::chunkedPulls(const ChunkedDevice& cd, const std::string& off, const std::string& count, const char* stream) const {
  const Stage& ag = p_.stages[cd.ch.ag];
  return "        for (long long j = 1; j < P; ++j) {\n"
         "          const long long q = (" +
         cd.pos +
         " + j) % P;\n"
         "          CHECK(cudaMemcpyAsync(" +
         var(cd.ch.ag) + " + q * (M / P) * N" + off + ", static_cast<const " + cd.ST + "*>(slices[q])" + off + ", static_cast<size_t>(" +
         count + ") * sizeof(" + cd.ST + "), cudaMemcpyDeviceToDevice, " + stream + "), \"" + ag.name +
         "\");\n"
         "        }\n";
}

void Emitter::emitChunkedDeviceSetup(const ChunkedDevice& cd) {
  auto& b = body_;
  const Chunked& ch = cd.ch;
  const DevGroup& dg = cd.dg;
  const std::string &T = cd.T, &Cs = cd.Cs, &V = cd.V;
  b << "    if (devReady(" << cd.gname << ")) {\n" << oneShotNote(dg, "      ");
  if (dg.mergeChunks)
    b << "      // up to " << Cs << " chunks dividing this rank's rows, fewer where a chunk's copy to each peer would be under 8 MiB,\n"
      << "      // one on more than two ranks where this rank's block to a peer is under 32 MiB\n"
      << chunkDecls(ch, "      ", true);
  else
    b << "      // up to " << Cs << " chunks dividing this rank's rows, at every size (tune(f, merge = never))\n"
      << chunkDecls(ch, "      ", false);
  if (cd.split) {
    const std::string t = std::to_string(dg.tailPieces);
    b << "      // the last chunk in " << t << " pieces (tune(f, tail = " << t << ")) where its rows split into whole vectors;\n"
      << "      // piece c is rows [lo(c), lo(c) + rows(c)) of every rank's block\n"
      << "      const long long tp = rg % " << t << " == 0 && (rg / " << t << " * N) % " << V << " == 0 ? " << t
      << " : 1, NC = C - 1 + tp;\n"
      << "      auto lo = [&](long long c) { return c < C - 1 ? c * rg : (C - 1) * rg + (c - (C - 1)) * (rg / tp); };\n"
      << "      auto rows = [&](long long c) { return c < C - 1 ? rg : rg / tp; };\n";
  }
  // Per chunk on two ranks where the GEMM is long against the transfers (gatherFlopsPerByte_)
  // and the product large enough to pay for a kernel per chunk.
  if (cd.mayPipe)
    b << "      // the epilogue and all-gather per chunk "
      << (dg.gather < 0 ? "on two ranks where the GEMM's flops per byte that crosses NVLink,\n"
                          "      // K P / ((P - 1) e), reach " +
                              std::to_string(gatherFlopsPerByte_) +
                              ", the product is 16 MiB or more, a chunk is whole vectors and\n"
                              "      // there are chunks to pipeline (one chunk: the GEMM, then the group's kernel, below)\n"
                        : "(tune(f, gather = pipelined)) where a chunk is whole vectors\n")
      << "      const bool pipelined = (rg * N) % " << V << " == 0"
      << (dg.gather < 0 ? " && C > 1 && P == 2 &&\n          static_cast<double>(K) * P >= " + std::to_string(gatherFlopsPerByte_) +
                              ".0 * (P - 1) * sizeof(" + T + ") && static_cast<size_t>(M * N) * sizeof(" + T + ") >= (size_t{16} << 20)"
                        : "")
      << ";\n";
  if (cd.oneShot >= 0)
    b << "      // one chunk in the group's one-shot form (oneShotMaxBytes(P), or as tune(f, algorithm = one_shot | ll) asks)\n"
      << "      const bool oneShotNow = " << cd.one
      << (cd.oneShot ? "" : " && static_cast<size_t>(M * N) * sizeof(" + T + ") <= coconet_rt::oneShotMaxBytes(P)") << ";\n";
  b << "      // the staging window holds every rank's partial sums of this rank's block (slot q: rank q's)\n"
    << "      for (int k = 0; k < 2; ++k) stage_[k].ensure(slot, " << cd.prog << ", " << cd.name << ");\n";
  if (cd.oneShot >= 0) b << "      if (!oneShotNow) {\n";
  const std::string in2 = cd.oneShot >= 0 ? "        " : "      ";
  b << in2 << "const bool grew = dev_->stage[" << cd.gi << "].ensure(comm_, stream_, static_cast<size_t>(M * N) * sizeof(" << T << "), "
    << cd.prog << ", " << cd.gname << ");\n"
    << in2 << "if (dev_->slice[" << cd.gi << "].ensure(comm_, stream_, static_cast<size_t>((M / P) * N) * sizeof(" << cd.ST << "), "
    << cd.prog << ", " << cd.gname << ") || grew)\n"
    << in2 << "  dev_->dc.refresh(comm_, stream_, " << cd.prog << ", " << cd.gname << ");\n";
  if (cd.oneShot >= 0) b << "      }\n";
  auto bases = [&](const char* var, const char* window) {
    const std::string call =
        "dev_->" + std::string(window) + "[" + cd.gi + "].peerBases(static_cast<int>(P), stream_, " + cd.prog + ", " + cd.gname + ")";
    b << "      const std::vector<void*>& " << var << " = "
      << (cd.oneShot >= 0 ? "!oneShotNow ? " + call + " : coconet_rt::kNoPeerBases" : call) << ";\n";
  };
  bases("slots", "stage");
  if (cd.mayPipe || dg.ceGather) bases("slices", "slice");
  emitDevMaps(dg, "      ");
  emitDevVec(dg, cd.whole, cd.others, "      ");
}

void Emitter::emitChunkedDeviceEpilogues(const ChunkedDevice& cd) {
  auto& b = body_;
  const std::string &name = cd.name, &gname = cd.gname;
  if (cd.mayPipe) {
    b << "      // chunk cc's epilogue: the group's kernel over its rows of this rank's block on stream_ (after the\n"
      << "      // next chunk's GEMM, on every SM); then copy engines pull the other ranks' parts of it (comm3_)\n"
      << "      auto finish = [&](long long cc) {\n"
      << "        CHECK(cudaStreamWaitEvent(stream_, ovFree_[cc % 2], 0), " << name << ");\n"
      << "        " << chunkedLaunch(cd, cd.partArgs, "stream_") << "        CHECK(cudaGetLastError(), " << gname << ");\n"
      << tlMark("        ", "stream_", "epilogue", "cc") << "        CHECK(cudaEventRecord(ovRed_, stream_), " << name << ");\n"
      << "        CHECK(cudaStreamWaitEvent(comm3_, ovRed_, 0), " << name << ");\n"
      << chunkedPulls(cd, " + " + cd.ccLo + " * N", cd.ccRows + " * N", "comm3_") << tlMark("        ", "comm3_", "gather", "cc")
      << "      };\n";
  } else {
    b << "      // the epilogue and all-gather once after the last chunk (tune(f, gather = after))\n";
  }
  if (cd.dg.ceGather) {
    b << "      // after the last chunk: the kernel over the whole block without its pulls, then copy engines\n"
      << "      // pull the other ranks' blocks (tune(f, algorithm = copy_engines)), both on comm2_\n"
      << "      auto gatherByCopies = [&]() {\n"
      << "        " << chunkedLaunch(cd, cd.wholeNoPullArgs, "comm2_") << "        CHECK(cudaGetLastError(), " << gname << ");\n"
      << tlMark("        ", "comm2_", "epilogue") << chunkedPulls(cd, "", "(M / P) * N", "comm2_") << tlMark("        ", "comm2_", "gather")
      << "      };\n";
  }
}

// One chunk (a decode-sized product, merged): nothing to overlap, so no copy engines (each
// copy's fixed start outweighs these bytes) and no second stream: the GEMM, then the group's
// kernel on stream_ in the form that pushes the partial sums into the peers' staging windows
// itself, in rounds on blocks by size (onePassForm: a preloaded kernel's one pass on
// devOverlapBlocks_ blocks ran 5% behind it on 2 H200 at 16 MiB), or its one-shot form (the
// whole product to every rank) up to oneShotMaxBytes(P) (oneShotNow).
void Emitter::emitChunkedDeviceOneChunk(const ChunkedDevice& cd) {
  auto& b = body_;
  const Stage& ps = p_.stages[cd.ch.producer];
  const int a = ps.operands[0], w = ps.operands[1];
  const std::string& T = cd.T;
  b << "      if (" << cd.one << ") {\n"
    << "      " << T << "* st = static_cast<" << T << "*>(stage_[0].ptr);\n"
    << "      // every rank's block (one chunk: the blocks' rows are contiguous in x and in the staging\n"
    << "      // buffer, so one GEMM of M rows rather than P of M / P, which would each read the whole weight)\n"
    << "      " << gemmCall(ps.type.dtype, "M", var(w), "0", var(a), "M * K", "st", "M * N", "1", cd.name, false, readTransposed(w))
    << tlMark("      ", "stream_", "gemm");
  if (cd.oneShot >= 0) {
    b << "      if (oneShotNow) {\n";
    emitDevOneShot(cd.dg, cd.k1, "st", "M * N", "        ");
    b << tlMark("        ", "stream_", "push+epilogue") << "      } else {\n";
  }
  // (`vec` as above: the staging buffer, rsIn here, is cudaMalloc'd and so 16-byte aligned)
  emitDevLaunch(cd.pg, cd.kPass, cd.wholePush, cd.wholePushArgs, "      ");
  b << tlMark("      ", "stream_", "push+epilogue+gather") << (cd.oneShot >= 0 ? "      }\n" : "") << "      } else {\n";
}

void Emitter::emitChunkedDeviceLoop(const ChunkedDevice& cd) {
  auto& b = body_;
  const Chunked& ch = cd.ch;
  const std::string &T = cd.T, &name = cd.name, &gname = cd.gname, &pos = cd.pos, &cLo = cd.cLo, &cRows = cd.cRows;
  const bool mayPipe = cd.mayPipe, split = cd.split;
  b << forkComm(name) << "      for (long long c = 0; c < " << (split ? "NC" : "C")
    << "; ++c) {\n      const int k = static_cast<int>(c % 2);\n"
    << chunkGemm(ch, cLo, cRows, cd.cRange) << tlMark("      ", "stream_", "gemm", "c") << "      // copy engines: rows " << cd.cRange
    << " of rank q's block into this rank's slot of rank q's staging window\n"
    << "      for (long long j = 1; j <= P; ++j) {\n"
    << "        const long long q = (" << pos << " + j) % P;\n"
    << "        CHECK(cudaMemcpyAsync(static_cast<" << T << "*>(slots[q]) + (" << pos << " * (M / P) + " << cLo << ") * N, st + q * "
    << cRows << " * N, static_cast<size_t>(" << cRows << " * N) * sizeof(" << T << "), cudaMemcpyDeviceToDevice, comm2_), " << gname
    << ");\n"
    << "      }\n"
    << tlMark("      ", "comm2_", "copies", "c") << "      CHECK(cudaEventRecord(ovFree_[k], comm2_), " << name << ");\n"
    << (mayPipe ? "      if (pipelined && c >= 1) finish(c - 1);\n" : "") << "      }\n";
  // After the last chunk: the last chunk's epilogue and pulls, or the kernel over the whole block.
  const std::string in = mayPipe ? "        " : "      ";
  if (mayPipe)
    b << "      if (pipelined) {\n        finish(" << (split ? "NC" : "C") << " - 1);\n"
      << "        CHECK(cudaEventRecord(ovDone_, comm3_), " << name << ");\n"
      << "        CHECK(cudaStreamWaitEvent(stream_, ovDone_, 0), " << name << ");\n"
      << "      } else {\n";
  if (cd.dg.ceGather)
    b << in << "gatherByCopies();\n";
  else
    b << in << chunkedLaunch(cd, cd.wholeArgs, "comm2_") << in << "CHECK(cudaGetLastError(), " << gname << ");\n"
      << tlMark(in, "comm2_", "epilogue+gather");
  b << in << "CHECK(cudaEventRecord(ovDone_, comm2_), " << name << ");\n"
    << in << "CHECK(cudaStreamWaitEvent(stream_, ovDone_, 0), " << name << ");\n"
    << (mayPipe ? "      }\n" : "") << (cd.onePass ? "      }\n" : "")
    << "    } else {\n      // not every rank is load/store reachable: NCCL calls, up to " << cd.Cs << " chunks dividing this rank's rows\n"
    << chunkDecls(ch, "    ", false);
}

void Emitter::emitChunkedDevice(const Chunked& ch) {
  const ChunkedDevice cd = chunkedDevice(ch);
  emitChunkedDeviceSetup(cd);
  emitChunkedDeviceEpilogues(cd);
  if (cd.onePass) emitChunkedDeviceOneChunk(cd);
  emitChunkedDeviceLoop(cd);
}

}  // namespace coconet::backend::detail
