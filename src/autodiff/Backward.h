// Backward programs: reverse-mode differentiation of an IR program, collectives included.
//
// The gradient is that of the program's logical function: a replicated or sliced tensor is one
// tensor (a sliced one cut into the ranks' blocks), a local tensor is one tensor per rank. For
// cotangents dOUT of the outputs (a replicated output's the same on every rank), the backward
// program returns dIN = d<dOUT, OUT>/dIN for each input differentiated, in IN's type. Each
// operation's adjoint keeps the forward's distribution: the gradient of an all_gather is a block
// of the replicated gradient, of a reduce_scatter an all_gather, of an allreduce of partial sums
// the replicated gradient itself; a replicated value that per-rank (local) computations read
// gets the allreduce of their partial gradients, one that sliced computations read the
// all_gather of their blocks.
//
// The backward program takes the forward values its adjoints read as inputs (saved by the forward:
// saving() adds them to the forward's outputs), except those the request recomputes: those it
// computes again from the forward's inputs and the other saved values. It runs the adjoints in
// reverse order. It is an ordinary program: schedules, verify and the backends take it as any
// other.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace coconet::autodiff {

// A forward value the backward computes again rather than takes saved (the backward schedule's
// `recompute(NAME, ...)`); loc and length place errors at the name.
struct Recompute {
  std::string name;
  SourceLoc loc;
  uint32_t length = 1;
};

struct Request {
  std::vector<std::string> wrt;  // the inputs to differentiate; empty: every floating-point input
  std::vector<Recompute> recompute;
};

// NAME_backward: p's inputs and the saved forward values (Program::savedInputs; each named as its
// forward output where it is one, else as its stage), in the forward's order, then d_OUT (OUT's
// type) for each floating-point output that depends on an input differentiated; returns d_IN for
// each input differentiated, in the order of p's inputs. A value without operands (a constant) is
// recomputed, never saved. An operation without an adjoint, or a program outside what is
// supported, is an error naming it (reported to diags; nullopt), never a wrong gradient; so is a
// recompute of a name that is not a forward value the backward reads.
std::optional<ir::Program> backward(const ir::Program& p, const Request& r, DiagnosticEngine& diags);

// The inputs a request differentiates, in p's order (stage ids); errors for unknown names.
std::vector<int> differentiated(const ir::Program& p, const Request& r, DiagnosticEngine& diags);

}  // namespace coconet::autodiff
