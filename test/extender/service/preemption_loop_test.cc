// Tessera's own preemption: what it evicts and nominates, and when it holds back.
#include "extender/service/preemption_loop.h"

#include <gmock/gmock.h>

#include "absl/strings/str_cat.h"
#include <gtest/gtest.h>

#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "test/testing/builders.h"
#include "test/testing/fake_clock.h"
#include "test/testing/fake_pod_api.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr std::string_view kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
)";

class PreemptionLoopTest : public ::testing::Test {
 protected:
  PreemptionLoopTest() : profile_(*LoadPolicyText(kPolicy, "policy.yaml", NewBuiltinRegistry())) {
    // Two GPUs, each held by four quarter-GPU pods of priority 0.
    model_.UpsertNode("n1", testing::Node("n1").Gpus(2).inventory(), absl::OkStatus());
    for (int g = 0; g < 2; ++g) {
      for (char c : std::string("abcd")) {
        const std::string uid = absl::StrCat("g", g, std::string(1, c));
        PodHolding p = testing::Holding(uid, "n1", g, 250);
        p.pod_key = "low/" + uid;
        p.bound_at = clock_.Now() - absl::Hours(1);
        model_.UpsertPod(std::move(p));
        PodRecord record;
        record.uid = uid;
        record.namespace_name = "low";
        record.name = uid;
        record.node_name = "n1";
        api_.Add(record);
      }
    }
    model_.Publish();
    PodRecord urgent;
    urgent.uid = "urgent-uid";
    urgent.namespace_name = "high";
    urgent.name = "urgent";
    pods_.Upsert(urgent);  // pending: no node
    api_.Add(urgent);
    loop_ = std::make_unique<PreemptionLoop>(
        PreemptionLoopSources{.model = &model_,
                              .pods = &pods_,
                              .api = &api_,
                              .profile = [this] { return profile_; },
                              .tenants = nullptr,
                              .is_writer = [this] { return writer_; },
                              .metrics = &metrics_,
                              .clock = &clock_});
  }

  static UnschedulablePod Urgent() {
    UnschedulablePod pod{.uid = "urgent-uid", .namespace_name = "high", .name = "urgent", .priority = 1000};
    pod.request = testing::Pod().Fraction(500).request();
    return pod;
  }
  std::vector<std::string> Evicted() {
    std::vector<std::string> out;
    for (const k8s::PodRef& p : api_.evicted()) out.push_back(p.namespace_name + "/" + p.name);
    return out;
  }

  ClusterModel model_;
  PodDirectory pods_;
  testing::FakePodApi api_;
  testing::FakeClock clock_;
  MetricsRegistry metrics_;
  std::shared_ptr<const Profile> profile_;
  bool writer_ = true;
  std::unique_ptr<PreemptionLoop> loop_;
};

TEST_F(PreemptionLoopTest, AfterTheGraceItEvictsTheQuartersOfOneGpuAndNominatesTheNode) {
  loop_->NoteUnschedulable(Urgent());
  EXPECT_EQ(loop_->RunOnce(), 0) << "kube-scheduler's own preemption goes first";
  EXPECT_THAT(api_.calls(), IsEmpty());
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(loop_->RunOnce(), 1);
  EXPECT_THAT(Evicted(), ElementsAre("low/g0c", "low/g0d"));
  EXPECT_EQ(api_.nominated().at("urgent-uid"), "n1");
}

TEST_F(PreemptionLoopTest, ItDoesNotEvictAgainForThePodWhileItsVictimsMayStillBeGoing) {
  loop_->NoteUnschedulable(Urgent());
  clock_.Advance(absl::Seconds(3));
  ASSERT_EQ(loop_->RunOnce(), 1);
  loop_->NoteUnschedulable(Urgent());  // refused again before the victims are gone
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(loop_->RunOnce(), 0);
  EXPECT_EQ(api_.evicted().size(), 2u);
}

