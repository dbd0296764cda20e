// Tessera's Grafana dashboard (k8s/helm/tessera/dashboards/tessera.json, the
// chart ships it): the JSON is a dashboard Grafana loads, its queries are
// PromQL Prometheus parses (promtool), and every metric name any panel or
// variable queries is a series in a real /metrics scrape of the
// tessera-extender binary: run against an API server with GPU nodes in two
// node pools and a policy with two tenants, after kube-scheduler's verbs
// (a filter that rejects a node, a prioritize, a bind). A panel that queries
// a metric Tessera does not export fails here, named. Then a real Prometheus
// scrapes that Tessera and every panel query must answer with data: a label
// or a value a query selects that Tessera never writes fails too.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "test/testing/child_process.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_api_server.h"
#include "test/testing/http_client.h"
#include "test/testing/prometheus_process.h"
#include "test/testing/promql_names.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::MetricNamesInPromQl;
using testing::SampleNamesInExposition;

const std::string kDashboard = std::string(TESSERA_SOURCE_DIR) + "/k8s/helm/tessera/dashboards/tessera.json";

nlohmann::json ReadDashboard() {
  std::ifstream in(kDashboard);
  EXPECT_TRUE(in.good()) << "cannot read " << kDashboard;
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// A query of the dashboard and where it is, for messages.
struct Query {
  std::string where;
  std::string expr;
};

// Every panel's targets (rows' nested panels too) and every query variable.
std::vector<Query> QueriesOf(const nlohmann::json& dashboard) {
  std::vector<Query> out;
  static const nlohmann::json kNone = nlohmann::json::array();
  // Members by reference: value() would copy, and pointers into a copy dangle.
  const auto member = [](const nlohmann::json& o, const char* key) -> const nlohmann::json& {
    return o.is_object() && o.contains(key) ? o.at(key) : kNone;
  };
  std::vector<const nlohmann::json*> panels;
  for (const nlohmann::json& p : member(dashboard, "panels")) {
    panels.push_back(&p);
    for (const nlohmann::json& nested : member(p, "panels")) panels.push_back(&nested);
  }
  for (const nlohmann::json* p : panels) {
    for (const nlohmann::json& t : member(*p, "targets")) {
      out.push_back({absl::StrCat("panel \"", p->value("title", ""), "\" target ", t.value("refId", "")),
                     t.value("expr", "")});
    }
  }
  for (const nlohmann::json& v : member(member(dashboard, "templating"), "list")) {
    if (v.value("type", "") != "query") continue;
    const nlohmann::json& q = v["query"];
    out.push_back({absl::StrCat("variable $", v.value("name", "")), q.is_string() ? q.get<std::string>() : q.value("query", "")});
  }
  return out;
}

TEST(GrafanaDashboard, IsADashboardGrafanaLoadsWithOneDataSourceVariable) {
  const nlohmann::json d = ReadDashboard();
  ASSERT_TRUE(d.is_object()) << kDashboard << " is not valid JSON";
  EXPECT_EQ(d.value("uid", ""), "tessera-gpu-scheduler") << "a fixed uid: links and provisioning survive updates";
  EXPECT_EQ(d.value("title", ""), "Tessera");
  EXPECT_GE(d.value("schemaVersion", 0), 36);
  std::set<int> ids;
  for (const nlohmann::json& p : d["panels"]) {
    SCOPED_TRACE(p.value("title", ""));
    EXPECT_TRUE(ids.insert(p.value("id", -1)).second) << "panel ids are unique";
    ASSERT_TRUE(p.contains("gridPos"));
    if (p.value("type", "") == "row") continue;
    EXPECT_EQ(p["datasource"]["uid"], "${datasource}") << "every panel queries the chosen data source";
    EXPECT_FALSE(p.value("targets", nlohmann::json::array()).empty());
    EXPECT_FALSE(p.value("description", "").empty()) << "every panel says what it shows";
  }
  const nlohmann::json& vars = d["templating"]["list"];
  ASSERT_FALSE(vars.empty());
  EXPECT_EQ(vars[0]["type"], "datasource");
  EXPECT_EQ(vars[0]["query"], "prometheus");
}

// PromQL with Grafana's variables replaced as Grafana would (all values).
std::string AsPrometheusSees(const std::string& expr) {
  std::string e = absl::StrReplaceAll(expr, {{"$__rate_interval", "1m"}, {"$__interval", "30s"}, {"$__range", "1h"}});
  return std::regex_replace(e, std::regex(R"(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)"), ".*");
}

TEST(GrafanaDashboard, EveryPanelQueryIsPromQlThatPrometheusParses) {
  const char* promtool = "/usr/bin/promtool";  // Debian's prometheus package (scripts/install-deps.sh)
  ASSERT_EQ(::access(promtool, X_OK), 0) << "no promtool: install Debian's prometheus package";
  const fs::path rules = fs::temp_directory_path() / ("tessera-dashboard-rules-" + std::to_string(::getpid()) + ".yaml");
  std::string which;  // each recording rule's panel, for the failure message
  {
    std::ofstream out(rules);
    out << "groups:\n  - name: dashboard\n    rules:\n";
    int n = 0;
    for (const Query& q : QueriesOf(ReadDashboard())) {
      if (q.where.starts_with("variable")) continue;  // label_values() is Grafana's, not PromQL
      absl::StrAppend(&which, "dashboard:query", n, " is ", q.where, "\n");
      out << "      - record: dashboard:query" << n++ << "\n        expr: " << nlohmann::json(AsPrometheusSees(q.expr)).dump()
          << "\n";
    }
    ASSERT_GT(n, 20);
  }
  const std::string command = absl::StrCat(promtool, " check rules ", rules.string(), " 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, got);
  const int status = ::pclose(pipe);
  fs::remove(rules);
  EXPECT_EQ(status, 0) << output << which;
}

constexpr const char* kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: binpack}
tenants:
  - name: research
    namespaces: [ml]
    guaranteed: {gpuMilli: 1000}
    max: {gpuMilli: 4000}
  - name: serving
    namespaces: [web]
)";

