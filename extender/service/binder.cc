#include "extender/service/binder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/tenancy/tenant_ledger.h"
#include "scheduler/tenancy/victim_choice.h"
#include "k8s/annotations.h"
#include "k8s/gpu_assignment.h"
#include "k8s/pod_gpu_request.h"
#include "scheduler/common/log.h"
#include "scheduler/cache/pool_usage.h"
#include "scheduler/model/absl_compat.h"
#include "extender/service/profile_request.h"

namespace tessera {

namespace {

constexpr char kAssumptionsHelp[] =
    "Pods whose GPUs filter reserved on the one node it passed them on to, until their bind (assumed), or could "
    "not (not_assumed: the node filled meanwhile, or a bind was in flight).";
constexpr char kReservationsExpiredHelp[] = "Bind reservations released unconfirmed after the TTL.";
constexpr char kAssumptionsExpiredHelp[] = "Filter's assumptions released after their TTL with no bind of the pod.";

}  // namespace

Binder::Binder(ClusterModel& model, const PodDirectory& pods, k8s::PodApi& api,
               std::function<std::shared_ptr<const Profile>()> profile, MetricsRegistry& metrics, BinderOptions options)
    : model_(model),
      pods_(pods),
      api_(api),
      profile_(std::move(profile)),
      metrics_(metrics),
      options_(options),
      // Looked up once: Assume runs on every filter that names one node.
      assumed_count_(metrics.Counter("tessera_filter_assumptions_total", kAssumptionsHelp, {{"result", "assumed"}})),
      not_assumed_count_(
          metrics.Counter("tessera_filter_assumptions_total", kAssumptionsHelp, {{"result", "not_assumed"}})),
      // At 0 from the start, as below.
      reservations_expired_count_(metrics.Counter("tessera_reservations_expired_total", kReservationsExpiredHelp)),
      assumptions_expired_count_(metrics.Counter("tessera_filter_assumptions_expired_total", kAssumptionsExpiredHelp)) {
  // Every outcome's series at 0 from the start: rate() and increase() count
  // the first of each only when its series existed before it.
  for (std::string_view result : {"success", "no_fit", "invalid_request", "pod_lookup", "pod_replaced", "deadline",
                                  "binding", "binding_timeout"}) {
    metrics_.Counter("tessera_binds_total", "Bind requests by result.", {{"result", std::string(result)}});
  }
}

absl::Status Binder::Fail(std::string_view reason, absl::Status status) {
  metrics_.Counter("tessera_binds_total", "Bind requests by result.", {{"result", std::string(reason)}}).Inc();
  LogWarning(absl::StrCat("bind failed (", Absl(reason), "): ", status.message()));
  return status;
}

absl::Status Binder::CheckTenantMax(const PodRecord& pod, const CycleState& cycle,
                                    const ClusterSnapshot& snapshot) const {
  const std::shared_ptr<const TenantSet> tenants = options_.tenants ? options_.tenants() : nullptr;
  if (tenants == nullptr || tenants->empty() || !cycle.wants_gpus()) return absl::OkStatus();
  const QuotaVerdict verdict = TenantLedger(*tenants, snapshot)
                                   .Admit(tenants->TenantOf(pod.namespace_name, pod.tenant_label),
                                          TotalsOfRequest(cycle));
  // Only the maximum is a hard limit here: borrowing was judged at filter,
  // and the GPUs themselves are checked below.
  if (verdict.code != QuotaVerdict::Code::kOverMax) return absl::OkStatus();
  return absl::FailedPreconditionError(verdict.message);
}

namespace {

// The vendor of the assignment's GPUs (its first GPU's: a pod's GPUs are one
// node's, and nodes are of one vendor); NVIDIA when the model does not know.
GpuVendor VendorOf(const ClusterSnapshot& snapshot, const GpuAssignment& assignment) {
  const std::optional<NodeIndex> node = snapshot.FindNode(assignment.node);
  if (!node.has_value() || assignment.gpus.empty()) return GpuVendor::kNvidia;
  for (const GpuDevice& g : snapshot.View(*node).gpus) {
    if (g.index == assignment.gpus.front().index) return g.vendor;
  }
  return GpuVendor::kNvidia;
}

}  // namespace

absl::StatusOr<GpuAssignment> Binder::Reserve(const PodRecord& pod, const PodGpuRequest& request,
                                              std::string_view node, bool* fresh, bool assuming) {
  *fresh = false;
  const std::string pod_key = absl::StrCat(pod.namespace_name, "/", pod.name);
  const absl::Time expires_at = absl::Now() + (assuming ? options_.assume_ttl : options_.reservation_ttl);
  absl::MutexLock lock(&reserve_mu_);
  if (std::optional<PodHolding> held = model_.FindPod(pod.uid)) {
    // The watch already shows the pod bound with its assignment: this is a
    // repeated bind whose first answer was lost. Never allocate twice.
    if (held->assignment.node == node) return held->assignment;
    return absl::FailedPreconditionError(
        absl::StrCat("pod ", pod_key, " already holds GPUs on node ", held->assignment.node));
  }
  if (std::optional<PodHolding> reserved = model_.FindReservation(pod.uid)) {
    const bool was_assumed = assumed_.contains(pod.uid);
    // A bind in flight is the bind's: a filter of the same pod leaves it.
    if (assuming && !was_assumed) return absl::AlreadyExistsError(absl::StrCat("pod ", pod_key, " is being bound"));
    if (reserved->assignment.node == node) {
      // Same pod, same node (a bind retried, or the bind of a pod filter
      // assumed): keep its GPUs, restart the clock. (Nothing the snapshot
      // shows changes, so nothing is published.)
      if (!model_.ExtendReservation(pod.uid, expires_at)) {
        return absl::FailedPreconditionError(absl::StrCat("pod ", pod_key, ": its reservation is gone"));
      }
      if (was_assumed && !assuming) {
        assumed_.erase(pod.uid);
        *fresh = true;  // the bind's now: released if the bind fails
      }
      return reserved->assignment;
    }
    model_.ReleaseReservation(pod.uid);  // retried onto another node
    assumed_.erase(pod.uid);
    UnreserveLocked(pod.uid);
  }
  // Chosen on the snapshot requests read now, which is at most one writer's
  // batch behind the model (writers publish right after they change it), and
  // the model's guard refuses GPUs taken meanwhile. So the one snapshot built
  // here is the reservation's. Refused on a stale snapshot, the choice is
  // made once more on a fresh one: the GPUs may have been freed, or taken.
  const std::shared_ptr<const ClusterSnapshot> current = model_.Current();
  absl::StatusOr<GpuAssignment> placed = PlaceAndReserve(pod, pod_key, request, node, *current, expires_at);
  if (!placed.ok()) {
    const std::shared_ptr<const ClusterSnapshot> fresh_snapshot = model_.Publish();
    if (fresh_snapshot->generation() == current->generation()) return placed.status();
    placed = PlaceAndReserve(pod, pod_key, request, node, *fresh_snapshot, expires_at);
    if (!placed.ok()) return placed.status();
  }
  model_.Publish();
  if (assuming) assumed_.insert(pod.uid);
  *fresh = true;
  return placed;
}

absl::StatusOr<GpuAssignment> Binder::PlaceAndReserve(const PodRecord& pod, const std::string& pod_key,
                                                      const PodGpuRequest& request, std::string_view node,
                                                      const ClusterSnapshot& snapshot, absl::Time expires_at) {
  const std::optional<NodeIndex> index = snapshot.FindNode(node);
  if (!index.has_value() || !snapshot.View(*index).inventory_ok()) {
    return absl::FailedPreconditionError(absl::StrCat("node ", Absl(node), " has no GPUs Tessera knows of"));
  }
  const NodeView& view = snapshot.View(*index);
  absl::StatusOr<std::shared_ptr<const Profile>> routed = ProfileFor(pod, snapshot.node(*index));
  if (!routed.ok()) return routed.status();
  const std::shared_ptr<const Profile> profile = *std::move(routed);
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
  if (absl::Status quota = CheckTenantMax(pod, cycle, snapshot); !quota.ok()) return quota;
  GpuAssignment assignment{.node = std::string(node), .gpus = profile->SharesFor(cycle, view, *choice)};
  // The Reserve point: a plugin that keeps state about pods, or vetoes a
  // placement at the last moment, before the model counts the GPUs.
  if (absl::Status reserved = profile->Reserve(cycle, view, assignment.gpus); !reserved.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Absl(node), " can no longer take pod ", pod_key, ": ", reserved.message()));
  }
  PodHolding holding;
  holding.uid = pod.uid;
  holding.pod_key = pod_key;
  holding.assignment = assignment;
  holding.host = request.host;
  holding.bound_at = absl::Now();  // load-aware counts it until a newer utilisation sample
  holding.priority = pod.priority;
  holding.tenant_label = pod.tenant_label;
  // The model checks capacity itself: a policy whose GPU choice ignores what
  // pods hold is refused here rather than over-committing a GPU.
  if (absl::Status reserved = model_.Reserve(std::move(holding), expires_at); !reserved.ok()) {
    profile->Unreserve(cycle, node, assignment.gpus);
    return absl::FailedPreconditionError(
        absl::StrCat("node ", Absl(node), " can no longer take pod ", pod_key, ": ", reserved.message()));
  }
  if (profile->has_reserve_plugins()) {
    plugin_reservations_.insert_or_assign(
        pod.uid, PluginReservation{.profile = profile, .request = request, .node = std::string(node),
                                   .shares = assignment.gpus});
  }
  return assignment;
}

