#include "scheduler/framework/profile.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {

absl::StatusOr<std::shared_ptr<const Profile>> Profile::Create(std::vector<WeightedPlugin> plugins) {
  if (plugins.empty()) return absl::InvalidArgumentError("a profile needs at least one plugin");
  absl::flat_hash_set<std::string> seen;
  int choosers = 0;
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
  }
  if (choosers != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a profile needs exactly one plugin that chooses GPUs (such as gpu-share); found ", choosers));
  }
  return std::shared_ptr<const Profile>(new Profile(std::move(plugins)));
}

Profile::Profile(std::vector<WeightedPlugin> plugins) : plugins_(std::move(plugins)) {
  for (const WeightedPlugin& p : plugins_) {
    if (const auto* f = dynamic_cast<const FilterPlugin*>(p.plugin.get())) filters_.push_back(f);
    if (const auto* s = dynamic_cast<const ScorePlugin*>(p.plugin.get())) scorers_.push_back({s, p.weight});
    if (const auto* c = dynamic_cast<const GpuChooserPlugin*>(p.plugin.get())) chooser_ = c;
  }
}

FilterVerdict Profile::Filter(const PodGpuRequest& request, const NodeView& node) const {
  for (const FilterPlugin* f : filters_) {
    FilterVerdict v = f->Filter(request, node);
    if (!v.ok()) return v;
  }
  return FilterVerdict::Success();
}

std::optional<GpuChoice> Profile::ChooseGpus(const PodGpuRequest& request, const NodeView& node) const {
  return chooser_->ChooseGpus(request, node);
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
    chosen[i] = chooser_->ChooseGpus(request, nodes[i]);
    if (chosen[i].has_value()) fitting.push_back(i);
  }

  std::vector<int64_t> weighted(n, 0);
  int64_t total_weight = 0;
  std::vector<int64_t> raw(fitting.size());
  for (const WeightedScorer& s : scorers_) {
    total_weight += s.weight;
    for (size_t k = 0; k < fitting.size(); ++k) {
      const size_t i = fitting[k];
      raw[k] = s.plugin->Score(request, nodes[i], *chosen[i]);
    }
    s.plugin->NormalizeScores(absl::MakeSpan(raw));
    for (size_t k = 0; k < fitting.size(); ++k) {
      const int64_t clamped = std::clamp<int64_t>(raw[k], 0, kMaxPluginScore);
      weighted[fitting[k]] += clamped * s.weight;
    }
  }

  // Round once, at the wire: weighted mean in 0..100 scaled to 0..10.
  std::vector<int64_t> wire(n, 0);
  if (total_weight == 0) return wire;
  const int64_t denominator = total_weight * (kMaxPluginScore / kMaxWireScore);
  for (size_t i = 0; i < n; ++i) {
    wire[i] = (weighted[i] + denominator / 2) / denominator;
  }
  return wire;
}

std::vector<std::string> Profile::PluginNames() const {
  std::vector<std::string> names;
  names.reserve(plugins_.size());
  for (const WeightedPlugin& p : plugins_) names.emplace_back(p.plugin->Name());
  return names;
}

}  // namespace tessera
