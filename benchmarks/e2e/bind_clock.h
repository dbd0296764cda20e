// When each pod of a namespace was bound, as a pod watch shows it.
//
// The throughput run measures a batch that binds in about a second; polling
// LIST for unbound pods every few milliseconds would both quantise that
// second coarsely and load the API server it measures (a LIST with a field
// selector reads every pod from etcd). One watch stream costs the API server
// an event per change and times each bind to when its event arrives.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "k8s/client/watch_event.h"
#include "simdjson.h"

namespace tessera::bench {

class BindClock {
 public:
  /// Watches the pods of `namespace_name` through `client` (which must
  /// outlive the clock) until destroyed.
  BindClock(k8s::ApiClient& client, std::string namespace_name);
  ~BindClock();
  BindClock(const BindClock&) = delete;
  BindClock& operator=(const BindClock&) = delete;

  /// Waits until the watch has delivered at least `pods` pods (its first list): from then on no bind goes unseen.
  absl::Status WaitUntilWatching(int pods, absl::Duration timeout);
  /// Waits until `pods` pods are bound; DeadlineExceeded naming how many are not.
  absl::Status WaitUntilBound(int pods, absl::Time deadline);
  /// The moment each bound pod's binding was first seen, earliest first.
  [[nodiscard]] std::vector<absl::Time> BoundTimes() const;

 private:
  void Watch();
  /// Lists the namespace's pods into seen_ and bound_, and sets resource_version_.
  absl::Status List();
  bool OnLine(std::string_view line);
  // Waits until `pods` pods were seen (or, with `bound`, seen bound), the
  // watch fails, or `deadline`; `what` names the count in the error.
  absl::Status AwaitCount(bool bound, int pods, absl::Time deadline, std::string_view what);

  k8s::ApiClient& client_;
  const std::string namespace_name_;
  std::atomic<bool> stop_{false};
  mutable absl::Mutex mu_;
  std::map<std::string, bool, std::less<>> seen_ ABSL_GUARDED_BY(mu_);         // pod name -> seen
  std::map<std::string, absl::Time, std::less<>> bound_ ABSL_GUARDED_BY(mu_);  // pod name -> first seen bound
  std::string resource_version_ ABSL_GUARDED_BY(mu_);  // of the last event seen
  /// The Status of the ERROR event that ended the current stream, if one did.
  std::optional<k8s::WatchStatus> ended_with_ ABSL_GUARDED_BY(mu_);
  simdjson::dom::parser parser_;  ///< The watch thread's only.
  std::atomic<size_t> events_{0};  ///< Pod events seen, to tell a stream that made progress.
  /// Streams ended by an error one after another before the clock gives up.
  static constexpr int kMostFailuresInARow = 30;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace tessera::bench
