// Binds wait on the API server on threads of their own (issue #18): many in
// flight at once, each within its deadline, while filter and the probes
// answer on the I/O threads; the race for the last shares stays exact; a
// drain waits for them. Over real sockets, against the fake API server, whose
// HoldNext() latch shows how many Bindings are in flight at once without
// timing anything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test/integration/tessera_stack.h"
#include "test/testing/eventually.h"
#include "test/testing/fake_api_server.h"
#include "test/testing/http_client.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::BindArgs;
using testing::FakeApiServer;
using testing::FilterArgs;
using testing::GpuNode;
using testing::PendingPod;
using testing::Tessera;
using testing::TesseraOptions;
using testing::WaitFor;

constexpr const char* kBound = R"({"Error":""})";
// A probe that waits longer than this for /healthz fails the test; a
// kubelet's default probe timeout is 1 s.
constexpr std::chrono::milliseconds kProbeTimeout{2000};

// POST .../pods/<name>/binding, the one write of a bind.
testing::RequestMatch Bindings() { return {"POST", "/api/v1/namespaces/ml/pods/"}; }

class BindsInFlight : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Start().ok());
    ASSERT_TRUE(api_.AddNode(GpuNode("big", 4)).ok());
  }
  // `n` pending pods asking `fraction` of a GPU each, known to the API server.
  std::vector<nlohmann::json> AddPods(int n, const std::string& fraction, const std::string& prefix = "p") {
    std::vector<nlohmann::json> pods;
    for (int i = 0; i < n; ++i) pods.push_back(*api_.AddPod(PendingPod(absl::StrCat(prefix, i), fraction)));
    return pods;
  }
  // Sends each pod's bind to `node` from a client thread of its own; the
  // answers' bodies land in `answers`, in pod order.
  static std::vector<std::thread> BindAll(uint16_t port, const std::vector<nlohmann::json>& pods,
                                          std::vector<std::string>& answers, const std::string& node = "big") {
    answers.assign(pods.size(), "");
    std::vector<std::thread> clients;
    for (size_t i = 0; i < pods.size(); ++i) {
      clients.emplace_back([port, pod = pods[i], &answers, node, i] {
        testing::HttpClient http(port);
        answers[i] = http.Post("/bind", BindArgs(pod, node)).body;
      });
    }
    return clients;
  }
  static void Join(std::vector<std::thread>& threads) {
    for (std::thread& t : threads) t.join();
  }

  FakeApiServer api_;
};

// kube-scheduler binds on a goroutine and goes on to the next pod, so under
// load the next pod's filter often arrives before this pod's bind. A filter
// that passes its pod on to one node holds the pod's shares from its answer on.
TEST_F(BindsInFlight, TheNextPodsFilterSentBeforeThisPodsBindSeesTheSharesThisPodWasGiven) {
  ASSERT_TRUE(api_.AddNode(GpuNode("small", 1)).ok());
  Tessera tessera(api_);
  ASSERT_TRUE(tessera.WaitForSync());
  const std::vector<nlohmann::json> pods = AddPods(2, "0.6");
  ASSERT_TRUE(WaitFor([&] { return tessera.KnownPods() == 2; }));
  testing::HttpClient http(tessera.port());
  const std::string first = http.Post("/filter", FilterArgs(pods[0], {"small"})).body;
  EXPECT_THAT(first, HasSubstr(R"("NodeNames":["small"])"));
  EXPECT_EQ(tessera.Held("small", 0), 600) << "held from the filter's answer, before any bind";
  // The second pod's filter, before the first pod's bind: the GPU is taken.
  const std::string second = http.Post("/filter", FilterArgs(pods[1], {"small"})).body;
  EXPECT_THAT(second, HasSubstr(R"("NodeNames":[])"));
  // The first pod's bind takes its shares over: one share, one Binding.
  EXPECT_EQ(http.Post("/bind", BindArgs(pods[0], "small")).body, kBound);
  EXPECT_EQ(tessera.Held("small", 0), 600);
  EXPECT_THAT(tessera.Metrics(), HasSubstr(R"(tessera_filter_assumptions_total{result="assumed"} 1)"));
}

