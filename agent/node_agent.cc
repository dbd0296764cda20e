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
  absl::StatusOr<bool> patched = publisher_.Publish(AnnotationsOf(*gpus));
  if (!patched.ok()) return patched.status();
  if (*patched) {
    std::vector<std::string> unhealthy;
    for (const ProbedGpu& g : gpus->gpus) {
      if (!g.device.healthy) unhealthy.push_back(absl::StrCat("GPU ", g.device.index, ": ", g.unhealthy_reason));
    }
    LogInfo(absl::StrCat("node ", publisher_.node_name(), ": published ", gpus->gpus.size(), " GPUs",
                         unhealthy.empty() ? "" : "; unhealthy: ", absl::StrJoin(unhealthy, "; ")));
  }
  last_ = std::make_unique<NodeGpus>(*std::move(gpus));
  return absl::OkStatus();
}

bool NodeAgent::WaitForXid(absl::Time deadline, const absl::Notification& stop) {
  constexpr absl::Duration kStopCheck = absl::Milliseconds(250);
  while (!stop.HasBeenNotified()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    if (xids_ == nullptr) {
      stop.WaitForNotificationWithTimeout(left);
      continue;
    }
    absl::StatusOr<std::optional<BrokenGpu>> event = xids_->Wait(std::min(left, kStopCheck));
    if (!event.ok()) {
      // A failing wait must not spin: fall back to the plain timer.
      LogWarning(absl::StrCat("XID errors are no longer watched: ", event.status().message()));
      xids_.reset();
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
