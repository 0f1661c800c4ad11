// Allreduces over NCCL's device API in run(): the LL, LL128, one-shot, two-shot and copy-engine
// forms by size, and NCCL's allreduce.
#include <tuple>
#include "backend/Emitter.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

void Emitter::emitDeviceAllReduce(const DevAllReduce& d) {
  auto& b = body_;
  const Stage& s = p_.stages[d.out];
  std::string T = storageType(s.type.dtype), gi = std::to_string(d.index), n = countVar(d.out);
  std::string name = "\"" + d.name + "\"", prog = "\"" + p_.name + "\"";
  const int V = 16 / dtypeBytes(s.type.dtype);
  std::string in = var(d.in), out = var(d.out);
  const bool ce = d.algo == "copy_engines", twoShot = !ce && d.algo != "one_shot";
  std::string oneShot = d.algo == "one_shot"   ? "true"
                        : ce                   ? "false"
                        : d.algo == "two_shot" ? "(" + n + " % P_ != 0 && bytes <= coconet_rt::oneShotMaxBytes(P_))"
                                               : "bytes <= coconet_rt::oneShotMaxBytes(P_)";
  // the LL form (coconet_rt::dev_allreduce_ll): by default up to llMaxBytes(P), at every size as
  // asked; the LL128 form (dev_allreduce_ll128): by default past that up to ll128MaxBytes(P), at
  // every size as asked
  const std::string ll = d.algo == "ll" ? "true" : d.algo.empty() ? "bytes <= coconet_rt::llMaxBytes(P_)" : "";
  const std::string ll128 = d.algo == "ll128" ? "true" : d.algo.empty() ? "bytes <= coconet_rt::ll128MaxBytes(P_)" : "";
  b << "\n  " << stageComment(s) << ": allreduce over NCCL's device API where every rank is load/store reachable"
    << (d.algo.empty() ? "" : " (algorithm = " + d.algo + ")") << "\n";
  if (auto note = plan_.arGroupNotes.find(d.out); note != plan_.arGroupNotes.end()) b << "  // " << note->second << "\n";
  b << "  if (" << n << " > 0) {\n"
    << "    const size_t bytes = static_cast<size_t>(" << n << ") * sizeof(" << T << ");\n";
  // One no-barrier form's branch: its window (zeroed when it grows), its kernel, the next call's area.
  bool first = true;
  auto noBarrier = [&](const std::string& when, const std::string& window, const std::string& note, const std::string& winBytes,
                       const std::string& kernel, const std::string& blocks) {
    if (when.empty()) return;
    b << (first ? "    " : "    } else ") << "if (devReady(" << name << ") && " << when << ") {\n"
      << "      coconet_rt::Window& w = dev_->" << window << "[" << gi << "];  // two areas, used in turn" << note << "\n"
      << "      if (coconet_rt::ensureZeroed(w, comm_, stream_, " << winBytes << ", " << prog << ", " << name << "))\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      CHECK(coconet_rt::launchDependent(coconet_rt::" << kernel << "<" << T << ">, coconet_rt::" << blocks << "(" << n
      << ", sizeof(" << T << ")), coconet_rt::kDevThreads, stream_, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), P_, rank_, " << in
      << ", " << out << ", static_cast<long long>(" << n << "), coconet_rt::nextLLEpoch(dev_->epoch[" << gi
      << "]), static_cast<int>(coconet_rt::aligned8(" << in << ") && coconet_rt::aligned8(" << out << "))), " << name << ");\n"
      << "      dev_->parity[" << gi << "] ^= 1;\n";
    first = false;
  };
  noBarrier(ll, "ll", "",
            "coconet_rt::llWindowBytes(std::max<long long>(" + n + ", coconet_rt::kLLMaxBytes / sizeof(" + T + ")), sizeof(" + T + "), P_)",
            "dev_allreduce_ll", "llBlocks");
  noBarrier(ll128, "ll128", " (not the LL form's: flags elsewhere)", "coconet_rt::ll128WindowBytes(" + n + ", sizeof(" + T + "), P_)",
            "dev_allreduce_ll128", "ll128Blocks");
  if (d.algo == "ll" || d.algo == "ll128") {  // no other device form asked for: NCCL where the device path is not usable
    b << "    } else {\n      CHECK(ncclAllReduce(" << in << ", " << out << ", " << n << ", " << ncclType(s.type.dtype)
      << ", ncclSum, comm_, stream_), " << name << ");\n    }\n  }\n";
    return;
  }
  b << (first ? "    " : "    } else ") << "if (devReady(" << name << ") && " << oneShot << ") {\n"
    << "      coconet_rt::Window& w = dev_->oneShot[" << gi << "];  // two halves, used in turn\n"
    << "      if (w.ensure(comm_, stream_, 2 * static_cast<size_t>(P_) * std::max(bytes, coconet_rt::kOneShotMaxBytes), " << prog << ", "
    << name << "))\n        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
    << "      const bool vec = " << n << " % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out
    << ", 0);\n"
    << "      CHECK(coconet_rt::launchDependent(coconet_rt::dev_allreduce_one_shot<" << T << ", " << V << ">, coconet_rt::devBlocks(" << n
    << " / " << V << "), coconet_rt::kDevThreads, stream_, dev_->dc.comm, w.win, dev_->parity[" << gi << "] * (w.bytes / 2), " << in << ", "
    << out << ", static_cast<long long>(" << n << "), static_cast<int>(vec)), " << name << ");\n"
    << "      dev_->parity[" << gi << "] ^= 1;\n";
  if (twoShot)
    b << "    } else if (dev_->dc.usable && " << n << " % P_ == 0"
      << (d.algo == "two_shot" ? "" : " && bytes <= coconet_rt::kTwoShotMaxBytes") << ") {\n"
      << "      const long long m = " << n << " / P_;\n"
      << "      const bool grew = dev_->stage[" << gi << "].ensure(comm_, stream_, bytes, " << prog << ", " << name << ");\n"
      << "      if (dev_->slice[" << gi << "].ensure(comm_, stream_, bytes / P_, " << prog << ", " << name << ") || grew)\n"
      << "        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
      << "      const bool vec = m % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out
      << ", 0);\n"
      << "      CHECK(coconet_rt::launchDependent(coconet_rt::dev_allreduce_two_shot<" << T << ", " << V << ">, coconet_rt::devBlocks(m / "
      << V << "), coconet_rt::kDevThreads, stream_, dev_->dc.comm, dev_->stage[" << gi << "].win, dev_->slice[" << gi << "].win, " << in
      << ", " << out << ", m, static_cast<int>(vec)), " << name << ");\n";
  if (ce || d.algo.empty()) emitCopyEngineAllReduce(d, ce);
  b << "    } else {\n      CHECK(ncclAllReduce(" << in << ", " << out << ", " << n << ", " << ncclType(s.type.dtype)
    << ", ncclSum, comm_, stream_), " << name << ");\n    }\n  }\n";
}

