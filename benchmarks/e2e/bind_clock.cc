#include "benchmarks/e2e/bind_clock.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace tessera::bench {

BindClock::BindClock(k8s::ApiClient& client, std::string namespace_name)
    : client_(client), namespace_name_(std::move(namespace_name)), thread_([this] { Watch(); }) {}

BindClock::~BindClock() {
  stop_.store(true);
  thread_.join();
}

namespace {

// The string value that follows the first `"key":"` at or after `from`, or "".
// Enough for Go's encoding of a Pod, whose field order is fixed: metadata
// (name first, then resourceVersion) before spec (nodeName).
std::string_view StringAfter(std::string_view line, std::string_view key, size_t from = 0) {
  const size_t at = line.find(key, from);
  if (at == std::string_view::npos) return {};
  const size_t begin = at + key.size();
  const size_t end = line.find('"', begin);
  return end == std::string_view::npos ? std::string_view() : line.substr(begin, end - begin);
}

}  // namespace

void BindClock::Watch() {
  // A list first (List), then a watch from its version that follows every
  // change. The API server drops a
  // watcher that falls behind in a burst; the next stream resumes after the
  // last event seen, so no bind goes unseen. A Status that ends a stream is
  // answered as client-go's reflector answers it: 410 starts over from a
  // fresh stream (its ADDED events show every pod as it is now), anything
  // else is retried from the same version after the server's retryAfterSeconds
  // (a v1.36 API server on etcd 3.4 says "Too large resource version", retry
  // after 1 s, to a version its etcd has not caught up with yet).
  int failures_in_a_row = 0;
  for (int streams = 0; !stop_.load(); ++streams) {
    std::string target = absl::StrCat("/api/v1/namespaces/", namespace_name_, "/pods?watch=1");
    bool listed = false;
    {
      absl::MutexLock lock(&mu_);
      listed = !resource_version_.empty();
    }
    if (!listed) {
      if (absl::Status st = List(); !st.ok()) {
        if (++failures_in_a_row > kMostFailuresInARow) {
          absl::MutexLock lock(&mu_);
          failure_ = st;
          return;
        }
        std::fprintf(stderr, "bind clock: %s; again in 1s\n", std::string(st.message()).c_str());
        for (const absl::Time until = absl::Now() + absl::Seconds(1); !stop_.load() && absl::Now() < until;) {
          absl::SleepFor(absl::Milliseconds(20));
        }
        continue;
      }
    }
    {
      absl::MutexLock lock(&mu_);
      absl::StrAppend(&target, "&resourceVersion=", resource_version_);
      ended_with_.reset();
    }
    const size_t seen_before = events_.load();
    absl::StatusOr<k8s::StreamEnd> end = client_.Stream(
        target, absl::Seconds(60), stop_, [this](std::string_view line) { return OnLine(line); }, [] {});
    if (stop_.load()) return;
    if (events_.load() != seen_before) failures_in_a_row = 0;  // it made progress
    std::optional<k8s::WatchStatus> status;
    {
      absl::MutexLock lock(&mu_);
      status = ended_with_;
    }
    if (!status.has_value() && end.ok() && end->status != 200) {
      status = k8s::ParseWatchStatus(parser_, end->error_body, end->status);
    }
    if (!status.has_value() && end.ok()) {  // the server's timeout: carry on
      failures_in_a_row = 0;
      if (streams < 1000) continue;
    }
    const std::string why = status.has_value()
                                ? absl::StrCat("HTTP ", status->code, " ", status->reason, ": ", status->message)
                                : std::string(end.ok() ? "too many streams" : end.status().message());
    if (++failures_in_a_row > kMostFailuresInARow || streams >= 1000) {
      absl::MutexLock lock(&mu_);
      failure_ = absl::UnavailableError(absl::StrCat("pod watch ended ", failures_in_a_row, " times in a row: ", why));
      return;
    }
    if (status.has_value() && status->gone()) {
      absl::MutexLock lock(&mu_);
      resource_version_.clear();
      continue;
    }
    absl::Duration wait = absl::Milliseconds(200) * failures_in_a_row;
    if (status.has_value()) wait = std::max(wait, status->retry_after);
    std::fprintf(stderr, "bind clock: pod watch ended (%s); again in %s\n", why.c_str(),
                 absl::FormatDuration(wait).c_str());
    for (const absl::Time until = absl::Now() + wait; !stop_.load() && absl::Now() < until;) {
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
}

absl::Status BindClock::List() {
  // resourceVersion=0: whatever the API server's watch cache holds, and the
  // version it holds it at, from which the watch then goes on. Without a
  // version a v1.36 API server on etcd 3.4 reads etcd's newest revision and
  // waits for its cache to reach it, which a quiet namespace never makes it
  // do ("Too large resource version", forever): client-go lists the same way.
  const absl::Time now = absl::Now();
  absl::StatusOr<k8s::ApiResponse> list =
      client_.Get(absl::StrCat("/api/v1/namespaces/", namespace_name_, "/pods?resourceVersion=0"));
  if (!list.ok()) return list.status();
  if (list->status != 200) {
    return absl::UnavailableError(absl::StrCat("pod list: HTTP ", list->status, ": ", list->body.substr(0, 300)));
  }
  const nlohmann::json body = nlohmann::json::parse(list->body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) {
    return absl::DataLossError("pod list: not a PodList");
  }
  absl::MutexLock lock(&mu_);
  for (const nlohmann::json& pod : body["items"]) {
    const std::string name = pod["metadata"].value("name", "");
    if (name.empty()) continue;
    events_.fetch_add(1);
    seen_.emplace(name, true);
    if (!pod["spec"].value("nodeName", "").empty()) bound_.emplace(name, now);
  }
  resource_version_ = body["metadata"].value("resourceVersion", "");
  if (resource_version_.empty()) return absl::DataLossError("pod list: no resourceVersion");
  return absl::OkStatus();
}

bool BindClock::OnLine(std::string_view line) {
  // Kept to string scans: a watcher slower than the burst it watches is
  // dropped by the API server.
  const absl::Time now = absl::Now();
  if (line.find("\"type\":\"ERROR\"") != std::string_view::npos) {
    absl::StatusOr<k8s::WatchEvent> event = k8s::ParseWatchEvent(parser_, line);
    absl::MutexLock lock(&mu_);
    if (event.ok()) {
      ended_with_ = k8s::ParseWatchStatus(event->object);
    } else {
      ended_with_.emplace().message = std::string(line.substr(0, 300));
    }
    return false;
  }
  const size_t metadata = line.find("\"metadata\":{");
  if (metadata == std::string_view::npos) return true;
  const std::string_view name = StringAfter(line, "\"name\":\"", metadata);
  if (name.empty()) return true;
  const std::string_view version = StringAfter(line, "\"resourceVersion\":\"", metadata);
  const bool bound = !StringAfter(line, "\"nodeName\":\"", metadata).empty();
  events_.fetch_add(1);
  absl::MutexLock lock(&mu_);
  seen_.emplace(name, true);
  if (bound) bound_.emplace(name, now);
  if (!version.empty()) resource_version_ = std::string(version);
  return true;
}

absl::Status BindClock::AwaitCount(bool bound, int pods, absl::Time deadline, std::string_view what) {
  absl::MutexLock lock(&mu_);
  auto count = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(bound ? bound_.size() : seen_.size());
  };
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !failure_.ok() || count() >= pods; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(count(), " of ", pods, " pods ", std::string(what)));
  }
  return failure_;
}

absl::Status BindClock::WaitUntilWatching(int pods, absl::Duration timeout) {
  return AwaitCount(/*bound=*/false, pods, absl::Now() + timeout, "shown by the pod watch");
}

absl::Status BindClock::WaitUntilBound(int pods, absl::Time deadline) {
  return AwaitCount(/*bound=*/true, pods, deadline, "bound");
}

std::vector<absl::Time> BindClock::BoundTimes() const {
  absl::MutexLock lock(&mu_);
  std::vector<absl::Time> times;
  for (const auto& [name, at] : bound_) times.push_back(at);
  std::sort(times.begin(), times.end());
  return times;
}

}  // namespace tessera::bench
