#include "config/file_util.h"

#include <sys/stat.h>

#include <cerrno>

#include "scheduler/common/file_read.h"

namespace tessera::config_internal {
namespace {

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
  return ReadRegularFile(path, kMaxPolicyFileBytes);
}

}  // namespace tessera::config_internal
