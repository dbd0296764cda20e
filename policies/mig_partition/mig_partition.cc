#include "policies/mig_partition/mig_partition.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "policies/gpu_share/gpu_share.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

struct MigPartitionPlugin::Candidate {
  size_t position = 0;  // in the node's inventory
  int32_t index = 0;    // device index
  const MigInstance* instance = nullptr;
  const MigProfile* profile = nullptr;
  int64_t loss = 0;
  int32_t held_slices = 0;

  // Step 3's order: less loss, then more held (packs), then lower index and start.
  [[nodiscard]] bool Before(const Candidate& o) const {
    if (loss != o.loss) return loss < o.loss;
    if (held_slices != o.held_slices) return held_slices > o.held_slices;
    if (index != o.index) return index < o.index;
    return instance->start < o.instance->start;
  }
};

namespace {

// A raw score from a loss: higher is better, and never negative (a loss is
// at most 1000 × 8 profiles × 8 slices).
constexpr int64_t kLossCeiling = 1'000'000;


size_t GeometryPosition(const MigGeometry& geometry) {
  return static_cast<size_t>(&geometry - AllMigGeometries().data());
}

// An instance's milli-GPU for accounting: its sevenths of the GPU's compute,
// rounded down so that seven 1g instances (7 × 142) stay within one GPU.
MilliGpu MilliOf(const MigProfile& profile) {
  return MilliGpu(static_cast<int64_t>(profile.compute_slices) * 1000 / 7);
}

}  // namespace

MigProfileWeights::MigProfileWeights(const MigPartitionArgs& args) {
  for (const MigGeometry& g : AllMigGeometries()) {
    std::array<int64_t, kMostProfiles> weights{};
    for (size_t p = 0; p < g.profiles.size() && p < kMostProfiles; ++p) {
      weights[p] = args.default_weight;
      for (const auto& [name, weight] : args.profile_mix) {
        if (name == g.profiles[p].name) weights[p] = weight;
      }
    }
    by_geometry_.push_back(weights);
  }
}

absl::Span<const int64_t> MigProfileWeights::For(const MigGeometry& geometry) const {
  const std::array<int64_t, kMostProfiles>& w = by_geometry_[GeometryPosition(geometry)];
  return absl::MakeConstSpan(w.data(), std::min(geometry.profiles.size(), kMostProfiles));
}

absl::StatusOr<std::unique_ptr<Plugin>> MigPartitionPlugin::New(PluginArgs& args) {
  MigPartitionArgs parsed;
  parsed.profile_mix = args.IntMap("profileMix", 0, 1000,
                                      "Expected share of each MIG profile (1g.10gb: 50): the instances to keep placeable.");
  parsed.default_weight = args.Int("defaultWeight", 0, 1000, 1, "Weight of a MIG profile profileMix does not name.");
  for (const auto& entry : parsed.profile_mix) {
    const std::string& name = entry.first;  // a name, not a binding: lambdas capture it (clang 14)
    const bool offered = std::any_of(AllMigGeometries().begin(), AllMigGeometries().end(),
                                     [&](const MigGeometry& g) { return g.Find(name) != nullptr; });
    if (!offered) {
      args.Error("profileMix", absl::StrCat("\"", name, "\" is no MIG profile of a GPU Tessera knows (A100-40GB, "
                                            "A100-80GB, H100-80GB, H200)"));
    }
  }
  if (absl::Status st = args.Finish(); !st.ok()) return st;
  return std::make_unique<MigPartitionPlugin>(parsed);
}

