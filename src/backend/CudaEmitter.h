// The CUDA backend: writes a self-contained folder that builds with nvcc into a library and a
// driver for one scheduled program.
//
//   NAME.h          the C++ API: a class made from an ncclComm_t and a cudaStream_t; run() takes
//                   device pointers and run-time sizes; finish() waits (with a time limit) and
//                   reports device-side errors; no global state
//   NAME.cu         kernels and host code, one section per stage, named after the stages
//   NAME_main.cu    a driver: one process per GPU (it forks them, or takes RANK/WORLD_SIZE or
//                   mpirun's variables with a file bootstrap of the NCCL id); --check DIR
//                   compares with `coconetc verify --dump DIR`; --bench prints JSON timings
//   coconet_runtime.cuh   shared support code (coconet_device.cuh too with deviceCollectives)
//   CMakeLists.txt  finds CUDA, cuBLAS and NCCL >= 2.28 (NCCL_ROOT, /usr/local/cuda, /usr, the
//                   PyTorch environment's nvidia/nccl)
//   manifest.json   tensors, schedule, files, flags, compiler version, a hash of the sources
//
// Lowering: collectives, all_to_all and sends are NCCL calls on the program's stream; matmuls
// and gemvs are cuBLAS GEMMs with f32 accumulation; every compute stage is a generated
// grid-stride kernel with exact index maps for broadcasting and slices (16-byte vector accesses
// where every map is linear); reductions pick a thread-, block- or split-per-output kernel at
// run time; a reduction over an embedding's lookups gathers inside the reduction; a fused
// group's element-wise members are one kernel. Outputs and updated states are written where the
// caller keeps them. Overlaps run chunked on a second stream (matmul -> reduce_scatter chains,
// matmul/gemv -> allreduce chains, matmul -> all_to_all, embedding bag -> all_to_all). With
// deviceCollectives, fused reduce_scatter -> element-wise -> all_gather groups (also per chunk
// of an overlap), allreduces and fused [reduce_scatter, all_gather] pairs are kernels over
// NCCL's device API (coconet_device.cuh). Every CUDA, NCCL and cuBLAS call is checked and a
// failure names the stage.
// NAME.cu also exports a C interface (libcoconet_NAME.so) for callers without C++.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/IR.h"

namespace coconet {
class DiagnosticEngine;
}

namespace coconet::backend::tuning {
struct Table;
}

namespace coconet::backend {

struct CompileOptions {
  std::string outDir;
  std::string arch = "sm_90a";
  std::string sourcePath;    // the .cnet file, for the header comment
  std::string schedulePath;  // empty: no schedule
  std::string scheduleText;  // the applied schedule, printed back
  // Collectives over the world as kernels over NCCL's device API (stores and loads over NVLink,
  // LSA barriers): fused reduce_scatter -> element-wise -> all_gather groups (also per chunk of
  // an overlap), allreduces and fused [reduce_scatter, all_gather] pairs. The NCCL calls stay
  // as the fallback where the ranks are not all load/store reachable. On by default
  // (`coconetc compile --no-device-collectives` turns it off).
  bool deviceCollectives = true;
  // `coconetc compile --timeline`: run() records CUDA events after every stage, copy-engine round
  // and overlap chunk on the stream that did the work, in one call (coconet_rt::Timeline), and
  // prints them to stderr, in microseconds from the call's start, once that call finished.
  bool timeline = false;
  // `coconetc compile --target torch`: also a Python package (setup.py, coconet_NAME.py, the
  // operator's NAME_torch.cpp) that pip builds against the installed torch.
  bool torch = false;
  // The program without its schedule, where the schedule keeps the caller's tensors as the program
  // declares them (ir::unscheduledFallback): written beside it as NAME_unscheduled.{h,cu}
  // where the schedule added size requirements of its own, or runs an all_to_all pipeline (its
  // per-block GEMMs read every weight once per rank block), and run() runs it for sizes that meet
  // the program's requirements but not the schedule's, or where the pipeline's GEMMs would be
  // read-bound (coconet_rt::gatherBatchedRows). Null: none.
  const ir::Program* unscheduled = nullptr;
  // Where the backend reports warnings at the schedule's lines (an overlap it runs unchunked).
  // Null: none reported.
  DiagnosticEngine* diags = nullptr;
  // `coconetc compile --tuning FILE`: the table with the tuning file's entries (tuning::tuned), in
  // place of the one --arch selects. Null: --arch's.
  const tuning::Table* tuning = nullptr;
  // Internal (the fallback's own emission): its class name, and no C interface, driver or build
  // files of its own.
  std::string className;
  bool embedded = false;
};

// Writes the folder; returns the list of files written. Throws std::runtime_error on I/O errors.
std::vector<std::string> emitCuda(const ir::Program& p, const CompileOptions& o);

// The plan emitCuda would write code from (`coconetc emit --stage plan`): every stage's launch
// and storage with the reasons, then the unscheduled fallback's plan and when run() takes it.
// Writes nothing; warns through o.diags as emitCuda does. Throws what emitCuda throws.
std::string planText(const ir::Program& p, const CompileOptions& o);

// The knobs the backend may read on each target of p as its schedule leaves it (each fused group,
// and each collective outside one): (target, knob names in the schema's order). The autotuner's
// knob space (docs/language.md, section 17.3.6: what each knob applies to).
std::vector<std::pair<std::string, std::vector<std::string>>> knobsRead(const ir::Program& p);

}  // namespace coconet::backend
