// Parses Prometheus' answer to an instant query (`/api/v1/query`):
//
//   {"status":"success","data":{"resultType":"vector","result":[
//     {"metric":{"Hostname":"node-1","UUID":"GPU-..","gpu":"0",...},"value":[1763765000.123,"97"]}, ...]}}
//
// and its error answers ({"status":"error","errorType":"bad_data","error":"..."}).
// Built for size: an answer for 5000 nodes x 8 GPUs is ~20 MB, parsed with
// simdjson and visited in place, without copying a label.
#pragma once

#include <string_view>

#include <simdjson.h>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace tessera {

/// The label names a sample is matched by.
struct SeriesLabels {
  std::string_view node;  ///< e.g. "Hostname"
  std::string_view uuid;  ///< e.g. "UUID"
  std::string_view gpu;   ///< e.g. "gpu"
};

/// One sample of an instant vector. The views point into the parser: valid
/// only during the visit.
struct VectorSample {
  std::string_view node;  ///< Label values; empty when the series lacks the label.
  std::string_view uuid;
  std::string_view gpu;
  /// The sample value; NaN when it is "NaN" or not a number at all, ±Inf as
  /// Prometheus writes them ("+Inf", "-Inf").
  double value = 0;
  double timestamp = 0;  ///< Evaluation time, Unix seconds.
};

/// Visits every sample of `body`, the answer to an instant query.
/// \return OK; InvalidArgument when the body is not such an answer (not JSON,
///   wrong shape, a result type other than "vector"), naming what is wrong;
///   FailedPrecondition when Prometheus answered an error (its errorType and
///   error in the message).
absl::Status ParseInstantVector(std::string_view body, const SeriesLabels& labels, simdjson::dom::parser& parser,
                                absl::FunctionRef<void(const VectorSample&)> visit);

}  // namespace tessera