std::optional<MigPartitionPlugin::Candidate> MigPartitionPlugin::BestOnGpu(const CycleState& cycle,
                                                                          const NodeView& node,
                                                                          size_t position) const {
  const GpuState& state = node.gpu_states[position];
  if (!state.mig_mode() || !state.healthy()) return std::nullopt;
  const GpuDevice& device = node.gpus[position];
  if (!GpuAccepted(cycle, device)) return std::nullopt;
  const MigGeometry* geometry = MigGeometryOfId(state.mig_geometry());
  if (geometry == nullptr) return std::nullopt;
  const MigProfile* profile = geometry->Find(cycle.request().mig_profile);
  if (profile == nullptr) return std::nullopt;
  const uint8_t held_starts = node.UsageOf(device.index).mig_held_starts;
  const SliceMask held = MigHeldSlices(*geometry, device.mig, held_starts);
  const absl::Span<const int64_t> weights = weights_.For(*geometry);
  std::optional<Candidate> best;
  for (const MigInstance& m : device.mig) {
    if (m.profile != profile->name || (held_starts >> m.start & 1u) != 0) continue;
    Candidate c{.position = position,
                .index = device.index,
                .instance = &m,
                .profile = profile,
                .loss = MigGeometryLoss(*geometry, weights, held, profile->SlicesAt(m.start)),
                .held_slices = std::popcount(held)};
    if (!best.has_value() || c.Before(*best)) best = c;
  }
  return best;
}

std::optional<MigPartitionPlugin::Candidate> MigPartitionPlugin::BestOnNode(const CycleState& cycle,
                                                                           const NodeView& node) const {
  std::optional<Candidate> best;
  for (size_t i = 0; i < node.gpu_states.size(); ++i) {
    if (!node.gpu_states[i].mig_mode()) continue;  // the packed state first: most GPUs are not
    std::optional<Candidate> c = BestOnGpu(cycle, node, i);
    if (c.has_value() && (!best.has_value() || c->Before(*best))) best = c;
  }
  return best;
}

bool MigPartitionPlugin::HasFreeInstance(const CycleState& cycle, const NodeView& node) {
  // The packed states alone: each GPU in MIG mode carries which of its
  // model's profiles have a free instance (GpuState::mig_free_slots), and
  // the request knows its profile's slot in each model's table. The
  // inventory is read only when the pod names models or vendors.
  for (size_t i = 0; i < node.gpu_states.size(); ++i) {
    const GpuState& state = node.gpu_states[i];
    const int32_t slot = cycle.mig_profile_slot(state.mig_geometry());
    if (slot < 0 || !state.healthy() || (state.mig_free_slots() >> slot & 1u) == 0) continue;
    if (!GpuAccepted(cycle, node.gpus[i])) continue;
    return true;
  }
  return false;
}

FilterVerdict MigPartitionPlugin::FilterGpus(const CycleState& cycle, const NodeView& node) const {
  // Most nodes that can take the pod show it at their first free instance;
  // the count of why not is for the others.
  if (HasFreeInstance(cycle, node)) return FilterVerdict::Success();
  const std::string& wanted = cycle.request().mig_profile;
  int32_t mig_gpus = 0, offering = 0, instances = 0, held = 0;
  std::vector<std::string> not_offering;  // why each MIG GPU cannot hold the profile
  for (size_t i = 0; i < node.gpu_states.size(); ++i) {
    const GpuState& state = node.gpu_states[i];
    if (!state.mig_mode()) continue;
    ++mig_gpus;
    const GpuDevice& device = node.gpus[i];
    const MigGeometry* geometry = MigGeometryOfId(state.mig_geometry());
    const MigProfile* profile = geometry != nullptr ? geometry->Find(wanted) : nullptr;
    if (!state.healthy()) {
      not_offering.push_back(absl::StrCat("GPU ", device.index, " is unhealthy"));
      continue;
    }
    if (!GpuAccepted(cycle, device)) {
      not_offering.push_back(absl::StrCat("GPU ", device.index, " is a ", device.model, ", a model the pod refuses"));
      continue;
    }
    if (device.mig_unlisted) {
      not_offering.push_back(absl::StrCat("GPU ", device.index,
                                          " is in MIG mode but its inventory does not list its instances"));
      continue;
    }
    if (profile == nullptr) {
      not_offering.push_back(geometry == nullptr
                                 ? absl::StrCat("GPU ", device.index, " (", device.model,
                                                ") is a model without a MIG table in Tessera")
                                 : absl::StrCat("GPU ", device.index, " (", Absl(geometry->model), ") offers no ",
                                                wanted));
      continue;
    }
    ++offering;
    const uint8_t held_starts = node.UsageOf(device.index).mig_held_starts;
    for (const MigInstance& m : device.mig) {
      if (m.profile != profile->name) continue;
      ++instances;
      if ((held_starts >> m.start & 1u) != 0) ++held;
    }
  }
  if (mig_gpus == 0) {
    return FilterVerdict::Never("no_mig_gpus", absl::StrCat("the pod asks for a MIG instance (", wanted,
                                                            ") and the node has no GPU in MIG mode"));
  }
  if (offering == 0) {
    constexpr size_t kMostListed = 4;
    if (not_offering.size() > kMostListed) {
      const size_t more = not_offering.size() - kMostListed;
      not_offering.resize(kMostListed);
      not_offering.push_back(absl::StrCat(more, " more"));
    }
    return FilterVerdict::Never("mig_profile_not_offered", absl::StrCat("no GPU in MIG mode here can hold a ", wanted,
                                                                        " instance: ", absl::StrJoin(not_offering, "; ")));
  }
  if (instances == 0) {
    return FilterVerdict::Never(
        "no_mig_instance",
        absl::StrCat("no ", wanted, " instance exists on the node's ", offering, offering == 1 ? " GPU" : " GPUs",
                     " in MIG mode that offer it: it would take re-partitioning (Tessera's /debug/mig names the GPU "
                     "that needs the least)"));
  }
  if (held == instances) {
    return FilterVerdict::NotNow("mig_instances_held",
                                 absl::StrCat("all ", instances, " ", wanted, instances == 1 ? " instance is" : " instances are",
                                              " held by other pods"));
  }
  return FilterVerdict::Success();
}

