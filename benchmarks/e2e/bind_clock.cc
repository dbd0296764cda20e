#include "benchmarks/e2e/bind_clock.h"

#include <algorithm>
#include <utility>

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
  // The first stream has no resourceVersion: it opens with an ADDED event for
  // every pod there is, then follows every change. The API server drops a
  // watcher that falls behind in a burst; the next stream resumes after the
  // last event seen, so no bind goes unseen.
  for (int streams = 0; !stop_.load(); ++streams) {
    std::string target = absl::StrCat("/api/v1/namespaces/", namespace_name_, "/pods?watch=1");
    {
      absl::MutexLock lock(&mu_);
      if (!resource_version_.empty()) absl::StrAppend(&target, "&resourceVersion=", resource_version_);
    }
    absl::StatusOr<k8s::StreamEnd> end = client_.Stream(
        target, absl::Seconds(60), stop_, [this](std::string_view line) { return OnLine(line); }, [] {});
    if (stop_.load()) return;
    if (end.ok() && end->status == 200 && streams < 100) continue;
    absl::MutexLock lock(&mu_);
    failure_ = end.ok() ? absl::UnavailableError(absl::StrCat("pod watch ended: HTTP ", end->status, " ", end->error_body))
                        : end.status();
    return;
  }
}

bool BindClock::OnLine(std::string_view line) {
  // Kept to string scans: a watcher slower than the burst it watches is
  // dropped by the API server.
  const absl::Time now = absl::Now();
  if (line.find("\"type\":\"ERROR\"") != std::string_view::npos) {
    absl::MutexLock lock(&mu_);
    failure_ = absl::UnavailableError(absl::StrCat("pod watch error: ", std::string(line.substr(0, 300))));
    return false;
  }
  const size_t metadata = line.find("\"metadata\":{");
  if (metadata == std::string_view::npos) return true;
  const std::string_view name = StringAfter(line, "\"name\":\"", metadata);
  if (name.empty()) return true;
  const std::string_view version = StringAfter(line, "\"resourceVersion\":\"", metadata);
  const bool bound = !StringAfter(line, "\"nodeName\":\"", metadata).empty();
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
