#include "extender/service/extender_service.h"

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "k8s/extender_args.h"
#include "k8s/extender_results.h"
#include "k8s/annotations.h"
#include "k8s/label_value.h"
#include "k8s/pod_gpu_request.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/tenancy/tenant_ledger.h"
#include "scheduler/tenancy/victim_choice.h"
#include "extender/service/candidate_nodes.h"
#include "extender/service/filter_shortlist.h"
#include "extender/service/preempt_verb.h"
#include "extender/service/profile_request.h"

namespace tessera {

// The Error filter and bind answer before the first full sync.
constexpr std::string_view kNotSyncedError =
    "Tessera is still reading nodes and pods from the API server; the pod will be retried";

namespace {

constexpr std::string_view kRejections = "tessera_filter_rejections_total";
constexpr std::string_view kRejectionsHelp = "Nodes rejected by filter, by reason.";
constexpr std::string_view kPrioritizedNodes = "tessera_prioritize_nodes_total";
constexpr std::string_view kPrioritizedNodesHelp =
    "Nodes prioritize scored through the score memo: computed, or answered from the memo.";
constexpr std::string_view kMemoBypassed = "tessera_prioritize_memo_bypassed_total";
constexpr std::string_view kMemoBypassedHelp =
    "Prioritize requests scored without the memo (a profile whose GPU choice is not memoisable, or the memo busy).";

constexpr std::string_view kPreemptNodes = "tessera_preempt_nodes_total";
constexpr std::string_view kPreemptNodesHelp =
    "Nodes kube-scheduler proposed to the preempt verb: kept with victims that free a GPU, or dropped.";

// One parser per thread that answers requests (I/O and verb threads),
// reused: a request is decoded and answered on one thread. Its buffers grow
// to the largest object it parsed (~15 bytes a byte of JSON; a filter body is
// parsed an object at a time, at most k8s::kMaxObjectBytes each). Past
// kKeptParserCapacity they are let go when the request is answered, so an
// idle thread holds ~15 MiB of them at most.
constexpr size_t kKeptParserCapacity = size_t{1} << 20;

simdjson::dom::parser& ThreadParser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

// Declared first in a verb, so that it outlives what the verb decoded.
class ThreadParserLease {
 public:
  ThreadParserLease() = default;
  ThreadParserLease(const ThreadParserLease&) = delete;
  ThreadParserLease& operator=(const ThreadParserLease&) = delete;
  ~ThreadParserLease() {
    if (ThreadParser().capacity() > kKeptParserCapacity) ThreadParser() = simdjson::dom::parser();
  }
};

size_t NodeCount(const k8s::ExtenderArgs& args) {
  return args.nodes ? args.nodes->size() : args.node_names->size();
}

std::string_view NodeName(const k8s::ExtenderArgs& args, size_t i) {
  return args.nodes ? (*args.nodes)[i].name : (*args.node_names)[i];
}

// The tenant quota's say on the pod, decided once for the whole request
// (quotas are cluster-wide): nullopt when it is admitted or there are no
// tenants; else the verdict every node gets.
std::optional<FilterVerdict> QuotaRefusal(const TenantSet* tenants, const k8s::WirePod& pod, const CycleState& cycle,
                                          const ClusterSnapshot& snapshot) {
  if (tenants == nullptr || tenants->empty() || !cycle.wants_gpus()) return std::nullopt;
  const std::optional<TenantIndex> tenant = tenants->TenantOf(pod.namespace_name, pod.tenant_label);
  const QuotaVerdict verdict = TenantLedger(*tenants, snapshot).Admit(tenant, TotalsOfRequest(cycle));
  switch (verdict.code) {
    case QuotaVerdict::Code::kAdmit: return std::nullopt;
    case QuotaVerdict::Code::kOverMax: return FilterVerdict::Never("tenant_over_max", verdict.message);
    case QuotaVerdict::Code::kNoIdleToBorrow: return FilterVerdict::NotNow("tenant_no_idle_to_borrow", verdict.message);
  }
  return std::nullopt;
}

// A `tessera.io/tenant` label that names no tenant: a typo must not place
// the pod outside every quota.
std::optional<std::string> UnknownTenant(const TenantSet* tenants, const k8s::WirePod& pod) {
  if (tenants == nullptr || tenants->empty() || pod.tenant_label.empty()) return std::nullopt;
  if (tenants->Find(pod.tenant_label).has_value()) return std::nullopt;
  std::vector<std::string> names;
  for (const TenantSpec& t : tenants->tenants()) names.push_back(t.name);
  return absl::StrCat("pod's label tessera.io/tenant=\"", Absl(pod.tenant_label),
                      "\" names no tenant of the policy in force (tenants: ", absl::StrJoin(names, ", "), ")");
}

// A `tessera.io/task-type` label that is no label value, under a policy
// that routes by it: the API server lets no such label through, so the
// request was made by hand; the pod cannot be routed. The value is not
// quoted (it may be anything, of any length).
std::optional<std::string> InvalidTaskType(const ProfileSet& policy, const k8s::WirePod& pod) {
  if (policy.pools().empty() || pod.task_type.empty()) return std::nullopt;
  const absl::Status valid = k8s::CheckLabelValue(pod.task_type);
  if (valid.ok()) return std::nullopt;
  return absl::StrCat("pod's label ", Absl(k8s::kTaskTypeLabel), " is not a valid label value (it ", valid.message(),
                      "): no node pool can be chosen for it");
}

// Prioritize's scores of every candidate: by `memo`'s profile, over the
// nodes the pod's route admits; the others (which filter refused) score 0
// and weigh in no normalisation. Unknown nodes are scored as before (the
// caller zeroes them).
std::vector<int64_t> ScoreInPool(const ScoreMemo& memo, const PoolRoute& route, const CycleState& cycle,
                                 const CandidateNodes& candidates, ScoreMemo::Counters* counters) {
  if (!route.restricts_nodes()) return memo.Score(cycle, candidates.views(), nullptr, counters);
  std::vector<const NodeView*> admitted;
  std::vector<size_t> at;  // admitted[k] is candidate at[k]
  admitted.reserve(candidates.size());
  at.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i + kPrefetchDistance < candidates.size()) candidates.PrefetchPool(i + kPrefetchDistance);
    if (candidates.known(i) && !route.Admits(candidates.pool(i))) continue;
    admitted.push_back(&candidates.view(i));
    at.push_back(i);
  }
  std::vector<int64_t> scores(candidates.size(), 0);
  const std::vector<int64_t> admitted_scores = memo.Score(cycle, admitted, nullptr, counters);
  for (size_t k = 0; k < at.size(); ++k) scores[at[k]] = admitted_scores[k];
  return scores;
}

