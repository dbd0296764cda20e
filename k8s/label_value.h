// Kubernetes label values: what a pool name or a pod's task type may be.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace tessera::k8s {

/// The longest label value the API server accepts.
inline constexpr size_t kMaxLabelValueLength = 63;

/// OK when `value` is a valid, non-empty Kubernetes label value: at most 63
/// characters of [A-Za-z0-9-_.], beginning and ending with an alphanumeric
/// (apimachinery's IsValidLabelValue, less the empty value). Else
/// InvalidArgument saying which rule it breaks, without quoting the value.
absl::Status CheckLabelValue(std::string_view value);

}  // namespace tessera::k8s
