// Profile::Run: the one loop that runs a profile over a request's nodes
// (profile_run.h says who runs it and what it takes).
#include <algorithm>

#include "scheduler/framework/profile.h"

namespace tessera {

// Run's stages after the answers: fed node by node in the run's order with
// each node's answer (found in the cache or just computed), it drops the
// GPUs ruled out now, keeps the nodes where the pod fits and each score
// plugin's raw scores on them; Finish normalises, weighs and sums.
class Profile::Stages {
 public:
  // `fitting` and `raw` come from the caller, to be reused between runs.
  Stages(const Profile& profile, const CycleState& cycle, absl::Span<const NodeView* const> nodes, bool filter,
         std::vector<std::optional<GpuChoice>>* choices, std::vector<size_t>& fitting,
         std::vector<std::vector<int64_t>>& raw)
      : profile_(profile),
        cycle_(cycle),
        nodes_(nodes),
        choices_(choices),
        excludes_(profile.has_gpu_exclusions() && cycle.kind() == GpuRequestKind::kShares),
        filters_sets_(filter && profile.gpu_set_filter_ != nullptr && cycle.kind() == GpuRequestKind::kShares),
        fitting_(fitting),
        raw_(raw) {
    fitting_.clear();
    fitting_.reserve(nodes.size());
    raw_.resize(profile.scorers_.size());
    for (std::vector<int64_t>& r : raw_) {
      r.clear();
      r.reserve(nodes.size());
    }
    if (choices != nullptr) choices->assign(nodes.size(), std::nullopt);
  }

  // Node `i` as `answer` has it.
  void Add(size_t i, const NodeAnswer& answer) {
    if (!answer.fits) return;  // ruling GPUs out never makes room
    const NodeView& node = *nodes_[i];
    // GPUs ruled out now (live load) may take the answer's choice away; its
    // raw scores hold only for its choice.
    const GpuChoice* choice = &answer.choice;
    bool kept = true;
    if (excludes_) {
      const GpuIndexList excluded = profile_.ExcludedGpus(cycle_, node);
      if (!excluded.empty()) {
        avoiding_ = profile_.ChooseGpusAvoiding(cycle_, node, excluded);
        if (!avoiding_.has_value()) return;
        kept = *avoiding_ == answer.choice;
        choice = &*avoiding_;
      }
    }
    if (filters_sets_) {
      // The answer judged its own set; another one is judged now.
      const bool rejected =
          kept ? answer.set_rejected : !profile_.gpu_set_filter_->FilterGpuSet(cycle_, node, *choice).ok();
      if (rejected) return;
    }
    fitting_.push_back(i);
    for (size_t s = 0; s < raw_.size(); ++s) {
      raw_[s].push_back(kept && profile_.scorers_[s].memoizable ? answer.raw[s]
                                                                : profile_.RawScore(s, cycle_, node, *choice));
    }
    if (choices_ != nullptr) (*choices_)[i] = *choice;
  }

  // Every score plugin normalises its raw scores over the fitting nodes,
  // then weight × score (clamped to 0..kMaxPluginScore) is summed per node.
  void Finish(std::vector<int64_t>& totals) {
    totals.assign(fitting_.size(), 0);
    for (size_t s = 0; s < raw_.size(); ++s) {
      const WeightedScorer& scorer = profile_.scorers_[s];
      std::vector<int64_t>& raw = raw_[s];
      if (scorer.normalize != nullptr) scorer.normalize->NormalizeScores(absl::MakeSpan(raw));
      for (size_t k = 0; k < raw.size(); ++k) {
        totals[k] += std::clamp<int64_t>(raw[k], 0, kMaxPluginScore) * scorer.weight;
      }
    }
  }