// Keeps, of the nodes that fit a GPU pod, the best-ranked few
// (filter_shortlist.h), scored through the memo prioritize uses (most nodes'
// answers are still there from the last pod of the same shape). Returns how
// many nodes it left out.
size_t KeepShortlist(const ScoreMemo& memo, const Shortlist& shortlist, const CycleState& cycle,
                     const CandidateNodes& candidates, const k8s::WirePod& pod, std::vector<uint32_t>& passed) {
  const auto max_nodes = static_cast<size_t>(shortlist.max_nodes);
  if (max_nodes == 0 || passed.size() <= 1) return 0;
  std::vector<const NodeView*> views;
  views.reserve(passed.size());
  for (const uint32_t i : passed) views.push_back(&candidates.view(i));
  const std::vector<int64_t> scores = memo.Score(cycle, views, nullptr);
  // Per pod, not per request: a pod retried on the same cluster asks the same nodes.
  const uint64_t salt = absl::Hash<std::string_view>{}(pod.uid.empty() ? pod.name : pod.uid);
  const size_t before = passed.size();
  passed = ShortlistBest(passed, scores, max_nodes, salt);
  return before - passed.size();
}

// Nodes filter refused for one reason code, and the first of them with its
// message: what the GPU map page says of a pod that fits nowhere. The
// message is copied once per reason code, not per node.
struct Rejected {
  int64_t nodes = 0;
  std::string node;  // a copy: the snapshot the name lives in may go first
  std::string example;

  void Count(std::string_view node_name, std::string_view message) {
    if (nodes++ == 0) {
      node = std::string(node_name);
      example = std::string(message);
    }
  }
};
using Rejections = absl::flat_hash_map<std::string_view, Rejected>;

