// The tuning tables: parsing, checks, lookup and the generated coconet_tuning.h.
#include "backend/tuning/Tuning.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "support/Diagnostics.h"

namespace coconet::backend::tuning {

namespace {

const char* kSm90 =
#include "tuning_sm90_text.inc"
    ;

[[noreturn]] void bad(const std::string& table, const std::string& entry, const std::string& what) {
  throw std::runtime_error("tuning table " + table + (entry.empty() ? "" : ": entry '" + entry + "'") + ": " + what);
}

int64_t largest(const std::string& type) { return type == "int" ? std::numeric_limits<int>::max() : std::numeric_limits<int64_t>::max(); }

std::string text(const nlohmann::json& j, const char* key, const std::string& table, const std::string& entry) {
  if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty()) bad(table, entry, std::string("no ") + key);
  return j[key].get<std::string>();
}

Rule rule(const nlohmann::json& r, const Entry& e, const std::string& table) {
  if (!r.is_object()) bad(table, e.name, "a rule is not an object");
  Rule out;
  for (auto& [k, v] : r.items()) {
    if (k == "value") continue;
    if (k != "ranks" && k != "ranks_at_most" && k != "bytes_below") bad(table, e.name, "unknown condition '" + k + "'");
    if (!v.is_number_integer() || v.get<int64_t>() < 0) bad(table, e.name, "condition '" + k + "' is not a count");
    const bool onRanks = k != "bytes_below";
    if (e.args.find(onRanks ? "ranks" : "bytes") == std::string::npos)
      bad(table, e.name, "condition '" + k + "' on what the entry does not take (its args: '" + e.args + "')");
    (k == "ranks" ? out.ranks : k == "ranks_at_most" ? out.ranksAtMost : out.bytesBelow) = v.get<int64_t>();
  }
  if (!r.contains("value")) bad(table, e.name, "a rule without a value");
  const auto& v = r["value"];
  if (v.is_string() && v.get<std::string>() == "unlimited")
    out.unlimited = true;
  else if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= largest(e.type))
    out.value = v.get<int64_t>();
  else
    bad(table, e.name, "value " + v.dump() + " is not a count of type " + e.type + " or \"unlimited\"");
  return out;
}

// A value as C++ of type t.
std::string literal(const Rule& r, const std::string& t) {
  if (r.unlimited) return t == "size_t" ? "~size_t{0}" : t == "int" ? "2147483647" : "9223372036854775807LL";
  if (t == "size_t") return "size_t{" + std::to_string(r.value) + "ULL}";
  if (t == "long long") return std::to_string(r.value) + "LL";
  return std::to_string(r.value);
}

// A comment of the header, wrapped at about 100 columns.
void comment(std::ostringstream& os, const std::string& s) {
  std::istringstream words(s);
  std::string w, line = "//";
  while (words >> w) {
    if (line.size() + 1 + w.size() > 100) {
      os << line << "\n";
      line = "//";
    }
    line += " " + w;
  }
  os << line << "\n";
}

}  // namespace

const Entry& Table::entry(const std::string& n) const {
  for (auto& e : entries)
    if (e.name == n) return e;
  throw InternalError("tuning table " + name + " has no entry '" + n + "'");
}

int64_t Table::value(const std::string& n, int64_t ranks, int64_t bytes) const {
  const Entry& e = entry(n);
  for (auto& r : e.rules)
    if (r.holds(ranks, bytes)) return r.unlimited ? largest(e.type) : r.value;
  throw InternalError("tuning table " + name + ": entry '" + n + "' has no rule that holds");
}

