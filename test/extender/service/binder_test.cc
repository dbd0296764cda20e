// Bind: reserve, then one Binding carrying the assignment — against an in-memory PodApi, so every
// failure and race can be staged exactly.
#include "extender/service/binder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "config/policy_loader.h"
#include "extender/service/extender_service.h"
#include "extender/service/profile_request.h"
#include "k8s/annotations.h"
#include "k8s/gpu_assignment.h"
#include "k8s/node_inventory.h"
#include "k8s/pod_gpu_request.h"
#include "policies/builtin_registry.h"
#include "policies/gpu_share/gpu_share.h"
#include "scheduler/model/absl_compat.h"
#include "test/testing/builders.h"
#include "test/testing/fake_clock.h"
#include "test/testing/fake_plugins.h"
#include "test/testing/fake_pod_api.h"
#include "test/testing/recording_reserver.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::FakePodApi;
using testing::Inventory;

// A pending pod asking for `fraction` of a GPU ("" = one whole GPU).
PodRecord PendingPod(std::string name, std::string fraction = "") {
  PodRecord p;
  p.uid = absl::StrCat("uid-", name);
  p.namespace_name = "ml";
  p.name = std::move(name);
  p.phase = "Pending";
  p.annotations[std::string(k8s::kGpuCount)] = "1";
  if (!fraction.empty()) p.annotations[std::string(k8s::kGpuFraction)] = fraction;
  return p;
}

k8s::ExtenderBindingArgs Args(const PodRecord& p, std::string_view node) {
  return {.pod_name = p.name, .pod_namespace = p.namespace_name, .pod_uid = p.uid, .node = node};
}

class BinderTest : public ::testing::Test {
 protected:
  BinderTest() : registry_(NewBuiltinRegistry()) {
    absl::StatusOr<std::shared_ptr<const Profile>> profile =
        LoadPolicyText(testing::kBinpackPolicy, "policy.yaml", registry_);
    EXPECT_TRUE(profile.ok()) << profile.status();
    profile_ = *profile;
    model_.UpsertNode("n1", Inventory(1), absl::OkStatus());
    model_.UpsertNode("n2", Inventory(2), absl::OkStatus());
    model_.Publish();
    binder_ = std::make_unique<Binder>(model_, directory_, api_, [this] { return profile_; }, metrics_,
                                       BinderOptions{.reservation_ttl = absl::Minutes(1),
                                                     .tenants = [this] { return tenants_; }});
  }

  // The pod as the watch has delivered it: in the directory and on the server.
  void Known(const PodRecord& p) {
    directory_.Upsert(p);
    api_.Add(p);
  }
  // Filter's assumption for `p` on `node`, with the request filter reads from
  // the pod (its GPU annotations and host request).
  void Assume(const PodRecord& p, std::string_view node) {
    absl::StatusOr<std::optional<PodGpuRequest>> request = k8s::ParsePodGpuRequest(p.annotations);
    ASSERT_TRUE(request.ok()) << request.status();
    binder_->Assume(p.uid, node, ProfileRequest(*request, p.host));
  }
  int64_t Held(std::string_view node, int32_t gpu) {
    const auto s = model_.Current();
    return s->View(*s->FindNode(node)).UsageOf(gpu).guaranteed.value();
  }

  PluginRegistry registry_;
  std::shared_ptr<const Profile> profile_;
  std::shared_ptr<const TenantSet> tenants_;  // null: no quotas
  ClusterModel model_;
  PodDirectory directory_;
  FakePodApi api_;
  MetricsRegistry metrics_;
  std::unique_ptr<Binder> binder_;
};

TEST_F(BinderTest, WritesTheAssignmentThenTheBindingAndCountsTheGpusAtOnce) {
  const PodRecord pod = PendingPod("p", "0.25");
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_THAT(api_.calls(), ElementsAre("bind ml/p n1 with annotations")) << "one API call per bind";
  const PodRecord after = *api_.Pod("ml/p");
  EXPECT_EQ(after.node_name, "n1");
  absl::StatusOr<GpuAssignment> written = k8s::ParseGpuAssignment(after.annotations.at(std::string(k8s::kGpuAssignment)));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->node, "n1");
  ASSERT_EQ(written->gpus.size(), 1u);
  EXPECT_EQ(written->gpus[0].index, 0);
  EXPECT_EQ(written->gpus[0].uuid, "GPU-0");
  EXPECT_EQ(written->gpus[0].guaranteed.value(), 250);
  EXPECT_EQ(after.annotations.at(std::string(k8s::kVisibleDevices)), "GPU-0");
  // Counted before any watch event confirms it.
  EXPECT_EQ(Held("n1", 0), 250);
  EXPECT_EQ(model_.reservation_count(), 1u);
}

