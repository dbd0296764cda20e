#include "k8s/sync/pod_sink.h"

#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/gpu_assignment.h"
#include "k8s/pod_gpu_request.h"
#include "k8s/visible_devices.h"
#include "k8s/pod_record.h"
#include "scheduler/common/log.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {

PodSink::PodSink(ClusterModel& model, PodDirectory& directory, MetricsRegistry* metrics)
    : model_(model), directory_(directory), metrics_(metrics) {}

void PodSink::BeginList() {
  listing_ = true;
  listed_.clear();
}

void PodSink::Forget(const std::string& uid) {
  model_.RemovePod(uid);
  model_.ReleaseReservation(uid);
  directory_.Remove(uid);
  ClearProblem(uid);
  tracked_.erase(uid);
  dirty_ = true;
}

void PodSink::SetProblem(const PodRecord& pod, std::string kind, std::string message) {
  const std::string key = absl::StrCat(pod.namespace_name, "/", pod.name);
  absl::MutexLock lock(&problems_mu_);
  auto [it, inserted] = problems_.try_emplace(pod.uid);
  if (inserted || it->second.message != message) {
    LogWarning(absl::StrCat("pod ", key, ": ", message));
    if (metrics_ != nullptr) {
      metrics_->Counter("tessera_pod_assignment_problems_total",
                        "Pods whose GPU assignment annotation is inconsistent, by kind.", {{"kind", kind}})
          .Inc();
    }
  }
  it->second = PodProblem{pod.uid, key, std::move(kind), std::move(message)};
}

void PodSink::ClearProblem(const std::string& uid) {
  absl::MutexLock lock(&problems_mu_);
  problems_.erase(uid);
}

PodHolding PodSink::HostHolding(const PodRecord& pod) {
  PodHolding holding;
  holding.uid = pod.uid;
  holding.pod_key = absl::StrCat(pod.namespace_name, "/", pod.name);
  holding.assignment.node = pod.node_name;
  holding.host = pod.host;
  holding.priority = pod.priority;
  holding.tenant_label = pod.tenant_label;
  return holding;
}

void PodSink::CountHostOnly(const PodRecord& pod) { model_.UpsertPod(HostHolding(pod)); }

absl::StatusOr<GpuAssignment> PodSink::HandedDevices(const PodRecord& pod) const {
  auto visible = pod.annotations.find(Absl(kVisibleDevices));
  if (visible == pod.annotations.end()) return absl::NotFoundError(absl::StrCat("no ", Absl(kVisibleDevices)));
  const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Current();
  const std::optional<NodeIndex> node = snapshot->FindNode(pod.node_name);
  if (!node.has_value() || !snapshot->View(*node).inventory_ok()) {
    return absl::FailedPreconditionError(absl::StrCat("node ", pod.node_name, "'s GPUs are not known yet"));
  }
  // The share the pod asks per GPU; unreadable, the whole GPU (the safe side).
  absl::StatusOr<std::optional<PodGpuRequest>> request = ParsePodGpuRequest(pod.annotations);
  const PodGpuRequest* asked = request.ok() && request->has_value() ? &**request : nullptr;
  return AssignmentFromVisibleDevices(visible->second, pod.node_name, snapshot->View(*node).gpus, asked);
}

absl::Status PodSink::Upsert(simdjson::dom::element object) {
  absl::StatusOr<PodRecord> pod = DecodePodRecord(object);
  if (!pod.ok()) return pod.status();
  const std::string uid = pod->uid;
  if (listing_) listed_.insert(uid);
  if (IsTerminalPhase(pod->phase)) {
    // Finished: its claim on GPUs, CPU and memory ended with its containers.
    if (tracked_.contains(uid)) Forget(uid);
    return absl::OkStatus();
  }
  // The API server validates quantities, so this is not expected; the pod
  // still counts its GPUs, with no host request.
  const bool host_problem = !pod->host_error.ok() && !pod->node_name.empty();
  if (host_problem) SetProblem(*pod, "invalid_host_request", std::string(pod->host_error.message()));
  if (pod->annotations.empty()) {
    UpsertPlainPod(*pod, host_problem);
  } else {
    UpsertAnnotatedPod(*std::move(pod), host_problem);
  }
  return absl::OkStatus();
}

void PodSink::UpsertPlainPod(const PodRecord& pod, bool host_problem) {
  const std::string& uid = pod.uid;
  // Not a GPU pod: once bound it holds its host request, nothing else.
  if (pod.node_name.empty()) {
    // Pending: nothing to count yet. (Tracked only if it was a GPU pod.)
    if (tracked_.contains(uid)) Forget(uid);
    return;
  }
  if (!tracked_.insert(uid).second) {
    directory_.Remove(uid);  // it may have been a GPU pod before
    if (!host_problem) ClearProblem(uid);
  }
  CountHostOnly(pod);
  dirty_ = true;
}