// "2 GPUs × 500 milli (burst 800), 10240 MiB each": what a pod asks, in words.
std::string DescribeRequest(const absl::StatusOr<std::optional<PodGpuRequest>>& request) {
  if (!request.ok()) return "invalid request";
  if (!request->has_value()) return "no GPU";
  const PodGpuRequest& r = **request;
  if (!r.mig_profile.empty()) return absl::StrCat("a MIG instance ", r.mig_profile);
  std::string out = absl::StrCat(r.count, r.count == 1 ? " GPU" : " GPUs");
  if (!r.whole_gpu) {
    absl::StrAppend(&out, " × ", r.guaranteed.value(), " milli");
    if (r.limit > r.guaranteed) absl::StrAppend(&out, " (burst ", r.limit.value(), ")");
  }
  if (r.memory.value() > 0) absl::StrAppend(&out, ", ", r.memory.value(), " MiB each");
  if (!r.models.empty()) absl::StrAppend(&out, ", models ", absl::StrJoin(r.models, "|"));
  return out;
}

// Keeps why filter refused the pod on every node, or forgets an earlier
// refusal once the pod fits somewhere.
void NoteRefusal(RecentRefusals& refusals, const k8s::WirePod& pod,
                 const absl::StatusOr<std::optional<PodGpuRequest>>& request, size_t nodes,
                 const k8s::FilterResult& result, const Rejections& rejections) {
  const auto key = [&pod] {
    return pod.uid.empty() ? absl::StrCat(Absl(pod.namespace_name), "/", Absl(pod.name)) : std::string(pod.uid);
  };
  if (!result.passed.empty() || (nodes == 0 && result.error.empty())) {
    // Every passing filter comes here: no string is built for a pod with a uid.
    if (!pod.uid.empty()) {
      refusals.Forget(pod.uid);
    } else {
      refusals.Forget(key());
    }
    return;
  }
  FilterRefusal refusal{.key = key(),
                        .pod = absl::StrCat(Absl(pod.namespace_name), "/", Absl(pod.name)),
                        .tenant_label = std::string(pod.tenant_label),
                        .request = DescribeRequest(request),
                        .mig_profile = request.ok() && request->has_value() ? (*request)->mig_profile : "",
                        .nodes = static_cast<int64_t>(nodes),
                        .error = result.error,
                        .reasons = {}};
  for (const auto& [code, rejected] : rejections) {
    refusal.reasons.push_back({.code = std::string(code),
                               .nodes = rejected.nodes,
                               .example = rejected.example,
                               .node = rejected.node});
  }
  refusals.Record(std::move(refusal));
}

}  // namespace

// What filter decided for one pod, and what the steps after it read.
struct ExtenderService::FilterDecision {
  k8s::FilterResult result;
  // Rejections are counted per reason once per request, not once per node:
  // the registry lookup takes a lock.
  Rejections rejections;
  // Nodes that fit but the policy's shortlist left out.
  size_t shortlist_dropped = 0;
};

ExtenderService::ExtenderService(const SchedulerHandle& handle, MetricsRegistry& metrics)
    : handle_(handle),
      metrics_(metrics),
      nodes_computed_(metrics.Counter(kPrioritizedNodes, kPrioritizedNodesHelp, {{"answer", "computed"}})),
      nodes_from_memo_(metrics.Counter(kPrioritizedNodes, kPrioritizedNodesHelp, {{"answer", "memo"}})),
      memo_bypassed_(metrics.Counter(kMemoBypassed, kMemoBypassedHelp)),
      preempt_nodes_kept_(metrics.Counter(kPreemptNodes, kPreemptNodesHelp, {{"answer", "kept"}})),
      preempt_nodes_dropped_(metrics.Counter(kPreemptNodes, kPreemptNodesHelp, {{"answer", "dropped"}})),
      shortlist_dropped_(metrics.Counter(
          "tessera_filter_shortlist_dropped_nodes_total",
          "Nodes that fit but filter left out: not among the best-ranked few the policy's shortlist passes on.")),
      preempt_victims_(metrics.Counter("tessera_preempt_victims_total",
                                       "Pods the preempt verb named as victims, over all nodes it kept.")),
      score_memo_(handle.score_pool()) {}

