// Kubernetes quantity strings and GPU fractions, parsed exactly (no floating point).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/model/quantity.h"

namespace tessera::k8s {

// Error messages state the reason only ("must not be negative"); callers name
// the field and its value, as in `tessera.io/gpu-memory="-1Gi": must not be negative`.

/// Parses a Kubernetes memory quantity ("10Gi", "512Mi", "16G", "1e9",
/// "1073741824") into MiB, rounding a partial MiB up. Negative values, bad
/// suffixes and values beyond 2^40 MiB are InvalidArgument.
///
/// Accepts the full Kubernetes grammar: an optional "+", digits with an
/// optional decimal part ("1.5Gi", ".5Gi", "1."), then nothing, a binary
/// suffix (Ki..Ei), a decimal suffix (k M G T P E) or an exponent ("1e9",
/// "1E9", "15e-1"; a lone "E" is exa). The sub-unit suffixes n, u and m are
/// refused: "512m" is half a byte and almost always a typo for "512Mi".
/// Evaluated exactly on the digits; whitespace anywhere is refused.
absl::StatusOr<MemoryMiB> ParseMemoryQuantity(std::string_view text);

/// Parses a Kubernetes CPU quantity ("500m", "2", "1.5", "100u") into
/// milli-CPU, rounding a finer value up ("0.0001" is 1m) as Kubernetes'
/// Quantity.MilliValue does. The full quantity grammar is accepted, as for
/// memory, sub-unit suffixes included. Negative values and values beyond
/// 2^40 milli-CPU are InvalidArgument.
absl::StatusOr<MilliCpu> ParseCpuQuantity(std::string_view text);

/// Parses a GPU fraction: a decimal in (0, 1] ("0.25", "1", ".5") or a
/// percentage in (0%, 100%] ("25%"). Only whole-percent steps are accepted
/// ("0.255" and "25.5%" are InvalidArgument). Returns milli-GPU (250).
/// Trailing zeros are fine ("0.250", "1.0", "25.0%"); signs, exponents and
/// whitespace are not.
absl::StatusOr<MilliGpu> ParseGpuFraction(std::string_view text);

/// Parses a non-negative decimal integer count ("8"), as labels and
/// allocatable counts carry it. Kubernetes quantity forms with a suffix that
/// still denote an integer ("8", "1k") are accepted; fractions are not.
/// ("1.5k" and "2000m" are whole numbers and accepted; "1500m" is not.)
/// Values above 2^63-1 are InvalidArgument.
absl::StatusOr<int64_t> ParseCount(std::string_view text);

}  // namespace tessera::k8s
