// Internal to config/: reading the policy file and telling whether it changed.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tessera::config_internal {

/// Policy files are a few hundred bytes; the cap keeps a mistaken path
/// (/dev/zero, a log file) from being read into memory.
inline constexpr int64_t kMaxPolicyFileBytes = 1 << 20;

/// What stat(2) says about a file, enough to notice a rewrite without reading
/// it: a new inode (editors and ConfigMap updates replace the file), a new size,
/// or a new mtime/ctime to the nanosecond.
struct FileStamp {
  int error = 0;  ///< errno of a failed stat, 0 when it succeeded.
  uint64_t device = 0;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;

  bool operator==(const FileStamp&) const = default;
};

/// Stats `path` (following symlinks, as ConfigMap mounts need). Never fails:
/// a failure is a stamp with `error` set, so "still missing" compares equal.
FileStamp StampFile(const std::string& path);

/// The whole file, which must be a regular file (a FIFO put in its place
/// must not block the reload thread): ReadRegularFile's errors, which name
/// the file ("policy.yaml: cannot read: No such file or directory").
absl::StatusOr<std::string> ReadPolicyFile(const std::string& path);

}  // namespace tessera::config_internal