absl::StatusOr<std::string> ExtenderService::Filter(std::string_view body) const {
  const ThreadParserLease lease;
  absl::StatusOr<k8s::ExtenderArgs> args = k8s::DecodeExtenderArgs(body, ThreadParser());
  if (!args.ok()) return args.status();
  const size_t n = NodeCount(*args);
  FilterDecision decision;

  absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(args->pod.annotations);
  if (!handle_.Synced()) {
    decision.result.error = std::string(kNotSyncedError);
    return k8s::EncodeFilterResult(*args, decision.result);
  }
  std::optional<CycleState> cycle;
  if (!request.ok() || !args->pod.host_error.ok()) {
    // The pod, not a node, is at fault: one Error instead of the same reason
    // per node (120 000 names once made a 740 MB answer). kube-scheduler shows
    // it as the pod's FailedScheduling event and retries the pod with backoff;
    // the cluster autoscaler does not scale up for it, as it would for a pod
    // every node refused.
    decision.result.error =
        !request.ok() ? absl::StrCat("pod has an invalid GPU request: ", request.status().message())
                      : absl::StrCat("pod has an unreadable CPU or memory request: ", args->pod.host_error.message());
    decision.rejections["invalid_pod_request"].nodes += static_cast<int64_t>(n);
  } else {
    // A pod without a GPU request goes through the profile too, with count
    // 0: host-resources checks its CPU and memory where the model knows them.
    cycle.emplace(ProfileRequest(*request, args->pod.host));
    DecideFilter(*args, *cycle, decision);
  }

  // The steps after deciding; the first three only for a pod the profile judged.
  if (cycle.has_value()) {
    handle_.PodArrived(args->pod.uid, cycle->request());
    ReserveOnTheOneNode(*args, *cycle, decision);
    QueuePreemptionIfItMayHelp(*args, *cycle, decision);
  }
  CountRejections(decision);
  if (RecentRefusals* refusals = handle_.refusals(); refusals != nullptr) {
    NoteRefusal(*refusals, args->pod, request, n, decision.result, decision.rejections);
  }
  return k8s::EncodeFilterResult(*args, decision.result);
}

void ExtenderService::DecideFilter(const k8s::ExtenderArgs& args, const CycleState& cycle,
                                   FilterDecision& decision) const {
  const size_t n = NodeCount(args);
  k8s::FilterResult& result = decision.result;
  Rejections& rejections = decision.rejections;
  const std::shared_ptr<const ClusterSnapshot> snapshot = handle_.Snapshot();
  const std::shared_ptr<const ProfileSet> policy = handle_.Profiles();
  PoolRoute route(*policy, args.pod.task_type);
  const std::optional<std::string> invalid_task_type = InvalidTaskType(*policy, args.pod);
  const Profile* profile = route.profile().get();
  const CandidateNodes candidates(args, *snapshot);
  const bool wants_gpus = cycle.wants_gpus();
  const std::shared_ptr<const TenantSet> tenants = handle_.Tenants();
  const std::optional<std::string> unknown_tenant = UnknownTenant(tenants.get(), args.pod);
  const std::optional<FilterVerdict> refused =
      unknown_tenant ? std::nullopt : QuotaRefusal(tenants.get(), args.pod, cycle, *snapshot);
  if (unknown_tenant) {
    result.error = *unknown_tenant;
    rejections["unknown_tenant"].nodes += static_cast<int64_t>(n);
  } else if (invalid_task_type) {
    result.error = *invalid_task_type;
    rejections["invalid_task_type"].nodes += static_cast<int64_t>(n);
  }
  for (size_t i = 0; i < n && !unknown_tenant && !invalid_task_type; ++i) {
    if (i + kPrefetchDistance < n) {
      PrefetchNode(candidates.view(i + kPrefetchDistance));
      if (route.restricts_nodes()) candidates.PrefetchPool(i + kPrefetchDistance);
    }
    const NodeView& view = candidates.view(i);
    if (!candidates.known(i) && !wants_gpus) {
      // Tessera knows nothing of the node; kube-scheduler checks CPU and memory.
      result.passed.push_back(static_cast<uint32_t>(i));
      continue;
    }
    if (!candidates.known(i)) {
      // The watch may not have seen the node yet: "not now", not "never".
      constexpr std::string_view kUnknownNode = "node is not in Tessera's cluster model (yet)";
      result.failed.Add(view.name, kUnknownNode);
      rejections["unknown_node"].Count(view.name, kUnknownNode);
      continue;
    }
    // A node of another pool than the pod's task type goes to, or of a pool
    // kept for other task types: "never", whatever its GPUs.
    if (const FilterVerdict* outside = route.restricts_nodes() ? route.Refusal(candidates.pool(i)) : nullptr) {
      result.unresolvable.Add(view.name, outside->message);
      rejections[outside->reason_code].Count(view.name, outside->message);
      continue;
    }
    FilterVerdict computed;
    const FilterVerdict& verdict = refused ? *refused : (computed = profile->Filter(cycle, view));
    switch (verdict.code) {
      case FilterCode::kSuccess:
        result.passed.push_back(static_cast<uint32_t>(i));
        continue;
      case FilterCode::kUnschedulable:
        result.failed.Add(view.name, verdict.message);
        break;
      case FilterCode::kUnschedulableUnresolvable:
        result.unresolvable.Add(view.name, verdict.message);
        break;
    }
    rejections[verdict.reason_code].Count(view.name, verdict.message);
  }
  if (wants_gpus && result.error.empty()) {
    // Part of deciding: of the nodes that fit, the policy's shortlist passes the best few.
    decision.shortlist_dropped = KeepShortlist(*score_memo_.For(*policy, route.profile()), policy->shortlist(),
                                               cycle, candidates, args.pod, result.passed);
  }
}

