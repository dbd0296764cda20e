// Internal JSON helpers shared by the annotation parsers and formatters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <simdjson.h>

namespace tessera::k8s::internal {

/// Kubernetes caps all annotations of an object together at 256 KiB
/// (TotalAnnotationSizeLimitB), so a longer value cannot be a real annotation;
/// refusing it early bounds the parser's memory.
inline constexpr size_t kMaxAnnotationBytes = 256 * 1024;

/// Parses `json` with this thread's reusable simdjson DOM parser. The input is
/// copied into the parser's padded buffer (simdjson reads past the end), which
/// is reused between calls, so steady-state parsing does not allocate.
/// The returned element lives in the parser: use it before the next call on
/// this thread.
simdjson::simdjson_result<simdjson::dom::element> ParseJson(std::string_view json);

/// \return the element's value when it is a JSON integer that fits int64
///   (a JSON number with a fraction or exponent, such as 1.0 or 1e3, is not).
std::optional<int64_t> AsInt64(simdjson::dom::element element);

}  // namespace tessera::k8s::internal
