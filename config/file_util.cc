#include "config/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tessera::config_internal {
namespace {

absl::Status ReadError(const std::string& path, int error) {
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrFormat("%s: cannot read: %s", path, std::strerror(error)));
}

int64_t Nanos(const struct timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

}  // namespace

FileStamp StampFile(const std::string& path) {
  FileStamp stamp;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    stamp.error = errno;
    return stamp;
  }
  stamp.device = st.st_dev;
  stamp.inode = st.st_ino;
  stamp.size = st.st_size;
  stamp.mtime_ns = Nanos(st.st_mtim);
  stamp.ctime_ns = Nanos(st.st_ctim);
  return stamp;
}

absl::StatusOr<std::string> ReadPolicyFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ReadError(path, errno);
  std::string content;
  char buffer[8192];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      ::close(fd);
      return ReadError(path, error);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (static_cast<int64_t>(content.size()) > kMaxPolicyFileBytes) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: cannot read: larger than %d bytes", path, kMaxPolicyFileBytes));
    }
  }
  ::close(fd);
  return content;
}

}  // namespace tessera::config_internal
