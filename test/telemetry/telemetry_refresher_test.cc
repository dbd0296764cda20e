// The refresher against a fake Prometheus API that answers what each test
// wants, including what a real one rarely does: HTTP errors, garbage, NaN,
// silence. Every failure must be counted and survived.
//
// Time is a FakeClock: measurements age and the background thread's interval
// passes when a test advances it, never by sleeping. Queries get a timeout
// far beyond what a loaded machine needs; the one test of a timeout has an
// answer that never comes before it.
#include "telemetry/telemetry_refresher.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/telemetry/fake_endpoints.h"
#include "test/testing/fake_clock.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::FakeClock;
using testing::FakeEndpoint;
using testing::SeriesValue;
using testing::VectorAnswer;

double UnixSeconds(absl::Time t) { return absl::ToDoubleSeconds(t - absl::UnixEpoch()); }

// A Prometheus section with the default queries, whose timeout no answer
// that comes reaches.
TelemetrySettings Settings(const std::string& url) {
  TelemetrySettings t;
  t.refresh_interval = absl::Hours(1);
  t.stale_after = absl::Hours(1);
  PrometheusSettings p;
  p.url = url;
  p.timeout = absl::Seconds(30);
  t.prometheus = p;
  return t;
}

class RefresherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeInventory inventory;
    inventory.gpus.resize(2);
    inventory.gpus[0].uuid = "GPU-a0";
    inventory.gpus[1].index = 1;
    inventory.gpus[1].uuid = "GPU-a1";
    model_.UpsertNode("node-a", inventory, absl::OkStatus());
    model_.Publish();
  }

  // What the refresher sends for `promql`.
  static std::string Sent(const std::string& promql) {
    return PrometheusSource::MatchedQuery(PrometheusSettings{}, promql);
  }

  // Answers every default query for node-a's two GPUs, sampled now.
  void AnswerAll(const std::string& util0, const std::string& util1 = "10") {
    const double now = UnixSeconds(clock_.Now());
    const PrometheusQueries q;
    prometheus_.SetQuery(Sent(q.utilization), {.body = VectorAnswer({{"node-a", "GPU-a0", "0", util0},
                                                               {"node-a", "GPU-a1", "1", util1}},
                                                              now)});
    prometheus_.SetQuery(Sent(q.sample_time), {.body = VectorAnswer({{"node-a", "GPU-a0", "0", std::to_string(now)},
                                                               {"node-a", "GPU-a1", "1", std::to_string(now)}},
                                                              now)});
    for (const std::string* other : {&q.sustained_utilization, &q.memory_used, &q.memory_free}) {
      prometheus_.SetQuery(Sent(*other), {.body = VectorAnswer({}, now)});
    }
  }

  const NodeTelemetry* Telemetry() {
    snapshot_ = model_.Current();
    return snapshot_->View(*snapshot_->FindNode("node-a")).telemetry;
  }

  double Count(const std::string& series) {
    // tessera_telemetry_queries_total{query="utilization",result="unreachable"} 3
    const std::string text = "\n" + metrics_.Render();
    const size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return 0;
    return std::stod(text.substr(at + series.size() + 2));
  }

  FakeClock clock_;
  ClusterModel model_;
  MetricsRegistry metrics_;
  FakeEndpoint prometheus_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
};

TEST_F(RefresherTest, AGoodRoundPublishesTelemetryIntoTheModel) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kManual, clock_);
  AnswerAll("97");
  ASSERT_TRUE(refresher.Configure(Settings(prometheus_.url())).ok());
  ASSERT_TRUE(refresher.RefreshNow().ok());
  const NodeTelemetry* t = Telemetry();
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->gpus.size(), 2u);
  EXPECT_EQ(t->gpus[0].utilization, PerMille(970));
  EXPECT_EQ(t->utilization_window, "1m avg");
  EXPECT_GE(Count(R"(tessera_telemetry_queries_total{query="utilization",result="success"})"), 1);
  EXPECT_EQ(Count(R"(tessera_telemetry_nodes{source="prometheus"})"), 1);
  EXPECT_EQ(Count("tessera_telemetry_gpus"), 2);
  EXPECT_GT(Count("tessera_telemetry_last_success_timestamp_seconds"), 0);
}

