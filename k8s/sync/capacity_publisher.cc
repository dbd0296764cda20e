#include "k8s/sync/capacity_publisher.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "k8s/annotations.h"
#include "k8s/client/reflector.h"
#include "scheduler/common/log.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

bool Settled(const NodeGpuCapacity& c) { return !c.wanted.has_value() || *c.wanted == c.advertised; }

// `"name":"amount"` or `"name":null` (a merge patch removes what is null).
void AppendAmount(std::string& body, std::string_view resource, const std::optional<int64_t>& amount) {
  absl::StrAppend(&body, "\"", Absl(resource), "\":", amount ? absl::StrCat("\"", *amount, "\"") : "null");
}

std::string StatusPatch(const GpuCapacity& wanted) {
  std::string resources = "{";
  AppendAmount(resources, kGpuMilliResource, wanted.milli);
  resources += ',';
  AppendAmount(resources, kGpuMemoryResource, wanted.memory_mib);
  resources += '}';
  return absl::StrCat("{\"status\":{\"capacity\":", resources, ",\"allocatable\":", resources, "}}");
}

}  // namespace

CapacityPublisher::CapacityPublisher(ApiClient& client, std::function<bool()> is_writer, MetricsRegistry* metrics,
                                     CapacityPublisherOptions options)
    : client_(client), is_writer_(std::move(is_writer)), options_(options) {
  if (metrics != nullptr) {
    patched_ = &metrics->Counter("tessera_capacity_patches_total",
                                 "Node status patches setting the GPU extended resources, by result.",
                                 {{"result", "success"}});
    failed_ = &metrics->Counter("tessera_capacity_patches_total",
                                "Node status patches setting the GPU extended resources, by result.",
                                {{"result", "failure"}});
  }
}

CapacityPublisher::~CapacityPublisher() { Stop(); }

void CapacityPublisher::Observe(const std::string& node, std::optional<NodeGpuCapacity> capacity) {
  absl::MutexLock lock(&mu_);
  if (!capacity) {
    nodes_.erase(node);
    pending_.erase(node);
    return;
  }
  NodeState& state = nodes_[node];
  state.capacity = *capacity;
  if (Settled(*capacity)) {
    pending_.erase(node);
  } else {
    pending_.insert(node);
  }
}

size_t CapacityPublisher::pending() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

absl::Status CapacityPublisher::Patch(const std::string& node, const GpuCapacity& wanted) {
  absl::StatusOr<ApiResponse> r = client_.Send("PATCH", absl::StrCat("/api/v1/nodes/", QueryEscape(node), "/status"),
                                               StatusPatch(wanted), "application/merge-patch+json");
  if (!r.ok()) return r.status();
  if (r->status == 404) return absl::NotFoundError("the node is gone");
  if (r->status != 200) {
    return absl::UnavailableError(absl::StrCat("HTTP ", r->status, ": ", StatusMessage(r->body)));
  }
  return absl::OkStatus();
}

int CapacityPublisher::PublishRound(absl::Time now) {
  if (!is_writer_()) return 0;
  std::vector<std::pair<std::string, GpuCapacity>> work;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& node : pending_) {
      if (static_cast<int>(work.size()) >= options_.max_patches_per_round) break;
      const NodeState& state = nodes_.at(node);
      if (state.next_try <= now) work.emplace_back(node, *state.capacity.wanted);
    }
  }
  int patched = 0;
  for (const auto& [node, wanted] : work) {
    const absl::Status st = Patch(node, wanted);
    absl::MutexLock lock(&mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) continue;  // deleted meanwhile
    if (st.ok() || absl::IsNotFound(st)) {
      // The watch confirms; should the write not stick, it reports the node again.
      it->second.capacity.advertised = wanted;
      pending_.erase(node);
      ++patched;
      if (patched_ != nullptr && st.ok()) patched_->Inc();
    } else {
      it->second.next_try = now + options_.retry_after;
      if (failed_ != nullptr) failed_->Inc();
      LogWarning(absl::StrCat("could not publish the GPU capacity of node ", node, " (retry in ",
                              absl::FormatDuration(options_.retry_after), "): ", st.message()));
    }
  }
  return patched;
}

void CapacityPublisher::Start() {
  thread_.Start("capacity", options_.round, [this] { (void)PublishRound(absl::Now()); });
}

void CapacityPublisher::Stop() { thread_.Stop(); }

}  // namespace tessera::k8s
