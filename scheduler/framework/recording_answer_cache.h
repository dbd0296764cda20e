// A NodeAnswerCache that keeps nothing and records what a run computed: every
// node's answer, as a cache would keep it. For a caller that compares what
// two requests' answers would be (the simulator's check that no plugin
// answers by the pod's salt, sim/replay.cc), and for tests.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "scheduler/framework/profile_run.h"

namespace tessera {

class RecordingAnswerCache final : public NodeAnswerCache {
 public:
  void Find(absl::Span<const NodeView* const> nodes, absl::Span<const NodeAnswer*> found,
            std::vector<size_t>& missing) override {
    for (size_t i = 0; i < nodes.size(); ++i) {
      found[i] = nullptr;
      missing.push_back(i);
    }
  }
  void Keep(absl::Span<const NodeView* const>, absl::Span<const size_t>, std::vector<NodeAnswer>& computed) override {
    answers_ = std::move(computed);
  }

  /// The last run's answers, one per node in its order (none when the
  /// profile's answers may not be kept: the run then consults no cache).
  [[nodiscard]] const std::vector<NodeAnswer>& answers() const { return answers_; }

 private:
  std::vector<NodeAnswer> answers_;
};

}  // namespace tessera