void ExtenderService::ReserveOnTheOneNode(const k8s::ExtenderArgs& args, const CycleState& cycle,
                                          const FilterDecision& decision) const {
  // One node: kube-scheduler will bind the pod there, and may send the next
  // pod's filter before this bind (binder.h). Its GPUs count from now.
  Binder* binder = handle_.binder();
  if (!cycle.wants_gpus() || !decision.result.error.empty() || decision.result.passed.size() != 1 ||
      binder == nullptr || args.pod.uid.empty()) {
    return;
  }
  binder->Assume(args.pod.uid, NodeName(args, decision.result.passed[0]), cycle.request());
}

void ExtenderService::QueuePreemptionIfItMayHelp(const k8s::ExtenderArgs& args, const CycleState& cycle,
                                                 const FilterDecision& decision) const {
  const k8s::FilterResult& result = decision.result;
  const bool may_help = result.passed.empty() && !result.failed.empty() && result.error.empty() &&
                        cycle.wants_gpus() && !args.pod.never_preempts && !args.pod.uid.empty();
  if (!may_help) return;
  handle_.PodUnschedulable(UnschedulablePod{.uid = std::string(args.pod.uid),
                                            .namespace_name = std::string(args.pod.namespace_name),
                                            .name = std::string(args.pod.name),
                                            .priority = args.pod.priority,
                                            .tenant_label = std::string(args.pod.tenant_label),
                                            .request = cycle.request(),
                                            .task_type = std::string(args.pod.task_type)});
}

void ExtenderService::CountRejections(const FilterDecision& decision) const {
  for (const auto& [reason, rejected] : decision.rejections) {
    metrics_.Counter(kRejections, kRejectionsHelp, {{"reason", std::string(reason)}})
        .Inc(static_cast<double>(rejected.nodes));
  }
  if (decision.shortlist_dropped > 0) shortlist_dropped_.Inc(static_cast<double>(decision.shortlist_dropped));
}

