// HTTP endpoints the telemetry tests control, served on 127.0.0.1 by
// Tessera's own HttpServer: a fake DCGM exporter (for a real Prometheus to
// scrape) and a fake Prometheus API (for answers a real one never gives).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "extender/server/http_server.h"

namespace tessera::testing {

/// One GPU as the DCGM exporter reports it.
struct DcgmGpu {
  std::string hostname;
  int gpu = 0;
  std::string uuid;
  double util_percent = 0;
  int64_t fb_used_mib = 0;
  int64_t fb_free_mib = 0;
};

/// The exporter's text exposition for `gpus`, with DCGM's metric names,
/// HELP/TYPE lines and labels.
inline std::string DcgmExposition(const std::vector<DcgmGpu>& gpus) {
  std::string out;
  auto family = [&](const std::string& name, const std::string& help, auto value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n");
    for (const DcgmGpu& g : gpus) {
      absl::StrAppend(&out, name, "{gpu=\"", g.gpu, "\",UUID=\"", g.uuid, "\",device=\"nvidia", g.gpu,
                      "\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"", g.hostname,
                      "\",DCGM_FI_DRIVER_VERSION=\"535.129.03\"} ", value(g), "\n");
    }
  };
  family("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).",
         [](const DcgmGpu& g) { return absl::StrFormat("%g", g.util_percent); });
  family("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", [](const DcgmGpu& g) { return g.fb_used_mib; });
  family("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", [](const DcgmGpu& g) { return g.fb_free_mib; });
  return out;
}

/// An HTTP server on 127.0.0.1 (any port) answering every request with what
/// the test last set for its path (404 for unknown paths). Stop() makes it
/// unreachable, as a crashed exporter or Prometheus would be; an answer set
/// to `hold` makes it silent: it comes only at ReleaseHeld() (or Stop()), so
/// a client's timeout surely passes first, whatever the machine's load.
class FakeEndpoint {
 public:
  struct Answer {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    bool hold = false;
  };

  FakeEndpoint() {
    HttpServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.drain_timeout = std::chrono::milliseconds(500);
    auto server = HttpServer::Start(options, [this](const HttpRequest& r) { return Handle(r); });
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) {
      server_ = *std::move(server);
      port_ = server_->port();
    }
  }
  ~FakeEndpoint() { Stop(); }

  /// Answers requests for `path` (the target up to '?'), and counts them.
  void Set(const std::string& path, Answer answer) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_[path] = std::move(answer);
  }
  /// Answers the API's /api/v1/query whose query parameter is `promql` (decoded).
  void SetQuery(const std::string& promql, Answer answer) { Set(absl::StrCat("/api/v1/query?", promql), answer); }

  /// Sends the answers held so far (and those asked for later).
  void ReleaseHeld() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    released_changed_.notify_all();
  }

  void Stop() {
    ReleaseHeld();
    if (server_ == nullptr) return;
    server_->Drain();
    server_->Wait();
    server_.reset();
  }

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }
  [[nodiscard]] int requests(const std::string& path) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(path);
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  static std::string Decode(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '%' && i + 2 < s.size()) {
        out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        out += s[i] == '+' ? ' ' : s[i];
      }
    }
    return out;
  }

  // "/api/v1/query?query=up" -> "/api/v1/query?up"; other targets: the path.
  static std::string Key(std::string_view target) {
    const size_t q = target.find('?');
    std::string path(target.substr(0, q));
    if (q == std::string_view::npos) return path;
    std::string_view params = target.substr(q + 1);
    constexpr std::string_view kQuery = "query=";
    if (params.substr(0, kQuery.size()) == kQuery) {
      std::string_view value = params.substr(kQuery.size());
      value = value.substr(0, value.find('&'));
      return absl::StrCat(path, "?", Decode(value));
    }
    return path;
  }

  HttpResponse Handle(const HttpRequest& request) {
    const std::string key = Key(std::string_view(request.target().data(), request.target().size()));
    Answer answer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counts_[key];
      auto it = answers_.find(key);
      if (it == answers_.end()) {
        answer.status = 404;
        answer.body = absl::StrCat("{\"status\":\"error\",\"errorType\":\"not_found\",\"error\":\"no answer for ",
                                   key, "\"}");
      } else {
        answer = it->second;
      }
    }
    if (answer.hold) {
      std::unique_lock<std::mutex> lock(mu_);
      released_changed_.wait(lock, [&] { return released_; });
    }
    HttpResponse response{static_cast<boost::beast::http::status>(answer.status), 11};
    response.set(boost::beast::http::field::content_type, answer.content_type);
    response.body() = std::move(answer.body);
    return response;
  }

  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable released_changed_;
  bool released_ = false;  // guarded by mu_
  std::map<std::string, Answer> answers_;
  std::map<std::string, int> counts_;
};

/// One series of an instant-vector answer.
struct SeriesValue {
  std::string hostname;
  std::string uuid;
  std::string gpu;
  std::string value;  ///< As Prometheus writes it: "97", "NaN", "+Inf".
};

/// {"status":"success","data":{"resultType":"vector","result":[...]}} evaluated at `at` (Unix seconds).
inline std::string VectorAnswer(const std::vector<SeriesValue>& series, double at) {
  std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (size_t i = 0; i < series.size(); ++i) {
    const SeriesValue& s = series[i];
    if (i > 0) out += ',';
    absl::StrAppend(&out, R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","Hostname":")", s.hostname,
                    R"(","UUID":")", s.uuid, R"(","gpu":")", s.gpu, R"(","job":"dcgm"},"value":[)",
                    absl::StrFormat("%.3f", at), ",\"", s.value, "\"]}");
  }
  out += "]}}";
  return out;
}

}  // namespace tessera::testing
