#include "k8s/client/reflector.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "k8s/client/watch_event.h"
#include "scheduler/common/log.h"
#include "scheduler/common/thread_name.h"
#include "scheduler/model/absl_compat.h"

namespace tessera::k8s {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

std::string_view StringAt(object o, std::string_view key) {
  std::string_view s;
  if (o.at_key(key).get(s) != simdjson::SUCCESS) return {};
  return s;
}

}  // namespace

absl::StatusOr<ListPage> ApplyListPage(simdjson::dom::parser& parser, std::string_view body, ReflectorSink& sink,
                                       const std::function<void(const absl::Status&)>& on_malformed) {
  object list;
  if (auto err = parser.parse(body.data(), body.size(), true).get(list); err) {
    return absl::DataLossError(absl::StrCat("not a JSON list: ", simdjson::error_message(err)));
  }
  ListPage page;
  element items_element;
  if (list["items"].get(items_element) == simdjson::SUCCESS && !items_element.is_null()) {
    simdjson::dom::array items;
    if (items_element.get(items) != simdjson::SUCCESS) return absl::DataLossError("items is not an array");
    for (element item : items) {
      ++page.items;
      if (absl::Status s = sink.Upsert(item); !s.ok()) {
        ++page.malformed;
        on_malformed(s);
      }
    }
  }
  object meta;
  if (list["metadata"].get(meta) == simdjson::SUCCESS) {
    page.resource_version = std::string(StringAt(meta, "resourceVersion"));
    page.continue_token = std::string(StringAt(meta, "continue"));
  }
  return page;
}

std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Reflector::Reflector(ApiClient& client, ReflectorSink& sink, ReflectorOptions options, MetricsRegistry* metrics)
    : client_(client), sink_(sink), options_(std::move(options)), metrics_(metrics),
      rng_state_(std::random_device{}()) {
  if (metrics_ == nullptr) return;
  auto events = [&](std::string type) {
    return &metrics_->Counter("tessera_watch_events_total", "Watch events applied, by resource and type.",
                              {{"resource", options_.resource}, {"type", std::move(type)}});
  };
  events_added_ = events("ADDED");
  events_modified_ = events("MODIFIED");
  events_deleted_ = events("DELETED");
  events_bookmark_ = events("BOOKMARK");
  malformed_ = &metrics_->Counter("tessera_watch_malformed_objects_total",
                                  "Objects or events that could not be decoded.", {{"resource", options_.resource}});
}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    NameThisThread("watch");
    Run();
  });
}

void Reflector::Stop() {
  stop_.store(true);
  if (!stopping_.HasBeenNotified()) stopping_.Notify();
  if (thread_.joinable()) thread_.join();
}

bool Reflector::WaitForSync(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!synced() && absl::Now() < deadline && !stop_.load()) absl::SleepFor(absl::Milliseconds(5));
  return synced();
}

ReflectorStatus Reflector::status() const {
  absl::MutexLock lock(&mu_);
  ReflectorStatus s = status_;
  s.synced = synced();
  s.in_step = in_step();
  return s;
}

void Reflector::RecordError(std::string message) {
  LogWarning(absl::StrCat("watch ", options_.resource, ": ", message));
  absl::MutexLock lock(&mu_);
  status_.last_error = std::move(message);
}

void Reflector::Sleep(absl::Duration d) { stopping_.WaitForNotificationWithTimeout(d); }

absl::Duration Reflector::Jitter(absl::Duration d, double spread) {
  // xorshift: a few random bits per reconnect, no shared generator to lock.
  rng_state_ ^= rng_state_ << 13;
  rng_state_ ^= rng_state_ >> 7;
  rng_state_ ^= rng_state_ << 17;
  const double unit = static_cast<double>(rng_state_ % 10000) / 10000.0;  // [0, 1)
  return d * (1.0 - spread + 2.0 * spread * unit);
}