absl::StatusOr<std::string> ExtenderService::Prioritize(std::string_view body) const {
  const ThreadParserLease lease;
  absl::StatusOr<k8s::ExtenderArgs> args = k8s::DecodeExtenderArgs(body, ThreadParser());
  if (!args.ok()) return args.status();
  const size_t n = NodeCount(*args);
  std::vector<std::string_view> hosts(n);
  for (size_t i = 0; i < n; ++i) hosts[i] = NodeName(*args, i);

  std::vector<int64_t> scores(n, 0);
  absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(args->pod.annotations);
  // A pod filter already refused everywhere gets no preference from Tessera.
  // One without a GPU request is scored with count 0 and its host request:
  // fgd and host-stranding steer it away from CPU that GPUs need.
  const std::shared_ptr<const ProfileSet> policy = handle_.Profiles();
  if (request.ok() && args->pod.host_error.ok() && !InvalidTaskType(*policy, args->pod)) {
    const std::shared_ptr<const ClusterSnapshot> snapshot = handle_.Snapshot();
    const PoolRoute route(*policy, args->pod.task_type);
    const CandidateNodes candidates(*args, *snapshot);
    ScoreMemo::Counters memo;
    const CycleState cycle(ProfileRequest(*request, args->pod.host));
    // The memo of the profile that places the pod: the default's or its pool's.
    scores = ScoreInPool(*score_memo_.For(*policy, route.profile()), route, cycle, candidates, &memo);
    if (memo.requests_bypassed > 0) {
      memo_bypassed_.Inc();
    } else {
      nodes_computed_.Inc(static_cast<double>(memo.nodes_computed));
      nodes_from_memo_.Inc(static_cast<double>(memo.nodes_reused));
    }
    for (size_t i = 0; i < n; ++i) {
      if (!candidates.known(i)) scores[i] = 0;
    }
  }
  return k8s::EncodeHostPriorityList(hosts, scores, !args->nodes && args->node_names_plain);
}

ExtenderService::BindRest ExtenderService::StartBind(std::string_view body, absl::Time deadline) const {
  const ThreadParserLease lease;
  absl::StatusOr<k8s::ExtenderBindingArgs> args = k8s::DecodeBindingArgs(body, ThreadParser());
  if (!args.ok()) return [status = args.status()]() -> absl::StatusOr<std::string> { return status; };
  Binder* binder = handle_.binder();
  if (binder == nullptr) {
    return []() -> absl::StatusOr<std::string> {
      return absl::UnimplementedError(
          "bind needs the API server: Tessera runs from a cluster file; leave bindVerb unset so kube-scheduler "
          "binds");
    };
  }
  auto answer = [](const absl::Status& bound) -> absl::StatusOr<std::string> {
    std::string out = "{\"Error\":";
    k8s::AppendWireReason(out, bound.ok() ? std::string_view() : Std(bound.message()));
    out += '}';
    return out;
  };
  if (!handle_.Synced()) {
    return [answer] { return answer(absl::UnavailableError(Absl(kNotSyncedError))); };
  }
  if (RecentRefusals* refusals = handle_.refusals(); refusals != nullptr) refusals->Forget(args->pod_uid);
  return [answer, binder, pending = binder->Begin(*args, deadline)]() mutable {
    return answer(binder->Finish(std::move(pending)));
  };
}

absl::StatusOr<std::string> ExtenderService::Preempt(std::string_view body) const {
  const ThreadParserLease lease;
  absl::StatusOr<k8s::ExtenderPreemptionArgs> args = k8s::DecodePreemptionArgs(body, ThreadParser());
  if (!args.ok()) return args.status();
  absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(args->pod.annotations);
  const std::shared_ptr<const ProfileSet> policy = handle_.Profiles();
  if (!request.ok() || !handle_.Synced() || InvalidTaskType(*policy, args->pod)) {
    // A pod filter refused for its request, or a model still filling: no
    // node is accepted (the result has no Error field; an empty map is "none").
    return std::string("{\"NodeNameToMetaVictims\":{}}");
  }
  const std::shared_ptr<const TenantSet> tenants = handle_.Tenants();
  static const TenantSet kNoTenants;
  PreemptOutcome outcome;
  const PoolRoute route(*policy, args->pod.task_type);
  std::string answer = AnswerPreemption(*args, ProfileRequest(*request, args->pod.host), *handle_.Snapshot(),
                                        *route.profile(), tenants != nullptr ? *tenants : kNoTenants,
                                        handle_.clock().Now(), &outcome, &route);
  preempt_nodes_kept_.Inc(static_cast<double>(outcome.nodes_kept));
  preempt_nodes_dropped_.Inc(static_cast<double>(outcome.nodes_proposed - outcome.nodes_kept));
  preempt_victims_.Inc(static_cast<double>(outcome.victims));
  if (outcome.nodes_kept > 0) handle_.SchedulerPreempted(args->pod.uid);
  return answer;
}

}  // namespace tessera