 private:
  const Profile& profile_;
  const CycleState& cycle_;
  const absl::Span<const NodeView* const> nodes_;
  std::vector<std::optional<GpuChoice>>* const choices_;
  const bool excludes_;      // GPUs may be ruled out for this request
  const bool filters_sets_;  // the run filters, and a GPU set filter judges this request's sets
  std::vector<size_t>& fitting_;
  std::vector<std::vector<int64_t>>& raw_;  // per score plugin, per fitting node
  std::optional<GpuChoice> avoiding_;
};

void Profile::Answer(const CycleState& cycle, const NodeView& node, bool filter, NodeAnswer& answer) const {
  answer.fits = false;
  answer.set_rejected = false;
  answer.raw.clear();
  if (filter && !FilterByPlugins(cycle, node).ok()) return;
  std::optional<GpuChoice> choice = ChooseGpusAvoiding(cycle, node, GpuIndexList{});
  if (!choice.has_value()) return;
  answer.fits = true;
  answer.choice = *std::move(choice);
  if (filter && gpu_set_filter_ != nullptr && cycle.kind() == GpuRequestKind::kShares) {
    answer.set_rejected = !gpu_set_filter_->FilterGpuSet(cycle, node, answer.choice).ok();
  }
  answer.raw.resize(scorers_.size(), 0);
  for (size_t s = 0; s < scorers_.size(); ++s) {
    if (scorers_[s].memoizable) answer.raw[s] = RawScore(s, cycle, node, answer.choice);
  }
}

RunResult Profile::Run(const CycleState& cycle, absl::Span<const NodeView* const> nodes, const RunOptions& options,
                       std::vector<std::optional<GpuChoice>>* choices) const {
  RunResult result;
  Run(cycle, nodes, options, choices, result);
  return result;
}

void Profile::Run(const CycleState& cycle, absl::Span<const NodeView* const> nodes, const RunOptions& options,
                  std::vector<std::optional<GpuChoice>>* choices, RunResult& result) const {
  const size_t n = nodes.size();
  RunScratch own;
  RunScratch& scratch = options.scratch != nullptr ? *options.scratch : own;
  // Answers are kept only where they are a function of the node's version.
  NodeAnswerCache* const cache =
      memoizable_ && (!options.filter || node_filters_memoizable_) ? options.cache : nullptr;
  std::vector<const NodeAnswer*>& found = scratch.found;
  found.resize(n);
  std::vector<size_t>& unknown = scratch.unknown;
  unknown.clear();
  if (cache != nullptr) {
    cache->Find(nodes, absl::MakeSpan(found), unknown);
  } else {
    unknown.resize(n);
    for (size_t i = 0; i < n; ++i) unknown[i] = i;
  }

  // Computing a node is the costly part (the plugins); the nodes to compute
  // go to the pool when there are many, each thread writing its own answer,
  // and their data is loaded a few nodes ahead.
  std::vector<NodeAnswer>& computed = scratch.computed;
  computed.resize(unknown.size());
  const auto compute = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      if (k + kPrefetchDistance < end) PrefetchNode(*nodes[unknown[k + kPrefetchDistance]]);
      Answer(cycle, *nodes[unknown[k]], options.filter, computed[k]);
    }
  };
  const bool parallel = options.parallel_for != nullptr && unknown.size() >= options.min_parallel;
  if (parallel) {
    (*options.parallel_for)(unknown.size(), compute);
  } else {
    compute(0, unknown.size());
  }
  for (size_t k = 0; k < unknown.size(); ++k) found[unknown[k]] = &computed[k];

  // Everything after the answers stays on the caller, in node order, so the
  // result is the same whichever thread computed what.
  Stages stages(*this, cycle, nodes, options.filter, choices, result.fitting, scratch.raw);
  // Answers found in a cache are read once each, a line or two apiece, from
  // wherever the cache keeps them: load them a few ahead.
  constexpr size_t kAnswersAhead = 8;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAnswersAhead < n) __builtin_prefetch(found[i + kAnswersAhead]);
    stages.Add(i, *found[i]);
  }
  stages.Finish(result.totals);
  result.computed = unknown.size();
  result.parallel = parallel;
  if (cache != nullptr) cache->Keep(nodes, unknown, computed);
}

}  // namespace tessera