void Reflector::Run() {
  Counter* relists = nullptr;
  Counter* restarts = nullptr;
  if (metrics_ != nullptr) {
    relists = &metrics_->Counter("tessera_watch_lists_total", "Full lists of a resource (initial sync and resyncs).",
                                 {{"resource", options_.resource}});
    restarts = &metrics_->Counter("tessera_watch_failures_total",
                                  "Watch or list attempts that failed (connection, HTTP error, timeout).",
                                  {{"resource", options_.resource}});
  }
  bool need_list = true;
  absl::Duration backoff = options_.min_backoff;
  while (!stop_.load()) {
    if (need_list) {
      if (relists != nullptr) relists->Inc();
      absl::Status listed = List();
      if (stop_.load()) break;
      if (!listed.ok()) {
        if (restarts != nullptr) restarts->Inc();
        RecordError(absl::StrCat("list failed, retrying: ", listed.message()));
        Sleep(Jitter(backoff, 0.5));
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      need_list = false;
      synced_.store(true, std::memory_order_release);
      in_step_.store(true, std::memory_order_release);
    }
    applied_since_watch_ = false;
    const WatchEnd end = Watch();
    // A clean end (the server's timeoutSeconds) misses nothing, nor does a
    // watch the server asked to retry later (retryAfterSeconds: a v1.36 watch
    // cache behind the list's version has no event past it to miss). Any
    // other end may have.
    const bool server_asked_to_wait = end == WatchEnd::kFailed && retry_after_ > absl::ZeroDuration();
    if (end != WatchEnd::kEnded && end != WatchEnd::kStopped && !server_asked_to_wait) {
      in_step_.store(false, std::memory_order_release);
    }
    if (applied_since_watch_) backoff = options_.min_backoff;  // it worked for a while: start over
    switch (end) {
      case WatchEnd::kStopped:
        return;
      case WatchEnd::kEnded:  // the server's timeoutSeconds: watch again from where we are
        backoff = options_.min_backoff;
        break;
      case WatchEnd::kGone:  // our resourceVersion was compacted away: only a list can catch up
        LogInfo(absl::StrCat("watch ", options_.resource, ": resourceVersion ", resource_version_,
                             " expired (410 Gone); listing again"));
        need_list = true;
        break;
      case WatchEnd::kMalformed:
        // A list catches up, but not at once: a server that sends the same
        // bad event to every new watch would be listed as fast as it answers.
        // The backoff grows until a watch applies an event.
        need_list = true;
        Sleep(Jitter(backoff, 0.5));
        backoff = std::min(backoff * 2, options_.max_backoff);
        break;
      case WatchEnd::kFailed:
        if (restarts != nullptr) restarts->Inc();
        if (retry_after_ > absl::ZeroDuration()) {
          // The server said when: from the same resourceVersion then, as
          // client-go does, and without growing the backoff. A v1.36 API
          // server on etcd 3.4 answers "Too large resource version, retry
          // after 1 s" until its watch cache reaches the version the list
          // was read at, which in a quiet cluster takes until the resource
          // next changes: a doubled backoff would then see that change late.
          Sleep(retry_after_);
          retry_after_ = absl::ZeroDuration();
          break;
        }
        Sleep(Jitter(backoff, 0.5));
        backoff = std::min(backoff * 2, options_.max_backoff);
        break;
    }
  }
}

absl::Status Reflector::List() {
  sink_.BeginList();
  std::string continue_token;
  std::string list_version;
  int expired_restarts = 0;
  do {
    std::string target = absl::StrCat(options_.path, "?limit=", options_.page_size);
    if (!continue_token.empty()) absl::StrAppend(&target, "&continue=", QueryEscape(continue_token));
    if (!options_.field_selector.empty()) absl::StrAppend(&target, "&fieldSelector=", QueryEscape(options_.field_selector));
    absl::StatusOr<ApiResponse> page = client_.Get(target);
    if (stop_.load()) return absl::CancelledError("stopping");
    if (!page.ok()) return page.status();
    if (page->status == 410 && !continue_token.empty() && expired_restarts < 3) {
      // The continue token outlived the server's history: start the list over.
      ++expired_restarts;
      continue_token.clear();
      list_version.clear();
      sink_.BeginList();
      continue;
    }
    if (page->status != 200) {
      return absl::UnavailableError(absl::StrCat("GET ", target, ": HTTP ", page->status, ": ", StatusMessage(page->body)));
    }
    absl::StatusOr<ListPage> applied = ApplyListPage(parser_, page->body, sink_, [&](const absl::Status& s) {
      RecordError(absl::StrCat("list: skipped a malformed object: ", s.message()));
    });
    if (!applied.ok()) return absl::DataLossError(absl::StrCat("GET ", target, ": ", applied.status().message()));
    if (applied->malformed > 0) {
      if (malformed_ != nullptr) malformed_->Inc(static_cast<double>(applied->malformed));
      absl::MutexLock lock(&mu_);
      status_.malformed_events += applied->malformed;
    }
    // Every page reports the first page's version; the watch starts there.
    if (list_version.empty()) list_version = applied->resource_version;
    continue_token = applied->continue_token;
  } while (!continue_token.empty() && !stop_.load());
  if (stop_.load()) return absl::CancelledError("stopping");
  sink_.EndList();
  sink_.Flush();
  resource_version_ = list_version;
  absl::MutexLock lock(&mu_);
  ++status_.lists;
  status_.resource_version = resource_version_;
  return absl::OkStatus();
}

bool Reflector::ApplyLine(std::string_view line, WatchEnd& end) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return true;
  auto malformed = [&](std::string why) {
    if (malformed_ != nullptr) malformed_->Inc();
    {
      absl::MutexLock lock(&mu_);
      ++status_.malformed_events;
    }
    RecordError(absl::StrCat("malformed watch event, resyncing: ", why));
    end = WatchEnd::kMalformed;
    return false;
  };
  absl::StatusOr<WatchEvent> event = ParseWatchEvent(parser_, line);
  if (!event.ok()) return malformed(std::string(event.status().message()));

  absl::Status applied;
  Counter* counter = nullptr;
  switch (event->type) {
    case WatchEventType::kError: {
      const WatchStatus status = ParseWatchStatus(event->object);
      if (status.gone()) {
        end = WatchEnd::kGone;
      } else {
        RecordError(absl::StrCat("watch ERROR event: ", status.code, " ", status.reason, ": ", status.message));
        retry_after_ = status.retry_after;
        end = WatchEnd::kFailed;
      }
      return false;
    }
    case WatchEventType::kAdded:
      counter = events_added_;
      applied = sink_.Upsert(event->object);
      break;
    case WatchEventType::kModified:
      counter = events_modified_;
      applied = sink_.Upsert(event->object);
      break;
    case WatchEventType::kDeleted:
      counter = events_deleted_;
      applied = sink_.Delete(event->object);
      break;
    case WatchEventType::kBookmark:
      counter = events_bookmark_;
      break;
  }
  if (!applied.ok()) return malformed(std::string(applied.message()));
  applied_since_watch_ = true;
  if (!event->resource_version.empty()) resource_version_ = std::string(event->resource_version);
  if (counter != nullptr) counter->Inc();
  absl::MutexLock lock(&mu_);
  ++status_.events;
  status_.resource_version = resource_version_;
  return true;
}

