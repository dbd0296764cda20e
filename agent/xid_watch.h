// Critical XID errors as they happen: every GPU registered for
// nvmlEventTypeXidCriticalError, and a wait that turns an event into "this
// GPU is broken, because ...".
//
// XIDs that report an application's fault rather than the GPU's (NVIDIA's
// device plugin skips the same: 13 graphics engine exception, 31 memory page
// fault, 43 GPU stopped processing, 45 preemptive cleanup, 68 video processor
// exception, 109 context switch timeout) leave the GPU healthy; so do the
// operator's --ignored-xids. Every other XID marks the GPU unhealthy until the
// agent restarts (after the GPU is reset or replaced, restarting the agent's
// pod clears it), as the device plugin does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/nvml/nvml_library.h"

namespace tessera::agent {

/// The XIDs that leave a GPU healthy by default (see the file comment).
std::set<uint64_t> ApplicationXids();

/// "XID 79 (GPU has fallen off the bus)": the reason published for `xid`.
std::string XidReason(uint64_t xid);

/// A GPU that turned unhealthy: its UUID and why.
struct BrokenGpu {
  std::string uuid;
  std::string reason;
};

class XidWatch {
 public:
  /// Registers every GPU NVML sees. A GPU that cannot be registered is left
  /// unwatched (and named in `notes`); Unimplemented when the driver has no
  /// event API at all.
  static absl::StatusOr<std::unique_ptr<XidWatch>> Start(NvmlLibrary& nvml, std::set<uint64_t> ignored_xids,
                                                         std::vector<std::string>& notes);
  ~XidWatch();
  XidWatch(const XidWatch&) = delete;
  XidWatch& operator=(const XidWatch&) = delete;

  /// Waits at most `timeout` for one event. \return the GPU it broke, or
  ///   nullopt when none arrived or it was an ignored XID.
  absl::StatusOr<std::optional<BrokenGpu>> Wait(absl::Duration timeout);

 private:
  XidWatch(NvmlLibrary& nvml, nvmlEventSet_t set, std::set<uint64_t> ignored)
      : nvml_(nvml), set_(set), ignored_(std::move(ignored)) {}

  NvmlLibrary& nvml_;
  nvmlEventSet_t set_;
  std::set<uint64_t> ignored_;
  /// Each registered GPU's UUID, read while it could be: an XID 79 comes
  /// from a GPU that can no longer say its UUID.
  std::map<nvmlDevice_t, std::string> uuids_;
};

}  // namespace tessera::agent
