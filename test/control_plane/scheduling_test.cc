// Tessera under the real kube-scheduler and API server (v1.26): pods are
// created through the API server, kube-scheduler calls Tessera's filter,
// prioritize and bind over HTTP, and the tests read back what Kubernetes
// stored. Nodes and pods are objects only; nothing runs.
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "test/testing/control_plane.h"
#include "test/testing/eventually.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::Annotation;
using testing::ControlPlaneTest;
using testing::IsBound;
using testing::UnschedulableMessage;

constexpr const char* kAssignment = "tessera.io/gpu-assignment";
// gpu-share's reason when every GPU of the node is too full (fgd fits by its rules).
constexpr const char* kNoGpuNow = "no GPU can take the pod now";

// Every pod is either bound or refused by kube-scheduler as unschedulable:
// nothing is left for it to decide.
bool AllDecided(const std::vector<json>& pods, size_t want) {
  if (pods.size() != want) return false;
  for (const json& p : pods) {
    if (!IsBound(p) && UnschedulableMessage(p).empty()) return false;
  }
  return true;
}

// kube-scheduler has tried the pod and failed, for any reason (an extender it
// cannot reach is "SchedulerError", not "Unschedulable").
bool SchedulingFailed(const json& pod) {
  for (const json& c : pod.value("status", json::object()).value("conditions", json::array())) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False") return true;
  }
  return false;
}

bool AllBound(const std::vector<json>& pods, size_t want) {
  if (pods.size() != want) return false;
  for (const json& p : pods) {
    if (!IsBound(p)) return false;
  }
  return true;
}

std::vector<json> Bound(const std::vector<json>& pods) {
  std::vector<json> out;
  for (const json& p : pods) {
    if (IsBound(p)) out.push_back(p);
  }
  return out;
}

std::vector<json> Pending(const std::vector<json>& pods) {
  std::vector<json> out;
  for (const json& p : pods) {
    if (!IsBound(p)) out.push_back(p);
  }
  return out;
}

// The audit: milli-GPU held on each "node/GPU index", summed over the
// assignment annotations of the bound pods. Every bound pod must carry one,
// naming the node it is bound to.
std::map<std::string, int> MilliPerGpu(const std::vector<json>& pods) {
  std::map<std::string, int> held;
  for (const json& pod : Bound(pods)) {
    const std::string name = pod["metadata"]["name"];
    const std::string text = Annotation(pod, kAssignment);
    EXPECT_FALSE(text.empty()) << name << " is bound without " << kAssignment;
    if (text.empty()) continue;
    const json assignment = json::parse(text);
    EXPECT_EQ(assignment["node"], pod["spec"]["nodeName"]) << name << ": " << text;
    for (const json& gpu : assignment["gpus"]) {
      held[absl::StrCat(assignment["node"].get<std::string>(), "/", gpu["index"].get<int>())] +=
          gpu["milli"].get<int>();
    }
  }
  return held;
}

void ExpectNoGpuOvercommitted(const std::map<std::string, int>& held) {
  for (const auto& [gpu, milli] : held) EXPECT_LE(milli, 1000) << "GPU " << gpu << " is over-committed";
}

int Total(const std::map<std::string, int>& held) {
  int total = 0;
  for (const auto& [gpu, milli] : held) total += milli;
  return total;
}

using SchedulingTest = ControlPlaneTest;

TEST_F(SchedulingTest, AHalfGpuPodIsScheduledThroughTesseraBoundAndAnnotatedWithItsGpuAndShare) {
  absl::StatusOr<json> node = Node("a", 1);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];
  ASSERT_TRUE(Pod("half", "0.5").ok());

  absl::StatusOr<std::vector<json>> pods =
      plane().WaitForPods(ns(), "the pod to be bound", [](const auto& p) { return AllBound(p, 1); });
  ASSERT_TRUE(pods.ok()) << pods.status();
  const json& pod = (*pods)[0];
  EXPECT_EQ(pod["spec"]["nodeName"], node_name);
  const std::string text = Annotation(pod, kAssignment);
  ASSERT_FALSE(text.empty()) << pod.dump();
  const json assignment = json::parse(text);
  EXPECT_EQ(assignment["node"], node_name);
  ASSERT_EQ(assignment["gpus"].size(), 1u) << text;
  const json& gpu = assignment["gpus"][0];
  EXPECT_EQ(gpu["index"], 0) << text;
  EXPECT_EQ(gpu["uuid"], "GPU-" + node_name + "-0") << text;
  EXPECT_EQ(gpu["milli"], 500) << text;
  EXPECT_EQ(Annotation(pod, "tessera.io/visible-devices"), "GPU-" + node_name + "-0");
}

