// The learned workload through the service: filter requests as
// kube-scheduler sends them are the arrivals, the learner's mix goes into
// the policy store, and /debug shows it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "config/policy_store.h"
#include "extender/service/debug_state.h"
#include "extender/service/extender_service.h"
#include "policies/builtin_registry.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/workload_learner.h"
#include "test/testing/builders.h"
#include "test/testing/service_fixture.h"

namespace tessera {
namespace {

using testing::Inventory;

constexpr const char* kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: fgd
    args:
      workload: ["1 cpu=1 gpu=1"]
workloadLearning:
  windowPods: 100
  warmupPods: 4
  publishEveryPods: 2
)";

// A filter request for pod `uid` asking for a share of `milli` and `cpu` milli-CPU.
std::string FilterBody(const std::string& uid, int milli, int cpu) {
  return absl::StrCat(R"({"Pod":{"metadata":{"name":")", uid, R"(","namespace":"ml","uid":")", uid,
                      R"(","annotations":{"tessera.io/gpu-fraction":"0.)", milli / 10, R"("}},)",
                      R"("spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":")", cpu,
                      R"(m"}}}]}},"Nodes":null,"NodeNames":["a"]})");
}

class WorkloadLearningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "tessera-learning-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    std::ofstream(dir_ / "policy.yaml") << kPolicy;
    absl::StatusOr<std::unique_ptr<PolicyStore>> store =
        PolicyStore::Open((dir_ / "policy.yaml").string(), registry_, nullptr);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    model_.UpsertNode("a", Inventory(8), absl::OkStatus());
    snapshot_ = model_.Publish();
    handle_.snapshot = [this] { return snapshot_; };
    handle_.profile = [this] { return store_->Current(); };
    handle_.arrived = [this](std::string_view uid, const PodGpuRequest& request) { learner_.Observe(uid, request); };
    service_ = std::make_unique<ExtenderService>(handle_, metrics_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // What the control loop does each second (extender/program.cc), the cluster 8 cores per GPU.
  void Learn() {
    if (std::shared_ptr<const TargetWorkload> mix = learner_.Learn(
            store_->CurrentLearning(),
            {.cpu_per_gpu = {.cpu = 64000, .gpu = 8000}, .gpu_models = {}, .idle_nodes = {}, .free_milli = 0})) {
      store_->PublishLearnedWorkload(std::move(mix));
    }
  }
  nlohmann::json Debug() {
    const WorkloadLearnerStatus status = learner_.Status();
    DebugInputs in;
    in.snapshot = snapshot_.get();
    in.workload = &status;
    in.learned_workload_in_force = store_->LearnedWorkload() != nullptr;
    return nlohmann::json::parse(RenderDebugState(in));
  }

  std::filesystem::path dir_;
  PluginRegistry registry_ = NewBuiltinRegistry();
  std::unique_ptr<PolicyStore> store_;
  ClusterModel model_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
  MetricsRegistry metrics_;
  WorkloadLearner learner_{WorkloadLearning{}};
  testing::FunctionHandle handle_;
  std::unique_ptr<ExtenderService> service_;
};

TEST_F(WorkloadLearningTest, FilteredPodsBecomeTheMixInForceFromTheFirstAndDebugShowsIt) {
  const std::shared_ptr<const Profile> file = store_->Current();
  Learn();
  EXPECT_EQ(store_->Current(), file) << "no pod yet: the policy file's lists";
  EXPECT_EQ(Debug()["workload"]["inForce"], "policy file");
  // Three pods, one filtered three times (kube-scheduler retries): three
  // arrivals, warming up: a mix learned, the file's lists most of it.
  for (const char* uid : {"p1", "p2", "p2", "p2", "p3"}) ASSERT_TRUE(service_->Filter(FilterBody(uid, 250, 4000)).ok());
  Learn();
  const std::shared_ptr<const Profile> warming = store_->Current();
  EXPECT_NE(warming, file);
  EXPECT_EQ(Debug()["workload"]["inForce"], "learned");
  EXPECT_EQ(Debug()["workload"]["arrivals"], 3);
  EXPECT_EQ(Debug()["workload"]["learned"], nlohmann::json::parse(R"(["3 cpu=4000m gpu=250m"])"));
  ASSERT_NE(store_->LearnedWorkload(), nullptr);
  EXPECT_EQ(store_->LearnedWorkload()->prior_percent(), 100 - 95 * 3 / 4);

  ASSERT_TRUE(service_->Filter(FilterBody("p4", 500, 8000)).ok());
  Learn();
  EXPECT_NE(store_->Current(), warming) << "warm: the next mix";
  EXPECT_EQ(store_->LearnedWorkload()->prior_percent(), 5);
  const nlohmann::json debug = Debug()["workload"];
  EXPECT_EQ(debug["inForce"], "learned");
  EXPECT_EQ(debug["arrivals"], 4);
  EXPECT_EQ(debug["windowKinds"], 2);
  EXPECT_EQ(debug["learned"], nlohmann::json::parse(R"(["3 cpu=4000m gpu=250m", "1 cpu=8000m gpu=500m"])"));
  // The arrivals ask 20 cores for 1.25 GPUs: 16 per GPU, more than the cluster's 8.
  EXPECT_EQ(debug["askedMilliCpuPerGpu"], 16000);
  EXPECT_EQ(debug["clusterMilliCpuPerGpu"], 8000);
  EXPECT_EQ(debug["cpuShort"], true);
  EXPECT_TRUE(store_->LearnedWorkload()->cpu_short()) << "the mix in force carries the cluster it was learned in";
}

TEST_F(WorkloadLearningTest, AnUnreadablePodIsNoArrival) {
  const std::string bad = R"({"Pod":{"metadata":{"name":"x","uid":"x","annotations":{"tessera.io/gpu-fraction":"lots"}},)"
                          R"("spec":{}},"Nodes":null,"NodeNames":["a"]})";
  ASSERT_TRUE(service_->Filter(bad).ok());
  Learn();
  EXPECT_EQ(learner_.Status().arrivals, 0);
}

}  // namespace
}  // namespace tessera
