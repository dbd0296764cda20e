#include "extender/service/binder.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/gpu_assignment.h"
#include "k8s/pod_gpu_request.h"
#include "scheduler/common/log.h"
#include "scheduler/model/absl_compat.h"
#include "extender/service/profile_request.h"

namespace tessera {

Binder::Binder(ClusterModel& model, const PodDirectory& pods, k8s::PodApi& api,
               std::function<std::shared_ptr<const Profile>()> profile, MetricsRegistry& metrics, BinderOptions options)
    : model_(model), pods_(pods), api_(api), profile_(std::move(profile)), metrics_(metrics), options_(options) {}

absl::Status Binder::Fail(std::string_view reason, absl::Status status) {
  metrics_.Counter("tessera_binds_total", "Bind requests by result.", {{"result", std::string(reason)}}).Inc();
  LogWarning(absl::StrCat("bind failed (", Absl(reason), "): ", status.message()));
  return status;
}

absl::StatusOr<GpuAssignment> Binder::Reserve(const PodRecord& pod, const PodGpuRequest& request,
                                              std::string_view node) {
  const std::string pod_key = absl::StrCat(pod.namespace_name, "/", pod.name);
  absl::MutexLock lock(&reserve_mu_);
  if (std::optional<PodHolding> held = model_.FindPod(pod.uid)) {
    // The watch already shows the pod bound with its assignment: this is a
    // repeated bind whose first answer was lost. Never allocate twice.
    if (held->assignment.node == node) return held->assignment;
    return absl::FailedPreconditionError(
        absl::StrCat("pod ", pod_key, " already holds GPUs on node ", held->assignment.node));
  }
  if (std::optional<PodHolding> reserved = model_.FindReservation(pod.uid)) {
    if (reserved->assignment.node == node) {
      // Same pod, same node, bind retried: keep its GPUs, restart the clock.
      if (absl::Status kept = model_.Reserve(*reserved, absl::Now() + options_.reservation_ttl); !kept.ok()) {
        return absl::FailedPreconditionError(absl::StrCat("pod ", pod_key, ": ", kept.message()));
      }
      return reserved->assignment;
    }
    model_.ReleaseReservation(pod.uid);  // retried onto another node
  }
  const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Publish();
  const std::optional<NodeIndex> index = snapshot->FindNode(node);
  if (!index.has_value() || !snapshot->View(*index).inventory_ok()) {
    return absl::FailedPreconditionError(absl::StrCat("node ", Absl(node), " has no GPUs Tessera knows of"));
  }
  const NodeView& view = snapshot->View(*index);
  const std::shared_ptr<const Profile> profile = profile_();
  const CycleState cycle(request);
  const FilterVerdict verdict = profile->Filter(cycle, view);
  if (!verdict.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Absl(node), " can no longer take pod ", pod_key, ": ", verdict.message));
  }
  const std::optional<GpuChoice> choice = profile->ChooseGpus(cycle, view);
  if (!choice.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Absl(node), " can no longer take pod ", pod_key, ": its free GPUs were taken"));
  }
  GpuAssignment assignment{.node = std::string(node), .gpus = profile->SharesFor(cycle, view, *choice)};
  PodHolding holding;
  holding.uid = pod.uid;
  holding.pod_key = pod_key;
  holding.assignment = assignment;
  holding.host = request.host;
  holding.bound_at = absl::Now();  // load-aware counts it until a newer utilisation sample
  // The model checks capacity itself: a policy whose GPU choice ignores what
  // pods hold is refused here rather than over-committing a GPU.
  if (absl::Status reserved = model_.Reserve(std::move(holding), absl::Now() + options_.reservation_ttl);
      !reserved.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Absl(node), " can no longer take pod ", pod_key, ": ", reserved.message()));
  }
  model_.Publish();
  return assignment;
}

void Binder::ReserveHost(const PodRecord& pod, std::string_view node) {
  absl::MutexLock lock(&reserve_mu_);
  // A node the model does not know has no host to count on.
  if (!model_.Current()->FindNode(node).has_value()) return;
  PodHolding holding;
  holding.uid = pod.uid;
  holding.pod_key = absl::StrCat(pod.namespace_name, "/", pod.name);
  holding.assignment.node = std::string(node);
  holding.host = pod.host;
  holding.bound_at = absl::Now();
  // Holds no GPU, so the model's capacity guard has nothing to refuse.
  (void)model_.Reserve(std::move(holding), absl::Now() + options_.reservation_ttl);  // replaces one on another node
  model_.Publish();
}