TEST_F(SchedulingTest, MorePodsThanSharesBindOnlyWhatFitsAndTheRestSayWhy) {
  // One GPU, six pods of a quarter, created back to back: kube-scheduler
  // filters the next pod while the binds of the last ones are in flight.
  ASSERT_TRUE(Node("a", 1).ok());
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Pod(absl::StrCat("quarter-", i), "0.25").ok());

  absl::StatusOr<std::vector<json>> pods =
      plane().WaitForPods(ns(), "every pod bound or unschedulable", [](const auto& p) { return AllDecided(p, 6); });
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(Bound(*pods).size(), 4u);
  const std::map<std::string, int> held = MilliPerGpu(*pods);
  ExpectNoGpuOvercommitted(held);
  EXPECT_EQ(Total(held), 1000);
  for (const json& pod : Pending(*pods)) {
    // kube-scheduler's condition carries Tessera's reason for the node.
    EXPECT_THAT(UnschedulableMessage(pod), HasSubstr(kNoGpuNow)) << pod["metadata"]["name"];
  }
  // And its FailedScheduling event (events are written in the background).
  const std::string pending = Pending(*pods).at(0)["metadata"]["name"];
  std::string events;
  absl::Status listed;
  (void)testing::WaitFor(
      [&] {
        absl::StatusOr<std::vector<json>> list = plane().PodEvents(ns(), pending);
        listed = list.status();
        if (!list.ok()) return true;  // failed below
        events.clear();
        for (const json& e : *list) absl::StrAppend(&events, e.value("reason", ""), ": ", e.value("message", ""), "\n");
        return events.find(kNoGpuNow) != std::string::npos;
      },
      absl::Seconds(10));  // the assertions below say what did not come
  ASSERT_TRUE(listed.ok()) << listed;
  EXPECT_THAT(events, HasSubstr("FailedScheduling: "));
  EXPECT_THAT(events, HasSubstr(kNoGpuNow));
}

TEST_F(SchedulingTest, ARestartedTesseraRebuildsFromAnnotationsAndFillsOnlyWhatIsFree) {
  // Two GPUs, three halves: one and a half GPUs held when Tessera dies.
  ASSERT_TRUE(Node("a", 2).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Pod(absl::StrCat("before-", i), "0.5").ok());
  absl::StatusOr<std::vector<json>> before =
      plane().WaitForPods(ns(), "the first pods to be bound", [](const auto& p) { return AllBound(p, 3); });
  ASSERT_TRUE(before.ok()) << before.status();

  plane().KillTessera();
  const absl::Status restarted = plane().StartTessera();
  ASSERT_TRUE(restarted.ok()) << restarted;

  // The new Tessera knows only what the annotations say: one half is free.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(Pod(absl::StrCat("after-", i), "0.5").ok());
  absl::StatusOr<std::vector<json>> pods =
      plane().WaitForPods(ns(), "every pod bound or unschedulable", [](const auto& p) { return AllDecided(p, 5); });
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(Bound(*pods).size(), 4u);
  const std::map<std::string, int> held = MilliPerGpu(*pods);
  ExpectNoGpuOvercommitted(held);
  EXPECT_EQ(Total(held), 2000);
  ASSERT_EQ(Pending(*pods).size(), 1u);
  EXPECT_THAT(UnschedulableMessage(Pending(*pods)[0]), HasSubstr(kNoGpuNow));
  // The pods bound before the restart kept their assignments.
  for (const json& old : *before) {
    for (const json& now : *pods) {
      if (now["metadata"]["name"] == old["metadata"]["name"]) {
        EXPECT_EQ(Annotation(now, kAssignment), Annotation(old, kAssignment));
      }
    }
  }
}