// An instance laid out from GPU Feature Discovery's labels has no UUID: the
// assignment records it, and no tessera.io/visible-devices names a device
// (the device plugin hands over the one it allocates for the pod's resource).
TEST_F(BinderTest, AMigInstanceFromFeatureDiscoveryLabelsIsBoundWithoutVisibleDevices) {
  absl::StatusOr<std::shared_ptr<const Profile>> mig = LoadPolicyText(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: gpu-share\n"
      "  - name: mig-partition\n",
      "mig.yaml", registry_);
  ASSERT_TRUE(mig.ok()) << mig.status();
  profile_ = *mig;
  const std::vector<k8s::GfdMigCount> counts = {{.profile = "3g.40gb", .count = "2"}};
  absl::StatusOr<NodeInventory> labelled = k8s::ParseNodeInventory(
      {.gfd_count = "1", .gfd_product = "NVIDIA-A100-SXM4-80GB", .gfd_memory = "81920",
       .gfd_mig_strategy = "mixed", .gfd_mig_counts = counts});
  ASSERT_TRUE(labelled.ok()) << labelled.status();
  model_.UpsertNode("gfd", *labelled, absl::OkStatus());
  model_.Publish();
  PodRecord pod;
  pod.uid = "uid-mig";
  pod.namespace_name = "ml";
  pod.name = "mig";
  pod.phase = "Pending";
  pod.annotations[std::string(k8s::kMigProfile)] = "3g.40gb";
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "gfd")).ok());
  const PodRecord after = *api_.Pod("ml/mig");
  absl::StatusOr<GpuAssignment> written = k8s::ParseGpuAssignment(after.annotations.at(std::string(k8s::kGpuAssignment)));
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->gpus.size(), 1u);
  ASSERT_TRUE(written->gpus[0].mig.has_value());
  EXPECT_EQ(written->gpus[0].mig->profile, "3g.40gb");
  EXPECT_TRUE(written->gpus[0].mig->uuid.empty());
  EXPECT_FALSE(after.annotations.contains(std::string(k8s::kVisibleDevices)))
      << "a GPU index would hand over the whole GPU in MIG mode";
}