nlohmann::json GpuNode(const std::string& name, const std::string& pool_label, const std::string& pool, int gpus,
                       const std::string& model) {
  nlohmann::json node = testing::FakeApiServer::MinimalNode(name);
  node["metadata"]["labels"] = {{"nvidia.com/gpu.count", std::to_string(gpus)},
                                {"nvidia.com/gpu.product", model},
                                {"nvidia.com/gpu.memory", "23034"},
                                {pool_label, pool}};
  return node;
}

// The test's Tessera: the binary, against a fake API server, after traffic.
class DashboardScrape : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Start().ok());
    ASSERT_TRUE(api_.AddNode(GpuNode("l4-1", "tessera.io/node-pool", "serve", 2, "NVIDIA-L4")).ok());
    ASSERT_TRUE(api_.AddNode(GpuNode("a100-1", "karpenter.sh/nodepool", "train", 4, "NVIDIA-A100-SXM4-80GB")).ok());
    nlohmann::json pod = testing::FakeApiServer::MinimalPod("ml", "p");
    pod["metadata"]["annotations"]["tessera.io/gpu-fraction"] = "0.5";
    pod_ = *api_.AddPod(pod);
    dir_ = fs::temp_directory_path() / ("tessera-dashboard-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "policy.yaml") << kPolicy;
    absl::StatusOr<std::string> kubeconfig = api_.WriteKubeconfig();
    ASSERT_TRUE(kubeconfig.ok()) << kubeconfig.status();
    extender_ = std::make_unique<testing::ChildProcess>(
        TESSERA_EXTENDER_BINARY,
        std::vector<std::string>{"--port=0", "--kubeconfig=" + *kubeconfig, "--policy-file=" + (dir_ / "policy.yaml").string()});
    ASSERT_TRUE(extender_->WaitForLog(std::regex(R"(serving on http://127\.0\.0\.1:\d+)"))) << extender_->Stderr();
    std::smatch m;
    const std::string err = extender_->Stderr();
    ASSERT_TRUE(std::regex_search(err, m, std::regex(R"(serving on http://127\.0\.0\.1:(\d+))")));
    port_ = static_cast<uint16_t>(std::stoi(m[1].str()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // kube-scheduler's verbs: filters (the 8-GPU pod fits no node: rejections
  // by reason; a malformed body: an error code), prioritizes (the second
  // from the score memo), a bind. Returns /metrics once the control loop has
  // counted the bound pod for its tenant.
  std::string Traffic() {
    testing::HttpClient client(port_);
    EXPECT_TRUE(testing::WaitFor([&] { return client.Get("/readyz").status == 200; })) << extender_->Stderr();
    const nlohmann::json nodes = {"l4-1", "a100-1"};
    const std::string filter = nlohmann::json{{"Pod", pod_}, {"Nodes", nullptr}, {"NodeNames", nodes}}.dump();
    EXPECT_EQ(client.Post("/filter", filter).status, 200);
    nlohmann::json big = testing::FakeApiServer::MinimalPod("ml", "big");
    big["metadata"]["annotations"]["tessera.io/gpu-count"] = "8";
    EXPECT_EQ(client.Post("/filter", nlohmann::json{{"Pod", big}, {"Nodes", nullptr}, {"NodeNames", nodes}}.dump()).status,
              200);
    EXPECT_EQ(client.Post("/filter", "{").status, 400);
    EXPECT_EQ(client.Post("/prioritize", filter).status, 200);
    EXPECT_EQ(client.Post("/prioritize", filter).status, 200);
    const std::string bind = nlohmann::json{{"PodName", "p"}, {"PodNamespace", "ml"},
                                            {"PodUID", pod_["metadata"]["uid"]}, {"Node", "l4-1"}}.dump();
    EXPECT_EQ(client.Post("/bind", bind).body, R"({"Error":""})");
    // The tenant gauges come from the control loop's tick (every second).
    std::string metrics;
    const bool complete = testing::WaitFor([&] {
      metrics = client.Get("/metrics").body;
      return metrics.find(R"(tessera_tenant_gpu_milli{kind="used",tenant="research"} 500)") != std::string::npos;
    });
    EXPECT_TRUE(complete) << "the research tenant's bound half GPU never showed:\n" << metrics;
    return metrics;
  }


  testing::FakeApiServer api_;
  nlohmann::json pod_;
  fs::path dir_;
  std::unique_ptr<testing::ChildProcess> extender_;
  uint16_t port_ = 0;
};

TEST_F(DashboardScrape, EveryMetricAQueryReadsIsASeriesTesseraExports) {
  const std::string metrics = Traffic();
  ASSERT_FALSE(HasFailure());
  EXPECT_THAT(metrics, ::testing::HasSubstr(R"(tessera_pool_gpu_milli{kind="allocated",model="NVIDIA-L4",pool="serve"} 500)"));
  EXPECT_THAT(metrics, ::testing::HasSubstr(R"(tessera_pool_gpus{model="NVIDIA-A100-SXM4-80GB",pool="train",state="idle"} 4)"));

  const std::set<std::string> exported = SampleNamesInExposition(metrics);
  const std::vector<Query> queries = QueriesOf(ReadDashboard());
  ASSERT_GT(queries.size(), 20u);
  std::set<std::string> queried;
  for (const Query& q : queries) {
    SCOPED_TRACE(q.where + ": " + q.expr);
    const std::set<std::string> names = MetricNamesInPromQl(q.expr);
    EXPECT_FALSE(names.empty()) << "a query that reads no metric";
    for (const std::string& name : names) {
      EXPECT_TRUE(exported.contains(name)) << q.where << " queries " << name << ", which Tessera does not export";
      queried.insert(name);
    }
  }
  // What the dashboard shows at all, for the record (and so that the test
  // sees the dashboard cover each area the issue names).
  for (const char* must : {"tessera_pool_gpu_milli", "tessera_pool_gpus", "tessera_tenant_gpu_milli",
                           "tessera_http_request_duration_seconds_bucket", "tessera_http_requests_total",
                           "tessera_binds_total", "tessera_watch_failures_total", "tessera_watch_synced"}) {
    EXPECT_TRUE(queried.contains(must)) << "the dashboard shows no " << must;
  }
}

// %-escapes `s` for a URL's query string.
std::string UrlEncode(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      out += hex;
    }
  }
  return out;
}