absl::StatusOr<std::shared_ptr<const Profile>> Binder::ProfileFor(const PodRecord& pod, const NodeState& node) const {
  if (!options_.profiles) return profile_();
  const std::shared_ptr<const ProfileSet> policy = options_.profiles();
  PoolRoute route(*policy, pod.task_type);
  // Filter refused such a node; the pod's labels or the policy changed since.
  if (const FilterVerdict* refusal = route.Refusal(node.pool)) {
    return absl::FailedPreconditionError(absl::StrCat("node ", node.name, " can no longer take pod ", pod.namespace_name,
                                                      "/", pod.name, ": ", refusal->message));
  }
  return route.profile();
}

void Binder::CountBound(const PodRecord& pod, std::string_view node) {
  if (!options_.profiles) return;
  const std::shared_ptr<const ProfileSet> policy = options_.profiles();
  if (policy->pools().empty()) return;
  const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Current();
  const std::optional<NodeIndex> index = snapshot->FindNode(node);
  const std::string pool = index.has_value() && !snapshot->node(*index).pool.empty() ? snapshot->node(*index).pool
                                                                                     : std::string(kNoPool);
  // Bounded labels: a task type no pool lists is "(other)", whatever it says.
  const std::string task_type = pod.task_type.empty()                ? std::string(kNoPool)
                                : policy->PoolFor(pod.task_type) != nullptr ? pod.task_type
                                                                           : std::string("(other)");
  metrics_
      .Counter("tessera_pool_pods_bound_total",
               "Pods bound per node pool and task type (the pod's tessera.io/task-type when a pool of the policy "
               "lists it, (none) without one, (other) else).",
               {{"pool", pool}, {"task_type", task_type}})
      .Inc();
}