TEST_F(BinderTest, APolicyWhoseChoiceIgnoresWhatPodsHoldCannotOverCommitAGpu) {
  // fake-chooser always picks GPU 0 and filters nothing: only the model's own
  // capacity guard stands between the second pod and 1200/1000 milli.
  const PluginRegistry fakes = config_test::FakeRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> careless =
      LoadPolicyText("apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n  - name: fake-chooser\n", "careless.yaml", fakes);
  ASSERT_TRUE(careless.ok()) << careless.status();
  profile_ = *careless;
  const PodRecord first = PendingPod("first", "0.6");
  const PodRecord second = PendingPod("second", "0.6");
  Known(first);
  Known(second);
  ASSERT_TRUE(binder_->Bind(Args(first, "n1")).ok());
  const absl::Status refused = binder_->Bind(Args(second, "n1"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("GPU 0 of node n1 would hold 1200/1000 milli guaranteed"));
  EXPECT_EQ(Held("n1", 0), 600);
  EXPECT_TRUE(api_.Pod("ml/second")->node_name.empty()) << "no Binding for the refused pod";
}

TEST_F(BinderTest, TwoPodsFilteredBeforeEitherBoundCannotBothTakeTheLastOfTheirTenantsMax) {
  TenantSpec ml;
  ml.name = "ml-team";
  ml.namespaces = {"ml"};
  ml.max.milli = MilliGpu(1000);
  tenants_ = std::make_shared<const TenantSet>(*TenantSet::Create({ml}));
  const PodRecord first = PendingPod("first", "0.6");
  const PodRecord second = PendingPod("second", "0.6");
  Known(first);
  Known(second);
  ASSERT_TRUE(binder_->Bind(Args(first, "n2")).ok());
  const absl::Status refused = binder_->Bind(Args(second, "n2"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("tenant ml-team would hold 1200 gpu-milli, over its max 1000"));
  EXPECT_TRUE(api_.Pod("ml/second")->node_name.empty()) << "no Binding for the refused pod";
}

TEST_F(BinderTest, TheWatchConfirmingTheBoundPodEndsTheReservationWithoutCountingTwice) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  const PodRecord bound = *api_.Pod("ml/p");
  model_.UpsertPod(PodHolding{.uid = bound.uid, .pod_key = "ml/p",
                              .assignment = *k8s::ParseGpuAssignment(bound.annotations.at(std::string(k8s::kGpuAssignment)))});
  model_.Publish();
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_EQ(Held("n1", 0), 500);
}

TEST_F(BinderTest, AFailedBindingReleasesTheGpus) {
  const PodRecord pod = PendingPod("p");
  Known(pod);
  api_.FailBind(absl::UnavailableError("connection reset"));
  const absl::Status st = binder_->Bind(Args(pod, "n1"));
  EXPECT_THAT(st.message(), HasSubstr("cannot bind pod ml/p to node n1: connection reset"));
  EXPECT_EQ(Held("n1", 0), 0);
  EXPECT_FALSE(api_.Pod("ml/p")->annotations.contains(std::string(k8s::kGpuAssignment)))
      << "no assignment recorded without the binding";
}

TEST_F(BinderTest, ABindThatFindsTheGpusTakenAnswersAClearErrorAndWritesNothing) {
  const PodRecord first = PendingPod("first");
  const PodRecord second = PendingPod("second", "0.1");
  Known(first);
  Known(second);
  ASSERT_TRUE(binder_->Bind(Args(first, "n1")).ok());
  const absl::Status st = binder_->Bind(Args(second, "n1"));
  EXPECT_THAT(st.message(), HasSubstr("node n1 can no longer take pod ml/second"));
  EXPECT_THAT(api_.calls(), ElementsAre("bind ml/first n1 with annotations"));
}

TEST_F(BinderTest, ARepeatedBindForTheSamePodNeverAllocatesTwice) {
  const PodRecord pod = PendingPod("p", "0.4");
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n2")).ok());
  // kube-scheduler lost the answer and binds again: the Binding already
  // exists (409), the pod is on that node, so it is a success.
  ASSERT_TRUE(binder_->Bind(Args(pod, "n2")).ok());
  EXPECT_EQ(Held("n2", 0) + Held("n2", 1), 400);
  EXPECT_EQ(model_.reservation_count(), 1u);
}

// A pod the watch shows on `node`'s GPU `gpu` holding `milli`, not yet published.
PodHolding Holder(std::string uid, std::string node, int32_t gpu, int64_t milli) {
  GpuShare share;
  share.index = gpu;
  share.guaranteed = share.limit = MilliGpu(milli);
  return PodHolding{.uid = uid, .pod_key = absl::StrCat("ml/", uid),
                    .assignment = GpuAssignment{.node = std::move(node), .gpus = {share}}};
}

// Issue 46: a bind chooses on the snapshot requests read now and builds one
// snapshot, its reservation's, however many changes other writers left
// unpublished.
TEST_F(BinderTest, ABindBuildsOneSnapshotEvenWhenAnotherWritersChangeIsUnpublished) {
  const PodRecord pod = PendingPod("p", "0.25");
  Known(pod);
  model_.UpsertPod(Holder("elsewhere", "n2", 1, 500));  // not published yet
  const uint64_t before = model_.Current()->generation();
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_EQ(model_.Current()->generation(), before + 1);
  EXPECT_EQ(Held("n1", 0), 250);
  EXPECT_EQ(Held("n2", 1), 500) << "the other writer's change is published with the reservation";
}

TEST_F(BinderTest, ABindChoosesAgainOnAFreshSnapshotWhenTheGpuItChoseWasTakenMeanwhile) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  model_.UpsertPod(Holder("taker", "n2", 0, 1000));  // the watch has it; requests do not see it yet
  ASSERT_TRUE(binder_->Bind(Args(pod, "n2")).ok());
  EXPECT_EQ(Held("n2", 0), 1000);
  EXPECT_EQ(Held("n2", 1), 500) << "placed on the GPU still free, not refused";
}

TEST_F(BinderTest, ABindChoosesAgainOnAFreshSnapshotWhenTheNodeItSawFullWasFreedMeanwhile) {
  const PodRecord pod = PendingPod("p");
  Known(pod);
  model_.UpsertPod(Holder("leaver", "n1", 0, 1000));
  model_.Publish();
  model_.RemovePod("leaver");  // gone in the model; requests still see it
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_EQ(Held("n1", 0), 1000);
  EXPECT_FALSE(model_.FindPod("leaver").has_value());
}

