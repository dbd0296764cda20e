// Small plugins for the config tests, registered in a test-local registry, so
// the loader is tested against args it controls rather than gpu-share's.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/framework/plugin_args.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/framework/registry.h"

namespace tessera::config_test {

/// A GPU chooser and filter. Args: gpus (1..8, default 1), order (first|last).
class FakeChooser final : public Plugin, public GpuChooserPlugin {
 public:
  static constexpr std::string_view kName = "fake-chooser";

  static absl::StatusOr<std::unique_ptr<Plugin>> New(PluginArgs& args) {
    const int64_t gpus = args.Int("gpus", 1, 8, 1, "A test plugin's arg.");
    const bool last = args.Enum("order", {"first", "last"}, "first", "A test plugin's arg.") == "last";
    if (absl::Status s = args.Finish(); !s.ok()) return s;
    return std::make_unique<FakeChooser>(gpus, last);
  }

  FakeChooser(int64_t gpus, bool last) : Plugin(/*memoizable=*/false), gpus_(gpus), last_(last) {}

  [[nodiscard]] std::string_view Name() const override { return kName; }
  void RankGpus(const CycleState&, const NodeView&, RankedGpus& ranked) const override {
    for (int64_t i = 0; i < gpus_; ++i) {
      ranked.push_back(RankedGpu{.index = static_cast<int32_t>(last_ ? 7 - i : i), .tier = static_cast<int32_t>(i)});
    }
  }

 private:
  int64_t gpus_;
  bool last_;
};

/// A scorer that gives every node the same score. Args: score (0..100,
/// default 50), reserve (memory), models (string list), strict (bool; when
/// true, models must not be empty: a cross-field check).
class FakeScorer final : public Plugin, public ScorePlugin {
 public:
  static absl::StatusOr<std::unique_ptr<Plugin>> New(std::string name, PluginArgs& args) {
    const int64_t score = args.Int("score", 0, 100, 50, "A test plugin's arg.");
    (void)args.Memory("reserve", MemoryMiB(0), "A test plugin's arg.");
    const std::vector<std::string> models = args.StringList("models", "A test plugin's arg.");
    if (args.Bool("strict", false, "A test plugin's arg.") && models.empty()) {
      args.Error("models", "must list at least one model when strict is true");
    }
    if (absl::Status s = args.Finish(); !s.ok()) return s;
    return std::make_unique<FakeScorer>(std::move(name), score);
  }

  FakeScorer(std::string name, int64_t score)
      : Plugin(/*memoizable=*/false), name_(std::move(name)), score_(score) {}

  [[nodiscard]] std::string_view Name() const override { return name_; }
  [[nodiscard]] int64_t ScoreNode(const CycleState&, const NodeView&, const GpuChoice&) const override {
    return score_;
  }

 private:
  std::string name_;
  int64_t score_;
};

/// A registry of: fake-chooser; fake-score and fake-score-b (FakeScorer);
/// fake-broken, whose factory fails without recording an arg error; and
/// fake-lazy, whose factory reads no args and never calls Finish().
inline PluginRegistry FakeRegistry() {
  PluginRegistry registry;
  (void)registry.Register(std::string(FakeChooser::kName), &FakeChooser::New);
  for (std::string name : {"fake-score", "fake-score-b"}) {
    (void)registry.Register(name, [name](PluginArgs& args) { return FakeScorer::New(name, args); });
  }
  (void)registry.Register("fake-broken", [](PluginArgs&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
    return absl::FailedPreconditionError("cannot start: no GPU driver");
  });
  (void)registry.Register("fake-lazy", [](PluginArgs&) -> absl::StatusOr<std::unique_ptr<Plugin>> {
    return std::make_unique<FakeScorer>("fake-lazy", 0);
  });
  return registry;
}

}  // namespace tessera::config_test
