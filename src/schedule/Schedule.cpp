// Parsing .sched files, applying steps in order, and printing applied steps back.
#include "schedule/Schedule.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "SchedLexer.h"
#include "SchedParser.h"
#include "antlr4-runtime.h"
#include "support/SyntaxError.h"
#include "ir/Rewrite.h"
#include "schedule/Primitives.h"
#include "support/Strings.h"

namespace coconet::schedule {
namespace {

using schedgen::SchedLexer;
using schedgen::SchedParser;

class Listener : public antlr4::BaseErrorListener {
public:
  Listener(uint32_t f, DiagnosticEngine& d) : file_(f), diags_(d) {}
  void syntaxError(antlr4::Recognizer* rec, antlr4::Token* tok, size_t line, size_t col, const std::string&, std::exception_ptr) override {
    std::string found = !tok || tok->getType() == antlr4::Token::EOF ? "end of file" : quote(tok->getText());
    auto* p = dynamic_cast<antlr4::Parser*>(rec);
    SyntaxErrorPlace place = placeSyntaxError(file_, p, tok, line, col);
    if (p) {
      auto set = p->getExpectedTokens().toList();
      std::vector<std::string> names;
      for (auto t : set) {
        std::string lit = p->getVocabulary().getLiteralName(t);
        std::string sym = p->getVocabulary().getSymbolicName(t);
        if (t == static_cast<decltype(t)>(antlr4::Token::EOF))
          names.push_back("end of file");
        else if (!lit.empty())
          names.push_back(lit);
        else if (sym == "IDENT")
          names.push_back("a name");
        else if (sym == "INT")
          names.push_back("a number");
      }
      if (!names.empty() && names.size() <= 4) {
        SyntaxErrorReport r = expectedReport(names, place, found);
        diags_.error(r.loc, r.text, r.length);
        return;
      }
    }
    diags_.error(place.at, "unexpected " + found + " in schedule", place.length);
  }

private:
  uint32_t file_;
  DiagnosticEngine& diags_;
};

std::string nameText(SchedParser::NameContext* n) { return n->getText(); }

// A positional argument or target: a name at `loc`.
Arg nameArg(std::string value, SourceLoc loc) {
  Arg a;
  a.length = static_cast<uint32_t>(std::max<size_t>(value.size(), 1));
  a.value = std::move(value);
  a.loc = loc;
  return a;
}

}  // namespace

std::optional<Script> parseScript(const SourceManager& sm, uint32_t file, DiagnosticEngine& diags) {
  const std::string& text = sm.contents(file);
  if (auto probs = checkEncoding(text); !probs.empty()) {
    diags.error(sm.locOfOffset(file, probs[0].offset), probs[0].message);
    return std::nullopt;
  }
  antlr4::ANTLRInputStream input(text);
  SchedLexer lexer(&input);
  lexer.removeErrorListeners();
  antlr4::CommonTokenStream tokens(&lexer);
  tokens.fill();
  unsigned before = diags.errorCount();
  for (auto* t : tokens.getTokens()) {
    SourceLoc l{file, static_cast<uint32_t>(t->getLine()), static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
    if (t->getType() == SchedLexer::BAD_CHAR) diags.error(l, "unexpected character " + quote(t->getText()));
    if (t->getType() == SchedLexer::UNTERMINATED_COMMENT) diags.error(l, "unterminated comment", 2);
    if (t->getType() == SchedLexer::IDENT && t->getText().size() > 256) diags.error(l, "name is too long");
  }
  if (diags.errorCount() != before) return std::nullopt;
  SchedParser parser(&tokens);
  parser.removeErrorListeners();
  Listener listener(file, diags);
  parser.addErrorListener(&listener);
  auto* tree = parser.script();
  if (diags.errorCount() != before) return std::nullopt;

  auto loc = [&](antlr4::Token* t) {
    return SourceLoc{file, static_cast<uint32_t>(t->getLine()), static_cast<uint32_t>(t->getCharPositionInLine() + 1)};
  };
  Script s;
  for (auto* st : tree->step()) {
    Step step;
    step.primitive = st->IDENT()->getText();
    step.loc = loc(st->IDENT()->getSymbol());
    for (auto* n : st->name()) step.targets.push_back(nameArg(nameText(n), loc(n->getStart())));
    for (auto* a : st->arg()) {
      Arg arg;
      if (a->IDENT()) {
        arg.key = a->IDENT()->getText();
        arg.keyLoc = loc(a->IDENT()->getSymbol());
        arg.value = a->value()->getText();
        arg.loc = loc(a->value()->getStart());
        arg.length = static_cast<uint32_t>(arg.value.size());
        if (step.primitive == "tune" && arg.key == "chunks") {  // its name before `rounds`
          diags.warning(arg.keyLoc, "tune knob 'chunks' is now 'rounds' (a kernel's pipelined rounds; overlap's chunks are the pipeline's)",
                        6);
          arg.key = "rounds";
        }
      } else if (a->pattern()) {
        arg = nameArg(a->pattern()->getText(), loc(a->pattern()->getStart()));
        arg.pattern = true;
      } else {
        arg = nameArg(nameText(a->name()), loc(a->name()->getStart()));
      }
      step.args.push_back(arg);
    }
    s.steps.push_back(std::move(step));
  }
  return s;
}

// ---- Shared primitive helpers ------------------------------------------------------------
bool StepContext::fail(const Arg* at, const std::string& what, const std::string& why) {
  std::string from = at && !at->matchedBy.empty() && !what.empty() ? " (matched by " + quote(at->matchedBy) + ")" : "";
  std::string msg = "cannot " + step.primitive + (what.empty() ? "" : " " + quote(what)) + from + ": " + why;
  if (at)
    diags.error(at->loc, msg, at->length);
  else
    diags.error(step.loc, msg, static_cast<uint32_t>(step.primitive.size()));
  return false;
}

int StepContext::stage(const Arg& a) {
  int id = p.resolve(a.value);
  if (id >= 0) return id;
  std::vector<std::string> names;
  for (auto& s : p.stages) names.push_back(s.name);
  for (auto& [n, t] : p.aliases) names.push_back(n);
  std::string guess = closestMatch(a.value, names);
  std::string why = "there is no stage named " + quote(a.value);
  if (p.findFused(a.value))
    why = quote(a.value) + " is a fused group, not a stage";
  else if (!guess.empty())
    why += "; did you mean " + quote(guess) + "?";
  diags.error(a.loc, "cannot " + step.primitive + ": " + why, a.length);
  return -1;
}

std::vector<const Arg*> StepContext::positional() const {
  std::vector<const Arg*> r;
  for (auto& a : step.args)
    if (a.key.empty()) r.push_back(&a);
  return r;
}

const Arg* StepContext::knob(const std::string& key) const {
  for (auto& a : step.args)
    if (a.key == key) return &a;
  return nullptr;
}

bool StepContext::expectShape(const std::vector<std::string>& allowed, int minPos, int maxPos, int targets) {
  std::set<std::string> seen;
  for (auto& a : step.args) {
    if (a.key.empty()) continue;
    if (!seen.insert(a.key).second) {
      diags.error(a.keyLoc, "knob " + quote(a.key) + " is given twice", static_cast<uint32_t>(a.key.size()));
      return false;
    }
    if (std::find(allowed.begin(), allowed.end(), a.key) == allowed.end()) {
      std::string takes;
      for (auto& k : allowed) takes += (takes.empty() ? "" : ", ") + quote(k);
      diags.error(a.keyLoc, quote(step.primitive) + " has no knob " + quote(a.key) + (takes.empty() ? "" : "; it takes " + takes),
                  static_cast<uint32_t>(a.key.size()));
      return false;
    }
  }
  int n = static_cast<int>(positional().size());
  if (n < minPos || (maxPos >= 0 && n > maxPos)) {
    std::string want = maxPos < 0         ? "at least " + std::to_string(minPos)
                       : minPos == maxPos ? std::to_string(minPos)
                                          : std::to_string(minPos) + " to " + std::to_string(maxPos);
    std::string what = step.primitive == "slice" ? "state name" : "stage name";
    diags.error(step.loc, quote(step.primitive) + " takes " + want + " " + what + (want == "1" ? "" : "s") + ", got " + std::to_string(n),
                static_cast<uint32_t>(step.primitive.size()));
    return false;
  }
  if (targets >= 0 && static_cast<int>(step.targets.size()) > targets) {
    diags.error(step.targets[0].loc,
                quote(step.primitive) + " makes " +
                    (targets == 0   ? std::string("no names")
                     : targets == 1 ? std::string("one name")
                                    : "at most " + std::to_string(targets) + " names") +
                    ", but " + std::to_string(step.targets.size()) + (step.targets.size() == 1 ? " is given" : " are given"),
                step.targets[0].length);
    return false;
  }
  // Target names must be new: no stage, alias, fused group, parameter or process group.
  for (auto& t : step.targets) {
    bool taken = p.resolve(t.value) >= 0 || p.findFused(t.value);
    for (auto& prm : p.params) taken = taken || prm.name == t.value;
    for (auto& g : p.groups) taken = taken || g->name == t.value;
    if (taken) {
      diags.error(t.loc, "cannot " + step.primitive + ": the name " + quote(t.value) + " is already taken", t.length);
      return false;
    }
  }
  return true;
}

// ---- Applying ----------------------------------------------------------------------------
namespace {

// The step with each pattern `NAME.*` replaced by the stages it matches, in execution order:
// the stage NAME and every stage named `NAME.<anything>`, except the all_gathers reorder added
// to rebuild a moved value for its other readers (data movement, not the statement's own
// work; an all_gather can only end a fused group). Only the primitives that take a list of
// stages (reorder after its all_gather, fuse) take patterns; nullopt after an error.
std::optional<Step> expandPatterns(const ir::Program& p, const Step& step, DiagnosticEngine& diags) {
  Step out = step;
  out.args.clear();
  bool first = true;
  for (const Arg& a : step.args) {
    bool positional = a.key.empty();
    if (!a.pattern) {
      out.args.push_back(a);
      first = first && !positional;
      continue;
    }
    if (step.primitive != "reorder" && step.primitive != "fuse") {
      diags.error(a.loc,
                  "cannot " + step.primitive + ": " + quote(a.value) +
                      " is a pattern; only reorder and fuse "
                      "take patterns, where they list stages",
                  a.length);
      return std::nullopt;
    }
    if (step.primitive == "reorder" && first) {
      diags.error(a.loc, "cannot reorder: its first argument is the all_gather, named alone, not a pattern", a.length);
      return std::nullopt;
    }
    first = false;
    const std::string prefix = a.value.substr(0, a.value.size() - 2);  // without ".*"
    size_t before = out.args.size();
    for (const auto& s : p.stages) {
      if (s.regather || (s.name != prefix && s.name.rfind(prefix + ".", 0) != 0)) continue;
      Arg m = a;
      m.value = s.name;
      m.pattern = false;
      m.matchedBy = a.value;
      out.args.push_back(std::move(m));
    }
    if (out.args.size() == before) {
      // Suggest the nearest statement: a stage's name or one of its dotted prefixes.
      std::set<std::string> stmts;
      for (const auto& s : p.stages)
        for (size_t dot = s.name.find('.');; dot = s.name.find('.', dot + 1)) {
          stmts.insert(s.name.substr(0, dot));
          if (dot == std::string::npos) break;
        }
      std::string guess = closestMatch(prefix, std::vector<std::string>(stmts.begin(), stmts.end()));
      diags.error(a.loc,
                  "cannot " + step.primitive + ": no stage matches " + quote(a.value) +
                      (guess.empty() ? "" : "; did you mean " + quote(guess + ".*") + "?"),
                  a.length);
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

bool apply(ir::Program& p, const Script& s, DiagnosticEngine& diags, std::vector<Step>& trace, std::ostream* printAfterAll) {
  std::string last;  // the IR as printed last (--print-after-all only: printing is linear, not free)
  if (printAfterAll) *printAfterAll << "// ---- IR after lowering\n" << (last = ir::print(p));
  for (auto& written : s.steps) {
    std::optional<Step> expanded = expandPatterns(p, written, diags);
    if (!expanded) return false;
    const Step& step = *expanded;
    StepContext c{p, step, diags, {}};
    bool ok;
    if (step.primitive == "split")
      ok = split(c);
    else if (step.primitive == "reorder")
      ok = reorder(c);
    else if (step.primitive == "slice")
      ok = sliceState(c);
    else if (step.primitive == "fuse")
      ok = fuse(c);
    else if (step.primitive == "overlap")
      ok = overlap(c);
    else if (step.primitive == "tune")
      ok = tune(c);
    else if (step.primitive == "recompute") {
      diags.error(step.loc,
                  "'recompute' belongs to a backward program's schedule (PROG.backward.sched, with --backward): it says which "
                  "forward values the backward computes again instead of taking them saved",
                  static_cast<uint32_t>(step.primitive.size()));
      return false;
    } else {
      std::string guess = closestMatch(step.primitive, {"split", "reorder", "slice", "fuse", "overlap", "tune"});
      diags.error(
          step.loc,
          "unknown schedule primitive " + quote(step.primitive) +
              (guess.empty() ? "; primitives are split, reorder, slice, fuse, overlap and tune" : "; did you mean " + quote(guess) + "?"),
          static_cast<uint32_t>(step.primitive.size()));
      return false;
    }
    if (!ok) return false;
    auto removed = ir::eliminateDeadStages(p);
    ir::verifyStructure(p);
    Step done = step;
    done.targets.clear();
    for (auto& m : c.made) done.targets.push_back(nameArg(m, {}));
    trace.push_back(done);
    if (printAfterAll) {
      std::string now = ir::print(p);
      *printAfterAll << "// ---- IR after " << printScript({done});
      if (now == last)
        *printAfterAll << "// (unchanged)\n";
      else
        *printAfterAll << now;
      if (!removed.empty()) {
        *printAfterAll << "// dead stages removed:";
        for (auto& r : removed) *printAfterAll << " " << r;
        *printAfterAll << "\n";
      }
      last = now;
    }
  }
  return true;
}

std::string printScript(const std::vector<Step>& steps) {
  std::ostringstream os;
  for (auto& s : steps) {
    for (size_t i = 0; i < s.targets.size(); ++i) os << (i ? ", " : "") << s.targets[i].value;
    if (!s.targets.empty()) os << " = ";
    os << s.primitive << "(";
    for (size_t i = 0; i < s.args.size(); ++i) {
      os << (i ? ", " : "");
      if (!s.args[i].key.empty()) os << s.args[i].key << " = ";
      os << s.args[i].value;
    }
    os << ");\n";
  }
  return os.str();
}

}  // namespace coconet::schedule

namespace coconet::schedule {

void requireDivisible(ir::Program& p, const ir::SizeExpr& value, const ir::SizeExpr& divisor, const std::string& reason, SourceLoc loc,
                      bool even) {
  ir::SizeExpr rem = ir::SizeExpr::mod(value, divisor);
  if (rem.constantValue() == 0) return;
  for (auto& r : p.requirements)
    if (r.lhs == rem && r.op == ast::BinaryOp::Eq && r.rhs == ir::SizeExpr::constant(0)) {
      r.even = r.even && even;
      return;
    }
  p.requirements.push_back({rem, ast::BinaryOp::Eq, ir::SizeExpr::constant(0), reason, loc, even});
}

}  // namespace coconet::schedule