// The allreduce by copy engines (from copyEngineMinBytes(P), or asked for): in R rounds (2, or
// tune(X, rounds = R)) of n / R elements each, every rank's copy engine pushes part q of the
// round (n / (R P) elements) into slot `me` of rank q's window, one after another (rank me+1
// first: at any moment each rank sends to one rank and receives from one); a barrier on the copy
// stream; rank q sums its part over the ranks (its own from its input) into its output and the
// window's result area (ce_sum_parts on stream_); a barrier there; the copy engines pull the
// other ranks' sums into the output. Round r+1's pushes are queued before round r's pulls, so
// they run while round r sums. Window: [round][rank] slots of a part, then the rounds' results.
// A barrier kernel on each stream (LSA barriers 0 and 1): nothing else device-API runs until
// stream_ waits for the copy stream at the end. Events: ceEv_[0] the input ready, [1] a round's
// pushes arrived, [3 + r % 2] round r summed everywhere (waited before its next record), [5] done.
void Emitter::emitCopyEngineAllReduce(const DevAllReduce& d, bool asked) {
  auto& b = body_;
  const Stage& s = p_.stages[d.out];
  const std::string T = storageType(s.type.dtype), gi = std::to_string(d.index), n = countVar(d.out);
  const std::string name = "\"" + d.name + "\"", prog = "\"" + p_.name + "\"", in = var(d.in), out = var(d.out);
  const std::string V = std::to_string(16 / dtypeBytes(s.type.dtype)), R = std::to_string(d.rounds);
  b << "    } else if (dev_->dc.usable && " << n << " % (" << R << " * P_) == 0"
    << (asked ? "" : " && bytes >= coconet_rt::copyEngineMinBytes(P_)") << ") {\n"
    << "      // copy engines, " << R << " round" << (d.rounds == 1 ? "" : "s")
    << ": pushes to the parts' owners, a barrier, sums, a barrier, pulls of the sums\n"
    << "      const int R = " << R << ";\n"
    << "      const long long piece = " << n << " / (R * P_);\n"
    << "      coconet_rt::Window& w = dev_->stage[" << gi << "];\n"
    << "      if (w.ensure(comm_, stream_, static_cast<size_t>(" << n << " + R * piece) * sizeof(" << T << "), " << prog << ", " << name
    << "))\n        dev_->dc.refresh(comm_, stream_, " << prog << ", " << name << ");\n"
    << "      const std::vector<void*>& wins = w.peerBases(P_, stream_, " << prog << ", " << name << ");\n"
    << "      " << T << "* mine = static_cast<" << T << "*>(w.ptr);\n"
    << "      const bool vec = piece % " << V << " == 0 && coconet_rt::aligned16(" << in << ", 0) && coconet_rt::aligned16(" << out
    << ", 0);\n";
  CopyRounds c;
  c.bounds = "          const long long base = r * (" + n + " / R), at = base + rank_ * piece;\n";
  c.push =
      "          for (int j = 1; j < P_; ++j) {\n"
      "            const int q = (rank_ + j) % P_;\n"
      "            CHECK(cudaMemcpyAsync(static_cast<" +
      T + "*>(wins[q]) + (r * P_ + rank_) * piece, " + in + " + base + q * piece, static_cast<size_t>(piece) * sizeof(" + T +
      "), cudaMemcpyDeviceToDevice, ceCopy_), " + name +
      ");\n"
      "          }\n"
      "          coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, ceCopy_>>>(dev_->dc.comm, 0);  // round r's parts arrived\n"
      "          CHECK(cudaGetLastError(), " +
      name + ");\n";
  c.compute =
      "          coconet_rt::ce_sum_parts<" + T + ", " + V + "><<<coconet_rt::devBlocks(piece / " + V +
      "), coconet_rt::kDevThreads, 0, stream_>>>(" + out + " + at, mine + " + n + " + r * piece, " + in +
      " + at, mine + r * P_ * piece, piece, P_, rank_, vec);\n"
      "          CHECK(cudaGetLastError(), " +
      name +
      ");\n"
      "          coconet_rt::dev_barrier<<<1, coconet_rt::kDevThreads, 0, stream_>>>(dev_->dc.comm, 1);  // every rank's sums of round r\n"
      "          CHECK(cudaGetLastError(), " +
      name + ");\n";
  c.pullNote = "round r-1's pulls, behind round r's pushes";
  c.pullBounds = "          const long long base = (r - 1) * (" + n + " / R);\n";
  c.pull =
      "          for (int j = 1; j < P_; ++j) {\n"
      "            const int q = (rank_ + j) % P_;\n"
      "            CHECK(cudaMemcpyAsync(" +
      out + " + base + q * piece, static_cast<const " + T + "*>(wins[q]) + " + n +
      " + (r - 1) * piece, static_cast<size_t>(piece) * sizeof(" + T + "), cudaMemcpyDeviceToDevice, ceCopy_), " + name +
      ");\n"
      "          }\n";
  emitCopyRounds(c, d.name);
}

}  // namespace coconet::backend::detail
