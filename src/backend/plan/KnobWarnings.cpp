// Warnings at tune knobs the backend does not take or reads nowhere, at the schedule's lines.
#include <tuple>
#include "backend/Emitter.h"
#include "backend/plan/KnobUse.h"
#include "support/Diagnostics.h"

namespace coconet::backend::detail {

void Emitter::warnKnob(const std::string& target, const std::string& key, const std::string& msg) {
  if (!o_.diags || !knobWarned_.insert({target, key}).second) return;
  SourceLoc at;
  const std::optional<Knob> knob = knobNamed(key);
  if (const FusedGroup* f = p_.findFused(target)) {
    at = knob ? f->knobs.where(*knob).value_or(f->loc) : f->loc;
  } else if (int id = p_.find(target); id >= 0 && knob && p_.stages[id].knobs.where(*knob)) {
    at = *p_.stages[id].knobs.where(*knob);
  } else {
    return;
  }
  o_.diags->warning(at, msg, static_cast<uint32_t>(key.size()));
}

std::vector<Emitter::KnobUse> Emitter::tunedKnobs() const {
  std::vector<KnobUse> uses;
  auto collect = [&](const std::string& target, const Knobs& knobs) {
    for (auto& [knob, setting] : knobs.all()) uses.push_back({setting.loc, target, knob, setting.value.str()});
  };
  for (auto& f : p_.fused) collect(f.name, f.knobs);
  for (auto& s : p_.stages) collect(s.name, s.knobs);
  std::stable_sort(uses.begin(), uses.end(), [](const KnobUse& a, const KnobUse& b) {
    return std::tie(a.at.file, a.at.line, a.at.col) < std::tie(b.at.file, b.at.line, b.at.col);
  });
  return uses;
}

void Emitter::warnUnreadKnobs() {
  for (auto& k : tunedKnobs())
    if (const std::string msg = unreadKnob(p_, k.target, knobName(k.knob)); !msg.empty()) warnKnob(k.target, knobName(k.knob), msg);
}

void Emitter::warnKnobsWithoutDevice() {
  if (o_.deviceCollectives) return;
  for (auto& k : tunedKnobs()) {
    if (k.knob == Knob::Algorithm && (k.value == "nccl" || k.value == "ring")) continue;  // what runs anyway
    const std::string key = knobName(k.knob);
    if (!unreadKnob(p_, k.target, key).empty()) continue;  // warned at already
    const std::string knob = k.knob == Knob::Algorithm ? "'algorithm = " + k.value + "'" : quote(key);
    warnKnob(
        k.target, key,
        "tune knob " + knob + " has no effect on " + quote(k.target) + ": --no-device-collectives keeps NCCL calls, which read no knob");
  }
}

std::string Emitter::oneShotRefused(const DevGroup& dg) const { return oneShotAsked(dg) ? oneShotObstacle(dg) : ""; }

void Emitter::warnOneShotNotTaken(const DevGroup& dg) {
  if (const std::string why = oneShotRefused(dg); !why.empty())
    warnKnob(dg.name, "algorithm",
             "tune knob 'algorithm = " + dg.algo + "' is not taken on " + quote(dg.name) + ": " + why + " (no one-shot form)");
}

std::string Emitter::oneShotNote(const DevGroup& dg, const std::string& ind) const {
  const std::string why = oneShotRefused(dg);
  return why.empty() ? "" : ind + "// tune(" + dg.name + ", algorithm = " + dg.algo + ") is not taken: " + why + "\n";
}

}  // namespace coconet::backend::detail
