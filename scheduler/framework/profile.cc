#include "scheduler/framework/profile.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "scheduler/framework/workload_aware.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// The first `count` GPUs of a chooser's ranking: its own choice.
GpuChoice FirstOf(const RankedGpus& ranked, size_t count) {
  GpuChoice choice;
  for (size_t i = 0; i < count; ++i) choice.gpu_indices.push_back(ranked[i].index);
  return choice;
}

// The choice for a pod that asks for no GPU: none. (Built in place: a
// GpuChoice moved into an optional trips GCC 12's maybe-uninitialized.)
std::optional<GpuChoice> NoGpus() { return std::optional<GpuChoice>(std::in_place); }

}  // namespace

absl::StatusOr<std::shared_ptr<const Profile>> Profile::Create(std::vector<WeightedPlugin> plugins) {
  if (plugins.empty()) return absl::InvalidArgumentError("a profile needs at least one plugin");
  absl::flat_hash_set<std::string> seen;
  std::array<int, kGpuRequestKinds> choosers{};
  int set_choosers = 0;
  for (const WeightedPlugin& p : plugins) {
    if (p.plugin == nullptr) return absl::InvalidArgumentError("a profile plugin is null");
    const Plugin& plugin = *p.plugin;
    const std::string_view name = plugin.Name();
    if (!seen.insert(std::string(name)).second) {
      return absl::InvalidArgumentError(absl::StrCat("plugin \"", Absl(name), "\" appears twice"));
    }
    if (p.weight < 1 || p.weight > 100) {
      return absl::InvalidArgumentError(
          absl::StrCat("plugin \"", Absl(name), "\": weight must be 1..100, got ", p.weight));
    }
    if (const GpuChooserPlugin* chooser = As<GpuChooserPlugin>(plugin)) {
      if (chooser->Places() == GpuRequestKind::kNone) {
        return absl::InvalidArgumentError(
            absl::StrCat("plugin \"", Absl(name), "\" chooses GPUs for pods that ask for none"));
      }
      ++choosers[static_cast<size_t>(chooser->Places())];
    }
    if (As<GpuSetChooserPlugin>(plugin) != nullptr) ++set_choosers;
    if (As<GpuSetFilterPlugin>(plugin) != nullptr && As<GpuSetChooserPlugin>(plugin) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("plugin \"", Absl(name), "\" filters GPU sets but does not choose them"));
    }
    if (As<NormalizeScorePlugin>(plugin) != nullptr && As<ScorePlugin>(plugin) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("plugin \"", Absl(name), "\" normalises scores but does not score"));
    }
    if (As<NodeFilterPlugin>(plugin) == nullptr && As<GpuChooserPlugin>(plugin) == nullptr &&
        As<GpuExclusionPlugin>(plugin) == nullptr && As<GpuSetChooserPlugin>(plugin) == nullptr &&
        As<ScorePlugin>(plugin) == nullptr && As<ReservePlugin>(plugin) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("plugin \"", Absl(name), "\" implements no extension point"));
    }
  }
  const int share_choosers = choosers[static_cast<size_t>(GpuRequestKind::kShares)];
  const int mig_choosers = choosers[static_cast<size_t>(GpuRequestKind::kMigInstance)];
  if (share_choosers != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a profile needs exactly one plugin that chooses GPUs (such as gpu-share); found ", share_choosers));
  }
  if (mig_choosers > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a profile may have one plugin that places MIG instances (such as mig-partition); found ", mig_choosers));
  }
  if (set_choosers > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a profile may have one plugin that picks the set of GPUs (such as nvlink-topology); found ", set_choosers));
  }
  return std::shared_ptr<const Profile>(new Profile(std::move(plugins)));
}

Profile::Profile(std::vector<WeightedPlugin> plugins) : plugins_(std::move(plugins)) {
  // The plugins behind the choosers, by kind, and the GPU set chooser: for
  // what may be memoised, and for which scorer's own choice carries its score.
  std::array<const Plugin*, kGpuRequestKinds> chooser_plugins{};
  const Plugin* gpu_set_plugin = nullptr;
  for (const WeightedPlugin& p : plugins_) {
    const Plugin& plugin = *p.plugin;
    if (const NodeFilterPlugin* filter = As<NodeFilterPlugin>(plugin)) {
      filters_.push_back({.node = filter, .chooser = nullptr, .kind = GpuRequestKind::kNone});
      node_filters_memoizable_ = node_filters_memoizable_ && plugin.Memoizable();
    }
    if (const GpuChooserPlugin* chooser = As<GpuChooserPlugin>(plugin)) {
      const size_t kind = static_cast<size_t>(chooser->Places());
      choosers_[kind] = chooser;
      chooser_plugins[kind] = &plugin;
      filters_.push_back({.node = nullptr, .chooser = chooser, .kind = chooser->Places()});
    }
    if (const GpuExclusionPlugin* excluder = As<GpuExclusionPlugin>(plugin)) excluders_.push_back(excluder);
    if (const GpuSetChooserPlugin* set = As<GpuSetChooserPlugin>(plugin)) {
      gpu_set_ = set;
      gpu_set_plugin = &plugin;
      gpu_set_filter_ = As<GpuSetFilterPlugin>(plugin);
    }
    if (const ReservePlugin* reserver = As<ReservePlugin>(plugin)) reservers_.push_back(reserver);
  }
  // Scorers after the choosers are known: a scorer that is also a kind's
  // chooser takes the choice's own score.
  for (const WeightedPlugin& p : plugins_) {
    const Plugin& plugin = *p.plugin;
    const ScorePlugin* score = As<ScorePlugin>(plugin);
    if (score == nullptr) continue;
    WeightedScorer s{.score = score,
                     .normalize = As<NormalizeScorePlugin>(plugin),
                     .weight = p.weight,
                     .memoizable = plugin.Memoizable(),
                     .scores = {},
                     .chose = {}};
    for (size_t kind = 0; kind < kGpuRequestKinds; ++kind) {
      s.scores[kind] = score->Scores(static_cast<GpuRequestKind>(kind));
      s.chose[kind] = chooser_plugins[kind] == &plugin;
    }
    scorers_.push_back(s);
  }
  memoizable_ = gpu_set_plugin == nullptr || gpu_set_plugin->Memoizable();
  for (const Plugin* chooser : chooser_plugins) {
    if (chooser != nullptr && !chooser->Memoizable()) memoizable_ = false;
  }
}

