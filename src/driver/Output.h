// The folder `compile -o DIR` writes: whose files are in it, and writing the new ones so that a
// failed compile leaves it as it was.
//
// DIR may be missing, empty, or hold an earlier compile's output (its manifest.json names the
// compiler as coconetc and lists the files it wrote); a folder with other files is refused
// unless `force` (then same-named files are replaced and the rest left alone). The outputs are
// written into a scratch folder inside DIR, then each is renamed into place (atomically) and the
// files of the earlier manifest that this compile did not write are removed: a schedule that
// no longer needs NAME_unscheduled.* leaves none behind.
#pragma once

#include <string>
#include <vector>

namespace coconet::driver {

class OutputFolder {
public:
  // Checks DIR and makes the scratch folder; throws FileError with the reason where DIR cannot
  // be written.
  OutputFolder(const std::string& dir, bool force);
  ~OutputFolder();  // removes the scratch folder (and whatever is left in it)
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  // Where the backend writes.
  const std::string& scratch() const { return scratch_; }
  // Moves the files written into the scratch folder (their paths) into DIR and removes the
  // earlier output's other files; returns the files' paths in DIR.
  std::vector<std::string> commit(const std::vector<std::string>& written);

private:
  std::string dir_, scratch_;
  bool created_ = false, committed_ = false;  // DIR made here (removed again if nothing was committed)
  std::vector<std::string> earlier_;          // the files an earlier coconetc manifest lists (and manifest.json)
};

}  // namespace coconet::driver
