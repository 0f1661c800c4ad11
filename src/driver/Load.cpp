#include "driver/Load.h"

#include <filesystem>

#include "frontend/Parser.h"
#include "support/Files.h"

namespace coconet::driver {

void checkFile(sema::Compilation& c, const std::string& path, const sema::Options& opts, const LoadOptions& load, DiagnosticEngine& diags) {
  std::string text, err;
  // "-": the program from standard input, named <stdin> in diagnostics.
  const bool stdinInput = path == "-";
  if (!readFileBounded(stdinInput ? "/dev/stdin" : path, kMaxSourceBytes, text, err)) {
    diags.error({}, stdinInput ? "cannot read the program from standard input: " + err : err);
    return;
  }
  checkSource(c, stdinInput ? "<stdin>" : path, std::move(text), opts, load, diags);
}

void checkSource(sema::Compilation& c, const std::string& path, std::string text, const sema::Options& opts, const LoadOptions& load,
                 DiagnosticEngine& diags) {
  uint32_t file = c.sources.add(path, std::move(text));
  auto m = frontend::parseFile(c.sources, file, diags);
  if (!m) return;
  m->name = std::filesystem::path(path).stem().string();

  std::vector<std::string> dirs;
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (load.searchInputDir) dirs.push_back(dir.empty() ? "." : dir);
  dirs.insert(dirs.end(), load.moduleDirs.begin(), load.moduleDirs.end());
  auto loadModule = [&](const std::string& name, SourceLoc at, uint32_t length) -> std::unique_ptr<ast::Module> {
    std::string found;
    for (auto& d : dirs) {
      std::error_code ec;
      std::string candidate = (std::filesystem::path(d) / (name + ".cnet")).string();
      if (std::filesystem::is_regular_file(candidate, ec)) {
        found = candidate;
        break;
      }
    }
    if (found.empty()) {
      std::string searched;
      for (auto& d : dirs) searched += (searched.empty() ? "" : ", ") + d;
      diags.error(at, "cannot find module " + quote(name) + " (searched " + searched + ")", length);
      return nullptr;
    }
    std::string source, err;
    if (!readFileBounded(found, kMaxSourceBytes, source, err)) {
      diags.error(at, err, length);
      return nullptr;
    }
    auto module = frontend::parseFile(c.sources, c.sources.add(found, std::move(source)), diags);
    if (!module) diags.note(at, "while importing " + quote(name), length);
    return module;
  };
  sema::check(c, std::move(m), opts, loadModule, diags);
}

}  // namespace coconet::driver
