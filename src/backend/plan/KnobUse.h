// Which tune knobs the CUDA backend reads nowhere on their target, as the program (its fused
// groups, overlaps and knobs) leaves them: the rules of the forms it plans (plan/DeviceGroups.cpp,
// plan/Overlaps.cpp), kept beside them. Each unread knob gets a warning from `compile` at the
// place tune set it, naming what the knob applies to.
#pragma once

#include <string>

#include "ir/IR.h"

namespace coconet::backend::detail {

// Why the backend reads knob `key` nowhere on `target` (a fused group or a stage), as a
// warning's text; "" where it may read it (or the target has no such knob).
std::string unreadKnob(const ir::Program& p, const std::string& target, const std::string& key);
// The same for knob `key` on fused group g or on stage s whether tuned or not ("" where read).
std::string unreadOnGroup(const ir::Program& p, const ir::FusedGroup& g, const std::string& key);
std::string unreadOnStage(const ir::Program& p, const ir::Stage& s, const std::string& key);

}  // namespace coconet::backend::detail
