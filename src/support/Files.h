// Reading inputs and writing outputs with every failure reported: a read stops at a size limit
// and never waits on a FIFO that has no writer; a write checks each write and the close, so a
// full disk is an error, never a truncated file and a success.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace coconet {

// A file that could not be read or written; what() names the file and the reason.
class FileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The largest .cnet or .sched file the compiler reads.
constexpr size_t kMaxSourceBytes = size_t(64) << 20;

// Reads a whole file of at most maxBytes. Returns false with `error` set ("cannot read 'f': ...")
// for a directory, an unreadable file, a larger one, or a FIFO or socket that gives nothing.
bool readFileBounded(const std::string& path, size_t maxBytes, std::string& out, std::string& error);

// Writes `data` to `path` (created or truncated); throws FileError if any write or the close fails.
void writeFile(const std::string& path, std::string_view data);

// Creates a folder and its parents; throws FileError where a path component is not a folder or
// cannot be made.
void makeDirectories(const std::string& path);

// Sends std::cout straight to file descriptor 1 through a buffer that keeps the first write error.
// flushStdout() then flushes it and throws FileError (with that error's reason) if anything
// written was lost: a full disk, /dev/full, a closed pipe.
void checkedStdout();
void flushStdout();

}  // namespace coconet
