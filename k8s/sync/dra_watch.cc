#include "k8s/sync/dra_watch.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "scheduler/common/log.h"

namespace tessera::k8s {

/// Feeds one kind (slices or claims) into the watch's maps; a batch applied
/// (Flush) re-resolves what claims hold.
class DraWatch::Sink final : public ReflectorSink {
 public:
  enum class Kind { kSlices, kClaims };
  Sink(DraWatch& watch, Kind kind) : watch_(watch), kind_(kind) {}

  void BeginList() override {
    listing_ = true;
    listed_.clear();
  }
  absl::Status Upsert(simdjson::dom::element object) override {
    if (kind_ == Kind::kSlices) {
      absl::StatusOr<DraSlice> slice = DecodeResourceSlice(object);
      if (!slice.ok()) return slice.status();
      if (listing_) listed_.insert(slice->name);
      absl::MutexLock lock(&watch_.mu_);
      watch_.slice_by_name_[slice->name] = *std::move(slice);
    } else {
      absl::StatusOr<DraClaim> claim = DecodeResourceClaim(object);
      if (!claim.ok()) return claim.status();
      if (listing_) listed_.insert(claim->uid);
      absl::MutexLock lock(&watch_.mu_);
      watch_.claim_by_uid_[claim->uid] = *std::move(claim);
    }
    return absl::OkStatus();
  }
  absl::Status Delete(simdjson::dom::element object) override {
    if (kind_ == Kind::kSlices) {
      absl::StatusOr<DraSlice> slice = DecodeResourceSlice(object);
      if (!slice.ok()) return slice.status();
      absl::MutexLock lock(&watch_.mu_);
      watch_.slice_by_name_.erase(slice->name);
    } else {
      absl::StatusOr<DraClaim> claim = DecodeResourceClaim(object);
      if (!claim.ok()) return claim.status();
      absl::MutexLock lock(&watch_.mu_);
      watch_.claim_by_uid_.erase(claim->uid);
    }
    return absl::OkStatus();
  }
  void EndList() override {
    listing_ = false;
    absl::MutexLock lock(&watch_.mu_);
    if (kind_ == Kind::kSlices) {
      absl::erase_if(watch_.slice_by_name_, [&](const auto& entry) { return !listed_.contains(entry.first); });
    } else {
      absl::erase_if(watch_.claim_by_uid_, [&](const auto& entry) { return !listed_.contains(entry.first); });
    }
  }
  void Flush() override { watch_.Resolve(); }