Table parse(const std::string& json, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    bad(source, "", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) bad(source, "", "not an object");
  Table t;
  t.name = text(j, "table", source, "");
  t.measuredOn = text(j, "measured_on", t.name, "");
  t.note = j.value("note", "");
  if (!j.contains("archs") || !j["archs"].is_array() || j["archs"].empty()) bad(t.name, "", "no archs");
  for (auto& a : j["archs"]) t.archs.push_back(a.get<std::string>());
  if (!j.contains("entries") || !j["entries"].is_array()) bad(t.name, "", "no entries");
  for (auto& je : j["entries"]) {
    Entry e;
    e.name = text(je, "name", t.name, "");
    for (auto& other : t.entries)
      if (other.name == e.name) bad(t.name, e.name, "named twice");
    e.cxx = text(je, "cxx", t.name, e.name);
    e.type = text(je, "type", t.name, e.name);
    if (e.type != "int" && e.type != "long long" && e.type != "size_t") bad(t.name, e.name, "type '" + e.type + "'");
    e.args = je.value("args", "");
    if (e.args != "" && e.args != "ranks" && e.args != "bytes" && e.args != "ranks, bytes") bad(t.name, e.name, "args '" + e.args + "'");
    e.meaning = text(je, "meaning", t.name, e.name);
    e.why = text(je, "why", t.name, e.name);
    if (!je.contains("rules") || !je["rules"].is_array() || je["rules"].empty()) bad(t.name, e.name, "no rules");
    for (auto& r : je["rules"]) e.rules.push_back(rule(r, e, t.name));
    const Rule& last = e.rules.back();
    if (last.ranks || last.ranksAtMost || last.bytesBelow)
      bad(t.name, e.name, "the last rule has conditions (it must give the value otherwise)");
    if (e.args.empty() && e.rules.size() > 1) bad(t.name, e.name, "a constant with several rules");
    if (je.contains("search")) {
      if (!je["search"].is_array() || je["search"].empty()) bad(t.name, e.name, "search is not a list of values");
      for (auto& v : je["search"]) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > largest(e.type))
          bad(t.name, e.name, "search value " + v.dump() + " is not a count of type " + e.type);
        e.search.push_back(v.get<int64_t>());
      }
    }
    if (je.contains("read_by")) {
      if (!je["read_by"].is_array()) bad(t.name, e.name, "read_by is not a list of names");
      for (auto& v : je["read_by"]) {
        if (!v.is_string() || v.get<std::string>().empty()) bad(t.name, e.name, "read_by holds " + v.dump() + ", not a name");
        e.readBy.push_back(v.get<std::string>());
      }
    }
    t.entries.push_back(std::move(e));
  }
  return t;
}

namespace {
Table tunedTable(const Table& base, const std::string& json, const std::string& source);
}

Table tuned(const Table& base, const std::string& json, const std::string& source) {
  try {
    return tunedTable(base, json, source);
  } catch (const std::runtime_error& e) {  // ("tuning table FILE: ..." from the checks a table's entries share)
    std::string what = e.what();
    const std::string prefix = "tuning table " + source;
    if (what.rfind(prefix, 0) == 0) what = "tuning file " + source + what.substr(prefix.size());
    throw std::runtime_error(what);
  }
}

namespace {
Table tunedTable(const Table& base, const std::string& json, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    bad(source, "", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array())
    bad(source, "", "not a tuning file (an object with a list of entries, as coconetc tune writes)");
  Table t = base;
  t.tunedBy = source;
  std::vector<std::string> seen;
  for (auto& je : j["entries"]) {
    if (!je.is_object()) bad(source, "", "an entry is not an object");
    const std::string name = text(je, "name", source, "");
    Entry* e = nullptr;
    for (auto& x : t.entries)
      if (x.name == name) e = &x;
    if (!e) bad(source, name, "table " + base.name + " has no such entry");
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) bad(source, name, "named twice");
    seen.push_back(name);
    if (!je.contains("rules") || !je["rules"].is_array() || je["rules"].empty()) bad(source, name, "no rules");
    std::vector<Rule> rules;
    for (auto& r : je["rules"]) rules.push_back(rule(r, *e, source));
    const Rule& last = rules.back();
    if (last.ranks || last.ranksAtMost || last.bytesBelow)
      bad(source, name, "the last rule has conditions (it must give the value otherwise)");
    if (e->args.empty() && rules.size() > 1) bad(source, name, "a constant with several rules");
    e->rules = std::move(rules);
    e->why = text(je, "why", source, name);
  }
  if (j.contains("unscheduled")) {
    const auto& u = j["unscheduled"];
    if (!u.is_object() || !u.contains("bytes_below") || !u["bytes_below"].is_number_integer() || u["bytes_below"].get<int64_t>() <= 0 ||
        !u.contains("why") || !u["why"].is_string() || u["why"].get<std::string>().empty())
      bad(source, "", "unscheduled is not {\"bytes_below\": a positive integer, \"why\": the measurement}");
    t.unscheduledBelowBytes = u["bytes_below"].get<int64_t>();
    t.unscheduledWhy = u["why"].get<std::string>();
  }
  return t;
}
}  // namespace

