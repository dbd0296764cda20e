// The agent's loop: probe the GPUs, publish the annotations, then wait for
// the next period, or less when a GPU breaks.
//
//   ┌─> probe (NVML) ─> annotations ─> publish (GET node, PATCH if changed)
//   │                                        │
//   └── wait: `interval`, or 10 s after a failure; a critical XID ends the
//       wait at once, so a broken GPU is off limits within a second or so
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "agent/annotations.h"
#include "agent/gpu_probe.h"
#include "agent/nvml/nvml_library.h"
#include "agent/publisher.h"
#include "agent/xid_watch.h"

namespace tessera::agent {

struct NodeAgentOptions {
  /// How often the node is probed and its annotations checked.
  absl::Duration interval = absl::Seconds(60);
  /// After a failed probe or publication, the next try comes this soon (at most `interval`).
  absl::Duration retry = absl::Seconds(10);
  /// XIDs that leave a GPU healthy (ApplicationXids() and the operator's).
  std::set<uint64_t> ignored_xids = ApplicationXids();
};

/// The annotations one probe publishes: inventory, and topology (removed
/// when the node has none to give).
DesiredAnnotations AnnotationsOf(const NodeGpus& gpus);

class NodeAgent {
 public:
  NodeAgent(NvmlLibrary& nvml, NodePublisher& publisher, NodeAgentOptions options);
  ~NodeAgent();

  /// Probes and publishes once. The annotations of a failed probe are not
  /// published: the node keeps the last good ones.
  absl::Status PublishOnce();
  /// PublishOnce, then waits, until `stop` is notified (checked at least
  /// every 250 ms).
  void Run(const absl::Notification& stop);

  /// GPUs the agent found broken since it started, by UUID.
  [[nodiscard]] const std::map<std::string, std::string>& broken() const { return broken_; }

 private:
  /// Waits until `deadline`, `stop`, or a newly broken GPU (then true).
  bool WaitForXid(absl::Time deadline, const absl::Notification& stop);

  NvmlLibrary& nvml_;
  NodePublisher& publisher_;
  NodeAgentOptions options_;
  std::unique_ptr<XidWatch> xids_;  // null when the driver has no event API
  std::map<std::string, std::string> broken_;
  std::unique_ptr<NodeGpus> last_;  // the last good probe
};

}  // namespace tessera::agent