TEST_F(BindsInFlight, SixteenBindsWaitingOnTheApiServerAreInFlightTogetherWhileProbesAndFilterAnswer) {
  Tessera tessera(api_);  // 2 io threads, 64 bind threads: the program's defaults
  ASSERT_TRUE(tessera.WaitForSync());
  const std::vector<nlohmann::json> pods = AddPods(16, "0.25");  // 16 quarters = the node's 4 GPUs
  ASSERT_TRUE(WaitFor([&] { return tessera.KnownPods() == 16; }));
  api_.HoldNext(Bindings(), 16);

  std::vector<std::string> answers;
  std::vector<std::thread> clients = BindAll(tessera.port(), pods, answers);
  // All sixteen Bindings reach the API server before any is answered.
  EXPECT_TRUE(api_.WaitForHeldRequests(16)) << api_.HeldRequests() << " in flight";
  EXPECT_EQ(api_.HeldRequests(), 16);

  // Meanwhile the I/O threads answer at once.
  testing::HttpClient probe(tessera.port(), kProbeTimeout);
  EXPECT_EQ(probe.Get("/healthz").status, 200);
  EXPECT_EQ(probe.Get("/readyz").status, 200);
  const nlohmann::json late = *api_.AddPod(PendingPod("late", "0.25"));
  const testing::HttpAnswer filter = probe.Post("/filter", FilterArgs(late, {"big"}));
  ASSERT_EQ(filter.status, 200);
  EXPECT_THAT(filter.body, HasSubstr("big")) << "every share is reserved by the binds in flight";
  EXPECT_EQ(nlohmann::json::parse(filter.body)["NodeNames"], nlohmann::json::array());
  EXPECT_THAT(probe.Get("/metrics").body, HasSubstr(R"(tessera_request_pool_running{pool="bind"} 16)"));

  api_.ReleaseHeld();
  Join(clients);
  for (const std::string& a : answers) EXPECT_EQ(a, kBound);
  int64_t held = 0;
  for (int g = 0; g < 4; ++g) held += tessera.Held("big", g);
  EXPECT_EQ(held, 4000);
}

TEST_F(BindsInFlight, PodsRacingForTheLastSharesBindExactlyAsManyAsThereAreShares) {
  Tessera tessera(api_);
  ASSERT_TRUE(tessera.WaitForSync());
  // 16 pods for 8 halves of the node's 4 GPUs.
  const std::vector<nlohmann::json> pods = AddPods(16, "0.5", "racer-");
  ASSERT_TRUE(WaitFor([&] { return tessera.KnownPods() == 16; }));
  api_.HoldNext(Bindings(), 16);

  std::vector<std::string> answers;
  std::vector<std::thread> clients = BindAll(tessera.port(), pods, answers);
  // The eight winners' Bindings are in flight together; no ninth comes.
  EXPECT_TRUE(api_.WaitForHeldRequests(8));
  EXPECT_EQ(api_.HeldRequests(), 8);
  api_.ReleaseHeld();
  Join(clients);

  int bound = 0;
  int refused = 0;
  for (const std::string& a : answers) {
    if (a == kBound) {
      ++bound;
    } else if (a.find("can no longer take pod") != std::string::npos) {
      ++refused;
    }
  }
  EXPECT_EQ(bound, 8);
  EXPECT_EQ(refused, 8);
  int on_big = 0;
  for (int i = 0; i < 16; ++i) on_big += (*api_.Pod("ml", absl::StrCat("racer-", i)))["spec"].contains("nodeName");
  EXPECT_EQ(on_big, 8);
  for (int g = 0; g < 4; ++g) EXPECT_EQ(tessera.Held("big", g), 1000) << "GPU " << g;
}

