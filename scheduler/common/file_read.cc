#include "scheduler/common/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tessera {
namespace {

absl::Status ReadError(const std::string& path, int error) {
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrFormat("%s: cannot read: %s", path, std::strerror(error)));
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a plain file";
}

// Closes the descriptor on every way out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer.
  // It changes nothing for a regular file, the only kind read below.
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return ReadError(path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ReadError(path, errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: cannot read: not a regular file (%s)", path, KindOf(st.st_mode)));
  }
  const auto too_large = [&] {
    return absl::InvalidArgumentError(absl::StrFormat("%s: cannot read: larger than %d bytes", path, max_bytes));
  };
  if (st.st_size > max_bytes) return too_large();
  std::string content;
  // The size may change while reading (a writer appending): read to EOF, one
  // byte past the cap at most.
  content.reserve(static_cast<size_t>(st.st_size));
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ReadError(path, errno);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (static_cast<int64_t>(content.size()) > max_bytes) return too_large();
  }
  return content;
}

}  // namespace tessera
