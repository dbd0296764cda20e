#include "scheduler/common/log.h"

#include <atomic>

#include <cstdio>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessera {

namespace {
std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
}  // namespace

void SetMinLogLevel(LogLevel level) { min_level.store(static_cast<int>(level), std::memory_order_relaxed); }

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) < min_level.load(std::memory_order_relaxed)) return;
  const char tag = level == LogLevel::kInfo ? 'I' : level == LogLevel::kWarning ? 'W' : 'E';
  std::string line = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone());
  line.push_back(' ');
  line.push_back(tag);
  line.push_back(' ');
  line.append(message);
  line.push_back('\n');
  // One write per line so that lines from different threads do not interleave.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace tessera
