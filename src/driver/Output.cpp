#include "driver/Output.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdlib.h>
#include <system_error>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/Diagnostics.h"
#include "support/Files.h"

namespace coconet::driver {
namespace fs = std::filesystem;
namespace {

// A name the manifest may list: a plain file name in DIR (nothing that leads elsewhere).
bool plainName(const std::string& n) { return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos; }

// The files an earlier compile's manifest.json in `dir` lists, with the manifest itself; false
// where there is no such manifest (none, unreadable, or not coconetc's).
bool earlierOutput(const fs::path& dir, std::vector<std::string>& files) {
  // (read as sources are: bounded, and a FIFO of that name does not block)
  std::string text, error;
  if (!readFileBounded((dir / "manifest.json").string(), kMaxSourceBytes, text, error)) return false;
  nlohmann::json m = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object() || !m.contains("compiler") || !m["compiler"].is_string() ||
      m["compiler"].get<std::string>().rfind("coconetc", 0) != 0 || !m.contains("files") || !m["files"].is_array())
    return false;
  for (auto& f : m["files"])
    if (f.is_string() && plainName(f.get<std::string>())) files.push_back(f.get<std::string>());
  files.push_back("manifest.json");
  return true;
}

}  // namespace

OutputFolder::OutputFolder(const std::string& dir, bool force) : dir_(dir) {
  std::error_code ec;
  const fs::path d(dir);
  const auto st = fs::status(d, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw FileError(quotePath(dir) + " is a file; -o names the folder to write the outputs into");
  if (fs::is_directory(st)) {
    const bool empty = fs::is_empty(d, ec);
    if (ec) throw FileError("cannot read the folder " + quotePath(dir) + ": " + ec.message());
    if (!empty && !earlierOutput(d, earlier_) && !force)
      throw FileError("the folder " + quotePath(dir) +
                      " holds files that are not a coconetc output (no manifest.json of coconetc's lists them); give an empty or new "
                      "folder, or --force to write into it (files of the outputs' names are replaced)");
  } else {
    makeDirectories(dir);
    created_ = true;
  }
  std::string tmpl = (d / ".coconetc-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw FileError("cannot write into the folder " + quotePath(dir) + ": " + std::strerror(errno));
  scratch_ = tmpl;
}

OutputFolder::~OutputFolder() {
  std::error_code ec;
  if (!scratch_.empty()) fs::remove_all(scratch_, ec);
  if (created_ && !committed_) fs::remove(dir_, ec);  // (only while empty)
}

std::vector<std::string> OutputFolder::commit(const std::vector<std::string>& written) {
  std::vector<std::string> paths;
  std::set<std::string> names;
  // manifest.json last: until it is in place, DIR's manifest is the earlier one.
  std::vector<std::string> order = written;
  std::stable_partition(order.begin(), order.end(), [](const std::string& p) { return fs::path(p).filename() != "manifest.json"; });
  // Every place first: a folder (or other non-file) of an output's name fails the compile before
  // any file moves.
  for (auto& from : order) {
    const fs::path to = fs::path(dir_) / fs::path(from).filename();
    std::error_code ec;
    const auto st = fs::symlink_status(to, ec);
    if (fs::exists(st) && !fs::is_regular_file(st) && !fs::is_symlink(st))
      throw FileError("cannot write " + quotePath(to.string()) + ": " + (fs::is_directory(st) ? "a folder" : "something") +
                      " of that name is in the way");
  }
  for (auto& from : order) {
    const std::string name = fs::path(from).filename().string();
    const fs::path to = fs::path(dir_) / name;
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec) throw FileError("cannot write " + quotePath(to.string()) + ": " + ec.message());
    names.insert(name);
    paths.push_back(to.string());
  }
  for (auto& name : earlier_) {
    if (names.count(name)) continue;
    std::error_code ec;
    const fs::path stale = fs::path(dir_) / name;
    if (fs::is_regular_file(fs::symlink_status(stale, ec))) fs::remove(stale, ec);
  }
  committed_ = true;
  return paths;
}

}  // namespace coconet::driver
