// Scalar chains: their kernel (or a device group's prologue) and its exchanges.
#include <tuple>
#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

void Emitter::scalarChainSignature(const ScalarChain& sc, bool folded, std::vector<std::string>& params,
                                   std::vector<std::string>& args) const {
  const std::string gi = std::to_string(sc.index);
  if (folded) {
    params.insert(params.end(), {"ncclWindow_t chainWin", "size_t chainHalf", "unsigned chainEpoch"});
    args.insert(args.end(), {"dev_->oneShot[" + gi + "].win", "dev_->parity[" + gi + "] * (dev_->oneShot[" + gi + "].bytes / 2)",
                             "dev_->epoch[" + gi + "]"});
  } else {
    params.insert(params.end(), {"ncclDevComm dc", "ncclWindow_t win", "size_t half"});
    args.insert(args.end(), {"dev_->dc.comm", "w.win", "dev_->parity[" + gi + "] * (w.bytes / 2)"});
  }
  // Folded, the group takes the chain's values from registers (planChainPrologues: nothing else
  // reads them; the NCCL fallback computes them again): no stores.
  if (!folded)
    for (int id : sc.written) {
      params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + "* __restrict__ out" + std::to_string(id));
      args.push_back(var(id));
    }
  for (int o : sc.ext) {
    params.push_back("const " + std::string(storageType(p_.stages[o].type.dtype)) + "* __restrict__ " + (folded ? "ca" : "a") +
                     std::to_string(o));
    args.push_back(var(o));
  }
  for (int id : sc.stages)
    if (p_.stages[id].kind == StageKind::Reduce) {
      const std::string f = std::to_string(id), op = reduceOpStruct(id);
      params.insert(params.end(), {"const " + op + "::Acc* __restrict__ part" + f, "int blocks" + f, "double count" + f});
      args.insert(args.end(),
                  {"static_cast<const " + op + "::Acc*>(red" + f + "_.ptr)", foldBlocksVar(plan_.foldedInto.at(id)), reduceCount(id)});
    }
  std::vector<int> computes;
  for (int id : sc.stages)
    if (p_.stages[id].kind == StageKind::Compute) computes.push_back(id);
  std::vector<std::string> rp, ra;
  runParams(computes, rp, ra);
  for (size_t k = 0; k < rp.size(); ++k)  // folded: the group may take the same parameter already
    if (std::find(params.begin(), params.end(), rp[k]) == params.end()) {
      params.push_back(rp[k]);
      args.push_back(ra[k]);
    }
  if (!folded) {
    params.push_back("unsigned long long seed");
    args.push_back("seed");
  }
}

