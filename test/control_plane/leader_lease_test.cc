// The writer election against the real API server: its optimistic
// concurrency (resourceVersion, 409) and the Lease object are what make "one
// writer" true, so they are tested where they live. Times are passed in, so
// a lease term passes without waiting for it.
#include "k8s/sync/leader_lease.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scheduler/metrics/metrics.h"
#include "test/testing/control_plane.h"

namespace tessera::testing {
namespace {

class LeaderLeaseTest : public ControlPlaneClientTest {
 protected:
  // A replica named `identity` electing on this test's lease.
  std::unique_ptr<k8s::LeaderLease> Replica(const std::string& identity) {
    k8s::LeaseOptions o;
    o.namespace_name = ns();
    o.name = "writer";
    o.identity = identity;
    o.lease_duration = kTerm;
    o.renew_deadline = absl::Seconds(10);
    o.retry_period = absl::Seconds(2);
    return std::make_unique<k8s::LeaderLease>(client(), o);
  }

  bool Try(k8s::LeaderLease& replica, absl::Time now) {
    absl::StatusOr<bool> held = replica.TryAcquireOrRenew(now);
    EXPECT_TRUE(held.ok()) << held.status();
    return held.ok() && *held;
  }

  nlohmann::json LeaseSpec() {
    absl::StatusOr<k8s::ApiResponse> r =
        client().Get(absl::StrCat("/apis/coordination.k8s.io/v1/namespaces/", ns(), "/leases/writer"));
    EXPECT_TRUE(r.ok() && r->status == 200);
    return r.ok() ? nlohmann::json::parse(r->body)["spec"] : nlohmann::json();
  }

  static constexpr absl::Duration kTerm = absl::Seconds(15);
  const absl::Time t0_ = absl::Now();
};

TEST_F(LeaderLeaseTest, TheFirstReplicaTakesAFreeLeaseAndTheSecondWaits) {
  auto a = Replica("a");
  auto b = Replica("b");
  EXPECT_TRUE(Try(*a, t0_));
  EXPECT_FALSE(Try(*b, t0_));
  EXPECT_TRUE(a->IsLeader(t0_));
  EXPECT_FALSE(b->IsLeader(t0_));
  EXPECT_EQ(b->LastSeenHolder(), "a");
  const nlohmann::json spec = LeaseSpec();
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
}

TEST_F(LeaderLeaseTest, AStandbyTakesTheLeaseOnlyWhenTheHolderHasNotRenewedForAWholeTerm) {
  auto a = Replica("a");
  auto b = Replica("b");
  ASSERT_TRUE(Try(*a, t0_));
  ASSERT_FALSE(Try(*b, t0_));
  EXPECT_FALSE(Try(*b, t0_ + kTerm - absl::Seconds(1))) << "taken before the term ended";
  EXPECT_TRUE(Try(*b, t0_ + kTerm + absl::Seconds(1)));
  EXPECT_EQ(LeaseSpec()["holderIdentity"], "b");
  EXPECT_EQ(LeaseSpec()["leaseTransitions"], 1);
  // The old holder, back, finds the lease taken and does not count itself the writer.
  EXPECT_FALSE(Try(*a, t0_ + kTerm + absl::Seconds(2)));
  EXPECT_FALSE(a->IsLeader(t0_ + kTerm + absl::Seconds(2)));
}

TEST_F(LeaderLeaseTest, AHolderThatKeepsRenewingKeepsTheLease) {
  auto a = Replica("a");
  auto b = Replica("b");
  ASSERT_TRUE(Try(*a, t0_));
  ASSERT_FALSE(Try(*b, t0_));
  ASSERT_TRUE(Try(*a, t0_ + absl::Seconds(10)));
  // A term after b first looked, but the record changed since: a is alive.
  EXPECT_FALSE(Try(*b, t0_ + kTerm + absl::Seconds(1)));
  EXPECT_TRUE(Try(*a, t0_ + absl::Seconds(20)));
  EXPECT_EQ(LeaseSpec()["holderIdentity"], "a");
}

TEST_F(LeaderLeaseTest, AReleasedLeaseIsTakenAtOnce) {
  auto a = Replica("a");
  auto b = Replica("b");
  ASSERT_TRUE(Try(*a, t0_));
  ASSERT_FALSE(Try(*b, t0_));
  ASSERT_TRUE(a->Release(t0_ + absl::Seconds(1)).ok());
  EXPECT_FALSE(a->IsLeader(t0_ + absl::Seconds(1)));
  EXPECT_EQ(LeaseSpec()["holderIdentity"], "");
  EXPECT_TRUE(Try(*b, t0_ + absl::Seconds(2)));
}

TEST_F(LeaderLeaseTest, AHolderStopsCountingItselfTheWriterAtTheRenewDeadline) {
  auto a = Replica("a");
  ASSERT_TRUE(Try(*a, t0_));
  EXPECT_TRUE(a->IsLeader(t0_ + absl::Seconds(10) - absl::Milliseconds(1)));
  EXPECT_FALSE(a->IsLeader(t0_ + absl::Seconds(10)));
}

// Issue 46: renewals that failed past the renew deadline lose the lease
// ("lost the lease"); the next renewal that lands takes it again, and says so.
TEST_F(LeaderLeaseTest, ARenewalAfterTheRenewDeadlineCountsAsTakingTheLeaseAgain) {
  MetricsRegistry metrics;
  k8s::LeaseOptions o;
  o.namespace_name = ns();
  o.name = "writer";
  o.identity = "a";
  o.lease_duration = kTerm;
  o.renew_deadline = absl::Seconds(10);
  o.retry_period = absl::Seconds(2);
  k8s::LeaderLease a(client(), o, &metrics);
  auto acquired = [&] {
    return metrics.Counter("tessera_leader_acquired_total", "Times this replica took the lease.").Value();
  };
  ASSERT_TRUE(Try(a, t0_));
  EXPECT_EQ(acquired(), 1);
  ASSERT_TRUE(Try(a, t0_ + absl::Seconds(2)));
  EXPECT_EQ(acquired(), 1) << "a renewal in time is no new term";
  EXPECT_FALSE(a.IsLeader(t0_ + absl::Seconds(13)));  // renewals failed meanwhile: not the writer
  ASSERT_TRUE(Try(a, t0_ + absl::Seconds(13)));
  EXPECT_TRUE(a.IsLeader(t0_ + absl::Seconds(13)));
  EXPECT_EQ(acquired(), 2) << "the writer again, counted and logged as taken";
}

TEST_F(LeaderLeaseTest, OfEightReplicasRacingForAFreeLeaseExactlyOneWins) {
  std::vector<std::unique_ptr<k8s::LeaderLease>> replicas;
  for (int i = 0; i < 8; ++i) replicas.push_back(Replica(absl::StrCat("r", i)));
  std::atomic<int> winners{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (auto& r : replicas) {
    threads.emplace_back([&, replica = r.get()] {
      absl::StatusOr<bool> held = replica->TryAcquireOrRenew(t0_);
      if (!held.ok()) ++errors;
      if (held.ok() && *held) ++winners;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(winners.load(), 1);
  int leaders = 0;
  for (auto& r : replicas) leaders += r->IsLeader(t0_) ? 1 : 0;
  EXPECT_EQ(leaders, 1);
}

}  // namespace
}  // namespace tessera::testing
