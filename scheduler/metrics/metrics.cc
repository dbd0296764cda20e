#include "scheduler/metrics/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_format.h"

namespace tessera {
namespace {

// Metric names are compile-time constants in our code, so a bad one is a bug
// to be found on the first run, not a runtime condition to report.
[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "tessera metrics: %s\n", message.c_str());
  std::abort();
}

bool IsMetricName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

bool IsLabelName(std::string_view s) {
  if (s.empty() || s.starts_with("__")) return false;  // "__" is reserved for Prometheus itself
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

// Validates and sorts the labels by key so that the label order a caller
// happens to write does not create a second series.
MetricLabels Canonical(std::string_view metric, MetricLabels labels, bool histogram) {
  std::sort(labels.begin(), labels.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& key = labels[i].first;
    if (!IsLabelName(key)) Die(absl::StrFormat("metric %s: invalid label name \"%s\"", metric, key));
    if (histogram && key == "le") Die(absl::StrFormat("histogram %s: label \"le\" is reserved", metric));
    if (i > 0 && labels[i - 1].first == key) {
      Die(absl::StrFormat("metric %s: label \"%s\" given twice", metric, key));
    }
  }
  return labels;
}

// Shortest text that parses back to the same double, written as Go's
// strconv.FormatFloat(v, 'g', -1, 64) writes it in Prometheus' own clients:
// the exponent form when the decimal exponent is below -4 or at least 6
// ("0.0005", "123456", "1e+06", "1.5e+06", "1e-05"). It matters for bucket
// bounds: `le` is a label, compared as text by a matcher such as
// {le="0.0005"}, so it must read as every other exporter's. (std::to_chars
// alone picks the shorter form: "5e-04".)
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  if (ec != std::errc()) return absl::StrFormat("%.17g", v);  // cannot happen with 64 bytes
  const std::string_view scientific(buf, static_cast<size_t>(end - buf));
  const size_t e = scientific.find('e');
  int exponent = 0;
  std::from_chars(scientific.data() + e + 1 + (scientific[e + 1] == '+'), scientific.data() + scientific.size(),
                  exponent);
  if (exponent < -4 || exponent >= 6) return std::string(scientific);
  const std::to_chars_result fixed = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  if (fixed.ec != std::errc()) return absl::StrFormat("%.17g", v);
  return std::string(buf, fixed.ptr);
}

// HELP text escapes backslash and newline; label values also escape '"'.
void AppendEscaped(std::string& out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// `{k="v",...}` with an optional trailing `le`; nothing at all when empty.
void AppendLabels(std::string& out, const MetricLabels& labels, const std::string* le = nullptr) {
  if (labels.empty() && le == nullptr) return;
  out += '{';
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out += ',';
    first = false;
    out += key;
    out += "=\"";
    AppendEscaped(out, value, /*quote=*/true);
    out += '"';
  }
  if (le != nullptr) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void AppendSample(std::string& out, std::string_view name, const MetricLabels& labels, double value,
                  const std::string* le = nullptr) {
  out += name;
  AppendLabels(out, labels, le);
  out += ' ';
  out += FormatValue(value);
  out += '\n';
}

}  // namespace

void Counter::Inc(double v) {
  if (!(v >= 0)) return;  // also rejects NaN
  value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> bounds) {
  std::erase_if(bounds, [](double b) { return !std::isfinite(b); });
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  bounds_ = std::move(bounds);
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  size_t i = bounds_.size();  // +Inf
  if (!std::isnan(v)) {
    i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  }
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

uint64_t Histogram::Count() const {
  uint64_t n = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) n += BucketCount(i);
  return n;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(std::max(count, 0)));
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) out.push_back(b);
  return out;
}

std::vector<double> DefaultLatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
}

struct MetricsRegistry::Family {
  Type type;
  std::string help;
  // Only the map matching `type` is used. std::map keeps the series sorted by
  // labels for Render(); unique_ptr keeps handed-out references stable.
  std::map<MetricLabels, std::unique_ptr<tessera::Counter>> counters;
  std::map<MetricLabels, std::unique_ptr<tessera::Gauge>> gauges;
  std::map<MetricLabels, std::unique_ptr<tessera::Histogram>> histograms;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::GetFamily(std::string_view name, std::string_view help, Type type) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    if (!IsMetricName(name)) Die(absl::StrFormat("invalid metric name \"%s\"", name));
    auto family = std::make_unique<Family>();
    family->type = type;
    family->help = std::string(help);
    it = families_.emplace(std::string(name), std::move(family)).first;
  } else if (it->second->type != type) {
    Die(absl::StrFormat("metric %s is registered with two different types", name));
  }
  return *it->second;
}

Counter& MetricsRegistry::Counter(std::string_view name, std::string_view help, MetricLabels labels) {
  labels = Canonical(name, std::move(labels), /*histogram=*/false);
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = GetFamily(name, help, Type::kCounter).counters[std::move(labels)];
  if (!slot) slot = std::make_unique<tessera::Counter>();
  return *slot;
}

Gauge& MetricsRegistry::Gauge(std::string_view name, std::string_view help, MetricLabels labels) {
  labels = Canonical(name, std::move(labels), /*histogram=*/false);
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = GetFamily(name, help, Type::kGauge).gauges[std::move(labels)];
  if (!slot) slot = std::make_unique<tessera::Gauge>();
  return *slot;
}

Histogram& MetricsRegistry::Histogram(std::string_view name, std::string_view help, MetricLabels labels,
                                      std::vector<double> bounds) {
  labels = Canonical(name, std::move(labels), /*histogram=*/true);
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = GetFamily(name, help, Type::kHistogram).histograms[std::move(labels)];
  if (!slot) slot = std::make_unique<tessera::Histogram>(std::move(bounds));
  return *slot;
}

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, family] : families_) {
    out += "# HELP ";
    out += name;
    out += ' ';
    AppendEscaped(out, family->help, /*quote=*/false);
    out += "\n# TYPE ";
    out += name;
    switch (family->type) {
      case Type::kCounter:
        out += " counter\n";
        for (const auto& [labels, c] : family->counters) AppendSample(out, name, labels, c->Value());
        break;
      case Type::kGauge:
        out += " gauge\n";
        for (const auto& [labels, g] : family->gauges) AppendSample(out, name, labels, g->Value());
        break;
      case Type::kHistogram: {
        out += " histogram\n";
        const std::string bucket = name + "_bucket";
        for (const auto& [labels, h] : family->histograms) {
          // Read every bucket once and derive _count from them, so that
          // _count always equals the +Inf bucket even while observations land.
          uint64_t cumulative = 0;
          for (size_t i = 0; i <= h->bounds().size(); ++i) {
            cumulative += h->BucketCount(i);
            const std::string le = i < h->bounds().size() ? FormatValue(h->bounds()[i]) : "+Inf";
            AppendSample(out, bucket, labels, static_cast<double>(cumulative), &le);
          }
          AppendSample(out, name + "_sum", labels, h->Sum());
          AppendSample(out, name + "_count", labels, static_cast<double>(cumulative));
        }
        break;
      }
    }
  }
  return out;
}

}  // namespace tessera
