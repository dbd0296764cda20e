// The mixed fleet (sim/fleet.h): which nodes become AMD or MIG, which pods
// select a vendor or ask for a MIG instance, and replays on it that keep
// every MIG pod on a free instance, every other pod off MIG GPUs and every
// vendor-selecting pod on its vendor.
#include "sim/fleet.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "config/policy_loader.h"
#include "policies/builtin_registry.h"
#include "policies/stable_hash.h"
#include "sim/experiment.h"
#include "sim/replay.h"
#include "test/testing/data_files.h"

namespace tessera::sim {
namespace {

TraceNode Node(std::string name, int32_t gpus) {
  return TraceNode{std::move(name), 96000, 393216, gpus, gpus > 0 ? "G2" : ""};
}

TracePod Pod(std::string name, int32_t gpus, int64_t milli) {
  TracePod p;
  p.name = std::move(name);
  p.cpu_milli = 1000;
  p.memory_mib = 1024;
  p.gpus = gpus;
  p.gpu_milli = milli;
  return p;
}

TEST(FleetTest, ParsesItsNames) {
  EXPECT_EQ(*ParseFleet("trace"), Fleet::kTrace);
  EXPECT_EQ(*ParseFleet("mixed"), Fleet::kMixed);
  EXPECT_FALSE(ParseFleet("Mixed").ok());
  EXPECT_STREQ(FleetName(Fleet::kMixed), "mixed");
}

TEST(FleetTest, TheMigLayoutIsAllBalancedAndFitsAnA100Of80Gb) {
  const MigGeometry* geometry = FindMigGeometry(kMigModel);
  ASSERT_NE(geometry, nullptr);
  SliceMask taken = 0;
  int32_t compute = 0;
  for (const MigInstance& m : MixedFleetMigLayout()) {
    const MigProfile* profile = geometry->Find(m.profile);
    ASSERT_NE(profile, nullptr) << m.profile;
    EXPECT_TRUE(CheckMigPlacement(*profile, m.start, taken).ok()) << m.profile << " at " << m.start;
    taken |= profile->SlicesAt(m.start);
    compute += profile->compute_slices;
  }
  EXPECT_EQ(compute, 7) << "every compute slice of the GPU is in an instance";
}

TEST(FleetTest, AShareAsksForTheSmallestInstanceWhoseComputeCoversIt) {
  struct Case {
    int64_t milli;
    std::string profile;
  };
  const std::vector<Case> cases = {{10, "1g.10gb"},  {142, "1g.10gb"}, {143, "2g.20gb"}, {285, "2g.20gb"},
                                   {286, "3g.40gb"}, {428, "3g.40gb"}, {429, ""},        {999, ""}};
  for (const Case& c : cases) EXPECT_EQ(MigProfileCovering(c.milli), c.profile) << c.milli << " milli";
}

TEST(FleetTest, EveryFourthGpuNodeBecomesAmdAndEveryEighthEightGpuNodeMig) {
  // Positions count GPU nodes only: the CPU-only nodes shift nothing.
  struct Case {
    TraceNode node;
    GpuVendor vendor;
    std::string model;
    bool mig;
  };
  const std::vector<Case> cases = {
      {Node("cpu-a", 0), GpuVendor::kNvidia, "", false},
      {Node("n0", 8), GpuVendor::kNvidia, "G2", false},                   // position 0
      {Node("n1", 8), GpuVendor::kNvidia, std::string(kMigModel), true},  // 1: 1 % 8
      {Node("n2", 2), GpuVendor::kNvidia, "G2", false},                   // 2
      {Node("n3", 8), GpuVendor::kAmd, std::string(kAmdModel), false},    // 3: 3 % 4
      {Node("cpu-b", 0), GpuVendor::kNvidia, "", false},
      {Node("n4", 8), GpuVendor::kNvidia, "G2", false},                   // 4
      {Node("n5", 8), GpuVendor::kNvidia, "G2", false},                   // 5: 1 % 4 but not 1 % 8
      {Node("n6", 4), GpuVendor::kNvidia, "G2", false},                   // 6
      {Node("n7", 2), GpuVendor::kAmd, std::string(kAmdModel), false},    // 7
      {Node("n8", 8), GpuVendor::kNvidia, "G2", false},                   // 8
      {Node("n9", 4), GpuVendor::kNvidia, "G2", false},                   // 9: 1 % 8 with 4 GPUs: stays
  };
  std::vector<TraceNode> nodes;
  for (const Case& c : cases) nodes.push_back(c.node);
  std::vector<TraceNode> unchanged = nodes;
  ApplyFleet(Fleet::kTrace, unchanged);
  EXPECT_EQ(unchanged, nodes);

  ApplyFleet(Fleet::kMixed, nodes);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].node.name);
    EXPECT_EQ(nodes[i].vendor, cases[i].vendor);
    EXPECT_EQ(nodes[i].model, cases[i].model);
    EXPECT_EQ(nodes[i].mig, cases[i].mig ? MixedFleetMigLayout() : std::vector<MigInstance>{});
    EXPECT_EQ(nodes[i].gpus, cases[i].node.gpus);
    EXPECT_EQ(nodes[i].cpu_milli, cases[i].node.cpu_milli);
  }
}