TEST_F(SchedulingTest, PodsThatFailedWhileTesseraWasDownBindSoonAfterItIsReadyAgain) {
  ASSERT_TRUE(Node("a", 1).ok());
  plane().KillTessera();
  // kube-scheduler cannot reach its extender: the pod fails and waits in its
  // unschedulable queue, which by default it flushes only every 5 minutes.
  ASSERT_TRUE(Pod("during-outage", "0.5").ok());
  absl::StatusOr<std::vector<json>> failed = plane().WaitForPods(
      ns(), "the pod to fail while Tessera is down",
      [](const auto& p) { return p.size() == 1 && !IsBound(p[0]) && SchedulingFailed(p[0]); });
  ASSERT_TRUE(failed.ok()) << failed.status() << plane().LogTails();

  const absl::Time ready_from = absl::Now();
  const absl::Status restarted = plane().StartTessera();
  ASSERT_TRUE(restarted.ok()) << restarted;
  absl::StatusOr<std::vector<json>> bound = plane().WaitForPods(
      ns(), "the pod to be bound after Tessera came back", [](const auto& p) { return AllBound(p, 1); },
      absl::Seconds(60));
  ASSERT_TRUE(bound.ok()) << bound.status() << plane().LogTails();
  std::printf("pod bound %.1f s after Tessera was started again\n", absl::ToDoubleSeconds(absl::Now() - ready_from));
}

TEST_F(SchedulingTest, DeletingABoundPodFreesItsShareForANewPod) {
  absl::StatusOr<json> node = Node("a", 1);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];
  ASSERT_TRUE(Pod("first", "0.5").ok());
  ASSERT_TRUE(Pod("second", "0.5").ok());
  ASSERT_TRUE(plane().WaitForPods(ns(), "both pods to be bound", [](const auto& p) { return AllBound(p, 2); }).ok());

  // Asked directly, Tessera refuses a third half: the GPU is full. (A real
  // third pod would be retried by kube-scheduler when the first is deleted
  // and race the new pod for the freed half.)
  const std::string probe =
      json{{"Pod", {{"metadata", {{"name", "probe"}, {"namespace", ns()}, {"uid", "probe-uid"},
                                  {"annotations", {{"tessera.io/gpu-fraction", "0.5"}}}}}}},
           {"Nodes", nullptr},
           {"NodeNames", {node_name}}}
          .dump();
  const auto node_fits = [&] {
    const json answer = json::parse(plane().TesseraPost("filter", probe).body);
    return answer["NodeNames"].is_array() && answer["NodeNames"].size() == 1;
  };
  EXPECT_FALSE(node_fits());

  ASSERT_TRUE(plane().DeletePod(ns(), "first").ok());
  // Tessera learns of the delete through its watch. Only then is the new pod
  // created: refused before, it would wait for kube-scheduler's next retry.
  ASSERT_TRUE(testing::Eventually(node_fits, absl::Seconds(10), "Tessera to learn of the delete"))
      << "Tessera still counts the deleted pod";

  ASSERT_TRUE(Pod("third", "0.5").ok());
  absl::StatusOr<std::vector<json>> pods =
      plane().WaitForPods(ns(), "the new pod to be bound", [](const auto& p) { return AllBound(p, 2); });
  ASSERT_TRUE(pods.ok()) << pods.status();
  const std::map<std::string, int> held = MilliPerGpu(*pods);
  EXPECT_EQ(held, (std::map<std::string, int>{{node_name + "/0", 1000}}));
}

