#include "scheduler/framework/profile.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

// The first `count` GPUs of a chooser's ranking: its own choice.
GpuChoice FirstOf(const RankedGpus& ranked, size_t count) {
  GpuChoice choice;
  for (size_t i = 0; i < count; ++i) choice.gpu_indices.push_back(ranked[i].index);
  return choice;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Profile>> Profile::Create(std::vector<WeightedPlugin> plugins) {
  if (plugins.empty()) return absl::InvalidArgumentError("a profile needs at least one plugin");
  absl::flat_hash_set<std::string> seen;
  int choosers = 0, set_pickers = 0;
  for (const WeightedPlugin& p : plugins) {
    if (p.plugin == nullptr) return absl::InvalidArgumentError("a profile plugin is null");
    if (!seen.insert(std::string(p.plugin->Name())).second) {
      return absl::InvalidArgumentError(absl::StrCat("plugin \"", Absl(p.plugin->Name()), "\" appears twice"));
    }
    if (p.weight < 1 || p.weight > 100) {
      return absl::InvalidArgumentError(absl::StrCat("plugin \"", Absl(p.plugin->Name()),
                                                     "\": weight must be 1..100, got ", p.weight));
    }
    if (dynamic_cast<const GpuChooserPlugin*>(p.plugin.get()) != nullptr) ++choosers;
    if (dynamic_cast<const GpuSetPlugin*>(p.plugin.get()) != nullptr) ++set_pickers;
  }
  if (choosers != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a profile needs exactly one plugin that chooses GPUs (such as gpu-share); found ", choosers));
  }
  if (set_pickers > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a profile may have one plugin that picks the set of GPUs (such as nvlink-topology); found ", set_pickers));
  }
  return std::shared_ptr<const Profile>(new Profile(std::move(plugins)));
}

Profile::Profile(std::vector<WeightedPlugin> plugins) : plugins_(std::move(plugins)) {
  for (const WeightedPlugin& p : plugins_) {
    if (const auto* f = dynamic_cast<const FilterPlugin*>(p.plugin.get())) filters_.push_back(f);
    if (const auto* s = dynamic_cast<const ScorePlugin*>(p.plugin.get())) {
      const bool is_chooser = dynamic_cast<const GpuChooserPlugin*>(p.plugin.get()) != nullptr;
      scorers_.push_back({s, p.weight, s->Memoizable(), is_chooser});
    }
    if (const auto* c = dynamic_cast<const GpuChooserPlugin*>(p.plugin.get())) chooser_ = c;
    if (const auto* g = dynamic_cast<const GpuSetPlugin*>(p.plugin.get())) gpu_set_ = g;
    if (const auto* g = dynamic_cast<const GpuFilterPlugin*>(p.plugin.get())) gpu_filters_.push_back(g);
  }
}

FilterVerdict Profile::Filter(const PodGpuRequest& request, const NodeView& node) const {
  for (const FilterPlugin* f : filters_) {
    FilterVerdict v = f->Filter(request, node);
    if (!v.ok()) return v;
  }
  // The filters passed, so the pod fits by what pods reserved. Without the
  // GPUs ruled out it may not.
  GpuIndexList excluded;
  const GpuFilterPlugin* first_excluding = nullptr;
  for (const GpuFilterPlugin* g : gpu_filters_) {
    const size_t before = excluded.size();
    g->ExcludeGpus(request, node, excluded);
    if (first_excluding == nullptr && excluded.size() > before) first_excluding = g;
  }
  const bool set_filters = gpu_set_ != nullptr && gpu_set_->FiltersGpuSets();
  if (first_excluding == nullptr && !set_filters) return FilterVerdict::Success();
  const std::optional<GpuChoice> choice = ChooseGpusAvoiding(request, node, excluded);
  if (first_excluding != nullptr && !choice.has_value()) {
    FilterVerdict v = first_excluding->ExplainExcluded(request, node);
    // A plugin that cannot explain still rejects: its GPUs are ruled out.
    if (v.ok()) v = FilterVerdict::NotNow("gpus_ruled_out", "the GPUs that could take the pod are ruled out");
    return v;
  }
  if (set_filters && choice.has_value()) return gpu_set_->FilterGpuSet(request, node, *choice);
  return FilterVerdict::Success();
}

std::optional<GpuChoice> Profile::ChooseGpus(const PodGpuRequest& request, const NodeView& node) const {
  return ChooseGpusAvoiding(request, node, ExcludedGpus(request, node));
}

GpuIndexList Profile::ExcludedGpus(const PodGpuRequest& request, const NodeView& node) const {
  GpuIndexList excluded;
  for (const GpuFilterPlugin* g : gpu_filters_) g->ExcludeGpus(request, node, excluded);
  return excluded;
}

std::optional<GpuChoice> Profile::ChooseGpusAvoiding(const PodGpuRequest& request, const NodeView& node,
                                                     const GpuIndexList& excluded) const {
  // The common case: nothing to refine, the chooser's own choice.
  if (request.count <= 0 || (gpu_set_ == nullptr && excluded.empty())) return chooser_->ChooseGpus(request, node);
  std::optional<RankedGpus> ranked = chooser_->RankGpus(request, node);
  if (!ranked.has_value()) {
    // A chooser that cannot rank: its choice stands when it avoids the GPUs
    // ruled out, and otherwise there is none (its next best is unknown).
    std::optional<GpuChoice> choice = chooser_->ChooseGpus(request, node);
    if (choice.has_value() && std::any_of(choice->gpu_indices.begin(), choice->gpu_indices.end(), [&](int32_t i) {
          return std::find(excluded.begin(), excluded.end(), i) != excluded.end();
        })) {
      return std::nullopt;
    }
    return choice;
  }
  if (!excluded.empty()) {
    ranked->erase(std::remove_if(ranked->begin(), ranked->end(),
                                 [&](const RankedGpu& g) {
                                   return std::find(excluded.begin(), excluded.end(), g.index) != excluded.end();
                                 }),
                  ranked->end());
  }
  const auto count = static_cast<size_t>(request.count);
  if (ranked->size() < count) return std::nullopt;
  if (gpu_set_ != nullptr) {
    std::optional<GpuChoice> set = gpu_set_->ChooseGpuSet(request, node, *ranked);
    if (set.has_value() && set->gpu_indices.size() == count) return set;
  }
  return FirstOf(*ranked, count);  // no set plugin, or no opinion: the chooser's own order
}

std::vector<GpuShare> Profile::SharesFor(const PodGpuRequest& request, const NodeView& node,
                                         const GpuChoice& choice) const {
  return chooser_->SharesFor(request, node, choice);
}

std::vector<int64_t> Profile::Score(const PodGpuRequest& request, absl::Span<const NodeView> nodes,
                                    std::vector<std::optional<GpuChoice>>* choices) const {
  const size_t n = nodes.size();
  std::vector<std::optional<GpuChoice>> local;
  std::vector<std::optional<GpuChoice>>& chosen = choices != nullptr ? *choices : local;
  chosen.assign(n, std::nullopt);

  // Nodes where the pod fits now; only these are scored and normalised, so
  // a node that cannot take the pod never shifts the others' scale.
  std::vector<size_t> fitting;
  fitting.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchDistance < n) PrefetchNode(nodes[i + kPrefetchDistance]);
    chosen[i] = ChooseGpus(request, nodes[i]);
    if (chosen[i].has_value()) fitting.push_back(i);
  }

  std::vector<int64_t> weighted(fitting.size(), 0);
  std::vector<int64_t> raw(fitting.size());
  for (size_t s = 0; s < scorers_.size(); ++s) {
    for (size_t k = 0; k < fitting.size(); ++k) {
      const size_t i = fitting[k];
      raw[k] = RawScore(s, request, nodes[i], *chosen[i]);
    }
    AddWeighted(s, absl::MakeSpan(raw), absl::MakeSpan(weighted));
  }

  const std::vector<int64_t> on_wire = WireScores(weighted);
  std::vector<int64_t> wire(n, 0);
  for (size_t k = 0; k < fitting.size(); ++k) wire[fitting[k]] = on_wire[k];
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