TEST(FleetTest, SmallSharesBecomeMigPodsAndOthersSelectVendorsByTheirNameHash) {
  struct Case {
    TracePod pod;
    std::string mig_profile;  // empty: not a MIG pod
    int64_t milli_after;
  };
  const std::vector<Case> cases = {
      {Pod("small", 1, 100), "1g.10gb", 142},  {Pod("quarter", 1, 250), "2g.20gb", 285},
      {Pod("third", 1, 320), "3g.40gb", 428},  {Pod("half", 1, 500), "", 500},
      {Pod("whole", 1, 1000), "", 1000},       {Pod("pair", 2, 1000), "", 1000},
      {Pod("cpu-only", 0, 0), "", 0},          {Pod("names-a-model", 1, 100), "", 100},
  };
  std::vector<TracePod> pods;
  for (const Case& c : cases) pods.push_back(c.pod);
  pods.back().models = {"G2"};
  ApplyFleet(Fleet::kMixed, pods);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].pod.name);
    EXPECT_EQ(pods[i].mig_profile, cases[i].mig_profile);
    EXPECT_EQ(pods[i].gpu_milli, cases[i].milli_after);
    EXPECT_EQ(pods[i].gpus, cases[i].pod.gpus);
    if (!cases[i].mig_profile.empty() || cases[i].pod.gpus == 0 || !pods[i].models.empty()) {
      EXPECT_TRUE(pods[i].vendors.empty()) << "MIG, CPU-only and model-naming pods select no vendor";
    }
  }

  // Vendors: an eighth each, by the name's hash alone (the same pod in any list, any order).
  std::vector<TracePod> many;
  for (int i = 0; i < 8000; ++i) many.push_back(Pod(absl::StrCat("openb-pod-", i), 1, 1000));
  many[0].models = many[1].models = {"G2"};  // never select a vendor, whatever their hash
  std::vector<TracePod> reversed(many.rbegin(), many.rend());
  ApplyFleet(Fleet::kMixed, many);
  ApplyFleet(Fleet::kMixed, reversed);
  int amd = 0, nvidia = 0;
  for (size_t i = 0; i < many.size(); ++i) {
    const uint64_t h = StableHash(kFleetHashSeed, many[i].name);
    const std::vector<GpuVendor> want = !many[i].models.empty() ? std::vector<GpuVendor>{}
                                        : h % 8 == 0   ? std::vector<GpuVendor>{GpuVendor::kAmd}
                                        : h % 8 == 1 ? std::vector<GpuVendor>{GpuVendor::kNvidia}
                                                     : std::vector<GpuVendor>{};
    ASSERT_EQ(many[i].vendors, want) << many[i].name;
    ASSERT_EQ(reversed[many.size() - 1 - i].vendors, want) << many[i].name;
    amd += want == std::vector<GpuVendor>{GpuVendor::kAmd};
    nvidia += want == std::vector<GpuVendor>{GpuVendor::kNvidia};
  }
  EXPECT_NEAR(amd, 1000, 120);
  EXPECT_NEAR(nvidia, 1000, 120);
}