std::string Emitter::scalarChainCode(const ScalarChain& sc, bool folded) {
  std::ostringstream K;
  K << "  const unsigned long long key = 0;\n  (void)key;\n";
  std::set<int> known;
  const std::string extPrefix = folded ? "ca" : "a";
  auto value = [&](int o) {
    return known.count(o) ? "r" + std::to_string(o) : "coconet_rt::to_f(" + extPrefix + std::to_string(o) + "[0])";
  };
  auto storeAs = [&](int id, const std::string& v) {
    const std::string T = storageType(p_.stages[id].type.dtype), i = std::to_string(id);
    return "  const " + T + " s" + i + " = coconet_rt::Store<" + T + ">::from(static_cast<double>(" + v + "));\n  const auto r" + i +
           " = coconet_rt::to_f(s" + i + ");\n  (void)r" + i + ";\n";
  };
  auto isReduce = [&](int step) { return step >= 0 && p_.stages[step].kind == StageKind::Reduce; };
  for (size_t j = 0; j < sc.order.size(); ++j) {
    const int step = sc.order[j];
    if (isReduce(step)) {
      // Reductions next to each other in the chain read their partial results in one loop, so that
      // their loads are in flight together (each thread adds its partials in the same order as
      // alone: the same bits).
      size_t end = j;
      while (end < sc.order.size() && isReduce(sc.order[end])) ++end;
      std::string cond, body;
      for (size_t r = j; r < end; ++r) {
        const std::string f = std::to_string(sc.order[r]), op = reduceOpStruct(sc.order[r]);
        K << "  " << op << "::Acc acc" << f << " = " << op << "::init();\n";
        cond += (r > j ? " || q < blocks" : "q < blocks") + f;
        body += end - j == 1 ? "acc" + f + " = " + op + "::combine(acc" + f + ", part" + f + "[q]);"
                             : "\n    if (q < blocks" + f + ") acc" + f + " = " + op + "::combine(acc" + f + ", part" + f + "[q]);";
      }
      K << "  for (int q = threadIdx.x; " << cond << "; q += blockDim.x)" << (end - j == 1 ? " " + body + "\n" : " {" + body + "\n  }\n");
      // then over the block, in one tree pass for all of them (blockReduceEach: the same bits)
      const std::vector<int> run(sc.order.begin() + static_cast<long>(j), sc.order.begin() + static_cast<long>(end));
      std::vector<std::string> ops;
      for (int r : run) ops.push_back(reduceOpStruct(r));
      K << "  {\n" << blockReduceEachCode(run, ops, "    ") << "  }\n";
      for (size_t r = j; r < end; ++r) {
        const std::string f = std::to_string(sc.order[r]), op = reduceOpStruct(sc.order[r]);
        K << storeAs(sc.order[r], op + "::finish(acc" + f + ", count" + f + ")");
        known.insert(sc.order[r]);
      }
      j = end - 1;
    } else if (step >= 0) {
      std::map<int, int> ids;
      for (int o : p_.stages[step].operands) ids[o] = o;
      K << runMembers(
          {step}, ids, {}, "  ", value, [](int) { return std::string(); }, /*uniqueNames=*/true);
      known.insert(step);
    } else {
      const int e = -1 - step;
      const auto& ex = sc.exchanges[static_cast<size_t>(e)];
      const std::string es = std::to_string(e), w = std::to_string(sc.width);
      const std::string region = "(" + es + " * P + me) * " + w;
      if (folded) {
        // The stores and the waits are spread over threads so that their round trips overlap: one
        // store per thread of block 0, and warp 0 of every block waits for 32 ranks' slots at a
        // time. (One thread storing and waiting for every slot in turn cost LAMB's step 6-9 us on
        // 4 H200.) The values are combined in rank order, so the results are the same bits on every
        // rank.
        const std::string n = std::to_string(ex.size());
        std::string pick;  // value k of the exchange
        for (size_t k = 0; k + 1 < ex.size(); ++k)
          pick += "k == " + std::to_string(k) + " ? " + value(p_.stages[ex[k]].operands[0]) + " : ";
        pick += value(p_.stages[ex.back()].operands[0]);
        K << "  // exchange " << e << ": block 0's threads store this rank's value(s), with this call's epoch, into its slot on\n"
          << "  // every rank; warp 0 of every block waits until each rank's slot holds this call's epoch and combines\n"
          << "  // them in rank order; the block takes the results from shared memory\n"
          << "  if (blockIdx.x == 0)\n";
        if (ex.size() == 1)
          K << "    for (int p = threadIdx.x; p < P; p += blockDim.x)\n"
            << "      coconet_rt::putEpochSlot(chainWin, chainHalf + (" << region << " + 0) * sizeof(unsigned long long), p, " << pick
            << ", chainEpoch);\n";
        else
          K << "    for (int t = threadIdx.x; t < P * " << n << "; t += blockDim.x) {\n"
            << "      const int p = t / " << n << ", k = t - p * " << n << ";\n"
            << "      coconet_rt::putEpochSlot(chainWin, chainHalf + (" << region << " + k) * sizeof(unsigned long long), p, " << pick
            << ", chainEpoch);\n"
            << "    }\n";
        K << "  const unsigned long long* slots" << e
          << " = static_cast<const unsigned long long*>(ncclGetLocalPointer(chainWin, chainHalf)) + " << es << " * P * " << w << ";\n"
          << "  __shared__ float xs" << e << "[" << n << "];\n"
          << "  if (threadIdx.x < 32) {\n";
        for (size_t k = 0; k < ex.size(); ++k) {
          const Stage& a = p_.stages[ex[k]];
          const bool sum = a.op == ReduceOp::Sum;  // as sumSlot: from 0, in rank order
          const std::string comb = sum ? "__fadd_rn(x, y)" : a.op == ReduceOp::Max ? "fmaxf(x, y)" : "fminf(x, y)";
          K << "    {\n      float x = 0.0f;\n"
            << "      for (int p0 = 0; p0 < P; p0 += 32) {\n"
            << "        const float yl = coconet_rt::laneSlot(slots" << e << ", P, " << w << ", " << k << ", p0, chainEpoch);\n"
            << "        for (int q = 0; q < 32 && p0 + q < P; ++q) {\n"
            << "          const float y = __shfl_sync(0xffffffffu, yl, q);\n"
            << "          x = " << (sum ? comb : "p0 + q == 0 ? y : " + comb) << ";\n"
            << "        }\n      }\n"
            << "      if (threadIdx.x == 0) xs" << e << "[" << k << "] = x;\n    }\n";
        }
        K << "  }\n  __syncthreads();\n";
        for (size_t k = 0; k < ex.size(); ++k) {
          const std::string i = std::to_string(ex[k]);
          K << "  const float x" << i << " = xs" << e << "[" << k << "];\n" << storeAs(ex[k], "x" + i);
          known.insert(ex[k]);
        }
        continue;
      }
      K << "  // exchange " << e << ": this rank's slot on every rank, a barrier, then every rank's slots in rank order\n"
        << "  if (threadIdx.x == 0)\n    for (int p = 0; p < P; ++p) {\n";
      for (size_t k = 0; k < ex.size(); ++k)
        K << "      *coconet_rt::peerPtr<float>(win, half + (" << region << " + " << k
          << ") * sizeof(float), p) = " << value(p_.stages[ex[k]].operands[0]) << ";\n";
      K << "    }\n  bar.sync(ncclCoopCta(), cuda::memory_order_acq_rel);\n"
        << "  const float* slots" << e << " = static_cast<const float*>(ncclGetLocalPointer(win, half)) + " << e << " * P * " << w << ";\n";
      for (size_t k = 0; k < ex.size(); ++k) {
        const Stage& a = p_.stages[ex[k]];
        const std::string i = std::to_string(ex[k]);
        const bool sum = a.op == ReduceOp::Sum;  // as sumSlot: from 0, in rank order
        const std::string comb = sum ? "__fadd_rn(x" + i + ", y)" : a.op == ReduceOp::Max ? "fmaxf(x" + i + ", y)" : "fminf(x" + i + ", y)";
        auto slot = [&](const std::string& p) {
          return "slots" + es + "[" + (p == "0" ? std::to_string(k) : p + " * " + w + " + " + std::to_string(k)) + "]";
        };
        K << "  float x" << i << " = " << (sum ? "0.0f" : slot("0")) << ";\n"
          << "  for (int p = " << (sum ? 0 : 1) << "; p < P; ++p) {\n    const float y = " << slot("p") << ";\n    x" << i << " = " << comb
          << ";\n  }\n"
          << storeAs(ex[k], "x" + i);
        known.insert(ex[k]);
      }
    }
  }
  if (!folded && !sc.written.empty()) {
    K << "  if (threadIdx.x == 0) {\n";
    for (int id : sc.written) K << "    out" << id << "[0] = s" << id << ";\n";
    K << "  }\n";
  }
  return K.str();
}

