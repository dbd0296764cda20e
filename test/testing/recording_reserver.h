// A ReservePlugin that writes what it is asked to a shared log and refuses
// nodes it was told to: for tests of the Reserve and Unreserve points.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/framework/plugin.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::testing {

/// What reserve plugins were asked, in order: "<name> reserve <node>",
/// "<name> unreserve <node>". Thread-safe.
class ReserveLog {
 public:
  void Add(std::string line) {
    absl::MutexLock lock(&mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> lines() const {
    absl::MutexLock lock(&mu_);
    return lines_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_;
};

class RecordingReserver final : public Plugin, public ReservePlugin {
 public:
  /// Refuses to reserve on `refused_node` ("" : none).
  RecordingReserver(std::string name, std::shared_ptr<ReserveLog> log, std::string refused_node = "")
      : Plugin(/*memoizable=*/true), name_(std::move(name)), log_(std::move(log)), refused_(std::move(refused_node)) {}
  std::string_view Name() const override { return name_; }
  absl::Status Reserve(const CycleState&, const NodeView& node, absl::Span<const GpuShare>) const override {
    log_->Add(absl::StrCat(name_, " reserve ", Absl(node.name)));
    if (node.name == refused_) return absl::ResourceExhaustedError(absl::StrCat(name_, " refuses ", Absl(node.name)));
    return absl::OkStatus();
  }
  void Unreserve(const CycleState&, std::string_view node_name, absl::Span<const GpuShare>) const override {
    log_->Add(absl::StrCat(name_, " unreserve ", Absl(node_name)));
  }

 private:
  std::string name_;
  std::shared_ptr<ReserveLog> log_;
  std::string refused_;
};

}  // namespace tessera::testing