TEST_F(BinderTest, PodsRacingForTheLastShareOfAGpuGetItExactlyOnce) {
  constexpr int kPods = 16;
  std::vector<PodRecord> pods;
  for (int i = 0; i < kPods; ++i) {
    pods.push_back(PendingPod(absl::StrCat("p", i), "0.6"));
    Known(pods.back());
  }
  std::atomic<int> won{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      if (binder_->Bind(Args(pods[static_cast<size_t>(i)], "n1")).ok()) ++won;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(Held("n1", 0), 600);
}

TEST_F(BinderTest, APodTheWatchHasNotDeliveredYetIsReadFromTheApiServer) {
  const PodRecord pod = PendingPod("fresh", "0.3");
  api_.Add(pod);  // not in the directory
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_THAT(api_.calls(), ElementsAre("get ml/fresh", "bind ml/fresh n1 with annotations"));
}

TEST_F(BinderTest, APodReplacedUnderTheSameNameIsNotBound) {
  PodRecord pod = PendingPod("p");
  api_.Add(pod);
  k8s::ExtenderBindingArgs args = Args(pod, "n1");
  args.pod_uid = "uid-of-the-deleted-pod";
  const absl::Status st = binder_->Bind(args);
  EXPECT_THAT(st.message(), HasSubstr("it was deleted and created again"));
  EXPECT_EQ(Held("n1", 0), 0);
}

TEST_F(BinderTest, APodWithoutGpuAnnotationsIsBoundWithoutAnAssignment) {
  PodRecord pod = PendingPod("cpu-only");
  pod.annotations.clear();
  api_.Add(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_THAT(api_.calls(), ElementsAre("get ml/cpu-only", "bind ml/cpu-only n1"));
  EXPECT_EQ(Held("n1", 0), 0);
}

TEST_F(BinderTest, APodWithoutAGpuRequestCountsItsCpuAndMemoryFromTheBindOn) {
  model_.UpsertNode("host", NodeInventory{}, absl::OkStatus(),
                    HostResources{.cpu_capacity = MilliCpu(8000), .memory_capacity = MemoryMiB(16384)});
  model_.Publish();
  PodRecord pod = PendingPod("cpu-only");
  pod.annotations.clear();
  pod.host = HostRequest{.cpu = MilliCpu(3000), .memory = MemoryMiB(2048)};
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "host")).ok());
  EXPECT_THAT(api_.calls(), ElementsAre("bind ml/cpu-only host"));
  auto host = [&] { const auto s = model_.Current(); return *s->View(*s->FindNode("host")).host; };
  EXPECT_EQ(host().cpu_used, MilliCpu(3000));
  EXPECT_EQ(host().memory_used, MemoryMiB(2048));
  // The watch shows it bound: counted once, from the watch; the reservation ends.
  PodHolding bound;
  bound.uid = pod.uid;
  bound.pod_key = "ml/cpu-only";
  bound.assignment.node = "host";
  bound.host = pod.host;
  model_.UpsertPod(bound);
  model_.Publish();
  EXPECT_EQ(host().cpu_used, MilliCpu(3000));
  EXPECT_EQ(model_.reservation_count(), 0u);
}

TEST_F(BinderTest, AFailedBindingOfACpuOnlyPodReleasesItsCpu) {
  model_.UpsertNode("host", NodeInventory{}, absl::OkStatus(),
                    HostResources{.cpu_capacity = MilliCpu(8000), .memory_capacity = MemoryMiB(16384)});
  model_.Publish();
  PodRecord pod = PendingPod("cpu-only");
  pod.annotations.clear();
  pod.host = HostRequest{.cpu = MilliCpu(3000), .memory = MemoryMiB(0)};
  Known(pod);
  api_.FailBind(absl::UnavailableError("connection reset"));
  EXPECT_THAT(binder_->Bind(Args(pod, "host")).message(), HasSubstr("cannot bind pod ml/cpu-only to node host"));
  const auto s = model_.Current();
  EXPECT_EQ(s->View(*s->FindNode("host")).host->cpu_used, MilliCpu(0));
  EXPECT_EQ(model_.reservation_count(), 0u);
}

TEST_F(BinderTest, AGpuBindReservesThePodsCpuWithItsGpus) {
  model_.UpsertNode("n1", Inventory(1), absl::OkStatus(),
                    HostResources{.cpu_capacity = MilliCpu(8000), .memory_capacity = MemoryMiB(16384)});
  model_.Publish();
  PodRecord pod = PendingPod("p", "0.25");
  pod.host = HostRequest{.cpu = MilliCpu(6000), .memory = MemoryMiB(0)};
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  const auto s = model_.Current();
  EXPECT_EQ(s->View(*s->FindNode("n1")).host->cpu_used, MilliCpu(6000));
  // Released with its GPUs when the bind is not confirmed.
  EXPECT_EQ(binder_->ExpireReservations(absl::Now() + absl::Minutes(2)), 1u);
  const auto after = model_.Current();
  EXPECT_EQ(after->View(*after->FindNode("n1")).host->cpu_used, MilliCpu(0));
}

TEST_F(BinderTest, APodWithANonsenseAnnotationIsRefusedWithTheAnnotationNamed) {
  PodRecord pod = PendingPod("p", "1.5");
  Known(pod);
  const absl::Status st = binder_->Bind(Args(pod, "n1"));
  EXPECT_THAT(st.message(), HasSubstr("tessera.io/gpu-fraction=\"1.5\""));
  EXPECT_TRUE(api_.calls().empty());
}

TEST_F(BinderTest, ANodeTesseraDoesNotKnowIsRefused) {
  const PodRecord pod = PendingPod("p");
  Known(pod);
  EXPECT_THAT(binder_->Bind(Args(pod, "nowhere")).message(), HasSubstr("node nowhere has no GPUs Tessera knows of"));
}

TEST_F(BinderTest, TheDeadlineBoundsEveryApiCallOfTheBind) {
  const PodRecord pod = PendingPod("fresh", "0.5");
  api_.Add(pod);  // not in the directory: read from the API server first
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1"), deadline).ok());
  EXPECT_THAT(api_.calls(), ElementsAre("get ml/fresh", "bind ml/fresh n1 with annotations"));
  EXPECT_THAT(api_.deadlines(), ElementsAre(deadline, deadline));
}

