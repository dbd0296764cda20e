// Shared by the fuzz targets: turning libFuzzer's bytes into the inputs of
// decoders that take more than one string, and an oracle for "this must hold".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

namespace tessera::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Splits `text` at each line that is exactly `---`, so that seeds stay
/// readable: "a\n---\nb" is {"a", "b"}. Pieces past `max` are dropped.
inline std::vector<std::string_view> SplitFields(std::string_view text, size_t max) {
  std::vector<std::string_view> fields;
  constexpr std::string_view kSeparator = "\n---\n";
  while (fields.size() < max) {
    const size_t at = text.find(kSeparator);
    fields.push_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + kSeparator.size());
  }
  return fields;
}

/// A field as an optional source: absent when missing or exactly "~" (YAML's
/// null), so that both "absent" and "present but empty" can be said.
inline std::optional<std::string_view> Optional(const std::vector<std::string_view>& fields, size_t i) {
  if (i >= fields.size() || fields[i] == "~") return std::nullopt;
  return fields[i];
}

/// Stops the run with a message: libFuzzer then keeps the input as a crash.
/// For properties the code promises (round trips, bounds), not for errors the
/// decoders report as values.
[[noreturn]] inline void Violated(const char* what) {
  std::fprintf(stderr, "fuzz property violated: %s\n", what);
  std::abort();
}

}  // namespace tessera::fuzz