Reflector::WatchEnd Reflector::Watch() {
  const int64_t timeout_s = std::max<int64_t>(1, absl::ToInt64Seconds(Jitter(options_.watch_timeout, 0.2)));
  std::string target = absl::StrCat(options_.path, "?watch=1&allowWatchBookmarks=true&resourceVersion=",
                                    QueryEscape(resource_version_), "&timeoutSeconds=", timeout_s);
  if (!options_.field_selector.empty()) absl::StrAppend(&target, "&fieldSelector=", QueryEscape(options_.field_selector));
  {
    absl::MutexLock lock(&mu_);
    ++status_.watches;
  }
  WatchEnd end = WatchEnd::kEnded;
  // The server ends the watch at timeoutSeconds; silence well past that means
  // the connection is dead even if TCP has not noticed.
  const absl::Duration idle = absl::Seconds(timeout_s) + absl::Seconds(30);
  absl::StatusOr<StreamEnd> stream =
      client_.Stream(target, idle, stop_, [&](std::string_view line) { return ApplyLine(line, end); },
                     [&] { sink_.Flush(); }, [&] { in_step_.store(true, std::memory_order_release); });
  sink_.Flush();
  {
    absl::MutexLock lock(&mu_);
    status_.resource_version = resource_version_;
  }
  if (stop_.load()) return WatchEnd::kStopped;
  if (!stream.ok()) {
    RecordError(absl::StrCat("watch lost: ", stream.status().message()));
    return WatchEnd::kFailed;
  }
  if (stream->status == 410) return WatchEnd::kGone;
  if (stream->status != 200) {
    RecordError(absl::StrCat("watch refused: HTTP ", stream->status, ": ", StatusMessage(stream->error_body)));
    retry_after_ = ParseWatchStatus(parser_, stream->error_body, stream->status).retry_after;
    return WatchEnd::kFailed;
  }
  return end;
}

}  // namespace tessera::k8s