TEST_F(BinderTest, ABindThatStartsPastItsDeadlineReservesNothingAndCallsNothing) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  const absl::Status st = binder_->Bind(Args(pod, "n1"), absl::Now() - absl::Milliseconds(1));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_THAT(st.message(), HasSubstr("reached its deadline (--bind-timeout) before it could start"));
  EXPECT_TRUE(api_.calls().empty());
  EXPECT_EQ(Held("n1", 0), 0);
  EXPECT_EQ(model_.reservation_count(), 0u);
}

TEST_F(BinderTest, ABindingThatTimedOutKeepsItsSharesAndTheRetryOnTheSameNodeTakesThemOver) {
  const PodRecord pod = PendingPod("p", "0.25");
  Known(pod);
  api_.FailBind(absl::DeadlineExceededError("POST .../binding: timed out"));
  const absl::Status st = binder_->Bind(Args(pod, "n1"));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_THAT(st.message(), HasSubstr("its reservation stays until the watch shows whether the Binding landed"));
  // The Binding may have landed: its share stays counted.
  EXPECT_EQ(Held("n1", 0), 250);
  EXPECT_EQ(model_.reservation_count(), 1u);
  // kube-scheduler retries the pod on the same node: the same share, once.
  api_.FailBind(absl::OkStatus());
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_EQ(Held("n1", 0), 250);
  EXPECT_EQ(model_.reservation_count(), 1u);
}

TEST_F(BinderTest, BeginReservesTheGpusWithNoApiCallAndFinishWritesTheBinding) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  Binder::Pending pending = binder_->Begin(Args(pod, "n1"));
  // Counted from the bind's arrival, before any API call (the I/O thread's part).
  EXPECT_EQ(Held("n1", 0), 500);
  EXPECT_TRUE(api_.calls().empty());
  ASSERT_TRUE(binder_->Finish(std::move(pending)).ok());
  EXPECT_THAT(api_.calls(), ElementsAre("bind ml/p n1 with annotations"));
  EXPECT_EQ(Held("n1", 0), 500);
}

TEST_F(BinderTest, ABindDroppedBetweenItsStepsReleasesItsGpus) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  {
    Binder::Pending pending = binder_->Begin(Args(pod, "n1"));
    Binder::Pending moved = std::move(pending);  // moving does not release
    EXPECT_EQ(Held("n1", 0), 500);
  }  // a full bind queue, or a shutdown, drops it
  EXPECT_EQ(Held("n1", 0), 0);
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_TRUE(api_.calls().empty());
}

TEST_F(BinderTest, ABindWhoseBindingWouldLeavePastItsDeadlineReleasesItsGpusAndSendsNothing) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  testing::FakeClock clock;
  Binder binder(model_, directory_, api_, [this] { return profile_; }, metrics_,
                BinderOptions{.reservation_ttl = absl::Minutes(1), .clock = &clock});
  const absl::Time deadline = clock.Now() + absl::Milliseconds(200);
  Binder::Pending pending = binder.Begin(Args(pod, "n1"), deadline);
  EXPECT_EQ(Held("n1", 0), 500);
  clock.Advance(absl::Milliseconds(201));  // it waited for a bind thread past its deadline
  const absl::Status st = binder.Finish(std::move(pending));
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_THAT(st.message(), HasSubstr("before its Binding was sent"));
  EXPECT_TRUE(api_.calls().empty());
  EXPECT_EQ(Held("n1", 0), 0);
}

TEST_F(BinderTest, APodTheWatchHasNotDeliveredIsReservedWhenFinishReadsIt) {
  const PodRecord pod = PendingPod("fresh", "0.5");
  api_.Add(pod);  // not in the directory
  Binder::Pending pending = binder_->Begin(Args(pod, "n1"));
  EXPECT_EQ(Held("n1", 0), 0) << "nothing known to reserve yet";
  ASSERT_TRUE(binder_->Finish(std::move(pending)).ok());
  EXPECT_EQ(Held("n1", 0), 500);
}

TEST_F(BinderTest, UnconfirmedReservationsExpireAfterTheTtl) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_EQ(binder_->ExpireReservations(absl::Now()), 0u);
  EXPECT_EQ(binder_->ExpireReservations(absl::Now() + absl::Minutes(2)), 1u);
  EXPECT_EQ(Held("n1", 0), 0);
}

// Filter's assumption (Binder::Assume): kube-scheduler may send the next
// pod's filter before this pod's bind, so filter holds the pod's GPUs on the
// one node it passed it on to, and the bind takes them over.