FilterVerdict Profile::Filter(const CycleState& cycle, const NodeView& node) const {
  if (FilterVerdict v = FilterByPlugins(cycle, node); !v.ok()) return v;
  const GpuRequestKind kind = cycle.kind();
  // A MIG instance is isolated in hardware from the rest of its GPU, so what
  // the GPU is measured doing rules none out.
  if (kind != GpuRequestKind::kShares) return FilterVerdict::Success();
  // The filters passed, so the pod fits by what pods reserved. Without the
  // GPUs ruled out it may not.
  GpuIndexList excluded;
  const GpuExclusionPlugin* first_excluding = nullptr;
  for (const GpuExclusionPlugin* g : excluders_) {
    const size_t before = excluded.size();
    g->ExcludeGpus(cycle, node, excluded);
    if (first_excluding == nullptr && excluded.size() > before) first_excluding = g;
  }
  if (first_excluding == nullptr && gpu_set_filter_ == nullptr) return FilterVerdict::Success();
  const std::optional<GpuChoice> choice = ChooseGpusAvoiding(cycle, node, excluded);
  if (first_excluding != nullptr && !choice.has_value()) {
    FilterVerdict v = first_excluding->ExplainExcluded(cycle, node);
    // A plugin that cannot explain still rejects: its GPUs are ruled out.
    if (v.ok()) v = FilterVerdict::NotNow("gpus_ruled_out", "the GPUs that could take the pod are ruled out");
    return v;
  }
  if (gpu_set_filter_ != nullptr && choice.has_value()) return gpu_set_filter_->FilterGpuSet(cycle, node, *choice);
  return FilterVerdict::Success();
}

std::optional<GpuChoice> Profile::ChooseGpus(const CycleState& cycle, const NodeView& node) const {
  if (!cycle.wants_gpus()) return NoGpus();
  return ChooseGpusAvoiding(cycle, node, ExcludedGpus(cycle, node));
}

GpuIndexList Profile::ExcludedGpus(const CycleState& cycle, const NodeView& node) const {
  GpuIndexList excluded;
  if (cycle.kind() != GpuRequestKind::kShares) return excluded;  // see Filter
  for (const GpuExclusionPlugin* g : excluders_) g->ExcludeGpus(cycle, node, excluded);
  return excluded;
}

std::optional<GpuChoice> Profile::ChooseGpusAvoiding(const CycleState& cycle, const NodeView& node,
                                                     const GpuIndexList& excluded) const {
  if (!cycle.wants_gpus()) return NoGpus();
  const GpuChooserPlugin* chooser = ChooserFor(cycle);
  if (chooser == nullptr) return std::nullopt;  // a MIG instance, and no MIG chooser
  // A MIG instance is one GPU's: no set to choose.
  const GpuSetChooserPlugin* gpu_set = cycle.kind() == GpuRequestKind::kShares ? gpu_set_ : nullptr;
  // The common case: nothing to refine, the chooser's own choice.
  if (gpu_set == nullptr && excluded.empty()) return chooser->ChooseGpus(cycle, node);
  RankedGpus ranked;
  chooser->RankGpus(cycle, node, ranked);
  if (!excluded.empty()) {
    ranked.erase(std::remove_if(ranked.begin(), ranked.end(),
                                [&](const RankedGpu& g) {
                                  return std::find(excluded.begin(), excluded.end(), g.index) != excluded.end();
                                }),
                 ranked.end());
  }
  const size_t count = cycle.gpu_count();
  if (ranked.size() < count) return std::nullopt;
  if (gpu_set != nullptr) {
    std::optional<GpuChoice> set = gpu_set->ChooseGpuSet(cycle, node, ranked);
    if (set.has_value() && set->gpu_indices.size() == count) return set;
  }
  return FirstOf(ranked, count);  // no set chooser, or no opinion: the chooser's own order
}

