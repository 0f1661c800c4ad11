// Row groups (plan/Forms.h): a fused group's element-wise members and reductions over the last
// dimension of one row shape, as one kernel with a group of threads a row.
#include "backend/Emitter.h"

namespace coconet::backend::detail {

void Emitter::emitRowGroup(const RowGroup& rg) {
  RowKernel rk(rg);
  rk.index = rg.extIndex;
  for (int id : rg.members) rk.index[id] = RowKernel::kRowValue + id;
  rk.kname = "k_" + std::to_string(rg.members.front()) + "_" + ident(rg.name) + "_rows";
  rowSignature(rk);
  rowPasses(rk);
  Hoisted hoisted;
  HoistScope hoisting(hoist_, hoisted);
  const std::string rows = rowCode(rk);
  hoisting.end();
  emitRowKernel(rk, hoisted.prologue(), rows);
  emitRowLaunch(rk);
}

void Emitter::rowSignature(RowKernel& rk) const {
  const RowGroup& rg = rk.rg;
  std::set<int> written(rg.written.begin(), rg.written.end());
  // A state's new value written into its storage (plan_.direct) while the group reads its entry: the
  // two arrays are one, so neither is __restrict__ and the entry is not read through the
  // read-only cache. (Each element is read before its thread writes it, in the last pass.)
  for (auto& st : p_.states)
    if (written.count(st.exit) && plan_.direct.count(st.exit) && rg.extIndex.count(st.entry)) rk.shared.insert({st.exit, st.entry});
  std::vector<std::string>& params = rk.params;
  std::vector<std::string>& hostArgs = rk.hostArgs;
  for (int id : rg.written) {
    params.push_back(std::string(storageType(p_.stages[id].type.dtype)) + (rk.shared.count(id) ? "* out" : "* __restrict__ out") +
                     std::to_string(id));
    hostArgs.push_back(var(id));
  }
  for (size_t k = 0; k < rg.ext.size(); ++k) {
    params.push_back("const " + std::string(storageType(p_.stages[rg.ext[k]].type.dtype)) +
                     (rk.shared.count(rg.ext[k]) ? "* a" : "* __restrict__ a") + std::to_string(k));
    hostArgs.push_back(var(rg.ext[k]));
  }
  params.push_back("OutputMap om");
  hostArgs.push_back("om");
  for (size_t k = 0; k < rg.ext.size(); ++k) {
    params.push_back("long long b" + std::to_string(k));
    hostArgs.push_back(rg.acc[k] == Access::Modulo ? countVar(rg.ext[k]) : "m" + std::to_string(k) + ".base");
  }
  std::vector<int> computes;
  for (int id : rg.members)
    if (p_.stages[id].kind == StageKind::Compute) computes.push_back(id);
  runParams(computes, params, hostArgs);
  for (int id : rg.members) {
    const Stage& s = p_.stages[id];
    if (s.kind == StageKind::Reduce) {
      params.push_back("double cnt" + std::to_string(id));
      hostArgs.push_back(reduceCount(id));
    }
    if (s.kind == StageKind::Layernorm || s.kind == StageKind::Rmsnorm) {
      params.push_back("double eps" + std::to_string(id));
      hostArgs.push_back(scalarValue(s.eps));
    }
  }
  params.push_back("unsigned long long seed");
  hostArgs.push_back("seed");
  params.push_back("long long rows");
  params.push_back("long long n");
  params.push_back("int R");
  hostArgs.insert(hostArgs.end(), {"rows", "n", "R"});
}

// What element code computes for a value it needs: its element members, in order, that the
// value depends on (through element members only: row values are at hand already).
std::vector<int> Emitter::rowClosure(const RowGroup& rg, const std::vector<int>& wanted) const {
  std::set<int> need;
  std::vector<int> work;
  for (int w : wanted)
    if (rg.elems.count(w) && need.insert(w).second) work.push_back(w);
  while (!work.empty()) {
    const int c = work.back();
    work.pop_back();
    for (int o : p_.stages[c].operands)
      if (rg.elems.count(o) && need.insert(o).second) work.push_back(o);
  }
  std::vector<int> run;
  for (int id : rg.members)
    if (need.count(id)) run.push_back(id);
  return run;
}

// The outside operands a run of element code reads (and the reduction's own, `extra`).
std::set<int> Emitter::rowExtOf(const RowGroup& rg, const std::vector<int>& run, int extra) const {
  std::set<int> ks;
  for (int id : run)
    for (int o : p_.stages[id].operands)
      if (auto it = rg.extIndex.find(o); it != rg.extIndex.end()) ks.insert(it->second);
  if (auto it = rg.extIndex.find(extra); it != rg.extIndex.end()) ks.insert(it->second);
  return ks;
}

void Emitter::rowPasses(RowKernel& rk) const {
  const RowGroup& rg = rk.rg;
  // The passes over the row, in the order the kernel takes them: one per reduction (computing
  // the elements it reduces), a normalization's own, then one computing the element members used
  // outside the group.
  for (int id : rg.written) (rg.elems.count(id) ? rk.outElems : rk.outRows).push_back(id);
  // A normalization's statistics take passes of their own, as its register kernel's (softmax:
  // the maximum, then the sum of exponentials; layer norm: the mean, then the squared
  // deviations; RMSNorm: the sum of squares).
  auto statPasses = [](StageKind k) {
    return k == StageKind::Reduce || k == StageKind::Rmsnorm ? 1 : k == StageKind::Softmax || k == StageKind::Layernorm ? 2 : 0;
  };
  for (int id : rg.members)
    for (int q = 0; q < statPasses(p_.stages[id].kind); ++q) {
      const int x = p_.stages[id].operands[0];
      RowKernel::Pass ps{rowClosure(rg, {x}), {}};
      ps.ks = rowExtOf(rg, ps.run, x);
      rk.passes.push_back(ps);
    }
  if (!rk.outElems.empty()) {
    RowKernel::Pass ps{rowClosure(rg, rk.outElems), {}};
    ps.ks = rowExtOf(rg, ps.run, -1);
    rk.passes.push_back(ps);
  }
  // Outside operands read at the element's index by two passes or more are kept in registers (C,
  // the cached instance: each thread's K packs of them, loaded once a row) where the row fits
  // rowThreads(units, K); K packs of 16 bytes of all of them together at most 8 a thread.
  for (size_t k = 0; k < rg.ext.size(); ++k) {
    if (rg.acc[k] != Access::Linear) continue;
    int uses = 0;
    for (auto& ps : rk.passes) uses += static_cast<int>(ps.ks.count(static_cast<int>(k)));
    if (uses >= 2) rk.cached.push_back(static_cast<int>(k));
  }
  rk.K = rk.cached.empty() ? 8 : std::max<int>(1, 8 / static_cast<int>(rk.cached.size()));
}

// One pass's loop over each thread's packs of V elements of its row (the cached instance: its K
// packs, unrolled), the operands `ks` at hand as x<k>, `body` once per element (i: its local index).
std::string Emitter::rowElementLoop(const RowKernel& rk, const std::set<int>& ks, const std::string& body,
                                    const std::vector<int>& stores) const {
  const RowGroup& rg = rk.rg;
  auto step = [&](bool inRegisters, const std::string& ind) {
    std::ostringstream o;
    o << ind << "const int col = u * V;  // the pack's first column\n";
    for (int k : ks) {
      const std::string kk = std::to_string(k), T = storageType(p_.stages[rg.ext[static_cast<size_t>(k)]].type.dtype);
      const Access a = rg.acc[static_cast<size_t>(k)];
      if (a == Access::Scalar || a == Access::Row) {
        o << ind << "const " << T << " x" << kk << " = a" << kk << "[b" << kk << (a == Access::Row ? " + row" : "") << "];\n";
      } else if (inRegisters && rk.isCached(k)) {
        o << ind << "const coconet_rt::Vec<" << T << ", V>& x" << kk << " = c" << kk << "[q];\n";
      } else {
        o << ind << "coconet_rt::Vec<" << T << ", V> x" << kk << ";\n"
          << ind << "coconet_rt::load_vec" << (rk.shared.count(rg.ext[static_cast<size_t>(k)]) ? "_rw" : "") << "(x" << kk << ", p" << kk
          << " + col);\n";
      }
    }
    for (int id : stores) o << ind << "coconet_rt::Vec<" << storageType(p_.stages[id].type.dtype) << ", V> o" << id << ";\n";
    o << "#pragma unroll\n"
      << ind << "for (int e = 0; e < V; ++e) {\n"
      << ind << "  const long long i = ro + col + e;\n"
      << ind << "  const unsigned long long key = static_cast<unsigned long long>(om.gbase + i) ^ om.keyXor;\n"
      << ind << "  (void)i; (void)key;\n"
      << body << ind << "}\n";
    for (int id : stores) o << ind << "coconet_rt::store_vec(out" << id << " + ro + col, o" << id << ");\n";
    return o.str();
  };
  std::ostringstream o;
  o << "    if (live) {\n";
  if (!rk.cached.empty())
    o << "      if constexpr (C) {\n#pragma unroll\n        for (int q = 0; q < K; ++q) {\n"
      << "          const int u = t + q * R;\n          if (u >= units) continue;\n"
      << step(true, "          ") << "        }\n      } else\n";
  o << "      for (int u = t; u < units; u += R) {\n" << step(false, "        ") << "      }\n    }\n";
  return o.str();
}

std::string Emitter::rowElementOperand(const RowKernel& rk, int k) const {
  if (k >= RowKernel::kRowValue) return "r" + std::to_string(k - RowKernel::kRowValue);
  const std::string kk = std::to_string(k);
  return rk.rg.acc[static_cast<size_t>(k)] == Access::Scalar || rk.rg.acc[static_cast<size_t>(k)] == Access::Row
             ? "coconet_rt::to_f(x" + kk + ")"
             : "coconet_rt::to_f(x" + kk + ".v[e])";
}

// A normalization's accumulation type (f64 where any of its values is, as its register kernel)
// and the value of its operand k in that type, in element code.
std::string Emitter::rowNormType(int id) const {
  bool f64 = p_.stages[id].type.dtype == DType::F64;
  for (int o : p_.stages[id].operands) f64 = f64 || p_.stages[o].type.dtype == DType::F64;
  return std::string(f64 ? "double" : "float");
}

std::string Emitter::rowNormOperand(const RowKernel& rk, int id, size_t k) const {
  return "static_cast<" + rowNormType(id) + ">(" + rowElementOperand(rk, rk.index.at(p_.stages[id].operands[k])) + ")";
}

// The element code of a run of element members, in order: a compute's statements (runMembers),
// a normalization's value from its row's statistics (its register kernel's arithmetic), each
// rounded to its type as storing it would round it (s<id>) and read back (r<id>).
std::string Emitter::rowElementCode(const RowKernel& rk, const std::vector<int>& run) {
  const std::string& ind = rk.ind;
  std::string code;
  for (int id : run) {
    const Stage& s = p_.stages[id];
    if (s.kind == StageKind::Compute) {
      code += runMembers(
          {id}, rk.index, {}, ind, [&](int k) { return rowElementOperand(rk, k); }, [](int) { return std::string(); }, true);
      continue;
    }
    const std::string A = rowNormType(id), T = storageType(s.type.dtype), i = std::to_string(id), x = rowNormOperand(rk, id, 0);
    if (s.kind == StageKind::Softmax) {
      code += ind + "const " + A + " w" + i + " = coconet_rt::exp_for<" + T + ">(" + x + " - m" + i + ") * rs" + i + ";\n";
    } else if (s.kind == StageKind::Rmsnorm) {
      code += ind + "const " + A + " w" + i + " = " + x + " * inv" + i + (s.operands.size() >= 2 ? " * " + rowNormOperand(rk, id, 1) : "") +
              ";\n";
    } else {
      code += ind + "const " + A + " w" + i + " = (" + x + " - mean" + i + ") * inv" + i +
              (s.operands.size() == 3 ? " * " + rowNormOperand(rk, id, 1) + " + " + rowNormOperand(rk, id, 2) : "") + ";\n";
    }
    code += ind + "const " + T + " s" + i + " = coconet_rt::Store<" + T + ">::from(static_cast<double>(w" + i + "));\n" + ind +
            "const auto r" + i + " = coconet_rt::to_f(s" + i + ");\n" + ind + "(void)r" + i + ";\n";
  }
  return code;
}

std::string Emitter::rowCode(RowKernel& rk) {
  const RowGroup& rg = rk.rg;
  std::ostringstream rows;
  rows << rowPointers(rk);
  rk.next = 0;
  for (int id : rg.members) {
    const Stage& s = p_.stages[id];
    if (rg.elems.count(id) && !isNormalizationKind(s.kind)) continue;  // computed in the passes that need it
    if (s.kind == StageKind::Compute) {
      // A row value: every thread of the row computes it (its operands: row values, scalars, values a row).
      rows << "    // " << s.name << " (a row value)\n"
           << runMembers(
                  {id}, rk.index, {}, "    ",
                  [&](int k) {
                    if (k >= RowKernel::kRowValue) return "r" + std::to_string(k - RowKernel::kRowValue);
                    const std::string kk = std::to_string(k);
                    return "coconet_rt::to_f(a" + kk + "[b" + kk + (rg.acc[static_cast<size_t>(k)] == Access::Row ? " + row" : "") + "])";
                  },
                  [](int) { return std::string(); }, true);
      continue;
    }
    rows << (isNormalizationKind(s.kind) ? rowNormStats(rk, id) : rowReduce(rk, id));
  }
  // The last pass: the element members used outside, and the row values (by the row's first thread).
  if (!rk.outElems.empty()) {
    const RowKernel::Pass& ps = rk.passes[rk.next];
    std::string body = rowElementCode(rk, ps.run);
    for (int id : rk.outElems) body += "          o" + std::to_string(id) + ".v[e] = s" + std::to_string(id) + ";\n";
    rows << "    // the members used outside the group\n" << rowElementLoop(rk, ps.ks, body, rk.outElems);
  }
  for (int id : rk.outRows) rows << "    if (live && t == 0) out" << id << "[row] = s" << id << ";\n";
  return rows.str();
}

std::string Emitter::rowPointers(const RowKernel& rk) const {
  const RowGroup& rg = rk.rg;
  std::ostringstream rows;
  // Each operand read at the element's index, from the row's first element: its place in the
  // row's block (Linear) or in its period (Modulo: a trailing-dimension operand, whose period is
  // whole rows), once a row.
  rows << "    const long long ro = row * n;  // the row's first element\n    (void)ro;\n";
  for (size_t k = 0; k < rg.ext.size(); ++k) {
    const std::string kk = std::to_string(k), T = storageType(p_.stages[rg.ext[k]].type.dtype);
    if (rg.acc[k] == Access::Linear)
      rows << "    const " << T << "* p" << kk << " = a" << kk << " + b" << kk << " + ro;\n";
    else if (rg.acc[k] == Access::Modulo)
      rows << "    const " << T << "* p" << kk << " = a" << kk << " + ro % b" << kk << ";\n";
  }
  if (!rk.cached.empty()) {
    rows << "    // the row's operands that several passes read, in registers (the cached instance)\n";
    for (int k : rk.cached) {
      const std::string kk = std::to_string(k);
      rows << "    coconet_rt::Vec<" << storageType(p_.stages[rg.ext[static_cast<size_t>(k)]].type.dtype) << ", V> c" << kk << "[K];\n";
    }
    rows << "    if constexpr (C) {\n#pragma unroll\n      for (int q = 0; q < K; ++q) {\n"
         << "        const int u = t + q * R;\n        if (!live || u >= units) continue;\n";
    for (int k : rk.cached) {
      const std::string kk = std::to_string(k);
      rows << "        coconet_rt::load_vec" << (rk.shared.count(rg.ext[static_cast<size_t>(k)]) ? "_rw" : "") << "(c" << kk << "[q], p"
           << kk << " + u * V);\n";
    }
    rows << "      }\n    }\n";
  }
  return rows.str();
}

std::string Emitter::rowNormStats(RowKernel& rk, int id) {
  const Stage& s = p_.stages[id];
  std::ostringstream rows;
  // A normalization's statistics (its element code reads them): a pass each, combined over the row.
  const std::string A = rowNormType(id), T = storageType(s.type.dtype), i = std::to_string(id), x = rowNormOperand(rk, id, 0);
  const std::string sh = "reinterpret_cast<" + A + "*>(rowsh)", sum = "coconet_rt::groupCombine<coconet_rt::SumOp<" + A + ">>";
  auto pass = [&](const std::string& var, const std::string& init, const std::string& accumulate) {
    const RowKernel::Pass& ps = rk.passes[rk.next++];
    rows << "    " << A << " " << var << " = " << init << ";\n"
         << rowElementLoop(rk, ps.ks, rowElementCode(rk, ps.run) + rk.ind + accumulate + "\n", {});
  };
  rows << "    // " << s.name << " = " << stageKindName(s.kind) << "(" << p_.stages[s.operands[0]].name << "): its row's statistics\n";
  const std::string eps = "static_cast<" + A + ">(eps" + i + ")";
  if (s.kind == StageKind::Softmax) {
    pass("m" + i, "-INFINITY", "{ const " + A + " xv = " + x + "; m" + i + " = xv > m" + i + " ? xv : m" + i + "; }");
    rows << "    m" << i << " = coconet_rt::groupCombine<coconet_rt::MaxOp<" << A << ">>(m" << i << ", R, " << sh << ");\n";
    pass("rs" + i, "0", "rs" + i + " += coconet_rt::exp_for<" + T + ">(" + x + " - m" + i + ");");
    rows << "    rs" << i << " = " << A << "(1) / " << sum << "(rs" << i << ", R, " << sh << ");  // one division a row\n";
  } else if (s.kind == StageKind::Layernorm) {
    pass("mean" + i, "0", "mean" + i + " += " + x + ";");
    rows << "    mean" << i << " = " << sum << "(mean" << i << ", R, " << sh << ") / static_cast<" << A << ">(n);\n";
    pass("inv" + i, "0", "{ const " + A + " dv = " + x + " - mean" + i + "; inv" + i + " += dv * dv; }");
    rows << "    inv" << i << " = " << A << "(1) / coconet_rt::acc_sqrt(" << sum << "(inv" << i << ", R, " << sh << ") / static_cast<" << A
         << ">(n) + " << eps << ");\n";
  } else {
    pass("inv" + i, "0", "{ const " + A + " xv = " + x + "; inv" + i + " += xv * xv; }");
    rows << "    inv" << i << " = " << A << "(1) / coconet_rt::acc_sqrt(" << sum << "(inv" << i << ", R, " << sh << ") / static_cast<" << A
         << ">(n) + " << eps << ");\n";
  }
  return rows.str();
}

std::string Emitter::rowReduce(RowKernel& rk, int id) {
  const Stage& s = p_.stages[id];
  std::ostringstream rows;
  // A reduction over the row: a pass computing the elements it reduces.
  const RowKernel::Pass& ps = rk.passes[rk.next++];
  const std::string op = emitReduceOp(id), acc = "acc" + std::to_string(id);
  const int x = s.operands[0];
  std::string value = rowElementOperand(rk, rk.index.at(x));
  std::string body = rowElementCode(rk, ps.run) + rk.ind + acc + " = " + op + "::combine(" + acc + ", " + op + "::element(static_cast<" +
                     op + "::Acc>(" + value + ")));\n";
  rows << "    // " << s.name << " = " << reduceKindName(s.reduce) << "(" << p_.stages[x].name << ") over the row\n"
       << "    " << op << "::Acc " << acc << " = " << op << "::init();\n"
       << rowElementLoop(rk, ps.ks, body, {}) << "    " << acc << " = coconet_rt::groupCombine<coconet_rt::CombineOf<" << op << ">>(" << acc
       << ", R, reinterpret_cast<" << op << "::Acc*>(rowsh));\n"
       << "    const " << storageType(s.type.dtype) << " s" << id << " = coconet_rt::Store<" << storageType(s.type.dtype) << ">::from("
       << op << "::finish(" << acc << ", cnt" << id << "));\n"
       << "    const auto r" << id << " = coconet_rt::to_f(s" << id << ");\n    (void)r" << id << ";\n";
  return rows.str();
}

void Emitter::emitRowKernel(const RowKernel& rk, const std::string& prologue, const std::string& rows) {
  const RowGroup& rg = rk.rg;
  for (int id : rg.members) {
    const Stage& s = p_.stages[id];
    std::string text;
    if (s.kind == StageKind::Compute) {
      text = exprTextFor(s);
    } else if (s.kind == StageKind::Reduce) {
      text = std::string(reduceKindName(s.reduce)) + "(" + p_.stages[s.operands[0]].name + ", dim = " + std::to_string(s.dim) +
             (s.keepdim ? ", keepdim = true" : "") + ")";
    } else {
      text = std::string(stageKindName(s.kind)) + "(";
      for (size_t k = 0; k < s.operands.size(); ++k) text += (k ? ", " : "") + p_.stages[s.operands[k]].name;
      text += ")";
    }
    kernels_ << "// " << s.name << " = " << text << "\n";
  }
  kernels_ << "// (fused group '" << rg.name << "': R threads a row; a pass over the row per reduction, computing the elements it\n"
           << "// reduces, then one that writes what leaves the group; V elements a step where the row and every array allow;\n"
           << "// C: the operands several passes read kept in registers, K packs a thread)\n"
           << "template <int V, bool C>\n__global__ void __launch_bounds__(512) " << rk.kname << "(";
  for (size_t k = 0; k < rk.params.size(); ++k) kernels_ << (k ? ", " : "") << rk.params[k];
  kernels_ << ") {\n  (void)seed;\n  constexpr int K = C ? " << rk.K << " : 1;\n  (void)K;\n"
           << "  const int units = static_cast<int>(n / V);  // packs a row (rows of at most 2^31 elements: checked by the host)\n"
           << "  __shared__ alignas(8) unsigned char rowsh[32 * 8];  // the combines' partial results\n"
           << prologue << "  const int rpb = blockDim.x / R, sub = threadIdx.x / R, t = threadIdx.x % R;\n"
           << "  // Every thread of the block takes every step (the combines synchronize); rows past the end compute nothing.\n"
           << "  for (long long base = static_cast<long long>(blockIdx.x) * rpb; base < rows; base += static_cast<long long>(gridDim.x) * "
              "rpb) {\n"
           << "    const long long row = base + sub;\n    const bool live = row < rows;\n"
           << rows << "  }\n}\n\n";
}

void Emitter::emitRowLaunch(const RowKernel& rk) {
  const RowGroup& rg = rk.rg;
  const Stage& ref = p_.stages[rg.ref];
  const int rank = ref.type.rank();
  auto& b = body_;
  const std::string name = "\"" + rg.name + "\"";
  b << "\n  // fused group '" << rg.name << "': one kernel over rows of " << ref.type.shape.back().str() << "\n"
    << "  if (" << countVar(rg.ref) << " > 0) {\n";
  emitMaps(rg.ref, rg.ext);
  int minBytes = 16;
  for (size_t k = 0; k < rg.ext.size(); ++k)
    if (rg.acc[k] == Access::Linear || rg.acc[k] == Access::Modulo)
      minBytes = std::min(minBytes, dtypeBytes(p_.stages[rg.ext[k]].type.dtype));
  for (int id : rk.outElems) minBytes = std::min(minBytes, dtypeBytes(p_.stages[id].type.dtype));
  const int V = std::min(8, 16 / minBytes);
  for (int id : rg.members)
    if (p_.stages[id].kind == StageKind::Layernorm || p_.stages[id].kind == StageKind::Rmsnorm) b << epsCheck(p_.stages[id]);
  b << "    const long long n = " << shapeVar(rg.ref) << "[" << (rank - 1) << "], rows = " << countVar(rg.ref) << " / n;\n"
    << "    const bool packed = n % " << V << " == 0";
  for (int id : rk.outElems) b << " &&\n        coconet_rt::aligned16(" << var(id) << ", 0)";
  for (size_t k = 0; k < rg.ext.size(); ++k) {
    if (rg.acc[k] == Access::Linear) b << " &&\n        coconet_rt::aligned16(" << var(rg.ext[k]) << ", m" << k << ".base)";
    if (rg.acc[k] == Access::Modulo)
      b << " &&\n        " << countVar(rg.ext[k]) << " % " << V << " == 0 && coconet_rt::aligned16(" << var(rg.ext[k]) << ", 0)";
  }
  b << ";\n"
    << "    if (n > 2147483647LL) throw coconet_rt::Error(\"" << p_.name << ": fused group '" << rg.name
    << "': rows of \" + std::to_string(n) + \" elements; its row kernel takes at most 2^31 - 1\");\n"
    << "    const long long units = packed ? n / " << V << " : n;\n"
    << "    const long long bytes = rows * n * " << dtypeBytes(p_.stages[rg.ref].type.dtype) << "LL;  // the rows' (the table reads)\n";
  const bool cached = !rk.cached.empty();
  if (!cached) {
    b << "    const bool cache = false;\n";
  } else {
    b << "    // the operands several passes read in registers where the row's packs fit " << rk.K << " a thread\n"
      << "    const int Rc = coconet_rt::rowThreads(units, " << rk.K
      << ", coconet_rt::rowMaxPacks(bytes), coconet_rt::rowLong(bytes));\n    const bool cache = Rc > 0;\n";
  }
  b << "    int R = cache ? " << (!cached ? "0" : "Rc")
    << " : coconet_rt::rowThreads(units, 8, coconet_rt::rowMaxPacks(bytes), coconet_rt::rowLong(bytes));\n"
    << "    if (R == 0) R = 512;  // longer rows: a block a row, more packs a thread\n"
    << "    const int threads = R < 128 ? 128 : R;\n"
    << "    const int blocks = static_cast<int>(std::min<long long>((rows + threads / R - 1) / (threads / R), 1 << 20));\n";
  std::string args;
  for (size_t k = 0; k < rk.hostArgs.size(); ++k) args += (k ? ", " : "") + rk.hostArgs[k];
  auto launch = [&](const std::string& v, const char* c) {
    return rk.kname + "<" + v + ", " + c + "><<<blocks, threads, 0, stream_>>>(" + args + ");\n";
  };
  const std::string vs = std::to_string(V);
  if (!cached) {
    b << "    (void)cache;\n    if (packed) " << launch(vs, "false") << "    else " << launch("1", "false");
  } else {
    b << "    if (packed && cache) " << launch(vs, "true") << "    else if (packed) " << launch(vs, "false") << "    else if (cache) "
      << launch("1", "true") << "    else " << launch("1", "false");
  }
  b << "    CHECK(cudaGetLastError(), " << name << ");\n  }\n";
}

}  // namespace coconet::backend::detail