TEST_F(BinderTest, AFiltersAssumptionHoldsTheGpusSoTheNextPodCannotTakeThemBeforeTheBind) {
  const PodRecord first = PendingPod("first", "0.6");
  const PodRecord second = PendingPod("second", "0.6");
  Known(first);
  Known(second);
  Assume(first, "n1");
  EXPECT_EQ(Held("n1", 0), 600) << "counted from the filter's answer on";
  EXPECT_THAT(binder_->Bind(Args(second, "n1")).message(), HasSubstr("node n1 can no longer take pod ml/second"));
  ASSERT_TRUE(binder_->Bind(Args(first, "n1")).ok());
  EXPECT_THAT(api_.calls(), ElementsAre("bind ml/first n1 with annotations"));
  EXPECT_EQ(Held("n1", 0), 600) << "the bind took the assumption over, not a second share";
  EXPECT_EQ(model_.reservation_count(), 1u);
}

TEST_F(BinderTest, AFilterOfTheNominatedNodeAloneWithNoPrioritizeGivesTheGpusThePolicyChooses) {
  // kube-scheduler 1.35+ may filter a pod's nominated node alone, and never
  // prioritizes a pod with one feasible node: the GPUs come from the policy's
  // choice on that node when filter assumes them, not from a ranking.
  GpuShare half;
  half.index = 1;
  half.guaranteed = MilliGpu(500);
  half.limit = MilliGpu(500);
  model_.UpsertPod(PodHolding{.uid = "uid-held", .pod_key = "ml/held", .assignment = {.node = "n2", .gpus = {half}}});
  model_.Publish();
  const PodRecord pod = PendingPod("nominated", "0.5");
  Known(pod);
  testing::FunctionHandle handle;
  handle.snapshot = [this] { return model_.Current(); };
  handle.profile = [this] { return profile_; };
  handle.bind = binder_.get();
  const ExtenderService service(handle, metrics_);
  const nlohmann::json request = {
      {"Pod", {{"metadata", {{"name", pod.name}, {"namespace", pod.namespace_name}, {"uid", pod.uid},
                             {"annotations", pod.annotations}}},
               {"spec", {{"schedulerName", "tessera-scheduler"}}}}},
      {"NodeNames", {"n2"}}};
  absl::StatusOr<std::string> answer = service.Filter(request.dump());
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(nlohmann::json::parse(*answer)["NodeNames"], nlohmann::json::array({"n2"})) << *answer;
  EXPECT_EQ(Held("n2", 1), 1000) << "binpack fills the half-held GPU 1, not the idle GPU 0";
  ASSERT_TRUE(binder_->Bind(Args(pod, "n2")).ok());
  absl::StatusOr<GpuAssignment> written =
      k8s::ParseGpuAssignment(api_.Pod("ml/nominated")->annotations.at(std::string(k8s::kGpuAssignment)));
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->gpus.size(), 1u);
  EXPECT_EQ(written->gpus[0].index, 1);
  EXPECT_EQ(Held("n2", 0), 0);
}

TEST_F(BinderTest, AnAssumptionNoBindFollowsIsReleasedAfterItsShortTtl) {
  const PodRecord assumed = PendingPod("assumed", "0.5");
  const PodRecord bound = PendingPod("bound", "0.5");
  Known(assumed);
  Known(bound);
  Assume(assumed, "n2");
  ASSERT_TRUE(binder_->Bind(Args(bound, "n1")).ok());
  // Past the assumption's 30 s, before the bind's minute.
  EXPECT_EQ(binder_->ExpireReservations(absl::Now() + absl::Seconds(31)), 1u);
  EXPECT_EQ(Held("n2", 0) + Held("n2", 1), 0);
  EXPECT_EQ(Held("n1", 0), 500);
  // Counted apart: kube-scheduler not binding a pod is no error; a bind the watch never confirmed is.
  const auto count = [this](const std::string& name) { return metrics_.Counter(name, "").Value(); };
  EXPECT_EQ(count("tessera_filter_assumptions_expired_total"), 1);
  EXPECT_EQ(count("tessera_reservations_expired_total"), 0);
  EXPECT_EQ(binder_->ExpireReservations(absl::Now() + absl::Minutes(2)), 1u);
  EXPECT_EQ(count("tessera_filter_assumptions_expired_total"), 1);
  EXPECT_EQ(count("tessera_reservations_expired_total"), 1);
}

TEST_F(BinderTest, TheBindOfAnAssumedPodRestartsItsClockAsABindsReservation) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  Assume(pod, "n1");
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_EQ(binder_->ExpireReservations(absl::Now() + absl::Seconds(31)), 0u);
  EXPECT_EQ(Held("n1", 0), 500);
}

TEST_F(BinderTest, AFailedBindOfAnAssumedPodReleasesTheGpusTheFilterHeld) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  Assume(pod, "n1");
  api_.FailBind(absl::UnavailableError("connection reset"));
  EXPECT_FALSE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_EQ(Held("n1", 0), 0);
  EXPECT_EQ(model_.reservation_count(), 0u);
}