TEST_F(BindsInFlight, ADrainWaitsForBindsInFlightAndAnswersThem) {
  Tessera tessera(api_);
  ASSERT_TRUE(tessera.WaitForSync());
  const std::vector<nlohmann::json> pods = AddPods(4, "0.5");
  ASSERT_TRUE(WaitFor([&] { return tessera.KnownPods() == 4; }));
  api_.HoldNext(Bindings(), 4);
  std::vector<std::string> answers;
  std::vector<std::thread> clients = BindAll(tessera.port(), pods, answers);
  ASSERT_TRUE(api_.WaitForHeldRequests(4));

  std::future<void> stopped = tessera.Drain();  // what SIGTERM does
  EXPECT_EQ(stopped.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the server stopped with binds in flight";
  api_.ReleaseHeld();
  Join(clients);
  for (const std::string& a : answers) EXPECT_EQ(a, kBound);
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST_F(BindsInFlight, PastTheDrainTimeoutTheServerStopsAndBindsStillHeldFinishHarmlessly) {
  TesseraOptions options;
  options.drain_timeout = std::chrono::milliseconds(200);
  const std::vector<nlohmann::json> pods = AddPods(2, "0.5");
  auto tessera = std::make_unique<Tessera>(api_, options);
  ASSERT_TRUE(tessera->WaitForSync());
  api_.HoldNext(Bindings(), 2);
  std::vector<std::string> answers;
  std::vector<std::thread> clients = BindAll(tessera->port(), pods, answers);
  ASSERT_TRUE(api_.WaitForHeldRequests(2));

  std::future<void> stopped = tessera->Drain();
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  // The binds finish after the server has stopped: their answers go nowhere.
  api_.ReleaseHeld();
  tessera.reset();  // closes the connections still owed an answer; joins the bind threads
  Join(clients);
  for (const std::string& a : answers) EXPECT_EQ(a, "") << "cut unanswered";
  for (const nlohmann::json& pod : pods) {
    EXPECT_EQ((*api_.Pod("ml", pod["metadata"]["name"]))["spec"]["nodeName"], "big");
  }
}

TEST_F(BindsInFlight, ABindPastItsDeadlineAnswersInTimeAndKeepsItsSharesUntilTheWatchShowsThePod) {
  TesseraOptions options;
  options.dispatcher.bind_timeout = absl::Milliseconds(400);
  Tessera tessera(api_, options);
  ASSERT_TRUE(tessera.WaitForSync());
  const nlohmann::json pod = AddPods(1, "0.25").front();
  ASSERT_TRUE(WaitFor([&] { return tessera.KnownPods() == 1; }));
  // The API server writes the Binding, but only long after the bind's deadline.
  api_.DelayNext(Bindings(), std::chrono::milliseconds(3000));

  testing::HttpClient http(tessera.port());
  const testing::HttpAnswer answer = http.Post("/bind", BindArgs(pod, "big"));
  EXPECT_THAT(answer.body, HasSubstr("cannot bind pod ml/p0 to node big"));
  EXPECT_THAT(answer.body, HasSubstr("its reservation stays until the watch shows whether the Binding landed"));
  EXPECT_FALSE((*api_.Pod("ml", "p0"))["spec"].contains("nodeName")) << "answered before the API server wrote it";
  // Outcome unknown: the share stays taken, so no other pod gets it meanwhile.
  EXPECT_EQ(tessera.Held("big", 0), 250);
  EXPECT_EQ(tessera.model().reservation_count(), 1u);
  // The Binding lands; the watch confirms it; counted once.
  EXPECT_TRUE(WaitFor([&] { return tessera.model().reservation_count() == 0; }));
  EXPECT_EQ((*api_.Pod("ml", "p0"))["spec"]["nodeName"], "big");
  EXPECT_EQ(tessera.Held("big", 0), 250);
}

TEST_F(BindsInFlight, ABindArrivingWhenTheBindQueueIsFullIsRefusedAtOnceWithTheReason) {
  TesseraOptions options;
  options.dispatcher.bind_threads = 1;
  options.dispatcher.bind_queue = 1;
  Tessera tessera(api_, options);
  ASSERT_TRUE(tessera.WaitForSync());
  const std::vector<nlohmann::json> pods = AddPods(3, "0.25");
  ASSERT_TRUE(WaitFor([&] { return tessera.KnownPods() == 3; }));
  api_.HoldNext(Bindings(), 1);

  // One bind runs (held at the API server), then one waits for the thread.
  std::vector<std::string> answers;
  std::vector<std::thread> clients = BindAll(tessera.port(), {pods[0]}, answers);
  ASSERT_TRUE(api_.WaitForHeldRequests(1));
  std::vector<std::string> queued_answer;
  std::vector<std::thread> queued = BindAll(tessera.port(), {pods[1]}, queued_answer);
  ASSERT_TRUE(WaitFor([&] {
    return tessera.Metrics().find(R"(tessera_request_pool_queued{pool="bind"} 1)") != std::string::npos;
  })) << tessera.Metrics();
  // The waiting bind's share counts already: it was reserved when the bind
  // arrived, on the I/O thread, before any bind thread was free.
  EXPECT_EQ(tessera.Held("big", 0), 500);

  testing::HttpClient http(tessera.port(), kProbeTimeout);
  const testing::HttpAnswer refused = http.Post("/bind", BindArgs(pods[2], "big"));
  EXPECT_EQ(refused.status, 200);
  EXPECT_THAT(refused.body, HasSubstr("Tessera is busy: its bind threads (1, --bind-threads) are all taken"));
  EXPECT_THAT(tessera.Metrics(), HasSubstr(R"(tessera_request_pool_rejected_total{pool="bind"} 1)"));

  api_.ReleaseHeld();
  Join(clients);
  Join(queued);
  EXPECT_EQ(answers.front(), kBound);
  EXPECT_EQ(queued_answer.front(), kBound);
  EXPECT_EQ(tessera.Held("big", 0), 500) << "the refused pod reserved nothing";
}

}  // namespace
}  // namespace tessera
