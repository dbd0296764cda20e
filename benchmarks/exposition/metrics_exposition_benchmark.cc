// Tessera's own Prometheus registry (scheduler/metrics/metrics.h, ~400 lines)
// against Debian's prometheus-cpp 1.0.1 (package prometheus-cpp-dev), on the
// same metric set: what a scrape costs (render) and what the hot path pays
// per update (a counter or histogram the caller holds; a counter looked up by
// its labels on each request, as the router counts requests by verb and code).
//
// The metric set is Tessera's own at a realistic size: the ~40 families
// /metrics serves, with 6 verbs, 16 filter reasons, 4 pools × 2 models and
// 20 tenants (Realistic()); ~600 series, 8 histograms of 13 buckets.
//
// Built only where prometheus-cpp is installed (benchmarks/CMakeLists.txt).
// Before the benchmarks it prints how each library writes a few edge cases
// (escapes, NaN and negative increments), the semantics the decision weighs.
//
//   build/benchmarks/metrics_exposition_benchmark --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "absl/strings/str_cat.h"
#include "scheduler/metrics/metrics.h"

namespace tessera {
namespace {

enum class Kind { kCounter, kGauge, kHistogram };

struct FamilySpec {
  std::string name;
  std::string help;
  Kind kind;
  std::vector<MetricLabels> series;  // one entry per label set
};

// Every combination of the label values given per key.
std::vector<MetricLabels> Cross(const std::vector<std::pair<std::string, std::vector<std::string>>>& keys) {
  std::vector<MetricLabels> out = {{}};
  for (const auto& [key, values] : keys) {
    std::vector<MetricLabels> next;
    for (const MetricLabels& l : out) {
      for (const std::string& v : values) {
        MetricLabels e = l;
        e.emplace_back(key, v);
        next.push_back(std::move(e));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::vector<FamilySpec> Realistic(int tenants) {
  const std::vector<std::string> verbs = {"filter", "prioritize", "bind", "preempt", "metrics", "healthz"};
  const std::vector<std::string> reasons = {
      "insufficient_gpu", "gpu_model_mismatch", "too_few_gpus", "gpu_memory_too_small", "gpu_memory_unknown",
      "gpu_unhealthy",    "no_gpus",            "inventory_unreadable", "invalid_pod_request", "unknown_node",
      "insufficient_cpu", "insufficient_memory", "cpu_too_small", "memory_too_small", "gpu_busy", "gpu_memory_in_use"};
  std::vector<std::string> tenant_names;
  for (int t = 0; t < tenants; ++t) tenant_names.push_back(absl::StrCat("team-", t));
  const std::vector<std::string> kinds = {"guaranteed", "max", "used", "borrowed", "lent"};
  const std::vector<std::string> pools = {"train-a100", "train-h100", "serve-l4", "(none)"};
  const std::vector<std::string> models = {"NVIDIA-A100-SXM4-80GB", "NVIDIA-L4"};
  const std::vector<std::string> resources = {"nodes", "pods"};
  const MetricLabels none = {};
  auto one = [&](std::string name, Kind kind) { return FamilySpec{name, "Help of " + name + ".", kind, {none}}; };
  auto many = [&](std::string name, Kind kind, std::vector<MetricLabels> series) {
    return FamilySpec{name, "Help of " + name + ".", kind, std::move(series)};
  };
  std::vector<FamilySpec> f = {
      many("tessera_http_requests_total", Kind::kCounter, Cross({{"verb", verbs}, {"code", {"200", "400", "500"}}})),
      many("tessera_http_request_duration_seconds", Kind::kHistogram, Cross({{"verb", verbs}})),
      many("tessera_http_rejections_total", Kind::kCounter,
           Cross({{"reason", {"body_budget", "body_too_large", "header_too_large", "malformed"}}})),
      one("tessera_http_connections_refused_total", Kind::kCounter),
      many("tessera_filter_rejections_total", Kind::kCounter, Cross({{"reason", reasons}})),
      many("tessera_prioritize_nodes_total", Kind::kCounter, Cross({{"answer", {"computed", "memo"}}})),
      one("tessera_prioritize_memo_bypassed_total", Kind::kCounter),
      one("tessera_model_nodes", Kind::kGauge),
      one("tessera_model_gpus", Kind::kGauge),
      one("tessera_model_nodes_inventory_errors", Kind::kGauge),
      many("tessera_policy_reloads_total", Kind::kCounter, Cross({{"result", {"success", "failure"}}})),
      many("tessera_binds_total", Kind::kCounter,
           Cross({{"result", {"success", "no_fit", "annotate", "binding", "pod_lookup", "pod_replaced", "invalid_request"}}})),
      one("tessera_bind_duration_seconds", Kind::kHistogram),
      one("tessera_binds_in_flight", Kind::kGauge),
      one("tessera_reservations_expired_total", Kind::kCounter),
      many("tessera_watch_lists_total", Kind::kCounter, Cross({{"resource", resources}})),
      many("tessera_watch_failures_total", Kind::kCounter, Cross({{"resource", resources}})),
      many("tessera_watch_malformed_objects_total", Kind::kCounter, Cross({{"resource", resources}})),
      many("tessera_watch_events_total", Kind::kCounter,
           Cross({{"resource", resources}, {"type", {"ADDED", "MODIFIED", "DELETED"}}})),
      one("tessera_watch_synced", Kind::kGauge),
      one("tessera_pod_assignment_problems", Kind::kGauge),
      many("tessera_pod_assignment_problems_total", Kind::kCounter, Cross({{"kind", {"unknown_gpu", "overcommitted", "unreadable"}}})),
      many("tessera_preempt_nodes_total", Kind::kCounter, Cross({{"answer", {"kept", "dropped"}}})),
      one("tessera_preempt_victims_total", Kind::kCounter),
      one("tessera_preemptions_total", Kind::kCounter),
      one("tessera_preemption_evictions_total", Kind::kCounter),
      one("tessera_preemption_evictions_refused_total", Kind::kCounter),
      one("tessera_preemption_no_victims_total", Kind::kCounter),
      many("tessera_tenant_gpu_milli", Kind::kGauge, Cross({{"tenant", tenant_names}, {"kind", kinds}})),
      many("tessera_tenant_gpu_memory_mib", Kind::kGauge, Cross({{"tenant", tenant_names}, {"kind", kinds}})),
      many("tessera_tenant_gpus", Kind::kGauge, Cross({{"tenant", tenant_names}, {"kind", kinds}})),
      many("tessera_tenant_gpu_milli_seconds_total", Kind::kCounter, Cross({{"tenant", tenant_names}})),
      many("tessera_tenant_gpu_memory_mib_seconds_total", Kind::kCounter, Cross({{"tenant", tenant_names}})),
      many("tessera_tenant_pods_over_max_run_time", Kind::kGauge, Cross({{"tenant", tenant_names}})),
      many("tessera_tenant_run_time_evictions_total", Kind::kCounter, Cross({{"result", {"evicted", "refused"}}})),
      many("tessera_request_pool_queued", Kind::kGauge, Cross({{"pool", {"verbs", "binds"}}})),
      many("tessera_request_pool_running", Kind::kGauge, Cross({{"pool", {"verbs", "binds"}}})),
      many("tessera_request_pool_rejected_total", Kind::kCounter, Cross({{"pool", {"verbs", "binds"}}})),
      many("tessera_request_pool_wait_seconds", Kind::kHistogram, Cross({{"pool", {"verbs"}}})),
      many("tessera_pool_gpus", Kind::kGauge,
           Cross({{"pool", pools}, {"model", models}, {"state", {"idle", "partial", "full", "unhealthy"}}})),
      many("tessera_pool_gpu_milli", Kind::kGauge,
           Cross({{"pool", pools}, {"model", models}, {"kind", {"capacity", "allocated", "free_fragmented"}}})),
      many("tessera_pool_gpu_memory_mib", Kind::kGauge,
           Cross({{"pool", pools}, {"model", models}, {"kind", {"capacity", "allocated"}}})),
      many("tessera_pool_nodes", Kind::kGauge, Cross({{"pool", pools}, {"model", models}, {"state", {"idle", "in_use"}}})),
      many("tessera_telemetry_refreshes_total", Kind::kCounter, Cross({{"result", {"success", "failure"}}})),
      one("tessera_telemetry_refresh_duration_seconds", Kind::kHistogram),
      one("tessera_telemetry_last_success_timestamp_seconds", Kind::kGauge),
      many("tessera_telemetry_nodes", Kind::kGauge, Cross({{"source", {"prometheus", "annotation"}}})),
      one("tessera_leader", Kind::kGauge),
      one("tessera_leader_acquired_total", Kind::kCounter),
  };
  return f;
}

// The same metric set in both libraries, every series at a non-trivial value.
struct TesseraSet {
  MetricsRegistry registry;
  explicit TesseraSet(const std::vector<FamilySpec>& families) {
    double v = 1;
    for (const FamilySpec& f : families) {
      for (const MetricLabels& l : f.series) {
        v += 1.25;
        switch (f.kind) {
          case Kind::kCounter: registry.Counter(f.name, f.help, l).Inc(v); break;
          case Kind::kGauge: registry.Gauge(f.name, f.help, l).Set(v); break;
          case Kind::kHistogram: {
            Histogram& h = registry.Histogram(f.name, f.help, l, DefaultLatencyBuckets());
            for (int i = 0; i < 50; ++i) h.Observe(0.0003 * (i + 1) * (i + 1));
            break;
          }
        }
      }
    }
  }
};

std::map<std::string, std::string> AsMap(const MetricLabels& l) { return {l.begin(), l.end()}; }

struct PrometheusCppSet {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  explicit PrometheusCppSet(const std::vector<FamilySpec>& families) {
    double v = 1;
    for (const FamilySpec& f : families) {
      switch (f.kind) {
        case Kind::kCounter: {
          auto& family = prometheus::BuildCounter().Name(f.name).Help(f.help).Register(*registry);
          for (const MetricLabels& l : f.series) family.Add(AsMap(l)).Increment(v += 1.25);
          break;
        }
        case Kind::kGauge: {
          auto& family = prometheus::BuildGauge().Name(f.name).Help(f.help).Register(*registry);
          for (const MetricLabels& l : f.series) family.Add(AsMap(l)).Set(v += 1.25);
          break;
        }
        case Kind::kHistogram: {
          auto& family = prometheus::BuildHistogram().Name(f.name).Help(f.help).Register(*registry);
          for (const MetricLabels& l : f.series) {
            auto& h = family.Add(AsMap(l), DefaultLatencyBuckets());
            for (int i = 0; i < 50; ++i) h.Observe(0.0003 * (i + 1) * (i + 1));
          }
          break;
        }
      }
    }
  }
  [[nodiscard]] std::string Render() const { return prometheus::TextSerializer().Serialize(registry->Collect()); }
};

size_t SeriesOf(const std::vector<FamilySpec>& families) {
  size_t n = 0;
  for (const FamilySpec& f : families) n += f.series.size();
  return n;
}

// state.range(0): tenants (20 realistic; 200 a large multi-team cluster).
void BM_RenderTessera(benchmark::State& state) {
  const std::vector<FamilySpec> families = Realistic(static_cast<int>(state.range(0)));
  TesseraSet set(families);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = set.registry.Render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["families"] = static_cast<double>(families.size());
  state.counters["series"] = static_cast<double>(SeriesOf(families));
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderTessera)->Arg(20)->Arg(200)->Unit(benchmark::kMicrosecond);

void BM_RenderPrometheusCpp(benchmark::State& state) {
  const std::vector<FamilySpec> families = Realistic(static_cast<int>(state.range(0)));
  PrometheusCppSet set(families);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = set.Render();
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["families"] = static_cast<double>(families.size());
  state.counters["series"] = static_cast<double>(SeriesOf(families));
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderPrometheusCpp)->Arg(20)->Arg(200)->Unit(benchmark::kMicrosecond);

// Updates on a series the caller holds (binder, reflector, request pool).
void BM_CounterIncTessera(benchmark::State& state) {
  static MetricsRegistry* registry = new MetricsRegistry();
  Counter& c = registry->Counter("tessera_binds_total", "h", {{"result", "success"}});
  for (auto _ : state) c.Inc();
  benchmark::DoNotOptimize(c.Value());
}
BENCHMARK(BM_CounterIncTessera)->Threads(1)->Threads(2);

void BM_CounterIncPrometheusCpp(benchmark::State& state) {
  static auto* registry = new prometheus::Registry();
  static auto* family = &prometheus::BuildCounter().Name("tessera_binds_total").Help("h").Register(*registry);
  prometheus::Counter& c = family->Add({{"result", "success"}});
  for (auto _ : state) c.Increment();
  benchmark::DoNotOptimize(c.Value());
}
BENCHMARK(BM_CounterIncPrometheusCpp)->Threads(1)->Threads(2);

void BM_HistogramObserveTessera(benchmark::State& state) {
  static MetricsRegistry* registry = new MetricsRegistry();
  Histogram& h = registry->Histogram("tessera_bind_duration_seconds", "h", {}, DefaultLatencyBuckets());
  double v = 0.0001;
  for (auto _ : state) {
    h.Observe(v);
    v = v > 4 ? 0.0001 : v * 1.7;
  }
}
BENCHMARK(BM_HistogramObserveTessera)->Threads(1)->Threads(2);

void BM_HistogramObservePrometheusCpp(benchmark::State& state) {
  static auto* registry = new prometheus::Registry();
  static auto* family =
      &prometheus::BuildHistogram().Name("tessera_bind_duration_seconds").Help("h").Register(*registry);
  prometheus::Histogram& h = family->Add({}, DefaultLatencyBuckets());
  double v = 0.0001;
  for (auto _ : state) {
    h.Observe(v);
    v = v > 4 ? 0.0001 : v * 1.7;
  }
}
BENCHMARK(BM_HistogramObservePrometheusCpp)->Threads(1)->Threads(2);

// The router's way: the series looked up by its labels on every request.
void BM_CounterLookupIncTessera(benchmark::State& state) {
  static MetricsRegistry* registry = new MetricsRegistry();
  for (auto _ : state) {
    registry->Counter("tessera_http_requests_total", "HTTP requests by verb and status code.",
                      {{"verb", "filter"}, {"code", "200"}})
        .Inc();
  }
}
BENCHMARK(BM_CounterLookupIncTessera)->Threads(1)->Threads(2);

void BM_CounterLookupIncPrometheusCpp(benchmark::State& state) {
  static auto* registry = new prometheus::Registry();
  static auto* family = &prometheus::BuildCounter()
                             .Name("tessera_http_requests_total")
                             .Help("HTTP requests by verb and status code.")
                             .Register(*registry);
  for (auto _ : state) family->Add({{"verb", "filter"}, {"code", "200"}}).Increment();
}
BENCHMARK(BM_CounterLookupIncPrometheusCpp)->Threads(1)->Threads(2);

// What each library writes for edge cases the exposition format defines.
void PrintSemantics() {
  MetricsRegistry ours;
  ours.Counter("edge_total", "help with \\ and\nnewline", {{"v", "quote \" backslash \\ newline \n"}}).Inc(1);
  ours.Counter("nan_total", "h").Inc(std::nan(""));
  ours.Counter("negative_total", "h").Inc(-5);
  auto theirs = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("edge_total")
      .Help("help with \\ and\nnewline")
      .Register(*theirs)
      .Add({{"v", "quote \" backslash \\ newline \n"}})
      .Increment(1);
  prometheus::BuildCounter().Name("nan_total").Help("h").Register(*theirs).Add({}).Increment(std::nan(""));
  prometheus::BuildCounter().Name("negative_total").Help("h").Register(*theirs).Add({}).Increment(-5);
  ours.Histogram("h_seconds", "h", {}, {0.0005, 0.1, 2.5}).Observe(0.05);
  ours.Gauge("g", "h").Set(1e6 / 3);
  auto& h = prometheus::BuildHistogram().Name("h_seconds").Help("h").Register(*theirs).Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.1, 2.5});
  h.Observe(0.05);
  prometheus::BuildGauge().Name("g").Help("h").Register(*theirs).Add({}).Set(1e6 / 3);
  std::fprintf(stderr, "--- Tessera's registry writes:\n%s--- prometheus-cpp 1.0.1 writes:\n%s---\n",
               ours.Render().c_str(), prometheus::TextSerializer().Serialize(theirs->Collect()).c_str());
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::PrintSemantics();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