// Runs `expr` as an instant query; the answer's JSON (null when unreadable).
nlohmann::json RunQuery(uint16_t prometheus_port, const std::string& expr) {
  const testing::HttpAnswer a = testing::HttpClient(prometheus_port).Get("/api/v1/query?query=" + UrlEncode(expr));
  return nlohmann::json::parse(a.body, nullptr, /*allow_exceptions=*/false);
}

TEST_F(DashboardScrape, EveryPanelQueryAnswersWithDataFromARealPrometheus) {
  Traffic();
  ASSERT_FALSE(HasFailure());
  absl::StatusOr<std::unique_ptr<testing::PrometheusProcess>> prometheus =
      testing::PrometheusProcess::Start({.target_port = port_, .lookback_delta = "5m"});
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();
  const uint16_t port = (*prometheus)->port();
  // A rate needs two samples in its window: wait for a few scrapes after the first.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        const nlohmann::json r = RunQuery(port, "count_over_time(tessera_model_nodes[1m])");
        return r.is_object() && !r["data"]["result"].empty() &&
               std::stoi(r["data"]["result"][0]["value"][1].get<std::string>()) >= 5;
      },
      std::chrono::seconds(30)))
      << (*prometheus)->Log();
  for (const Query& q : QueriesOf(ReadDashboard())) {
    if (q.where.starts_with("variable")) continue;  // label_values() is Grafana's
    SCOPED_TRACE(q.where + ": " + q.expr);
    const nlohmann::json r = RunQuery(port, AsPrometheusSees(q.expr));
    ASSERT_TRUE(r.is_object());
    EXPECT_EQ(r.value("status", ""), "success") << r.dump();
    EXPECT_FALSE(r["data"]["result"].empty()) << q.where << " answers no data from a Tessera that had traffic";
  }
}

}  // namespace
}  // namespace tessera
