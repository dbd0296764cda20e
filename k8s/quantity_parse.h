// Kubernetes quantity strings and GPU fractions, parsed exactly (no floating point).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "scheduler/model/quantity.h"

namespace tessera::k8s {

/// Parses a Kubernetes memory quantity ("10Gi", "512Mi", "16G", "1e9",
/// "1073741824") into MiB, rounding a partial MiB up. Negative values, bad
/// suffixes and values beyond 2^40 MiB are InvalidArgument.
absl::StatusOr<MemoryMiB> ParseMemoryQuantity(std::string_view text);

/// Parses a GPU fraction: a decimal in (0, 1] ("0.25", "1", ".5") or a
/// percentage in (0%, 100%] ("25%"). Only whole-percent steps are accepted
/// ("0.255" and "25.5%" are InvalidArgument). Returns milli-GPU (250).
absl::StatusOr<MilliGpu> ParseGpuFraction(std::string_view text);

/// Parses a non-negative decimal integer count ("8"), as labels and
/// allocatable counts carry it. Kubernetes quantity forms with a suffix that
/// still denote an integer ("8", "1k") are accepted; fractions are not.
absl::StatusOr<int64_t> ParseCount(std::string_view text);

}  // namespace tessera::k8s