void MigPartitionPlugin::RankGpus(const CycleState& cycle, const NodeView& node, RankedGpus& ranked) const {
  absl::InlinedVector<Candidate, 8> best;
  for (size_t i = 0; i < node.gpu_states.size(); ++i) {
    if (!node.gpu_states[i].mig_mode()) continue;
    if (std::optional<Candidate> c = BestOnGpu(cycle, node, i); c.has_value()) best.push_back(*c);
  }
  std::sort(best.begin(), best.end(), [](const Candidate& a, const Candidate& b) { return a.Before(b); });
  int32_t tier = 0;
  for (size_t k = 0; k < best.size(); ++k) {
    if (k > 0 && (best[k].loss != best[k - 1].loss || best[k].held_slices != best[k - 1].held_slices)) ++tier;
    ranked.push_back(RankedGpu{.index = best[k].index, .tier = tier});
  }
}

std::optional<GpuChoice> MigPartitionPlugin::ChooseGpus(const CycleState& cycle, const NodeView& node) const {
  const std::optional<Candidate> best = BestOnNode(cycle, node);
  if (!best.has_value()) return std::nullopt;
  GpuChoice choice;
  choice.gpu_indices.push_back(best->index);
  choice.chooser_score = kLossCeiling - best->loss;
  return choice;
}

std::vector<GpuShare> MigPartitionPlugin::SharesFor(const CycleState& cycle, const NodeView& node,
                                                    const GpuChoice& choice) const {
  std::vector<GpuShare> shares;
  if (choice.gpu_indices.size() != 1) return shares;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].index != choice.gpu_indices[0]) continue;
    const std::optional<Candidate> c = BestOnGpu(cycle, node, i);
    if (!c.has_value()) return shares;
    const MilliGpu milli = MilliOf(*c->profile);
    shares.push_back(GpuShare{.index = c->index,
                              .uuid = node.gpus[i].uuid,
                              .guaranteed = milli,
                              .limit = milli,
                              .memory = c->profile->memory,
                              .memory_limit = c->profile->memory,
                              .mig = *c->instance});
  }
  return shares;
}

int64_t MigPartitionPlugin::ScoreNode(const CycleState& cycle, const NodeView& node, const GpuChoice& choice) const {
  if (choice.gpu_indices.size() != 1) return 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    if (node.gpus[i].index != choice.gpu_indices[0]) continue;
    const std::optional<Candidate> c = BestOnGpu(cycle, node, i);
    return c.has_value() ? kLossCeiling - c->loss : 0;
  }
  return 0;
}

void MigPartitionPlugin::NormalizeScores(absl::Span<int64_t> scores) const {
  if (scores.empty()) return;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t min = *lo, max = *hi;
  for (int64_t& s : scores) s = max == min ? kMaxPluginScore : (s - min) * kMaxPluginScore / (max - min);
}

}  // namespace tessera