void PodSink::UpsertAnnotatedPod(PodRecord pod, bool host_problem) {
  const std::string uid = pod.uid;
  tracked_.insert(uid);
  dirty_ = true;

  auto assignment_text = pod.annotations.find(Absl(kGpuAssignment));
  if (pod.node_name.empty() || assignment_text == pod.annotations.end()) {
    // Pending, or bound without an assignment (bound by another scheduler):
    // it holds no GPU that Tessera counts, only its host request once bound.
    // A bind in flight for it keeps its GPUs.
    if (pod.node_name.empty()) {
      model_.RemovePod(uid);
    } else {
      CountHostOnly(pod);
    }
    if (!host_problem) ClearProblem(uid);
    directory_.Upsert(std::move(pod));
    return;
  }
  absl::StatusOr<GpuAssignment> assignment = ParseGpuAssignment(assignment_text->second);
  if (!assignment.ok()) {
    // The pod runs, but its record of what it holds cannot be read. Counted
    // as free, its GPUs would be given again; so it holds what the devices
    // it was handed say, or else its node takes no GPU pod until it is resolved.
    absl::StatusOr<GpuAssignment> handed = HandedDevices(pod);
    if (!handed.ok()) {
      SetProblem(pod, "invalid_assignment",
                 absl::StrCat(assignment.status().message(), "; its node ", pod.node_name,
                              " takes no GPU pod until it is resolved (", handed.status().message(), ")"));
      PodHolding holding = HostHolding(pod);
      holding.unknown_holding = absl::StrCat("unreadable ", Absl(kGpuAssignment));
      model_.UpsertPod(std::move(holding));
      directory_.Upsert(std::move(pod));
      return;
    }
    SetProblem(pod, "invalid_assignment",
               absl::StrCat(assignment.status().message(), "; counted as holding the GPUs its ",
                            Absl(kVisibleDevices), " names"));
    assignment = *std::move(handed);
  } else if (assignment->node != pod.node_name) {
    // The pod runs where spec.nodeName says, and the device plugin hands it
    // the GPU indices of the annotation there: count them on that node.
    SetProblem(pod, "node_mismatch",
               absl::StrCat("assignment names node ", assignment->node, " but the pod is bound to ", pod.node_name,
                            "; its GPUs are counted on ", pod.node_name));
    assignment->node = pod.node_name;
  } else if (!host_problem) {
    ClearProblem(uid);
  }
  PodHolding holding;
  holding.uid = uid;
  holding.pod_key = absl::StrCat(pod.namespace_name, "/", pod.name);
  holding.assignment = std::move(*assignment);
  holding.host = pod.host;
  holding.bound_at = pod.scheduled_at;
  holding.priority = pod.priority;
  holding.tenant_label = pod.tenant_label;
  // A bind Tessera made itself knows its time better than the condition
  // (same second at best): keep the reservation's.
  if (std::optional<PodHolding> reserved = model_.FindReservation(uid)) holding.bound_at = reserved->bound_at;
  model_.UpsertPod(std::move(holding));
  directory_.Upsert(std::move(pod));
}

absl::Status PodSink::Delete(simdjson::dom::element object) {
  absl::StatusOr<PodRecord> pod = DecodePodRecord(object);
  if (!pod.ok()) return pod.status();
  // Also releases a bind in flight for a pod deleted before it was confirmed.
  model_.ReleaseReservation(pod->uid);
  if (tracked_.contains(pod->uid)) Forget(pod->uid);
  dirty_ = true;
  return absl::OkStatus();
}

void PodSink::EndList() {
  // Pods deleted while no watch was running.
  std::vector<std::string> gone;
  for (const std::string& uid : tracked_) {
    if (!listed_.contains(uid)) gone.push_back(uid);
  }
  for (const std::string& uid : gone) Forget(uid);
  listing_ = false;
  listed_.clear();
}

void PodSink::Flush() {
  if (!dirty_) return;
  model_.Publish();
  dirty_ = false;
}

std::vector<PodProblem> PodSink::problems() const {
  absl::MutexLock lock(&problems_mu_);
  std::vector<PodProblem> out;
  out.reserve(problems_.size());
  for (const auto& [uid, p] : problems_) out.push_back(p);
  return out;
}

}  // namespace tessera::k8s
