// List + watch of one kind of object, kept in step with the API server the
// way client-go's reflector does it: a paginated list, then a watch from the
// list's resourceVersion with bookmarks; on 410 Gone a fresh list; on a
// malformed event a fresh list after a jittered backoff (a server may send the
// same bad event to every watch); on transport errors a jittered backoff and a
// new watch from the last resourceVersion seen. The backoff doubles up to its
// maximum and starts over once a watch applies an event.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "scheduler/metrics/metrics.h"
#include "simdjson.h"

namespace tessera::k8s {

/// Where a reflector puts what it reads. Called from the reflector's thread only.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  /// A full list starts: every current object will be Upsert()ed again.
  virtual void BeginList() = 0;
  /// An object from a list page or an ADDED/MODIFIED event. An error means
  /// the object is malformed: a list skips it, a watch resyncs.
  virtual absl::Status Upsert(simdjson::dom::element object) = 0;
  /// A DELETED event's object (its last state).
  virtual absl::Status Delete(simdjson::dom::element object) = 0;
  /// The list is complete: objects not Upsert()ed since BeginList() are gone.
  virtual void EndList() = 0;
  /// A batch of changes is complete (a list, or the events one read
  /// delivered): make them visible.
  virtual void Flush() = 0;
};

struct ReflectorOptions {
  std::string resource;         ///< "nodes", "pods": for logs and metric labels.
  std::string path;             ///< "/api/v1/nodes"
  std::string field_selector;   ///< Optional, e.g. "status.phase!=Succeeded".
  int64_t page_size = 500;      ///< `limit` of each list page.
  absl::Duration watch_timeout = absl::Minutes(5);  ///< Server-side timeoutSeconds, jittered ±20%.
  absl::Duration min_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);  ///< See ClusterWatchOptions::max_backoff.
};

/// What /debug shows of a reflector.
struct ReflectorStatus {
  bool synced = false;          ///< The first list completed.
  std::string resource_version;
  int64_t lists = 0;
  int64_t watches = 0;
  int64_t events = 0;
  int64_t malformed_events = 0;
  bool in_step = false;         ///< Reflector::in_step().
  std::string last_error;
};

class Reflector {
 public:
  /// \param metrics may be null.
  Reflector(ApiClient& client, ReflectorSink& sink, ReflectorOptions options, MetricsRegistry* metrics);
  ~Reflector();  ///< Stop()s.
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Start();
  /// Ends the thread; an open watch is closed within ~100 ms.
  void Stop();
  /// True once the first full list has been applied.
  [[nodiscard]] bool synced() const { return synced_.load(std::memory_order_acquire); }
  /// True while the model follows the server: a list has been applied and
  /// a watch from it is open (or being reopened after the server ended one
  /// cleanly). False from a failed list or watch, a 410 or a malformed event
  /// until a list completes or a watch opens again: what the model shows may
  /// miss changes meanwhile.
  [[nodiscard]] bool in_step() const { return in_step_.load(std::memory_order_acquire); }
  /// Blocks until synced() or `timeout`; \return synced().
  bool WaitForSync(absl::Duration timeout);
  [[nodiscard]] ReflectorStatus status() const;

 private:
  enum class WatchEnd { kEnded, kGone, kMalformed, kFailed, kStopped };

  void Run();
  absl::Status List();
  WatchEnd Watch();
  /// Applies one watch line; sets `end` and returns false to close the stream.
  bool ApplyLine(std::string_view line, WatchEnd& end);
  void RecordError(std::string message);
  void Sleep(absl::Duration d);
  absl::Duration Jitter(absl::Duration d, double spread);

  ApiClient& client_;
  ReflectorSink& sink_;
  const ReflectorOptions options_;
  MetricsRegistry* metrics_;
  // Looked up once: the registry's lookup takes a lock, and events arrive by
  // the tens of thousands per second. Null without a registry.
  Counter* events_added_ = nullptr;
  Counter* events_modified_ = nullptr;
  Counter* events_deleted_ = nullptr;
  Counter* events_bookmark_ = nullptr;
  Counter* malformed_ = nullptr;
  simdjson::dom::parser parser_;
  std::string resource_version_;  // reflector thread only; copied into status_
  /// The server's retryAfterSeconds on the watch that failed last: the next
  /// try waits at least this long (reflector thread only).
  absl::Duration retry_after_ = absl::ZeroDuration();
  /// The watch open now applied an event (reflector thread only): the
  /// backoff starts over after it ends, whatever ended it.
  bool applied_since_watch_ = false;

  std::atomic<bool> stop_{false};
  std::atomic<bool> synced_{false};
  std::atomic<bool> in_step_{false};
  absl::Notification stopping_;
  std::thread thread_;
  uint64_t rng_state_;

  mutable absl::Mutex mu_;
  ReflectorStatus status_ ABSL_GUARDED_BY(mu_);
};

/// What one page of a list said besides its items.
struct ListPage {
  std::string resource_version;  ///< metadata.resourceVersion
  std::string continue_token;    ///< metadata.continue; empty on the last page
  int64_t items = 0;
  int64_t malformed = 0;         ///< Items the sink refused (reported through on_malformed).
};

/// Decodes a List body (NodeList, PodList) and Upsert()s every item into
/// `sink`. A malformed item is reported and skipped: one bad object must not
/// keep a whole cluster from syncing. DataLoss when the body is not a list.
absl::StatusOr<ListPage> ApplyListPage(simdjson::dom::parser& parser, std::string_view body, ReflectorSink& sink,
                                       const std::function<void(const absl::Status&)>& on_malformed);

/// Percent-encodes a query parameter value.
std::string QueryEscape(std::string_view value);

}  // namespace tessera::k8s