const std::vector<Table>& tables() {
  static const std::vector<Table> all = {parse(kSm90, "sm90.json")};
  return all;
}

const Table& forArch(const std::string& arch, bool& measured) {
  for (auto& t : tables())
    for (auto& a : t.archs)
      if (a == arch) {
        measured = true;
        return t;
      }
  // No table measured for it: the Hopper table (the only one measured yet).
  measured = false;
  return tables().front();
}

std::string header(const Table& t, const std::string& arch, bool measured) {
  std::ostringstream os;
  os << "// coconet_tuning.h: the constants measurement chose, from coconetc's tuning table " << t.name << " for --arch " << arch << ".\n";
  comment(os, "Measured on " + t.measuredOn + (measured ? "." : ", not on " + arch + ": its values are a starting point there."));
  comment(os, t.note);
  if (!t.tunedBy.empty()) comment(os, "Entries from " + t.tunedBy + " replace the table's (each entry's why says what chose it).");
  os << "// Written by coconetc; change the table (or tune), not this file.\n#pragma once\n\n#include <atomic>\n#include <cstddef>\n"
        "#include <map>\n#include <mutex>\n#include <string>\n#include <utility>\n\nnamespace coconet_rt {\n\n";
  comment(os,
          "The bytes each entry that takes them was read at, while the program's driver asks (the first warm-up run of --bench: "
          "coconetc tune bounds per-shape values by them). Off, a read costs one relaxed load.");
  os << "struct TableReads {\n  std::atomic<bool> on{false};\n  std::mutex m;\n"
        "  std::map<std::string, std::pair<long long, long long>> range;  // entry -> least and most bytes\n};\n"
        "inline TableReads& tableReads() {\n  static TableReads r;\n  return r;\n}\n"
        "inline void tableRead(const char* entry, long long bytes) {\n  TableReads& r = tableReads();\n"
        "  if (!r.on.load(std::memory_order_relaxed)) return;\n  std::lock_guard<std::mutex> g(r.m);\n"
        "  auto it = r.range.emplace(entry, std::make_pair(bytes, bytes)).first;\n"
        "  it->second.first = bytes < it->second.first ? bytes : it->second.first;\n"
        "  it->second.second = bytes > it->second.second ? bytes : it->second.second;\n}\n";
  for (const Entry& e : t.entries) {
    os << "\n";
    comment(os, e.name + ": " + e.meaning + ".");
    comment(os, "Measured: " + e.why + ".");
    if (e.args.empty()) {
      os << "constexpr " << e.type << " " << e.cxx << " = " << literal(e.rules.front(), e.type) << ";\n";
      continue;
    }
    const bool bytes = e.args.find("bytes") != std::string::npos;
    std::string params;
    if (e.args.find("ranks") != std::string::npos) params = "long long ranks";
    if (bytes) params += std::string(params.empty() ? "" : ", ") + "long long bytes";
    os << (bytes ? "inline " : "constexpr ") << e.type << " " << e.cxx << "(" << params << ") {\n"
       << (bytes ? "  tableRead(\"" + e.name + "\", bytes);\n" : "") << "  return ";
    for (const Rule& r : e.rules) {
      std::string cond;
      auto add = [&](const std::string& c) { cond += (cond.empty() ? "" : " && ") + c; };
      if (r.ranks) add("ranks == " + std::to_string(*r.ranks));
      if (r.ranksAtMost) add("ranks <= " + std::to_string(*r.ranksAtMost));
      if (r.bytesBelow) add("bytes < " + std::to_string(*r.bytesBelow) + "LL");
      if (cond.empty())
        os << literal(r, e.type);
      else
        os << cond << " ? " << literal(r, e.type) << "\n         : ";
    }
    os << ";\n}\n";
  }
  os << "\n}  // namespace coconet_rt\n";
  return os.str();
}

}  // namespace coconet::backend::tuning
