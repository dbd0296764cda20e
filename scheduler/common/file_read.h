// Reading a whole file that someone else controls (policy file, cluster file,
// kubeconfig, token, CA) without letting its path block or flood the reader.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tessera {

/// The content of `path`, which must be a regular file (symlinks followed, as
/// ConfigMap and projected-token mounts need) of at most `max_bytes`.
///
/// Opened non-blocking and checked with fstat(2) before a byte is read: a FIFO
/// in its place (or a socket, /dev/zero, a directory) is refused at once
/// instead of blocking the reading thread (for the policy file, the control
/// loop that also drains the server) or filling memory.
///
/// \return the text, or an error naming the path: "policy.yaml: cannot read:
///   No such file or directory" with the code errno maps to, "...: cannot
///   read: not a regular file (a FIFO)" or "...: cannot read: larger than
///   1048576 bytes" (InvalidArgument).
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes);

}  // namespace tessera