TEST_F(PreemptionLoopTest, AReplicaThatIsNotTheWriterEvictsNothing) {
  writer_ = false;
  loop_->NoteUnschedulable(Urgent());
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(loop_->RunOnce(), 0);
  EXPECT_THAT(api_.calls(), IsEmpty());
}

TEST_F(PreemptionLoopTest, APodNoLongerPendingIsForgotten) {
  loop_->NoteUnschedulable(Urgent());
  PodRecord bound = *pods_.Find("urgent-uid");
  bound.node_name = "n2";
  pods_.Upsert(bound);
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(loop_->RunOnce(), 0);
  EXPECT_EQ(loop_->waiting(), 0u);
  EXPECT_THAT(api_.calls(), IsEmpty());
}

TEST_F(PreemptionLoopTest, APodKubeSchedulersPreemptionHandledIsLeftAlone) {
  loop_->NoteUnschedulable(Urgent());
  loop_->NoteSchedulerPreempted("urgent-uid");
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(loop_->RunOnce(), 0);
  EXPECT_THAT(api_.calls(), IsEmpty());
}

TEST_F(PreemptionLoopTest, NothingIsEvictedForAPodWhosePriorityIsNotHigher) {
  UnschedulablePod low = Urgent();
  low.priority = 0;
  loop_->NoteUnschedulable(low);
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(loop_->RunOnce(), 0);
  EXPECT_THAT(api_.calls(), IsEmpty());
}

TEST_F(PreemptionLoopTest, AnEvictionABudgetRefusesIsSkippedAndTheRestGoOn) {
  api_.FailNextEvict(absl::ResourceExhaustedError("Cannot evict pod as it would violate the pod's disruption budget"));
  loop_->NoteUnschedulable(Urgent());
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(loop_->RunOnce(), 1);
  EXPECT_THAT(Evicted(), ElementsAre("low/g0d"));
}

TEST_F(PreemptionLoopTest, APodRoutedToANodePoolEvictsOnlyInThatPool) {
  const std::shared_ptr<const ProfileSet> profiles = *ProfileSet::Create(
      profile_, {PoolPolicy{.name = "gpu-training", .task_types = {"training"}, .exclusive = false, .profile = profile_}});
  loop_ = std::make_unique<PreemptionLoop>(PreemptionLoopSources{.model = &model_,
                                                                 .pods = &pods_,
                                                                 .api = &api_,
                                                                 .profile = [this] { return profile_; },
                                                                 .profiles = [profiles] { return profiles; },
                                                                 .tenants = nullptr,
                                                                 .is_writer = [this] { return writer_; },
                                                                 .metrics = &metrics_,
                                                                 .clock = &clock_});
  UnschedulablePod urgent = Urgent();
  urgent.task_type = "training";
  loop_->NoteUnschedulable(urgent);
  clock_.Advance(absl::Seconds(3));
  EXPECT_EQ(loop_->RunOnce(), 0) << "n1 is in no pool: evicting there would not place the pod";
  EXPECT_THAT(api_.evicted(), IsEmpty());

  // A training node as full as n1: its victims go.
  model_.UpsertNode("t1", testing::Node("t1").Gpus(1).inventory(), absl::OkStatus(), std::nullopt, "gpu-training");
  for (char c : std::string("abcd")) {
    const std::string uid = absl::StrCat("t", std::string(1, c));
    PodHolding p = testing::Holding(uid, "t1", 0, 250);
    p.pod_key = "low/" + uid;
    model_.UpsertPod(std::move(p));
    PodRecord record;
    record.uid = uid;
    record.namespace_name = "low";
    record.name = uid;
    record.node_name = "t1";
    api_.Add(record);
  }
  model_.Publish();
  loop_->NoteUnschedulable(urgent);
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(loop_->RunOnce(), 1);
  EXPECT_EQ(api_.nominated().at("urgent-uid"), "t1");
  for (const std::string& evicted : Evicted()) EXPECT_EQ(evicted.substr(0, 5), "low/t") << evicted;
}

}  // namespace
}  // namespace tessera
