// Chaos on the real control plane (issue 46): kube-apiserver frozen
// (SIGSTOP) for 20 s while pods keep arriving, then resumed. Tessera must
// say it cannot trust its model while the API server is silent (/readyz 503,
// with the reason) and that it can once it answers again; every pod that
// fits binds within 60 s of the resume, and the assignment annotations show
// no GPU over-committed.
//
// Here, not beside the failover tests: their kube-schedulers elect a leader,
// and kube-scheduler exits when a frozen API server lets its lease lapse
// (in a cluster the kubelet restarts it; here nothing would).
#include <csignal>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "test/testing/assignment_audit.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"

namespace tessera::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

int CountBound(const std::vector<json>& pods) {
  int bound = 0;
  for (const json& p : pods) bound += IsBound(p) ? 1 : 0;
  return bound;
}

class ApiServerFreezeTest : public ControlPlaneTest {
 protected:
  void TearDown() override {
    // Whatever failed, the plane must run on for the next test.
    if (frozen_) (void)plane().SignalComponent("kube-apiserver", SIGCONT);
    ControlPlaneTest::TearDown();
  }
  bool frozen_ = false;
};

TEST_F(ApiServerFreezeTest, AFrozenApiServerMakesTesseraNotReadyAndEveryPodThatFitsBindsOnceItResumes) {
  constexpr int kNodes = 4;
  constexpr int kGpus = 8;
  constexpr int kPods = 40;  // halves: 64 fit
  std::map<std::string, AuditedNode> offered;
  for (int n = 0; n < kNodes; ++n) {
    absl::StatusOr<json> node = Node(absl::StrCat("f", n), kGpus);
    ASSERT_TRUE(node.ok()) << node.status();
    offered[(*node)["metadata"]["name"]] = {.gpus = kGpus, .memory = MemoryMiB(81920)};
  }
  ASSERT_EQ(plane().TesseraGet("/readyz").status, 200);

  // Pods arrive at a steady 4 a second; a create the frozen server never
  // answers is tried again, under the same name, once it answers.
  absl::Mutex mu;
  int created = 0;
  std::thread creator([&] {
    for (int i = 0; i < kPods;) {
      const absl::Time next = absl::Now() + absl::Milliseconds(250);
      absl::StatusOr<json> pod = Pod(absl::StrCat("p", i), "0.5");
      if (pod.ok() || absl::StrContains(pod.status().message(), "AlreadyExists") ||
          absl::StrContains(pod.status().message(), "already exists")) {
        ++i;
        absl::MutexLock lock(&mu);
        created = i;
      }
      absl::SleepFor(next - absl::Now());  // the arrival rate, not a wait for something
    }
  });
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(+[](int* c) { return *c >= 10; }, &created));
  }

  ASSERT_TRUE(plane().SignalComponent("kube-apiserver", SIGSTOP).ok());
  frozen_ = true;
  const absl::Time frozen_at = absl::Now();
  // Open watches fall silent rather than break: the lease's unanswered reads
  // (renew deadline 10 s) are what tell.
  HttpAnswer readyz;
  EXPECT_TRUE(Eventually(
      [&] {
        readyz = plane().TesseraGet("/readyz");
        return readyz.status == 503;
      },
      absl::Seconds(18), "/readyz to answer 503 while the API server is frozen"));
  const absl::Duration noticed = absl::Now() - frozen_at;
  EXPECT_THAT(readyz.body, HasSubstr("not ready: ")) << readyz.body;
  absl::SleepFor(frozen_at + absl::Seconds(20) - absl::Now());  // the fault's length
  ASSERT_TRUE(plane().SignalComponent("kube-apiserver", SIGCONT).ok());
  frozen_ = false;
  const absl::Time resumed = absl::Now();

  EXPECT_TRUE(Eventually([&] { return plane().TesseraGet("/readyz").status == 200; }, absl::Seconds(30),
                         "/readyz to answer 200 once the API server answers again"))
      << plane().TesseraGet("/readyz").body;
  const absl::Duration ready_again = absl::Now() - resumed;
  creator.join();

  std::vector<std::string> seen_problems;
  absl::StatusOr<std::vector<json>> pods = plane().WaitForPods(
      ns(), "every pod to bind",
      [&](const std::vector<json>& p) {
        for (std::string& problem : AuditAssignments(p, offered).problems) seen_problems.push_back(std::move(problem));
        return CountBound(p) == kPods;
      },
      absl::Seconds(60));
  ASSERT_TRUE(pods.ok()) << pods.status() << "\n" << plane().LogTails(30);
  const absl::Duration all_bound = absl::Now() - resumed;
  const AssignmentAudit audit = AuditAssignments(*pods, offered);
  EXPECT_TRUE(audit.clean()) << ::testing::PrintToString(audit.problems);
  EXPECT_THAT(seen_problems, ::testing::IsEmpty()) << "an over-commit seen while the run went on";
  EXPECT_EQ(audit.assigned_pods, kPods);

  // docs/operations/failover.md's table of faults quotes these.
  std::printf("api-server freeze (20 s, %s): /readyz 503 after %.1f s; 200 again %.1f s after the resume; all %d pods "
              "bound %.1f s after it\n",
              plane().kube_version().c_str(), absl::ToDoubleSeconds(noticed), absl::ToDoubleSeconds(ready_again), kPods,
              absl::ToDoubleSeconds(all_bound));
}

}  // namespace
}  // namespace tessera::testing
