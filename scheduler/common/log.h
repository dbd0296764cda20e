// Minimal structured logging to stderr: one line per event, with an UTC
// timestamp and a level, safe to call from any thread. (Debian 12's abseil
// predates absl/log.)
#pragma once

#include <string_view>

namespace tessera {

enum class LogLevel { kInfo, kWarning, kError };

/// Writes `2026-11-21T22:57:00.123Z W message` as one line, unless `level`
/// is below the minimum.
void Log(LogLevel level, std::string_view message);

/// Lines below `level` are dropped (default kInfo: everything is written).
void SetMinLogLevel(LogLevel level);

inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(std::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }

}  // namespace tessera