absl::StatusOr<bool> Binder::ReserveHost(const PodRecord& pod, std::string_view node) {
  absl::MutexLock lock(&reserve_mu_);
  // A node the model does not know has no host to count on.
  if (!model_.Current()->FindNode(node).has_value()) return false;
  PodHolding holding;
  holding.uid = pod.uid;
  holding.pod_key = absl::StrCat(pod.namespace_name, "/", pod.name);
  holding.assignment.node = std::string(node);
  holding.host = pod.host;
  holding.bound_at = absl::Now();
  holding.priority = pod.priority;
  holding.tenant_label = pod.tenant_label;
  // Replaces a reservation of the pod on another node. It holds no GPU, so
  // the model's guard has nothing to refuse today; were it to refuse, the
  // bind says so rather than binding a pod the model does not count.
  if (absl::Status reserved = model_.Reserve(std::move(holding), absl::Now() + options_.reservation_ttl);
      !reserved.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("node ", Absl(node), " can no longer take pod ",
                                                      pod.namespace_name, "/", pod.name, ": ", reserved.message()));
  }
  model_.Publish();
  return true;
}

absl::StatusOr<PodRecord> Binder::PodToBind(const k8s::PodRef& ref, absl::Time deadline) {
  // The pod as the watch last saw it; if the watch lags, as the server has it.
  if (std::optional<PodRecord> pod = pods_.Find(ref.uid)) return *std::move(pod);
  const std::string pod_key = absl::StrCat(ref.namespace_name, "/", ref.name);
  absl::StatusOr<PodRecord> fetched = api_.GetPod(ref.namespace_name, ref.name, deadline);
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

Binder::Pending::~Pending() { Abandon(); }

Binder::Pending& Binder::Pending::operator=(Pending&& other) noexcept {
  if (this != &other) {
    Abandon();
    binder_ = std::exchange(other.binder_, nullptr);
    ref_ = std::move(other.ref_);
    node_ = std::move(other.node_);
    deadline_ = other.deadline_;
    start_ = other.start_;
    result_ = std::move(other.result_);
    pod_ = std::move(other.pod_);
    assignment_ = std::move(other.assignment_);
    annotations_ = std::move(other.annotations_);
    reserved_fresh_ = std::exchange(other.reserved_fresh_, false);
  }
  return *this;
}

Binder::Pending::Pending(Pending&& other) noexcept { *this = std::move(other); }

void Binder::Pending::Abandon() {
  // Reserved here and never written: nobody will bind the pod on this
  // ticket, so its GPUs go back now rather than at the TTL. (One taken over
  // from an earlier bind of the same pod may have landed: it stays.)
  if (binder_ != nullptr && reserved_fresh_) binder_->Release(ref_.uid);
  reserved_fresh_ = false;
  binder_ = nullptr;
}

void Binder::Release(const std::string& uid) {
  absl::MutexLock lock(&reserve_mu_);
  assumed_.erase(uid);
  UnreserveLocked(uid);
  if (model_.ReleaseReservation(uid)) model_.Publish();
}

void Binder::UnreserveLocked(const std::string& uid) {
  const auto it = plugin_reservations_.find(uid);
  if (it == plugin_reservations_.end()) return;
  const PluginReservation& r = it->second;
  r.profile->Unreserve(CycleState(r.request), r.node, r.shares);
  plugin_reservations_.erase(it);
}

void Binder::Assume(std::string_view uid, std::string_view node, const PodGpuRequest& request) {
  if (request.count == 0) return;
  const std::optional<PodRecord> pod = pods_.Find(uid);
  if (!pod.has_value()) return;
  bool fresh = false;
  const absl::StatusOr<GpuAssignment> assumed = Reserve(*pod, request, node, &fresh, /*assuming=*/true);
  // Refused (the node filled since the filter read it, a bind in flight):
  // nothing held; the bind decides as it would have.
  (assumed.ok() ? assumed_count_ : not_assumed_count_).Inc();
}

Binder::Pending Binder::Begin(const k8s::ExtenderBindingArgs& args, absl::Time deadline) {
  Pending p;
  p.binder_ = this;
  p.ref_ = {std::string(args.pod_namespace), std::string(args.pod_name), std::string(args.pod_uid)};
  p.node_ = std::string(args.node);
  p.deadline_ = deadline;
  p.start_ = options_.clock->Now();
  if (p.start_ >= deadline) {
    p.result_ = Fail("deadline", absl::DeadlineExceededError(absl::StrCat(
                                     "the bind of pod ", p.pod_key(),
                                     " reached its deadline (--bind-timeout) before it could start; Tessera is busy")));
    return p;
  }
  // The pod as the watch last saw it; when the watch lags, Finish reads it
  // from the API server and reserves then.
  if (std::optional<PodRecord> pod = pods_.Find(p.ref_.uid)) {
    p.pod_ = *std::move(pod);
    ReserveFor(p);
  }
  return p;
}

void Binder::ReserveFor(Pending& p) {
  PodRecord& pod = *p.pod_;
  absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(pod.annotations);
  if (!request.ok()) {
    p.result_ = Fail("invalid_request", request.status());
    return;
  }
  // An unreadable CPU or memory request (the watch reports it) counts as
  // none: kube-scheduler has placed the pod by its own reading.
  if (!pod.host_error.ok()) pod.host = HostRequest{};
  if (!request->has_value()) {
    // Not a GPU pod: Tessera is this scheduler's binder, so it binds it all
    // the same, with no assignment. Its CPU and memory count from now, so
    // the next pods' scores see them before the watch does. No fit check:
    // kube-scheduler's own NodeResourcesFit has placed it.
    absl::StatusOr<bool> reserved = ReserveHost(pod, p.node_);
    if (!reserved.ok()) {
      p.result_ = Fail("no_fit", reserved.status());
      return;
    }
    p.reserved_fresh_ = *reserved;
    return;
  }
  bool fresh = false;
  absl::StatusOr<GpuAssignment> reserved = Reserve(pod, ProfileRequest(*request, pod.host), p.node_, &fresh);
  if (!reserved.ok()) {
    p.result_ = Fail("no_fit", reserved.status());
    return;
  }
  p.reserved_fresh_ = fresh;
  p.assignment_ = *std::move(reserved);
  // One write: the API server copies the Binding's annotations onto the
  // pod together with spec.nodeName, under the uid precondition, so the
  // kubelet never sees the pod bound without its GPUs on record.
  p.annotations_ = {{std::string(k8s::kGpuAssignment), k8s::FormatGpuAssignment(*p.assignment_)}};
  // A MIG instance without its UUID (from GPU Feature Discovery's labels) is
  // named by no one here: the device plugin hands over the instance it
  // allocates for the pod's nvidia.com/mig-<profile> (the webhook sets no
  // NVIDIA_VISIBLE_DEVICES beside that resource).
  std::string visible = k8s::FormatVisibleDevices(*p.assignment_, VendorOf(*model_.Current(), *p.assignment_));
  if (!visible.empty()) p.annotations_.emplace_back(std::string(k8s::kVisibleDevices), std::move(visible));
}

absl::Status Binder::Finish(Pending p) {
  if (p.result_.has_value()) return *p.result_;
  const std::string pod_key = p.pod_key();
  if (!p.pod_.has_value()) {
    absl::StatusOr<PodRecord> pod = PodToBind(p.ref_, p.deadline_);
    if (!pod.ok()) return pod.status();
    p.pod_ = *std::move(pod);
    ReserveFor(p);
    if (p.result_.has_value()) return *p.result_;
  }
  if (options_.clock->Now() >= p.deadline_) {
    // It waited for a bind thread until kube-scheduler stopped listening.
    return Fail("deadline", absl::DeadlineExceededError(absl::StrCat(
                                "the bind of pod ", pod_key,
                                " reached its deadline (--bind-timeout) before its Binding was sent; Tessera is busy")));
  }  // ~Pending releases what it reserved
  absl::Status bound = api_.Bind(p.ref_, p.node_, p.annotations_, p.deadline_);
  if (absl::IsFailedPrecondition(bound)) {
    // 409: maybe this very bind succeeded before and its answer was lost.
    absl::StatusOr<PodRecord> now = api_.GetPod(p.ref_.namespace_name, p.ref_.name, p.deadline_);
    if (now.ok() && now->uid == p.ref_.uid && now->node_name == p.node_) bound = absl::OkStatus();
  }
  if (absl::IsDeadlineExceeded(bound)) {
    // The API server may have written the Binding after we stopped waiting:
    // releasing the GPUs now could give them to another pod while this one
    // holds them. The watch confirms the pod, or the TTL releases them.
    p.reserved_fresh_ = false;
    return Fail("binding_timeout",
                absl::DeadlineExceededError(absl::StrCat(
                    "cannot bind pod ", pod_key, " to node ", p.node_, ": ", bound.message(),
                    "; its reservation stays until the watch shows whether the Binding landed")));
  }
  if (!bound.ok()) {
    Release(p.ref_.uid);
    p.reserved_fresh_ = false;
    return Fail("binding", absl::Status(bound.code(), absl::StrCat("cannot bind pod ", pod_key, " to node ", p.node_,
                                                                   ": ", bound.message())));
  }
  p.reserved_fresh_ = false;  // bound: the watch confirms the reservation
  CountBound(*p.pod_, p.node_);
  metrics_.Counter("tessera_binds_total", "Bind requests by result.", {{"result", "success"}}).Inc();
  metrics_.Histogram("tessera_bind_duration_seconds",
                     "Time to bind a pod from its arrival, the wait for a bind thread and API server calls included.",
                     {}, DefaultLatencyBuckets())
      .Observe(absl::ToDoubleSeconds(options_.clock->Now() - p.start_));
  LogInfo(absl::StrCat("bound ", pod_key, " to ", p.node_,
                       p.assignment_ ? absl::StrCat(" with GPUs ", k8s::FormatGpuAssignment(*p.assignment_)) : ""));
  return absl::OkStatus();
}

size_t Binder::ExpireReservations(absl::Time now) {
  std::vector<PodHolding> expired;
  std::vector<bool> was_assumed;
  {
    absl::MutexLock lock(&reserve_mu_);
    expired = model_.ExpireReservations(now);
    if (!expired.empty()) model_.Publish();
    for (const PodHolding& p : expired) {
      was_assumed.push_back(assumed_.erase(p.uid) > 0);
      UnreserveLocked(p.uid);
    }
    // A plugin reservation whose pod the watch shows holding its GPUs is
    // the pod's now: as kube-scheduler after a bind, no Unreserve.
    for (auto it = plugin_reservations_.begin(); it != plugin_reservations_.end();) {
      if (model_.FindReservation(it->first).has_value()) {
        ++it;
      } else {
        plugin_reservations_.erase(it++);
      }
    }
    // An assumption the watch confirmed (the pod bound without this
    // binder, e.g. by another replica) is no longer a reservation.
    for (auto it = assumed_.begin(); it != assumed_.end();) {
      if (model_.FindReservation(*it).has_value()) {
        ++it;
      } else {
        assumed_.erase(it++);
      }
    }
  }
  size_t binds = 0;
  for (size_t i = 0; i < expired.size(); ++i) {
    const PodHolding& p = expired[i];
    if (was_assumed[i]) {
      // kube-scheduler did not bind the pod filter passed on (a plugin of its
      // own stopped it, or it is still waiting): not an error.
      LogInfo(absl::StrCat("pod ", p.pod_key, " was not bound to ", p.assignment.node,
                           " within the assumption's TTL after filter; its GPUs are free again"));
      continue;
    }
    ++binds;
    LogWarning(absl::StrCat("bind of pod ", p.pod_key, " to ", p.assignment.node,
                            " was not confirmed by the watch within the TTL; its GPUs, CPU and memory are released"));
  }
  if (binds > 0) reservations_expired_count_.Inc(static_cast<double>(binds));
  if (expired.size() > binds) assumptions_expired_count_.Inc(static_cast<double>(expired.size() - binds));
  return expired.size();
}

}  // namespace tessera