// A replay of `pods` in list order over `nodes` (ranks in list order), keeping the cluster.
ReplayResult RunInOrder(const std::string& policy, const std::vector<TraceNode>& nodes,
                        const std::vector<TracePod>& pods) {
  const PluginRegistry registry = NewBuiltinRegistry();
  absl::StatusOr<std::shared_ptr<const Profile>> profile = LoadPolicyText(
      "apiVersion: tessera.io/v1alpha1\nkind: SchedulingPolicy\nplugins:\n" + policy, "policy.yaml", registry);
  EXPECT_TRUE(profile.ok()) << profile.status();
  if (!profile.ok()) return {};
  const Cluster cluster(nodes);
  const PodClasses classes = ClassifyPods(pods);
  RunWorkload w;
  for (uint32_t i = 0; i < pods.size(); ++i) w.pods.push_back(i);
  w.originals = pods.size();
  for (uint32_t i = 0; i < nodes.size(); ++i) w.node_rank.push_back(i);
  return Replay(ReplayInput{.profile = profile->get(), .empty_cluster = &cluster, .pods = &pods, .classes = &classes,
                            .workload = &w, .typical = nullptr, .seed = 1, .memo = MemoMode::kAuto,
                            .keep_cluster = true});
}

constexpr const char* kMigAwarePolicy =
    "  - name: host-resources\n"
    "  - name: gpu-share\n"
    "    args: {gpuStrategy: binpack}\n"
    "  - name: mig-partition\n";

// Nodes: "mig" (2 GPUs, all-balanced), "nvidia" (2 GPUs), "amd" (2 GPUs).
std::vector<TraceNode> SmallMixedFleet() {
  TraceNode mig = Node("mig", 2), nvidia = Node("nvidia", 2), amd = Node("amd", 2);
  mig.model = std::string(kMigModel);
  mig.mig = MixedFleetMigLayout();
  amd.vendor = GpuVendor::kAmd;
  amd.model = std::string(kAmdModel);
  return {mig, nvidia, amd};
}

