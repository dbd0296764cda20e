#include "agent/node_agent.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "k8s/annotations.h"
#include "scheduler/common/log.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::agent {

DesiredAnnotations AnnotationsOf(const NodeGpus& gpus) {
  return {{std::string(k8s::kGpuInventory), InventoryAnnotation(gpus)},
          {std::string(k8s::kGpuTopology), TopologyAnnotation(gpus)}};
}

NodeAgent::NodeAgent(NvmlLibrary& nvml, NodePublisher& publisher, NodeAgentOptions options)
    : nvml_(nvml), publisher_(publisher), options_(std::move(options)) {
  std::vector<std::string> notes;
  absl::StatusOr<std::unique_ptr<XidWatch>> watch = XidWatch::Start(nvml_, options_.ignored_xids, notes);
  if (watch.ok()) {
    xids_ = *std::move(watch);
  } else {
    LogWarning(absl::StrCat("XID errors are not watched: ", watch.status().message()));
  }
  for (const std::string& note : notes) LogWarning(note);
}

NodeAgent::~NodeAgent() = default;

absl::Status NodeAgent::PublishOnce() {
  absl::StatusOr<NodeGpus> gpus = ProbeGpus(nvml_, broken_, last_.get());
  if (!gpus.ok()) return absl::Status(gpus.status().code(), absl::StrCat("probe: ", gpus.status().message()));
  for (const std::string& note : gpus->notes) LogWarning(note);
  // What a GPU lost later was, whether or not this publication goes through.
  last_ = std::make_unique<NodeGpus>(*std::move(gpus));
  absl::StatusOr<bool> patched = publisher_.Publish(AnnotationsOf(*last_));
  if (!patched.ok()) return patched.status();
  if (*patched) {
    std::vector<std::string> unhealthy;
    for (const ProbedGpu& g : last_->gpus) {
      if (!g.device.healthy) unhealthy.push_back(absl::StrCat("GPU ", g.device.index, ": ", g.unhealthy_reason));
    }
    LogInfo(absl::StrCat("node ", publisher_.node_name(), ": published ", last_->gpus.size(), " GPUs",
                         unhealthy.empty() ? "" : "; unhealthy: ", absl::StrJoin(unhealthy, "; ")));
  }
  return absl::OkStatus();
}

bool NodeAgent::WaitForXid(absl::Time deadline, const absl::Notification& stop) {
  constexpr absl::Duration kStopCheck = absl::Milliseconds(250);
  bool watching = xids_ != nullptr;
  while (!stop.HasBeenNotified()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    if (!watching) {
      stop.WaitForNotificationWithTimeout(left);
      continue;
    }
    absl::StatusOr<std::optional<BrokenGpu>> event = xids_->Wait(std::min(left, kStopCheck));
    if (!event.ok()) {
      // A failing wait must not spin: the plain timer until the next period,
      // which tries again (and the probe sees a GPU that fell off the bus).
      LogWarning(absl::StrCat("waiting for XID errors: ", event.status().message()));
      watching = false;
      continue;
    }
    if (!event->has_value() || broken_.count((*event)->uuid) > 0) continue;
    LogWarning(absl::StrCat("GPU ", (*event)->uuid, " is unhealthy: ", (*event)->reason));
    broken_[(*event)->uuid] = (*event)->reason;
    return true;
  }
  return false;
}

void NodeAgent::Run(const absl::Notification& stop) {
  while (!stop.HasBeenNotified()) {
    const absl::Status st = PublishOnce();
    if (!st.ok()) LogError(absl::StrCat("node ", publisher_.node_name(), ": ", st.message()));
    const absl::Duration wait = st.ok() ? options_.interval : std::min(options_.retry, options_.interval);
    WaitForXid(absl::Now() + wait, stop);
  }
}

}  // namespace tessera::agent