TEST_F(SchedulingTest, MigPodsAndSharePodsEachGetTheirOwnKindOfGpuAndEveryInstanceOnce) {
  // GPU 0 in MIG mode as two 3g.40gb instances, GPU 1 shared.
  testing::GpuNodeSpec spec;
  spec.name = "mixed";
  spec.gpus = 2;
  spec.mig[0] = json::array({{{"profile", "3g.40gb"}, {"start", 0}, {"uuid", "MIG-first"}},
                             {{"profile", "3g.40gb"}, {"start", 4}, {"uuid", "MIG-second"}}});
  absl::StatusOr<json> node = Node(spec);
  ASSERT_TRUE(node.ok()) << node.status();
  const std::string node_name = (*node)["metadata"]["name"];
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(plane()
                    .CreatePod({.namespace_name = ns(),
                                .name = absl::StrCat("mig-", i),
                                .annotations = {{"tessera.io/mig-profile", "3g.40gb"}},
                                .node_selector = {{"tessera.io/test", ns()}}})
                    .ok());
  }
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(Pod(absl::StrCat("half-", i), "0.5").ok());

  absl::StatusOr<std::vector<json>> pods =
      plane().WaitForPods(ns(), "every pod bound or unschedulable", [](const auto& p) { return AllDecided(p, 5); });
  ASSERT_TRUE(pods.ok()) << pods.status();
  std::map<std::string, std::string> instance_of;  // visible devices -> pod
  int mig_pending = 0;
  for (const json& pod : *pods) {
    const std::string name = pod["metadata"]["name"];
    const bool mig = name.rfind("mig-", 0) == 0;
    if (!IsBound(pod)) {
      EXPECT_TRUE(mig) << name << " should have been bound: " << UnschedulableMessage(pod);
      EXPECT_THAT(UnschedulableMessage(pod), HasSubstr("all 2 3g.40gb instances are held by other pods"));
      ++mig_pending;
      continue;
    }
    const json assignment = json::parse(Annotation(pod, kAssignment));
    ASSERT_EQ(assignment["gpus"].size(), 1u) << assignment;
    const json& gpu = assignment["gpus"][0];
    if (mig) {
      EXPECT_EQ(gpu["index"], 0) << name << " is on a shared GPU: " << assignment;
      EXPECT_EQ(gpu["mig"]["profile"], "3g.40gb") << assignment;
      const std::string devices = Annotation(pod, "tessera.io/visible-devices");
      EXPECT_TRUE(instance_of.emplace(devices, name).second) << devices << " given twice";
      EXPECT_EQ(devices, gpu["mig"]["start"] == 0 ? "MIG-first" : "MIG-second") << assignment;
    } else {
      EXPECT_EQ(gpu["index"], 1) << name << " is on the MIG GPU: " << assignment;
      EXPECT_EQ(gpu["milli"], 500);
      EXPECT_FALSE(gpu.contains("mig"));
    }
  }
  EXPECT_EQ(mig_pending, 1) << "two instances, three pods";
  EXPECT_EQ(instance_of.size(), 2u);
}

TEST_F(SchedulingTest, InAMixedFleetEachPodLandsOnItsVendorAndGetsItsDevicesInThatVendorsForm) {
  testing::GpuNodeSpec amd;
  amd.name = "mi300x";
  amd.gpus = 2;
  amd.model = "AMD-Instinct-MI300X";
  amd.memory_mib = 196608;
  amd.vendor = "amd";
  absl::StatusOr<json> amd_node = Node(amd);
  ASSERT_TRUE(amd_node.ok()) << amd_node.status();
  absl::StatusOr<json> nvidia_node = Node("a100", 2);
  ASSERT_TRUE(nvidia_node.ok()) << nvidia_node.status();
  const std::string amd_name = (*amd_node)["metadata"]["name"];
  const std::string nvidia_name = (*nvidia_node)["metadata"]["name"];
  for (const auto& [name, vendor] : {std::pair{"on-amd", "amd"}, std::pair{"on-nvidia", "nvidia"}}) {
    ASSERT_TRUE(plane()
                    .CreatePod({.namespace_name = ns(),
                                .name = name,
                                .annotations = {{"tessera.io/gpu-vendor", vendor}, {"tessera.io/gpu-count", "2"}},
                                .node_selector = {{"tessera.io/test", ns()}}})
                    .ok());
  }
  absl::StatusOr<std::vector<json>> pods =
      plane().WaitForPods(ns(), "both pods bound", [](const auto& p) { return AllBound(p, 2); });
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const json& pod : *pods) {
    if (pod["metadata"]["name"] == "on-amd") {
      EXPECT_EQ(pod["spec"]["nodeName"], amd_name);
      EXPECT_EQ(Annotation(pod, "tessera.io/visible-devices"), "0,1") << "ROCm takes device indices";
    } else {
      EXPECT_EQ(pod["spec"]["nodeName"], nvidia_name);
      EXPECT_EQ(Annotation(pod, "tessera.io/visible-devices"), absl::StrCat("GPU-", nvidia_name, "-0,GPU-", nvidia_name, "-1"));
    }
  }
}

}  // namespace
}  // namespace tessera