 private:
  DraWatch& watch_;
  const Kind kind_;
  bool listing_ = false;
  absl::flat_hash_set<std::string> listed_;
};

namespace {

ReflectorOptions For(const ReflectorOptions& base, std::string resource, std::string path) {
  ReflectorOptions o = base;
  o.resource = std::move(resource);
  o.path = std::move(path);
  o.field_selector.clear();
  return o;
}

constexpr char kGroupVersion[] = "/apis/resource.k8s.io/v1";

}  // namespace

DraWatch::DraWatch(ApiClient& client, ClusterModel& model, MetricsRegistry* metrics, const ReflectorOptions& base)
    : client_(client),
      model_(model),
      metrics_(metrics),
      base_(base),
      slice_sink_(std::make_unique<Sink>(*this, Sink::Kind::kSlices)),
      claim_sink_(std::make_unique<Sink>(*this, Sink::Kind::kClaims)) {}

DraWatch::~DraWatch() { Stop(); }

void DraWatch::Start() {
  if (discovery_.joinable()) return;
  discovery_ = std::thread([this] { Discover(); });
}

void DraWatch::Stop() {
  if (!stopping_.HasBeenNotified()) stopping_.Notify();
  if (discovery_.joinable()) discovery_.join();
  // The discovery thread, which made them, has ended.
  if (slices_ != nullptr) slices_->Stop();
  if (claims_ != nullptr) claims_->Stop();
}

void DraWatch::Discover() {
  // Until the API server answers whether it serves the group: 200 starts the
  // reflectors for good; 404 is asked again a minute later (an upgrade may
  // switch it on); anything else (the server is down) again in a second.
  while (!stopping_.HasBeenNotified()) {
    absl::StatusOr<ApiResponse> answer = client_.Get(kGroupVersion);
    absl::Duration next = absl::Seconds(1);
    if (answer.ok() && answer->status == 200) {
      if (api_.exchange(1) != 1) LogInfo("DRA: the API server serves resource.k8s.io/v1; watching ResourceSlices and ResourceClaims");
      // Made only now, so that a cluster without DRA shows no series of theirs.
      slices_ = std::make_unique<Reflector>(
          client_, *slice_sink_, For(base_, "resourceslices", absl::StrCat(kGroupVersion, "/resourceslices")), metrics_);
      claims_ = std::make_unique<Reflector>(
          client_, *claim_sink_, For(base_, "resourceclaims", absl::StrCat(kGroupVersion, "/resourceclaims")), metrics_);
      // Set before they start: their first list's Flush must resolve.
      reflectors_started_.store(true, std::memory_order_release);
      slices_->Start();
      claims_->Start();
      if (!answered_.HasBeenNotified()) answered_.Notify();
      return;
    }
    if (answer.ok() && answer->status == 404) {
      if (api_.exchange(2) != 2) LogInfo("DRA: the API server serves no resource.k8s.io/v1; no DRA driver can hold GPUs here");
      next = absl::Minutes(1);
      if (!answered_.HasBeenNotified()) answered_.Notify();
    }
    stopping_.WaitForNotificationWithTimeout(next);
  }
}

bool DraWatch::synced() const {
  switch (api_.load()) {
    case 2:
      return true;
    case 1:
      return reflectors_started_.load(std::memory_order_acquire) && slices_->synced() && claims_->synced();
    default:
      return false;
  }
}

bool DraWatch::WaitForSync(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  if (!answered_.WaitForNotificationWithTimeout(timeout)) return false;
  if (api_.load() != 1 || !reflectors_started_.load(std::memory_order_acquire)) return synced();
  return slices_->WaitForSync(std::max(absl::ZeroDuration(), deadline - absl::Now())) &&
         claims_->WaitForSync(std::max(absl::ZeroDuration(), deadline - absl::Now()));
}

DraReport DraWatch::Report() const {
  DraReport out;
  {
    absl::MutexLock lock(&mu_);
    out = report_;
  }
  const int api = api_.load();
  out.api = api == 1 ? "served" : api == 2 ? "not served" : "unknown";
  out.synced = synced();
  return out;
}

DraMatch MatchDraClaims(const absl::btree_map<std::string, DraSlice>& slices,
                        const absl::btree_map<std::string, DraClaim>& claims, const ClusterSnapshot& snapshot) {
  DraMatch out;
  // (driver, pool, device) -> its slice's node and the device.
  struct Where {
    const std::string* node;
    const DraDevice* device;
  };
  absl::flat_hash_map<std::string, Where> devices;
  absl::flat_hash_set<std::string> shared;
  for (const auto& [name, slice] : slices) {
    for (const DraDevice& d : slice.devices) {
      devices[absl::StrCat(slice.driver, "/", slice.pool, "/", d.name)] = {&slice.node, &d};
    }
    if (slice.node.empty() || slice.devices.empty()) continue;
    const std::optional<NodeIndex> node = snapshot.FindNode(slice.node);
    if (node.has_value() && !snapshot.node(*node).inventory.gpus.empty()) shared.insert(slice.node);
  }
  for (const auto& [uid, claim] : claims) {
    for (const DraAllocatedDevice& a : claim.allocated) {
      const std::string key = absl::StrCat(a.driver, "/", a.pool, "/", a.device);
      const auto where = devices.find(key);
      if (where == devices.end()) continue;  // a device of no slice listed (yet): nothing to match it to
      const std::string& node_name = *where->second.node;
      const std::optional<NodeIndex> node = node_name.empty() ? std::nullopt : snapshot.FindNode(node_name);
      if (!node.has_value()) continue;  // not a node of Tessera's
      const NodeState& state = snapshot.node(*node);
      if (state.inventory.gpus.empty()) continue;
      const DraDevice& device = *where->second.device;
      // A device with neither a UUID nor a PCI bus id is no GPU Tessera could
      // know (a NIC, an FPGA of another driver): not its business.
      if (device.uuid.empty() && device.pci_bus_id.empty()) continue;
      const GpuDevice* gpu = nullptr;
      for (const GpuDevice& g : state.inventory.gpus) {
        if (!device.uuid.empty() && g.uuid == device.uuid) gpu = &g;
      }
      const std::string claim_key = absl::StrCat(claim.namespace_name, "/", claim.name);
      if (gpu == nullptr || gpu->mig_mode) {
        out.report.unmatched.push_back(absl::StrCat(
            claim_key, ": ", key, " on node ", node_name,
            gpu != nullptr        ? " is a GPU in MIG mode, whose instances Tessera cannot tell apart"
            : device.uuid.empty() ? absl::StrCat(" has only a PCI bus id (", device.pci_bus_id,
                                                 "), which Tessera's inventory does not carry")
                                  : absl::StrCat(" has uuid ", device.uuid, ", which no GPU of the node's inventory has")));
        continue;
      }
      PodHolding holding;
      holding.uid = absl::StrCat(kDraHoldingPrefix, claim.uid, ":", a.device);
      holding.pod_key = claim_key;
      holding.priority = std::numeric_limits<int32_t>::max();
      holding.assignment.node = node_name;
      holding.assignment.gpus.push_back(GpuShare{.index = gpu->index,
                                                 .uuid = gpu->uuid,
                                                 .guaranteed = MilliGpu(1000),
                                                 .limit = MilliGpu(1000),
                                                 .memory = gpu->memory,
                                                 .memory_limit = gpu->memory});
      out.report.held.push_back(absl::StrCat(claim_key, ": ", node_name, " GPU ", gpu->index, " (", key, ")"));
      out.holdings.emplace(holding.uid, std::move(holding));
    }
  }
  out.report.slices = slices.size();
  out.report.claims = claims.size();
  out.report.shared_nodes.assign(shared.begin(), shared.end());
  std::sort(out.report.shared_nodes.begin(), out.report.shared_nodes.end());
  std::sort(out.report.held.begin(), out.report.held.end());
  std::sort(out.report.unmatched.begin(), out.report.unmatched.end());
  return out;
}

void DraWatch::Resolve() {
  // Nothing to match (and no gauges to show) where the group is not served.
  if (!reflectors_started_.load(std::memory_order_acquire)) return;
  const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Current();
  absl::MutexLock lock(&mu_);
  DraMatch match = MatchDraClaims(slice_by_name_, claim_by_uid_, *snapshot);
  absl::btree_map<std::string, PodHolding>& wanted = match.holdings;
  DraReport& report = match.report;

  bool changed = false;
  for (auto it = applied_.begin(); it != applied_.end();) {
    if (wanted.contains(it->first)) {
      ++it;
      continue;
    }
    model_.RemovePod(it->first);
    it = applied_.erase(it);
    changed = true;
  }
  for (auto& [uid, holding] : wanted) {
    const auto it = applied_.find(uid);
    if (it != applied_.end() && it->second == holding) continue;
    model_.UpsertPod(holding);
    applied_[uid] = std::move(holding);
    changed = true;
  }
  if (changed) model_.Publish();

  if (metrics_ != nullptr) {
    metrics_->Gauge("tessera_dra_shared_nodes", "GPU nodes both in Tessera's inventory and in a DRA driver's ResourceSlices.")
        .Set(static_cast<double>(report.shared_nodes.size()));
    metrics_->Gauge("tessera_dra_held_gpus", "GPUs of Tessera's inventory that DRA ResourceClaims were allocated.")
        .Set(static_cast<double>(report.held.size()));
    metrics_->Gauge("tessera_dra_unmatched_devices",
                    "Devices allocated to ResourceClaims on Tessera's nodes that match no GPU of its inventory.")
        .Set(static_cast<double>(report.unmatched.size()));
  }
  report_ = std::move(report);
}

}  // namespace tessera::k8s