TEST_F(RefresherTest, FailuresAreCountedAndTheLastGoodValuesStay) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kManual, clock_);
  AnswerAll("97");
  ASSERT_TRUE(refresher.Configure(Settings(prometheus_.url())).ok());
  ASSERT_TRUE(refresher.RefreshNow().ok());
  const std::string util = Sent(PrometheusQueries{}.utilization);

  struct Case {
    FakeEndpoint::Answer answer;
    std::string result;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{.status = 503, .content_type = "text/html", .body = "<html>upstream down</html>"}, "http_error", "HTTP 503"},
      {{.status = 400, .body = R"({"status":"error","errorType":"bad_data","error":"1:15: parse error"})"},
       "prometheus_error", "Prometheus answered an error (bad_data): 1:15: parse error"},
      {{.status = 200, .body = "{\"status\":\"success\",\"data\":"}, "malformed", "malformed Prometheus answer"},
  };
  for (const Case& c : cases) {
    prometheus_.SetQuery(util, c.answer);
    const absl::Status status = refresher.RefreshNow();
    EXPECT_FALSE(status.ok()) << c.result;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.result;
    EXPECT_EQ(Count(absl::StrCat(R"(tessera_telemetry_queries_total{query="utilization",result=")", c.result, "\"}")), 1)
        << c.result;
    const NodeTelemetry* t = Telemetry();
    ASSERT_NE(t, nullptr) << c.result;
    EXPECT_EQ(t->gpus[0].utilization, PerMille(970)) << c.result;
  }
  EXPECT_EQ(Count(R"(tessera_telemetry_refreshes_total{result="failure"})"), 3);

  // And it recovers.
  AnswerAll("12");
  ASSERT_TRUE(refresher.RefreshNow().ok());
  EXPECT_EQ(Telemetry()->gpus[0].utilization, PerMille(120));
}

TEST_F(RefresherTest, ASilentPrometheusTimesOutAndIsCountedAsUnreachable) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kManual, clock_);
  AnswerAll("97");
  TelemetrySettings settings = Settings(prometheus_.url());
  settings.prometheus->timeout = absl::Milliseconds(50);
  ASSERT_TRUE(refresher.Configure(settings).ok());
  ASSERT_TRUE(refresher.RefreshNow().ok());
  prometheus_.SetQuery(Sent(PrometheusQueries{}.utilization), {.body = "{}", .hold = true});
  const absl::Status status = refresher.RefreshNow();
  prometheus_.ReleaseHeld();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(status.message(), HasSubstr("within 50ms"));
  EXPECT_EQ(Count(R"(tessera_telemetry_queries_total{query="utilization",result="unreachable"})"), 1);
  ASSERT_NE(Telemetry(), nullptr);
  EXPECT_EQ(Telemetry()->gpus[0].utilization, PerMille(970));  // the last good values stay
}

TEST_F(RefresherTest, PrometheusUnreachableIsCountedAndSurvived) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kManual, clock_);
  prometheus_.Stop();
  ASSERT_TRUE(refresher.Configure(Settings(prometheus_.url())).ok());
  const absl::Status status = refresher.RefreshNow();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(status.message(), HasSubstr("cannot connect to Prometheus at 127.0.0.1"));
  EXPECT_EQ(Count(R"(tessera_telemetry_queries_total{query="utilization",result="unreachable"})"), 1);
  EXPECT_EQ(Telemetry(), nullptr);
}

TEST_F(RefresherTest, NanValuesAreDroppedAndCountedNotTrusted) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kManual, clock_);
  AnswerAll("NaN", "55");
  ASSERT_TRUE(refresher.Configure(Settings(prometheus_.url())).ok());
  ASSERT_TRUE(refresher.RefreshNow().ok());
  const NodeTelemetry* t = Telemetry();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Find(0)->utilization, PerMille(GpuTelemetry::kUnknown));  // sampled, but no usable value
  EXPECT_EQ(t->Find(1)->utilization, PerMille(550));
  EXPECT_EQ(Count(R"(tessera_telemetry_samples_dropped_total{reason="invalid_value"})"), 1);
}

