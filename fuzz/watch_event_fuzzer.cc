// One line of a watch stream (k8s/client/watch_event.h): the event, and the
// Status an ERROR event or a refused watch carries (code, reason,
// retryAfterSeconds), which decides whether the reflector relists or waits.
#include "fuzz/fuzz_input.h"
#include "k8s/client/watch_event.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  const std::string_view line = fuzz::AsText(data, size);
  simdjson::dom::parser parser;
  absl::StatusOr<k8s::WatchEvent> event = k8s::ParseWatchEvent(parser, line);
  if (event.ok() && event->type == k8s::WatchEventType::kError) {
    const k8s::WatchStatus status = k8s::ParseWatchStatus(event->object);
    if (status.retry_after < absl::ZeroDuration() || status.retry_after > absl::Seconds(60)) {
      fuzz::Violated("retryAfterSeconds outside 0..60 s");
    }
  }
  // The same text as the body of a refused watch.
  const k8s::WatchStatus refused = k8s::ParseWatchStatus(parser, line, 504);
  if (refused.retry_after < absl::ZeroDuration() || refused.retry_after > absl::Seconds(60)) {
    fuzz::Violated("retryAfterSeconds outside 0..60 s");
  }
  return 0;
}
