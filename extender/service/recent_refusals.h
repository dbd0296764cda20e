// The pods filter refused on every node it was asked about, and why, for the
// GPU map page (/ui): kube-scheduler keeps such a pod pending and retries it,
// and the operator's question is "why does it not fit". Filter writes the
// summary of its last answer for the pod here; a bind of the pod, a filter
// that passes it somewhere, or `ttl` without a new refusal forgets it.
//
// Bounded (`capacity` pods, the least recently refused goes first) and
// thread-safe: filter runs on several threads at once. Written only when a
// pod fits nowhere, once per request (one lock, one map insert), and a
// passing filter costs one lock and one lookup: nothing per node.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/common/clock.h"

namespace tessera {

/// One pod filter refused everywhere: its last filter's answer, summarised.
struct FilterRefusal {
  /// The pod's uid, or "namespace/name" when the request carried no uid.
  std::string key = {};
  std::string pod = {};  ///< "namespace/name".
  std::string tenant_label = {};  ///< The pod's `tessera.io/tenant` label; may be empty.
  std::string request = {};  ///< What the pod asks, in words ("2 GPUs × 500 milli, 10240 MiB each").
  /// The MIG profile the pod asks for ("1g.10gb"); empty for any other pod.
  std::string mig_profile = {};
  /// Set by RecentRefusals::Record.
  absl::Time at = absl::InfinitePast();
  /// Nodes the request named, all refused.
  int64_t nodes = 0;
  /// The answer's Error, when the pod itself was refused (an invalid
  /// request, an unknown tenant); empty otherwise.
  std::string error = {};
  /// Why the nodes were refused, by reason code, most nodes first (then by code).
  struct Reason {
    std::string code = {};  ///< FilterVerdict::reason_code ("insufficient_gpu_compute").
    int64_t nodes = 0;    ///< Nodes refused for it.
    std::string example = {};  ///< One node's message, as kube-scheduler got it.
    std::string node = {};  ///< That node.
    bool operator==(const Reason&) const = default;
  };
  std::vector<Reason> reasons = {};
  bool operator==(const FilterRefusal&) const = default;
};

struct RecentRefusalsOptions {
  /// Pods kept; past it the least recently refused is forgotten.
  size_t capacity = 1000;
  /// A pod not refused again for this long is forgotten (it was placed by
  /// someone else, deleted, or kube-scheduler stopped trying).
  absl::Duration ttl = absl::Minutes(10);
  /// Most reasons kept per pod, and most bytes of each text kept.
  size_t max_reasons = 8;
  size_t max_text_bytes = 512;
  const Clock* clock = &Clock::Real();
};

class RecentRefusals {
 public:
  explicit RecentRefusals(RecentRefusalsOptions options = {});

  /// Keeps `refusal` as the pod's last, stamped now, replacing an earlier one.
  /// Texts are cut to max_text_bytes, reasons to max_reasons.
  void Record(FilterRefusal refusal);
  /// Forgets the pod (it passed a filter, or is being bound). Cheap when absent.
  void Forget(std::string_view key);
  /// The pods kept and not expired, most recently refused first.
  [[nodiscard]] std::vector<FilterRefusal> List() const;
  [[nodiscard]] size_t size() const;

 private:
  using Order = std::list<FilterRefusal>;  // most recent first
  void DropExpired(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  RecentRefusalsOptions options_;
  mutable absl::Mutex mu_;
  Order order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Order::iterator> by_key_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