TEST(FleetReplayTest, MigPodsTakeFreeInstancesOnlyAndSharePodsNeverAMigGpu) {
  // Three 3g pods for two 3g instances, 1g pods for four 1g instances, and
  // small share pods that would fit the MIG node's GPUs by compute.
  std::vector<TracePod> pods;
  for (int i = 0; i < 3; ++i) pods.push_back(Pod(absl::StrCat("three-", i), 1, 428));
  for (int i = 0; i < 4; ++i) pods.push_back(Pod(absl::StrCat("one-", i), 1, 142));
  for (int i = 0; i < 6; ++i) pods.push_back(Pod(absl::StrCat("share-", i), 1, 300));
  for (int i = 0; i < 7; ++i) pods[static_cast<size_t>(i)].mig_profile = MigProfileCovering(pods[static_cast<size_t>(i)].gpu_milli);
  const ReplayResult r = RunInOrder(kMigAwarePolicy, SmallMixedFleet(), pods);
  ASSERT_NE(r.cluster, nullptr);
  EXPECT_EQ(r.violations.count, 0) << r.violations.first;
  EXPECT_EQ(r.failed_pods[static_cast<size_t>(PodKind::kMig)], 1) << "the third 3g pod finds no free 3g instance";
  EXPECT_EQ(r.failed_pods[static_cast<size_t>(PodKind::kShare)], 0) << "six 0.3 shares fit four non-MIG GPUs";

  const NodeView& mig = r.cluster->View(0);
  for (const GpuState& g : mig.gpu_states) {
    const GpuUsage u = mig.UsageOf(g.index());
    SCOPED_TRACE(absl::StrCat("MIG GPU ", g.index()));
    EXPECT_EQ(u.pods, 3) << "its 3g and both 1g instances, nothing else";
    EXPECT_EQ(u.mig_held_starts, 0b0001'1100) << "held: the 1g at slices 2 and 3, the 3g at 4";
    EXPECT_EQ(u.guaranteed, MilliGpu(428 + 142 + 142));
  }
  int64_t share_pods = 0;
  for (size_t n = 1; n < 3; ++n) {
    for (const GpuUsage& u : r.cluster->View(n).usage) {
      EXPECT_EQ(u.mig_held_starts, 0);
      share_pods += u.pods;
    }
  }
  EXPECT_EQ(share_pods, 6);
}

TEST(FleetReplayTest, VendorSelectingPodsLandOnlyOnTheirVendor) {
  struct Case {
    std::string name;
    std::vector<GpuVendor> vendors;
    size_t only_node;  // where every placed pod must be
  };
  const std::vector<Case> cases = {
      {"amd pods fill the AMD node and no other", {GpuVendor::kAmd}, 2},
      {"nvidia pods fill the NVIDIA node, never the MIG or AMD one", {GpuVendor::kNvidia}, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<TracePod> pods;
    for (int i = 0; i < 5; ++i) {
      pods.push_back(Pod(absl::StrCat("p", i), 1, 1000));
      pods.back().vendors = c.vendors;
    }
    const ReplayResult r = RunInOrder(kMigAwarePolicy, SmallMixedFleet(), pods);
    ASSERT_NE(r.cluster, nullptr);
    EXPECT_EQ(r.violations.count, 0) << r.violations.first;
    EXPECT_EQ(r.placed_pods, 2) << "the node has 2 GPUs";
    EXPECT_EQ(r.failed_pods[static_cast<size_t>(PodKind::kOneGpu)], 3);
    for (size_t n = 0; n < r.cluster->size(); ++n) {
      int32_t pods_here = 0;
      for (const GpuUsage& u : r.cluster->View(n).usage) pods_here += u.pods;
      EXPECT_EQ(pods_here, n == c.only_node ? 2 : 0) << r.cluster->View(n).name;
    }
  }
}

TEST(FleetReplayTest, APolicyWithoutAMigChooserFailsEveryMigPodAndPlacesTheRest) {
  std::vector<TracePod> pods = {Pod("mig", 1, 142), Pod("share", 1, 500)};
  pods[0].mig_profile = "1g.10gb";
  const ReplayResult r = RunInOrder("  - name: host-resources\n  - name: gpu-share\n", SmallMixedFleet(), pods);
  EXPECT_EQ(r.failed_pods[static_cast<size_t>(PodKind::kMig)], 1);
  EXPECT_EQ(r.placed_pods, 1);
  EXPECT_EQ(r.violations.count, 0) << r.violations.first;
}

TEST(FleetExperimentTest, TheDefaultTraceOnTheMixedFleetPlacesPodsAndBreaksNoRule) {
  ExperimentOptions options;
  options.nodes = testing::OpenbPath("openb_node_list_gpu_node.csv");
  options.traces = {ParseNamedPath(testing::OpenbPath("openb_pod_list_default.csv"))};
  options.policies = {ParseNamedPath(TESSERA_SOURCE_DIR "/config/examples/placement/fgd-policy.yaml"),
                      ParseNamedPath(TESSERA_SOURCE_DIR "/config/examples/default-policy.yaml")};
  options.seeds = {42};
  options.jobs = 2;
  options.fleet = Fleet::kMixed;
  absl::StatusOr<std::vector<RunSummary>> runs = RunExperiment(options);  // fails on any violation
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 2u);
  for (const RunSummary& r : *runs) {
    SCOPED_TRACE(r.policy);
    EXPECT_EQ(r.fleet, Fleet::kMixed);
    EXPECT_EQ(r.violations.count, 0);
    EXPECT_GT(r.mig_pods, 500) << "the trace's small shares ask for instances";
    EXPECT_EQ(r.capacity_milli, 6212 * 1000) << "every GPU counts 1000, MIG or not";
    ASSERT_TRUE(r.curve.alloc_percent[100].has_value());
    EXPECT_GT(*r.curve.alloc_percent[100], 80.0);
    EXPECT_GT(r.placed_pods, r.submitted_pods / 2);
  }
  const RunSummary& fgd = (*runs)[0];
  const RunSummary& tessera = (*runs)[1];
  EXPECT_EQ(fgd.failed_pods[static_cast<size_t>(PodKind::kMig)], fgd.mig_pods) << "fgd-policy has no MIG chooser";
  EXPECT_LT(tessera.failed_pods[static_cast<size_t>(PodKind::kMig)], tessera.mig_pods / 10)
      << "mig-partition places MIG pods";
}

}  // namespace
}  // namespace tessera::sim
