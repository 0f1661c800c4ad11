// Runs work on a thread with a large stack. The compiler recurses over expression trees, and
// a 100,000-term expression nests that deep; the stack is reserved, not committed, so only
// what is used costs memory.
#pragma once

#include <cstddef>
#include <functional>

namespace coconet {

void runOnLargeStack(size_t stackBytes, const std::function<void()>& fn);

}  // namespace coconet