int64_t Profile::RawScore(size_t scorer, const PodGpuRequest& request, const NodeView& node,
                          const GpuChoice& choice) const {
  const WeightedScorer& s = scorers_[scorer];
  if (s.is_chooser && choice.chooser_score.has_value()) return *choice.chooser_score;
  return s.plugin->Score(request, node, choice);
}

void Profile::AddWeighted(size_t scorer, absl::Span<int64_t> raw, absl::Span<int64_t> totals) const {
  const WeightedScorer& s = scorers_[scorer];
  s.plugin->NormalizeScores(raw);
  for (size_t k = 0; k < raw.size(); ++k) {
    totals[k] += std::clamp<int64_t>(raw[k], 0, kMaxPluginScore) * s.weight;
  }
}

int64_t Profile::total_weight() const {
  int64_t total = 0;
  for (const WeightedScorer& s : scorers_) total += s.weight;
  return total;
}

bool Profile::memoizable() const {
  return chooser_->Memoizable() && (gpu_set_ == nullptr || gpu_set_->Memoizable());
}

std::vector<std::string> Profile::PluginNames() const {
  std::vector<std::string> names;
  names.reserve(plugins_.size());
  for (const WeightedPlugin& p : plugins_) names.emplace_back(p.plugin->Name());
  return names;
}

}  // namespace tessera
