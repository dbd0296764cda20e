// Two replicas, one writer, failover without loss (docs/operations/failover.md):
// two kube-schedulers electing a leader, each calling a Tessera of its own,
// as the chart runs them. Pods keep arriving while the active pair is killed
// (SIGKILL, both); the standby pair takes over, every pod that fits binds,
// and the assignment annotations show no GPU over-committed.
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "test/testing/assignment_audit.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"
#include "test/testing/metrics_text.h"

namespace tessera::testing {
namespace {

using nlohmann::json;

// Filter calls the replica's Tessera has answered: only the active
// kube-scheduler calls its extender.
uint64_t FilterCalls(ControlPlane& plane, int replica) {
  return ReadHistogram(plane.TesseraGet("/metrics", replica).body, "tessera_http_request_duration_seconds",
                       "verb=\"filter\"")
      .count;
}

// Whether the replica's Tessera says it is the writer (GET /debug, "lease").
bool IsWriter(ControlPlane& plane, int replica) {
  const json debug = json::parse(plane.TesseraGet("/debug", replica).body, nullptr, false);
  return !debug.is_discarded() && debug.contains("lease") && debug["lease"]["leader"] == true;
}

int CountBound(const std::vector<json>& pods) {
  int bound = 0;
  for (const json& p : pods) bound += IsBound(p) ? 1 : 0;
  return bound;
}

class FailoverTest : public ControlPlaneTest {
 protected:
  // Creates pods `first`..`last`-1 asking for half a GPU, one after another.
  void CreatePods(int first, int last) {
    for (int i = first; i < last; ++i) {
      absl::StatusOr<json> pod = Pod(absl::StrCat("p", i), "0.5");
      if (!pod.ok()) ADD_FAILURE() << pod.status();
      absl::MutexLock lock(&created_mu_);
      ++created_;
    }
  }
  // Blocks until `n` pods have been created (by another thread).
  void AwaitCreated(int n) {
    absl::MutexLock lock(&created_mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(created_mu_) { return created_ >= n; };
    created_mu_.Await(absl::Condition(&enough));
  }
  absl::Mutex created_mu_;
  int created_ ABSL_GUARDED_BY(created_mu_) = 0;
};

TEST_F(FailoverTest, KillingTheActivePairMidRunLeavesTheStandbyToBindEveryPodWithNothingOverCommitted) {
  absl::StatusOr<int> standby_replica = plane().AddScheduler();
  ASSERT_TRUE(standby_replica.ok()) << standby_replica.status();
  ASSERT_TRUE(plane().StartTessera(*standby_replica).ok());
  constexpr int kNodes = 6;
  constexpr int kGpus = 8;
  constexpr int kFits = kNodes * kGpus * 2;  // halves
  constexpr int kPods = kFits + 4;           // four too many: they must stay pending, not over-commit
  std::map<std::string, AuditedNode> offered;
  for (int n = 0; n < kNodes; ++n) {
    absl::StatusOr<json> node = Node(absl::StrCat("n", n), kGpus);
    ASSERT_TRUE(node.ok()) << node.status();
    offered[(*node)["metadata"]["name"]] = {.gpus = kGpus, .memory = MemoryMiB(81920)};
  }

  // Creating a node probes each Tessera with a filter until it knows the
  // node (ControlPlaneTest::Node): those calls are not kube-scheduler's.
  const std::map<int, uint64_t> probes = {{0, FilterCalls(plane(), 0)},
                                          {*standby_replica, FilterCalls(plane(), *standby_replica)}};
  const auto scheduler_filters = [&](int replica) { return FilterCalls(plane(), replica) - probes.at(replica); };

  // A first batch shows which pair is active.
  CreatePods(0, 20);
  ASSERT_TRUE(plane()
                  .WaitForPods(ns(), "the first 20 pods to bind", [](const auto& p) { return CountBound(p) == 20; },
                               absl::Seconds(60))
                  .ok());
  const int active = scheduler_filters(0) > 0 ? 0 : *standby_replica;
  const int standby = active == 0 ? *standby_replica : 0;
  ASSERT_GT(scheduler_filters(active), 0u);
  ASSERT_EQ(scheduler_filters(standby), 0u) << "both kube-schedulers called their extenders";

  // One writer between the two Tesseras (which one need not match kube-scheduler's leader).
  EXPECT_NE(IsWriter(plane(), 0), IsWriter(plane(), *standby_replica)) << "no writer, or two";

  // The rest arrive while the active pair dies.
  std::thread creator([this] { CreatePods(20, kPods); });
  AwaitCreated(40);
  ASSERT_TRUE(plane().KillScheduler(active).ok());
  plane().KillTessera(active);
  const absl::Time killed = absl::Now();
  const int bound_at_kill = CountBound(*plane().ListPods(ns()));
  creator.join();

  // The first bind after the kill ends the failover; then every pod that fits binds.
  absl::Time first_bind_after = absl::InfiniteFuture();
  absl::StatusOr<std::vector<json>> pods = plane().WaitForPods(
      ns(), "every pod that fits to bind",
      [&](const auto& p) {
        const int bound = CountBound(p);
        if (bound > bound_at_kill && first_bind_after == absl::InfiniteFuture()) first_bind_after = absl::Now();
        return bound >= kFits;
      },
      absl::Seconds(90));
  ASSERT_TRUE(pods.ok()) << pods.status() << "\n" << plane().LogTails(30);
  const absl::Time all_bound = absl::Now();
  EXPECT_GT(scheduler_filters(standby), 0u) << "the standby's extender was never called";

  // Nothing over-committed, and the four that do not fit stay pending,
  // watched for 2 s (kube-scheduler retries them meanwhile).
  int bound = kFits;
  EXPECT_TRUE(Consistently(
      [&] {
        absl::StatusOr<std::vector<json>> now = plane().ListPods(ns());
        if (now.ok()) bound = CountBound(*now);  // a failed list tells nothing either way
        return bound == kFits;
      },
      absl::Seconds(2), "every pod that fits bound and the rest pending"))
      << bound << " bound of " << kPods;
  pods = plane().ListPods(ns());
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(CountBound(*pods), kFits);
  const AssignmentAudit audit = AuditAssignments(*pods, offered);
  EXPECT_TRUE(audit.clean()) << ::testing::PrintToString(audit.problems);
  EXPECT_EQ(audit.assigned_pods, kFits);
  EXPECT_EQ(audit.gpus_in_use, kNodes * kGpus);

  // The surviving Tessera becomes the writer once the dead one's term ends.
  EXPECT_TRUE(Eventually([&] { return IsWriter(plane(), standby); }, absl::Seconds(15),
                         "the surviving Tessera to become the writer"))
      << plane().TesseraGet("/debug", standby).body;

  // docs/operations/failover.md quotes these figures.
  std::printf("failover: %d pods bound at the kill; first bind by the standby %.1f s after it; all %d that fit %.1f s "
              "after it (kube-scheduler lease 6s/4s/1s)\n",
              bound_at_kill, absl::ToDoubleSeconds(first_bind_after - killed), kFits,
              absl::ToDoubleSeconds(all_bound - killed));
}

}  // namespace
}  // namespace tessera::testing
