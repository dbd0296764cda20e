// A minimal client of Prometheus' HTTP API: GET /api/v1/query over plain
// HTTP/1.1 (Boost.Beast), one connection per query, bounded in time and size.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "telemetry/prometheus_url.h"

namespace tessera {

/// An HTTP answer, whatever its status (Prometheus explains errors in the body).
struct PrometheusAnswer {
  int status = 0;
  std::string body;
};

class PrometheusClient {
 public:
  /// An answer for 5000 nodes x 8 GPUs with DCGM's labels is ~20 MB.
  static constexpr size_t kMaxBodyBytes = size_t{512} << 20;

  PrometheusClient(PrometheusEndpoint endpoint, absl::Duration timeout)
      : endpoint_(std::move(endpoint)), timeout_(timeout) {}
  PrometheusClient(const PrometheusClient&) = delete;
  PrometheusClient& operator=(const PrometheusClient&) = delete;

  /// Runs the instant query `promql` (evaluated at Prometheus' current time).
  /// \return the answer of any HTTP status; Unavailable when Prometheus cannot
  ///   be reached or the answer does not arrive whole within the timeout
  ///   (DeadlineExceeded), Cancelled after Cancel().
  absl::StatusOr<PrometheusAnswer> Query(std::string_view promql);

  /// Aborts the query in flight, if any, and every later one. Thread-safe.
  void Cancel();

  /// "/api/v1/query?query=<promql, percent-encoded>" below the URL's prefix.
  [[nodiscard]] std::string QueryTarget(std::string_view promql) const;

 private:
  const PrometheusEndpoint endpoint_;
  const absl::Duration timeout_;

  std::mutex mu_;
  bool cancelled_ = false;                          // guarded by mu_
  boost::asio::io_context* in_flight_ = nullptr;    // guarded by mu_
};

}  // namespace tessera