std::vector<GpuShare> Profile::SharesFor(const CycleState& cycle, const NodeView& node,
                                         const GpuChoice& choice) const {
  const GpuChooserPlugin* chooser = ChooserFor(cycle);
  if (chooser == nullptr) return {};  // no GPU asked, or a MIG instance and no MIG chooser
  return chooser->SharesFor(cycle, node, choice);
}

absl::Status Profile::Reserve(const CycleState& cycle, const NodeView& node,
                              absl::Span<const GpuShare> shares) const {
  for (size_t r = 0; r < reservers_.size(); ++r) {
    absl::Status reserved = reservers_[r]->Reserve(cycle, node, shares);
    if (reserved.ok()) continue;
    // As kube-scheduler's framework: those that reserved undo it, last first.
    for (size_t u = r; u-- > 0;) reservers_[u]->Unreserve(cycle, node.name, shares);
    return reserved;
  }
  return absl::OkStatus();
}

void Profile::Unreserve(const CycleState& cycle, std::string_view node_name, absl::Span<const GpuShare> shares) const {
  for (size_t u = reservers_.size(); u-- > 0;) reservers_[u]->Unreserve(cycle, node_name, shares);
}

std::vector<int64_t> Profile::Score(const CycleState& cycle, absl::Span<const NodeView* const> nodes,
                                    std::vector<std::optional<GpuChoice>>* choices) const {
  return WireScores(Run(cycle, nodes, RunOptions{}, choices), nodes.size());
}

std::vector<int64_t> Profile::WireScores(const RunResult& run, size_t nodes) {
  const std::vector<int64_t> on_wire = WireScores(run.totals);
  std::vector<int64_t> wire(nodes, 0);
  for (size_t k = 0; k < run.fitting.size(); ++k) wire[run.fitting[k]] = on_wire[k];
  return wire;
}

std::vector<int64_t> Profile::WireScores(absl::Span<const int64_t> totals) {
  std::vector<int64_t> wire(totals.size(), kMaxWireScore);
  if (totals.empty()) return wire;
  const auto [lo, hi] = std::minmax_element(totals.begin(), totals.end());
  const int64_t min = *lo, max = *hi;
  if (max == min) return wire;  // all equally good: all the best
  for (size_t k = 0; k < totals.size(); ++k) {
    if (totals[k] == max) continue;
    // 1 + (0..8), rounded: below the best, above "does not fit".
    wire[k] = 1 + ((totals[k] - min) * (kMaxWireScore - 2) * 2 + (max - min)) / ((max - min) * 2);
  }
  return wire;
}

int64_t Profile::RawScore(size_t scorer, const CycleState& cycle, const NodeView& node,
                          const GpuChoice& choice) const {
  const WeightedScorer& s = scorers_[scorer];
  const size_t kind = static_cast<size_t>(cycle.kind());
  // Not asked about this kind of pod: the same 0 on every node changes no order.
  if (!s.scores[kind]) return 0;
  if (s.chose[kind] && choice.chooser_score.has_value()) return *choice.chooser_score;
  return s.score->ScoreNode(cycle, node, choice);
}

int64_t Profile::total_weight() const {
  int64_t total = 0;
  for (const WeightedScorer& s : scorers_) total += s.weight;
  return total;
}

std::shared_ptr<const Profile> Profile::WithWorkload(std::shared_ptr<const TargetWorkload> workload) const {
  std::vector<WeightedPlugin> plugins = plugins_;
  bool any = false;
  for (WeightedPlugin& p : plugins) {
    const WorkloadAware* aware = AsWorkloadAware(*p.plugin);
    if (aware == nullptr) continue;
    p.plugin = aware->WithWorkload(workload);
    any = true;
  }
  // The same plugins, in the same combination, as a valid profile's: no check can fail.
  return any ? std::shared_ptr<const Profile>(new Profile(std::move(plugins))) : nullptr;
}

std::vector<TargetWorkload::ClusterVerdict> Profile::ClusterVerdicts() const {
  std::vector<TargetWorkload::ClusterVerdict> verdicts;
  for (const WeightedPlugin& p : plugins_) {
    if (const WorkloadAware* aware = AsWorkloadAware(*p.plugin)) {
      verdicts.push_back(aware->MeasuredWorkload().cluster_verdict());
    }
  }
  return verdicts;
}

std::shared_ptr<const Profile> Profile::WithRetoldWorkload(std::shared_ptr<const TargetWorkload> retold,
                                                           const Profile& in_force) const {
  std::shared_ptr<const Profile> candidate = WithWorkload(std::move(retold));
  if (candidate == nullptr || candidate->ClusterVerdicts() == in_force.ClusterVerdicts()) return nullptr;
  return candidate;
}

std::vector<std::string> Profile::PluginNames() const {
  std::vector<std::string> names;
  names.reserve(plugins_.size());
  for (const WeightedPlugin& p : plugins_) names.emplace_back(p.plugin->Name());
  return names;
}

}  // namespace tessera
