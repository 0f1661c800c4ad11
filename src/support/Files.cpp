#include "support/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <streambuf>

#include "support/Diagnostics.h"

namespace coconet {

namespace {

std::string reason(int err) { return std::strerror(err); }

}  // namespace

bool readFileBounded(const std::string& path, size_t maxBytes, std::string& out, std::string& error) {
  // Non-blocking open: a FIFO without a writer would block the open itself.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = "cannot open " + quotePath(path) + ": " + reason(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = "cannot read " + quotePath(path) + ": " + reason(errno);
    ::close(fd);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "cannot read " + quotePath(path) + ": it is a directory";
    ::close(fd);
    return false;
  }
  const bool stream = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > maxBytes) {
    error = "cannot read " + quotePath(path) + ": larger than " + std::to_string(maxBytes >> 20) + " MiB";
    ::close(fd);
    return false;
  }
  // Reads block from here on (a pipe's writer may still be writing); a FIFO opened with no
  // writer reads as empty at once.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  out.clear();
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = "cannot read " + quotePath(path) + ": " + reason(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > maxBytes) {  // /dev/zero, a growing file, a pipe
      error = "cannot read " + quotePath(path) + ": larger than " + std::to_string(maxBytes >> 20) + " MiB";
      ::close(fd);
      return false;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (stream && out.empty()) {
    error = "cannot read " + quotePath(path) + ": it is a " + (S_ISFIFO(st.st_mode) ? "FIFO" : "socket") + " and nothing was written to it";
    return false;
  }
  return true;
}

void writeFile(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw FileError("cannot write " + quotePath(path) + ": " + reason(errno));
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = n < 0 ? errno : EIO;
      ::close(fd);
      throw FileError("cannot write " + quotePath(path) + ": " + reason(e));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (::close(fd) != 0) throw FileError("cannot write " + quotePath(path) + ": " + reason(errno));
}

void makeDirectories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw FileError("cannot create the folder " + quotePath(path) + ": " + ec.message());
  if (!std::filesystem::is_directory(path, ec))
    throw FileError("cannot create the folder " + quotePath(path) + ": a file of that name is in the way");
}

namespace {

class FdBuf : public std::streambuf {
public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  ~FdBuf() override { drain(); }
  int error() const { return error_; }

protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

private:
  bool drain() {
    const char* p = pbase();
    while (p < pptr()) {
      ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!error_) error_ = n < 0 ? errno : EIO;
        break;
      }
      p += n;
    }
    setp(buf_, buf_ + sizeof buf_);  // what could not be written is dropped: error_ says so
    return !error_;
  }
  int fd_;
  int error_ = 0;
  char buf_[1 << 16];
};

FdBuf* stdoutBuf = nullptr;

}  // namespace

void checkedStdout() {
  static FdBuf buf(1);
  stdoutBuf = &buf;
  std::cout.rdbuf(&buf);
}

void flushStdout() {
  std::cout.flush();
  int e = stdoutBuf ? stdoutBuf->error() : 0;
  if (!stdoutBuf && (std::fflush(stdout) != 0 || std::ferror(stdout))) e = errno ? errno : EIO;
  if (e) throw FileError("cannot write to standard output: " + reason(e));
}

}  // namespace coconet