TEST_F(BinderTest, ABindOfAnAssumedPodDroppedBetweenItsStepsReleasesTheGpus) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  Assume(pod, "n1");
  { Binder::Pending dropped = binder_->Begin(Args(pod, "n1")); }  // a full bind queue, a shutdown
  EXPECT_EQ(Held("n1", 0), 0) << "the bind had taken the assumption over as its own";
  EXPECT_EQ(model_.reservation_count(), 0u);
}

TEST_F(BinderTest, AFilterOfAPodWhoseBindIsInFlightLeavesTheBindsReservation) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  Binder::Pending pending = binder_->Begin(Args(pod, "n2"));
  Assume(pod, "n1");
  EXPECT_EQ(Held("n1", 0), 0);
  EXPECT_EQ(Held("n2", 0) + Held("n2", 1), 500);
  ASSERT_TRUE(binder_->Finish(std::move(pending)).ok());
}

TEST_F(BinderTest, ASecondFilterOfTheSamePodMovesItsAssumption) {
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  Assume(pod, "n1");
  Assume(pod, "n2");
  EXPECT_EQ(Held("n1", 0), 0);
  EXPECT_EQ(Held("n2", 0) + Held("n2", 1), 500);
  EXPECT_EQ(model_.reservation_count(), 1u);
}

TEST_F(BinderTest, NothingIsAssumedForAPodTheWatchHasNotDeliveredOrOneAskingForNoGpu) {
  const PodRecord unseen = PendingPod("unseen", "0.5");
  api_.Add(unseen);  // on the server, not in the directory
  PodRecord cpu_only = PendingPod("cpu");
  cpu_only.annotations.clear();
  Known(cpu_only);
  Assume(unseen, "n1");
  Assume(cpu_only, "n1");
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_EQ(Held("n1", 0), 0);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Pools by task type at bind: the pod's task type picks the profile that
// chooses its GPUs (binpack for training, spread for inference here), and a
// node outside its pool is refused even if filter's answer is stale.
class PoolBinderTest : public BinderTest {
 protected:
  PoolBinderTest() {
    absl::StatusOr<LoadedPolicy> policy = LoadPolicyDocument(R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
pools:
  - name: gpu-training
    taskTypes: [training]
    plugins:
      - name: gpu-share
        args: {gpuStrategy: binpack}
  - name: gpu-inference
    taskTypes: [inference]
    plugins:
      - name: gpu-share
        args: {gpuStrategy: spread}
)",
                                                             "policy.yaml", registry_);
    EXPECT_TRUE(policy.ok()) << policy.status();
    profiles_ = policy->profiles;
    model_.UpsertNode("t1", Inventory(2), absl::OkStatus(), std::nullopt, "gpu-training");
    model_.UpsertNode("i1", Inventory(2), absl::OkStatus(), std::nullopt, "gpu-inference");
    model_.UpsertPod(testing::Holding("held-t1", "t1", 0, 500));
    model_.UpsertPod(testing::Holding("held-i1", "i1", 0, 500));
    model_.Publish();
    pool_binder_ = std::make_unique<Binder>(model_, directory_, api_, [this] { return profile_; }, metrics_,
                                            BinderOptions{.reservation_ttl = absl::Minutes(1),
                                                          .tenants = {},
                                                          .profiles = [this] { return profiles_; }});
  }
  PodRecord Pod(std::string name, std::string task_type) {
    PodRecord p = PendingPod(std::move(name), "0.25");
    p.task_type = std::move(task_type);
    Known(p);
    return p;
  }
  double Bound(const std::string& pool, const std::string& task_type) {
    return metrics_.Counter("tessera_pool_pods_bound_total", "", {{"pool", pool}, {"task_type", task_type}}).Value();
  }

  std::shared_ptr<const ProfileSet> profiles_;
  std::unique_ptr<Binder> pool_binder_;
};

TEST_F(PoolBinderTest, EachPoolsPolicyChoosesTheGpusOfItsPods) {
  ASSERT_TRUE(pool_binder_->Bind(Args(Pod("train", "training"), "t1")).ok());
  EXPECT_EQ(Held("t1", 0), 750) << "binpack: the partly held GPU";
  ASSERT_TRUE(pool_binder_->Bind(Args(Pod("serve", "inference"), "i1")).ok());
  EXPECT_EQ(Held("i1", 1), 250) << "spread: the idle GPU";
  EXPECT_EQ(Bound("gpu-training", "training"), 1);
  EXPECT_EQ(Bound("gpu-inference", "inference"), 1);
}

