// The PyTorch target's autograd: the Python text that registers the operator's backward (from the
// backward program's package, coconet_NAME_backward, where it is installed).
#pragma once

#include <string>
#include <vector>

namespace coconet::backend::detail {

// For the program `name` (its operator torch.ops.coconet.NAME; the module defines _TENSOR_NAMES,
// _OUTPUT_NAMES and _groups): `scalars`, the operator's scalar keyword names in order.
std::string torchAutogradText(const std::string& name, const std::vector<std::string>& scalars);

}  // namespace coconet::backend::detail
