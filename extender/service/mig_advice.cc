#include "extender/service/mig_advice.h"

#include <map>

namespace tessera {
namespace {

constexpr std::string_view kWaiting = "tessera_mig_pods_waiting";
constexpr std::string_view kWaitingHelp =
    "Pods refused on every node for want of a free MIG instance of the profile (and waiting).";
constexpr std::string_view kEvict = "tessera_mig_repartition_pods_to_evict";
constexpr std::string_view kEvictHelp =
    "Pods the least disruptive re-partitioning for the profile would evict (GET /debug, migWaiting, names the GPU): "
    "0 when free slices and free instances suffice, -1 when there is no advice (no GPU in MIG mode offers the "
    "profile without a free instance of it already).";

}  // namespace

std::vector<MigWait> MigWaits(absl::Span<const FilterRefusal> refusals, const ClusterSnapshot& snapshot) {
  std::map<std::string, MigWait> by_profile;
  for (const FilterRefusal& r : refusals) {
    if (r.mig_profile.empty() || !r.error.empty()) continue;
    MigWait& wait = by_profile[r.mig_profile];
    wait.profile = r.mig_profile;
    wait.pods.push_back(r.pod);
  }
  if (by_profile.empty()) return {};
  std::vector<const NodeView*> nodes;
  nodes.reserve(snapshot.node_count());
  for (NodeIndex i = 0; i < snapshot.node_count(); ++i) nodes.push_back(&snapshot.View(i));
  std::vector<MigWait> out;
  out.reserve(by_profile.size());
  for (auto& [profile, wait] : by_profile) {
    wait.advice = AdviseMigRepartition(profile, nodes);
    out.push_back(std::move(wait));
  }
  return out;
}

void MigAdviceGauges::Refresh(const std::vector<MigWait>& waits) {
  absl::MutexLock lock(&mu_);
  std::set<std::string> now;
  for (const MigWait& w : waits) {
    metrics_.Gauge(kWaiting, kWaitingHelp, {{"profile", w.profile}}).Set(double(w.pods.size()));
    metrics_.Gauge(kEvict, kEvictHelp, {{"profile", w.profile}})
        .Set(w.advice.has_value() ? double(w.advice->pods_to_evict) : -1.0);
    now.insert(w.profile);
  }
  for (const std::string& profile : published_) {
    if (now.contains(profile)) continue;
    metrics_.Gauge(kWaiting, kWaitingHelp, {{"profile", profile}}).Set(0);
    metrics_.Gauge(kEvict, kEvictHelp, {{"profile", profile}}).Set(0);
  }
  published_.merge(now);
}

}  // namespace tessera