void Emitter::emitScalarChain(const ScalarChain& sc) {
  auto& b = body_;
  const std::string kname = "k_" + std::to_string(sc.stages.front()) + "_scalars";
  const std::string gi = std::to_string(sc.index), name = "\"" + p_.stages[sc.stages.front()].name + "\"", prog = "\"" + p_.name + "\"";
  // Where not every rank is load/store reachable: the stages one by one (closes the device branch).
  auto fallback = [&] {
    b << "  } else {\n    // not every rank is load/store reachable: the stages one by one\n";
    for (int id : sc.stages) {
      b << "    // " << p_.stages[id].name << "\n    if (" << countVar(id) << " > 0) {\n";
      emitIndented("  ", [&] { emitStage(id); });
      b << "    }\n";
    }
    b << "  }\n";
  };
  if (sc.into >= 0) {
    // Computed at the start of the next group's kernel (its arguments: devSignature): here its
    // window, zeroed when made (so that no slot holds a stale epoch), and this call's epoch and half.
    b << "\n  // " << sc.name << ": computed first in every block of fused group '" << plan_.devGroups.at(sc.into).name
      << "''s kernel where every rank is load/store reachable (exchanges through slots holding value and epoch)\n"
      << "  if (devReady(" << name << (soloDevice() ? ", true" : "") << ")) {\n"
      << "    coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
      << "    if (w.ensure(comm_, stream_, 2 * ((static_cast<size_t>(P_) * " << sc.exchanges.size() * sc.width
      << " * sizeof(unsigned long long) + 255) / 256 * 256), " << prog << ", " << name << ")) {\n"
      << "      dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      CHECK(cudaMemsetAsync(w.ptr, 0, w.bytes, stream_), " << name << ");\n"
      << "      coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, 0);  // zeroed on every rank\n"
      << "      CHECK(cudaGetLastError(), " << name << ");\n"
      << "    }\n"
      << "    if (++dev_->epoch[" << gi << "] == 0) dev_->epoch[" << gi << "] = 1;  // (0: a slot never written)\n"
      << "    dev_->parity[" << gi << "] ^= 1;\n";
    fallback();
    return;
  }
  std::vector<std::string> params, args;
  scalarChainSignature(sc, false, params, args);
  // The kernel.
  auto& K = kernels_;
  // One block: its threads combine the blocks' partials (a serial loop over a few hundred of them
  // cost LAMB's step about 15 us on 4 H200); every thread then computes the
  // scalars (the same values), thread 0 alone stores to peers and to the outputs.
  K << "// " << sc.name << ": one block (partials combined by its threads); the allreduces as " << sc.exchanges.size()
    << " exchange(s) of up to " << sc.width << " value(s) through a symmetric window (two halves, parity)\n";
  for (int id : sc.stages) {
    const Stage& s = p_.stages[id];
    K << "// " << s.name << " = "
      << (s.kind == StageKind::Reduce
              ? std::string(reduceKindName(s.reduce)) + "(" + p_.stages[s.operands[0]].name + ") from its blocks' partials"
          : s.kind == StageKind::AllReduce ? std::string("allreduce(") + reduceOpName(s.op) + ", " + p_.stages[s.operands[0]].name + ")"
                                           : exprTextFor(s))
      << "\n";
  }
  K << "__global__ void " << kname << "(";
  for (size_t k = 0; k < params.size(); ++k) K << (k ? ", " : "") << params[k];
  K << ") {\n  (void)seed;\n"
    << "  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), dc, ncclTeamLsa(dc), dc.lsaBarrier, 0};\n"
    << "  const int P = dc.lsaSize, me = dc.lsaRank;\n"
    << scalarChainCode(sc, false) << "}\n\n";
  // Host code.
  b << "\n  // " << sc.name << ": one kernel over NCCL's device API where every rank is load/store reachable\n"
    << "  if (devReady(" << name << (soloDevice() ? ", true" : "") << ")) {\n"
    << "    coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
    << "    if (w.ensure(comm_, stream_, 2 * ((static_cast<size_t>(P_) * " << sc.exchanges.size() * sc.width
    << " * sizeof(float) + 255) / 256 * 256), " << prog << ", " << name << "))\n"
    << "      dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
    << "    " << kname << "<<<1, coconet_rt::kDevThreads, 0, stream_>>>(";
  for (size_t k = 0; k < args.size(); ++k) b << (k ? ", " : "") << args[k];
  b << ");\n    CHECK(cudaGetLastError(), " << name << ");\n"
    << "    dev_->parity[" << gi << "] ^= 1;\n";
  fallback();
}

}  // namespace coconet::backend::detail