TEST_F(PoolBinderTest, ANodeOutsideThePodsPoolIsRefusedAndNothingIsWritten) {
  const absl::Status refused = pool_binder_->Bind(Args(Pod("train", "training"), "i1"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("node i1 can no longer take pod ml/train: pods of task type training run only in node "
                        "pool gpu-training; this node is in node pool gpu-inference"));
  EXPECT_EQ(Held("i1", 1), 0);
  EXPECT_TRUE(api_.calls().empty());
}

TEST_F(PoolBinderTest, ATaskTypeNoPoolListsIsCountedAsOtherSoTheMetricStaysBounded) {
  ASSERT_TRUE(pool_binder_->Bind(Args(Pod("a", "whatever-1"), "i1")).ok());
  ASSERT_TRUE(pool_binder_->Bind(Args(Pod("b", ""), "n2")).ok());
  EXPECT_EQ(Bound("gpu-inference", "(other)"), 1);
  EXPECT_EQ(Bound("(none)", "(none)"), 1);
}

// The Reserve point (Profile::Reserve): a ReservePlugin reserves with every
// reservation the binder makes, can refuse it, and is told when it is given
// up; one the watch confirms is the pod's, and is not undone.
class BinderReserveTest : public BinderTest {
 protected:
  // The profile in force: gpu-share, then a recording ReservePlugin that
  // refuses `refused_node`.
  void UseReservePlugin(std::string refused_node = "") {
    std::vector<WeightedPlugin> plugins;
    plugins.push_back({std::make_shared<const GpuSharePlugin>(GpuShareArgs{}), 1});
    plugins.push_back({std::make_shared<const testing::RecordingReserver>("r", log_, std::move(refused_node)), 1});
    absl::StatusOr<std::shared_ptr<const Profile>> profile = Profile::Create(std::move(plugins));
    ASSERT_TRUE(profile.ok()) << profile.status();
    profile_ = *profile;
  }
  std::shared_ptr<testing::ReserveLog> log_ = std::make_shared<testing::ReserveLog>();
};

TEST_F(BinderReserveTest, ABindReservesThroughThePluginAndAConfirmedPodIsNeverUnreserved) {
  UseReservePlugin();
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
  EXPECT_THAT(log_->lines(), ElementsAre("r reserve n1"));
  // The watch shows the pod bound with its GPUs: the reservation is its holding now.
  PodHolding bound = *model_.FindReservation(pod.uid);
  model_.UpsertPod(bound);
  model_.Publish();
  EXPECT_EQ(binder_->ExpireReservations(absl::Now() + absl::Minutes(2)), 0u);
  EXPECT_THAT(log_->lines(), ElementsAre("r reserve n1")) << "no Unreserve after a confirmed bind";
}

TEST_F(BinderReserveTest, APluginsRefusalFailsTheBindWithItsReasonAndHoldsNothing) {
  UseReservePlugin(/*refused_node=*/"n1");
  const PodRecord pod = PendingPod("p", "0.5");
  Known(pod);
  const absl::Status st = binder_->Bind(Args(pod, "n1"));
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_THAT(st.message(), HasSubstr("node n1 can no longer take pod ml/p: r refuses n1"));
  EXPECT_EQ(Held("n1", 0), 0);
  EXPECT_EQ(model_.reservation_count(), 0u);
  EXPECT_TRUE(api_.calls().empty()) << "no Binding is sent";
}

TEST_F(BinderReserveTest, EveryReservationGivenUpIsUnreserved) {
  struct Case {
    std::string name;
    std::function<void(const PodRecord&)> give_up;
    std::vector<std::string> log;
  };
  const std::vector<Case> cases = {
      {"a failed Binding",
       [this](const PodRecord& pod) {
         api_.FailBind(absl::UnavailableError("connection reset"));
         EXPECT_FALSE(binder_->Bind(Args(pod, "n1")).ok());
       },
       {"r reserve n1", "r unreserve n1"}},
      {"a bind the watch never confirms, at its TTL",
       [this](const PodRecord& pod) {
         ASSERT_TRUE(binder_->Bind(Args(pod, "n1")).ok());
         EXPECT_EQ(binder_->ExpireReservations(absl::Now() + absl::Minutes(2)), 1u);
       },
       {"r reserve n1", "r unreserve n1"}},
      {"filter's assumption on one node, bound on another",
       [this](const PodRecord& pod) {
         Assume(pod, "n1");
         ASSERT_TRUE(binder_->Bind(Args(pod, "n2")).ok());
       },
       {"r reserve n1", "r unreserve n1", "r reserve n2"}},
      {"a bind abandoned before its Binding was sent",
       [this](const PodRecord& pod) { (void)binder_->Begin(Args(pod, "n1")); },
       {"r reserve n1", "r unreserve n1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    log_ = std::make_shared<testing::ReserveLog>();
    UseReservePlugin();
    api_.FailBind(absl::OkStatus());  // the last case's failure does not carry over
    const PodRecord pod = PendingPod("p-" + std::to_string(&c - cases.data()), "0.5");
    Known(pod);
    c.give_up(pod);
    EXPECT_EQ(log_->lines(), c.log);
  }
}

}  // namespace
}  // namespace tessera