TEST_F(RefresherTest, StaleMeasurementsLeaveTheModel) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kManual, clock_);
  AnswerAll("50");
  TelemetrySettings settings = Settings(prometheus_.url());
  settings.stale_after = absl::Seconds(1);
  settings.refresh_interval = absl::Seconds(1);
  ASSERT_TRUE(refresher.Configure(settings).ok());
  ASSERT_TRUE(refresher.RefreshNow().ok());
  ASSERT_NE(Telemetry(), nullptr);
  // The exporter's series went stale: Prometheus no longer lists the GPUs.
  clock_.Advance(absl::Milliseconds(900));
  const double now = UnixSeconds(clock_.Now());
  prometheus_.SetQuery(Sent(PrometheusQueries{}.utilization), {.body = VectorAnswer({}, now)});
  prometheus_.SetQuery(Sent(PrometheusQueries{}.sample_time), {.body = VectorAnswer({}, now)});
  ASSERT_TRUE(refresher.RefreshNow().ok());
  ASSERT_NE(Telemetry(), nullptr) << "0.9 s old: still fresh";
  clock_.Advance(absl::Milliseconds(200));
  ASSERT_TRUE(refresher.RefreshNow().ok());
  EXPECT_EQ(Telemetry(), nullptr);
  EXPECT_EQ(Count("tessera_telemetry_gpus"), 0);
}

TEST_F(RefresherTest, TheBackgroundThreadRefreshesOnItsInterval) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kBackground, clock_);
  AnswerAll("30");
  TelemetrySettings settings = Settings(prometheus_.url());
  settings.refresh_interval = absl::Seconds(10);
  ASSERT_TRUE(refresher.Configure(settings).ok());
  // The first round runs at once; then the thread waits for the interval.
  ASSERT_TRUE(clock_.WaitForWaiters(1));
  ASSERT_NE(Telemetry(), nullptr);
  EXPECT_EQ(Telemetry()->gpus[0].utilization, PerMille(300));
  AnswerAll("70");
  clock_.Advance(absl::Seconds(9));
  // Not yet: a round would have to finish before the thread waits again, and
  // the model would already show it.
  EXPECT_EQ(Telemetry()->gpus[0].utilization, PerMille(300));
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(clock_.WaitForWaiters(2));
  EXPECT_EQ(Telemetry()->gpus[0].utilization, PerMille(700));
  EXPECT_EQ(prometheus_.requests(absl::StrCat("/api/v1/query?", Sent(PrometheusQueries{}.utilization))), 2);
}

TEST_F(RefresherTest, AnnotationsFeedTheModelAndTheNewerSourceWins) {
  TelemetryRefresher refresher(model_, metrics_, TelemetryRefresher::Mode::kManual, clock_);
  const std::string annotation = absl::StrCat(R"({"timestamp":")", absl::FormatTime(absl::RFC3339_sec, clock_.Now(),
                                                                                     absl::UTCTimeZone()),
                                              R"(","gpus":[{"index":0,"utilization":42}]})");
  refresher.OnNodeAnnotation("node-a", annotation);  // not configured yet: ignored
  model_.Publish();
  EXPECT_EQ(Telemetry(), nullptr);

  TelemetrySettings annotations_only;
  ASSERT_TRUE(refresher.Configure(annotations_only).ok());
  refresher.OnNodeAnnotation("node-a", annotation);
  model_.Publish();
  ASSERT_NE(Telemetry(), nullptr);
  EXPECT_EQ(Telemetry()->source, TelemetrySource::kAnnotation);
  EXPECT_EQ(Telemetry()->gpus[0].utilization, PerMille(420));

  refresher.OnNodeAnnotation("node-a", std::string_view("{not json"));
  model_.Publish();
  EXPECT_EQ(Telemetry(), nullptr);  // a broken annotation is no data, not old data
  EXPECT_EQ(Count("tessera_telemetry_annotation_errors_total"), 1);

  // With Prometheus as well, the fresher of the two is in force.
  refresher.OnNodeAnnotation("node-a", annotation);
  clock_.Advance(absl::Seconds(2));  // annotations have 1 s resolution
  AnswerAll("90");
  ASSERT_TRUE(refresher.Configure(Settings(prometheus_.url())).ok());
  ASSERT_TRUE(refresher.RefreshNow().ok());
  EXPECT_EQ(Telemetry()->source, TelemetrySource::kPrometheus);

  // Switching telemetry off drops every measurement.
  ASSERT_TRUE(refresher.Configure(std::nullopt).ok());
  EXPECT_EQ(Telemetry(), nullptr);
}

}  // namespace
}  // namespace tessera