absl::StatusOr<PodRecord> Binder::PodToBind(const k8s::PodRef& ref) {
  // The pod as the watch last saw it; if the watch lags, as the server has it.
  if (std::optional<PodRecord> pod = pods_.Find(ref.uid)) return *std::move(pod);
  const std::string pod_key = absl::StrCat(ref.namespace_name, "/", ref.name);
  absl::StatusOr<PodRecord> fetched = api_.GetPod(ref.namespace_name, ref.name);
  if (!fetched.ok()) {
    return Fail("pod_lookup", absl::Status(fetched.status().code(),
                                           absl::StrCat("cannot read pod ", pod_key, ": ", fetched.status().message())));
  }
  if (fetched->uid != ref.uid) {
    return Fail("pod_replaced", absl::FailedPreconditionError(absl::StrCat(
                                    "pod ", pod_key, " has uid ", fetched->uid, ", not ", ref.uid,
                                    ": it was deleted and created again")));
  }
  return fetched;
}

absl::Status Binder::Bind(const k8s::ExtenderBindingArgs& args) {
  const auto start = std::chrono::steady_clock::now();
  const k8s::PodRef ref{std::string(args.pod_namespace), std::string(args.pod_name), std::string(args.pod_uid)};
  const std::string pod_key = absl::StrCat(ref.namespace_name, "/", ref.name);

  absl::StatusOr<PodRecord> pod = PodToBind(ref);
  if (!pod.ok()) return pod.status();

  absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(pod->annotations);
  if (!request.ok()) return Fail("invalid_request", request.status());

  // An unreadable CPU or memory request (the watch reports it) counts as
  // none: kube-scheduler has placed the pod by its own reading.
  if (!pod->host_error.ok()) pod->host = HostRequest{};
  auto release = [&] {
    if (model_.ReleaseReservation(ref.uid)) model_.Publish();
  };
  std::optional<GpuAssignment> assignment;
  k8s::PodApi::Annotations annotations;
  if (request->has_value()) {
    absl::StatusOr<GpuAssignment> reserved = Reserve(*pod, ProfileRequest(*request, pod->host), args.node);
    if (!reserved.ok()) return Fail("no_fit", reserved.status());
    assignment = std::move(*reserved);
    // One write: the API server copies the Binding's annotations onto the
    // pod together with spec.nodeName, under the uid precondition, so the
    // kubelet never sees the pod bound without its GPUs on record.
    annotations = {{std::string(k8s::kGpuAssignment), k8s::FormatGpuAssignment(*assignment)},
                   {std::string(k8s::kVisibleDevices), k8s::FormatVisibleDevices(*assignment)}};
  } else {
    // Not a GPU pod: Tessera is this scheduler's binder, so it binds it all
    // the same, with no assignment. Its CPU and memory count from now, so
    // the next pods' scores see them before the watch does. No fit check:
    // kube-scheduler's own NodeResourcesFit has placed it.
    ReserveHost(*pod, args.node);
  }
  absl::Status bound = api_.Bind(ref, args.node, annotations);
  if (absl::IsFailedPrecondition(bound)) {
    // 409: maybe this very bind succeeded before and its answer was lost.
    absl::StatusOr<PodRecord> now = api_.GetPod(ref.namespace_name, ref.name);
    if (now.ok() && now->uid == ref.uid && now->node_name == args.node) bound = absl::OkStatus();
  }
  if (!bound.ok()) {
    release();
    return Fail("binding", absl::Status(bound.code(), absl::StrCat("cannot bind pod ", pod_key, " to node ",
                                                                   Absl(args.node), ": ", bound.message())));
  }
  metrics_.Counter("tessera_binds_total", "Bind requests by result.", {{"result", "success"}}).Inc();
  metrics_.Histogram("tessera_bind_duration_seconds", "Time to bind a pod, API server calls included.", {},
                     DefaultLatencyBuckets())
      .Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  LogInfo(absl::StrCat("bound ", pod_key, " to ", Absl(args.node),
                       assignment ? absl::StrCat(" with GPUs ", k8s::FormatVisibleDevices(*assignment)) : ""));
  return absl::OkStatus();
}

size_t Binder::ExpireReservations(absl::Time now) {
  std::vector<PodHolding> expired;
  {
    absl::MutexLock lock(&reserve_mu_);
    expired = model_.ExpireReservations(now);
    if (!expired.empty()) model_.Publish();
  }
  for (const PodHolding& p : expired) {
    LogWarning(absl::StrCat("bind of pod ", p.pod_key, " to ", p.assignment.node,
                            " was not confirmed by the watch within the TTL; its GPUs, CPU and memory are released"));
  }
  if (!expired.empty()) {
    metrics_.Counter("tessera_reservations_expired_total", "Bind reservations released unconfirmed after the TTL.")
        .Inc(static_cast<double>(expired.size()));
  }
  return expired.size();
}

}  // namespace tessera
