// The reference interpreter: executes an IR program for P simulated ranks on the CPU.
//
// Each rank holds what the GPU will hold: a replicated or local value in full, a sliced value
// as its own slice. Arithmetic follows the IR's numerics (ir/IR.h): f16 and bf16 are emulated
// exactly (round to nearest even), f16/bf16/f32 arithmetic is done in f32, reductions and
// collectives accumulate in a fixed order. Dropout draws from a counter-based generator keyed
// by (seed, stage, global element index), so a sliced and an unsliced run drop the same
// elements.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace coconet::interp {

// One rank's storage of one value. Every element is in `data`, exactly for every dtype but i64,
// whose values past 2^53 a double does not hold: an i64 value also keeps `exact`, its elements
// exactly (data holds the nearest doubles). Integer arithmetic reads integer() and writes
// setInteger(); copies move both.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
  std::vector<int64_t> exact;  // i64 values only; empty otherwise
  int64_t numel() const;
  // Element i of a value of an integer or bool type.
  int64_t integer(int64_t i) const { return exact.empty() ? static_cast<int64_t>(data[i]) : exact[i]; }
  void setInteger(int64_t i, int64_t v) {
    data[i] = static_cast<double>(v);
    if (!exact.empty()) exact[i] = v;
  }
};

using PerRank = std::vector<Tensor>;  // indexed by world rank

// The run's bindings: every size and scalar parameter, the number of ranks, the dropout seed.
struct Config {
  int ranks = 1;
  std::map<std::string, int64_t> sizes;
  std::map<std::string, double> scalars;          // float and bool scalar parameters
  std::map<std::string, int64_t> integerScalars;  // integer scalar parameters, exactly
  uint64_t seed = 0;
  // Exact mode: floating-point values are neither rounded to their dtype nor computed in f32;
  // everything runs in f64. Verify uses it as the reference that rounding errors are measured
  // against. (Dropout keeps and drops the same elements as in the normal mode.)
  bool exact = false;
  // Sensitivity (verify): the sum, mean or norm stage of this name comes out larger by
  // perturbGamma times its terms' magnitudes (a sum: the sum of |x|; a mean: that over the count;
  // a norm: the norm), the most that rounding in another order can move it; every other stage as
  // usual. What that does to the outputs bounds what a re-associated reduction may change there.
  std::string perturb;
  double perturbGamma = 0;
};

struct Values {
  std::map<std::string, PerRank> inputs;  // by input name; states by state name
};

struct Result {
  std::vector<PerRank> outputs;           // in Program::outputs order
  std::map<std::string, PerRank> states;  // final state values, stored with the state's layout
};

// A run-time error in the program's data (an index out of range, a requirement that does not
// hold for these sizes): reported to the user, naming the stage or tensor.
class RunError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Evaluates size expressions for a run (world.size = ranks).
std::map<std::string, int64_t> sizeEnv(const Config& c);
int64_t evalSize(const ir::SizeExpr& e, const Config& c, const std::string& what);

// Per-rank storage shape of a value of type `t` on world rank `r`: a sliced dimension is the
// rank's block of it (ir::sliceBlock: uneven sizes give shorter or empty last blocks).
std::vector<int64_t> localShape(const ir::TensorType& t, const Config& c, int r);
// Rank r's block of t's sliced dimension ({0, 0} unless t is sliced). (GroupCoord below.)
ir::Block sliceRange(const ir::TensorType& t, const Config& c, int r);

// Where rank r sits in group g: which instance (0..count-1 over the world), its position in
// the instance, and the instance's size.
struct GroupCoord {
  int instance, pos, size;
};
GroupCoord groupCoord(const ir::GroupInfo* g, const Config& c, int r);

Result run(const ir::Program& p, const Config& c, const Values& in);

// Rank r's storage of a value of type t, cut from the whole value (itself unless t is sliced).
Tensor storageOf(const Tensor& whole, const ir::TensorType& t, const Config& c, int r);
// The whole value that rank r's group instance holds, assembled from its ranks' storage
// (rank r's own storage unless t is sliced).
Tensor wholeOf(const PerRank& v, const ir::TensorType& t, const Config& c, int r);

// Rounds a value to a dtype's storage precision (f16/bf16 round to nearest even).
double roundTo(ir::DType t, double v);
// An integer saturated to an integer type's range (bool: 0 or 1); a double truncated toward zero
// and saturated to int64 (NaN: 0).
int64_t saturateInteger(ir::DType t, int64_t v);
int64_t toInt64(double v);
// The integer arithmetic of i8, u8, i32 and i64 values (computed in 64 bits, two's complement:
// sums and products wrap; division and remainder truncate, by zero give 0; pow(x, y) with y < 0 is 0
// unless x is 1 or -1). The generated code computes the same (coconet_rt::ipow and the like).
int64_t integerPow(int64_t x, int64_t y);
// Whether values of type t keep Tensor::exact (i64).
bool keepsExact(ir::DType t);

// The dropout generator: a uniform float in [0, 1) with 24 random bits.
float dropoutUniform(uint64_t seed, uint64_t salt, uint64_t index);

}  // namespace coconet::interp
