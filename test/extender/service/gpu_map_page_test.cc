// The GPU map page (/ui), rendered from snapshots built here: what it shows
// of shares, tenants, burst, unhealthy GPUs, NVLink groups and refused pods;
// search and paging; escaping; its size at 5000 nodes.
#include "extender/service/gpu_map_page.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "extender/service/html_text.h"
#include "scheduler/cache/cluster_model.h"
#include "test/testing/builders.h"
#include "test/testing/topologies.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Share;

PodHolding Pod(std::string uid, std::string key, std::string tenant, std::string node, std::vector<GpuShare> shares) {
  PodHolding p = testing::Holding(std::move(uid), std::move(node), std::move(shares));
  p.pod_key = std::move(key);
  p.tenant_label = std::move(tenant);
  return p;
}

// n-bridged: 4 GPUs, NVLink bridges 0-1 and 2-3, GPU 3 broken; GPU 0 shared
// by two pods of two tenants. n-pcie: 2 GPUs, no topology, idle.
class GpuMapPageTest : public ::testing::Test {
 protected:
  GpuMapPageTest() {
    model_.UpsertNode("n-bridged",
                      testing::Node("n-bridged").Gpus(4).Topology(testing::ParseTopology(testing::kBridged4Gpu))
                          .Unhealthy(3).inventory(),
                      absl::OkStatus());
    model_.UpsertNode("n-pcie", testing::Node("n-pcie").Gpus(2, testing::kT4, 15360).inventory(), absl::OkStatus());
    model_.UpsertPod(Pod("u1", "ml/bert-0", "research", "n-bridged", {Share(0, 250).Limit(500).Memory(10240)}));
    model_.UpsertPod(Pod("u2", "web/gpt-0", "prod", "n-bridged", {Share(0, 500)}));
    model_.UpsertPod(Pod("u3", "ml/train-0", "research", "n-bridged", {Share(1, 1000), Share(2, 1000)}));
  }
  std::string Render(std::string_view target, std::vector<FilterRefusal> refusals = {}) {
    snapshot_ = model_.Publish();
    return RenderGpuMapPage({.snapshot = snapshot_.get(), .refusals = std::move(refusals), .source = "test"},
                            ParseGpuMapQuery(target));
  }

  ClusterModel model_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
};

struct PageCase {
  std::string name;
  std::string target;
  std::vector<std::string> shows;
  std::vector<std::string> hides;
};

TEST_F(GpuMapPageTest, EachCaseShowsWhatItSaysAndHidesWhatItSays) {
  const std::vector<PageCase> cases = {
      {"a shared GPU shows each pod's share and tenant",
       "/ui",
       {"ml/bert-0 · tenant research · 250 milli (burst to 500) · 10240 MiB", "web/gpt-0 · tenant prod · 500 milli",
        "750/1000", "<svg class=\"gpus\""},
       {}},
      {"the burst the pods' limits allow is drawn past their guarantees",
       "/ui",
       {"class=\"burst\"", "burst: limits reach 1000 milli, 250 above the guarantees", "750/1000 ⇡1000"},
       {}},
      {"an unhealthy GPU is marked",
       "/ui",
       {"<rect class=\"gpu unhealthy\"", "UNHEALTHY: no pod is placed on it", "fill=\"url(#tessera-hatch)\""},
       {}},
      {"NVLink groups are named and each GPU carries its group",
       "/ui",
       {"NVLink A: GPU 0 1 · B: GPU 2 3", "<rect class=\"nvlink\"", "NVLink group B", "topology unknown"},
       {}},
      {"the legend names each tenant with what it holds",
       "/ui",
       {"research 2250 milli", "prod 500 milli"},
       {}},
      {"a search by node keeps the nodes whose name contains it", "/ui?q=node:PCIE", {"n-pcie"}, {"n-bridged"}},
      {"a search by model", "/ui?q=model:t4", {"n-pcie"}, {"n-bridged"}},
      {"a search by pod", "/ui?q=pod:bert", {"n-bridged"}, {"n-pcie"}},
      {"a search by tenant", "/ui?q=tenant%3Aprod", {"n-bridged"}, {"n-pcie"}},
      {"a search for unhealthy GPUs", "/ui?q=is:unhealthy", {"n-bridged"}, {"n-pcie"}},
      {"a bare word is looked for everywhere", "/ui?q=gpt", {"n-bridged", "1 of 1 matching (2 in all)"}, {"n-pcie"}},
      {"every word must match", "/ui?q=research+t4", {"nodes 0–0 of 0 matching"}, {"<h3>n-"}},
  };
  for (const PageCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string page = Render(c.target);
    for (const std::string& s : c.shows) EXPECT_THAT(page, HasSubstr(s));
    for (const std::string& s : c.hides) EXPECT_THAT(page, Not(HasSubstr(s)));
  }
}

TEST_F(GpuMapPageTest, PodsRefusedEverywhereAreListedWithFiltersReasonsUnlessTheSnapshotShowsThemBound) {
  FilterRefusal waiting{.key = "w1", .pod = "ml/waiting", .tenant_label = "research",
                        .request = "2 GPUs × 500 milli", .nodes = 2};
  waiting.reasons = {{.code = "insufficient_gpu_compute", .nodes = 2, .example = "GPU 0 has 250 milli free",
                      .node = "n-bridged"}};
  waiting.at = absl::Now();
  FilterRefusal bound_since{.key = "u1", .pod = "ml/bert-0"};
  const std::string page = Render("/ui", {waiting, bound_since});
  EXPECT_THAT(page, HasSubstr("Pods that fit nowhere (1)"));
  EXPECT_THAT(page, HasSubstr("<td>ml/waiting</td><td>research</td><td>2 GPUs × 500 milli</td>"));
  EXPECT_THAT(page, HasSubstr("<b>insufficient_gpu_compute</b> on 2 nodes, e.g. n-bridged: GPU 0 has 250 milli free"));
  EXPECT_THAT(page, Not(HasSubstr("<td>ml/bert-0</td>")));
  EXPECT_THAT(Render("/ui?q=nothing-like-it", {waiting}), HasSubstr("Pods that fit nowhere (0)"));
}

TEST_F(GpuMapPageTest, APodRefusedWholeShowsTheErrorAndReasonsWithoutAnExampleNode) {
  FilterRefusal typo{.key = "t1", .pod = "ml/typo", .tenant_label = "reserch", .request = "1 GPU", .nodes = 3,
                     .error = "pod's label tessera.io/tenant=\"reserch\" names no tenant"};
  typo.reasons = {{.code = "unknown_tenant", .nodes = 3}};
  const std::string page = Render("/ui", {typo});
  EXPECT_THAT(page, HasSubstr("<b>pod&#39;s label tessera.io/tenant=&quot;reserch&quot; names no tenant</b>"));
  EXPECT_THAT(page, HasSubstr("<div><b>unknown_tenant</b> on 3 nodes</div>"));
}

TEST_F(GpuMapPageTest, HostileNamesAndQueriesAreEscapedEverywhere) {
  const std::string script = "<script>alert(1)</script>";
  model_.UpsertNode("evil<b>", testing::Node("evil").Gpus(1, "M<i>", 1024).inventory(), absl::OkStatus());
  model_.UpsertPod(Pod("u9", "ns/" + script, "\"><img src=x onerror=alert(1)>", "evil<b>", {Share(0, 100)}));
  FilterRefusal r{.key = "x", .pod = "ns/" + script, .tenant_label = "'quoted'", .request = "1 GPU",
                  .error = "annotation \"" + script + "\" \xff\xfe bad"};
  r.reasons = {{.code = "c<", .nodes = 1, .example = script, .node = "evil<b>"}};
  std::string q;
  html::AppendUrlEncoded(q, "\"><script>x</script>");
  const std::string page = Render("/ui?q=" + q + "&per_page=200", {r});
  EXPECT_THAT(page, Not(HasSubstr("<script>")));
  EXPECT_THAT(page, Not(HasSubstr("<img")));
  EXPECT_THAT(page, Not(HasSubstr("<b>evil")));
  EXPECT_THAT(page, Not(HasSubstr("\xff")));
  EXPECT_THAT(page, HasSubstr("value=\"&quot;&gt;&lt;script&gt;x&lt;/script&gt;\""));
  const std::string all = Render("/ui", {r});
  EXPECT_THAT(all, HasSubstr("<h3>evil&lt;b&gt;</h3>"));
  EXPECT_THAT(all, HasSubstr("ns/&lt;script&gt;alert(1)&lt;/script&gt; · tenant &quot;&gt;&lt;img"));
  EXPECT_THAT(all, HasSubstr("\xEF\xBF\xBD\xEF\xBF\xBD bad"));
  EXPECT_THAT(all, HasSubstr("&#39;quoted&#39;"));
  EXPECT_THAT(all, Not(HasSubstr("<script>")));
}

TEST(GpuMapQueryTest, TheQueryStringIsReadWithDefaultsAndLimits) {
  struct Case {
    std::string target;
    std::string q;
    size_t page;
    size_t per_page;
  };
  const std::vector<Case> cases = {
      {"/ui", "", 1, 100},
      {"/ui?q=a+b%3Cc&page=3&per_page=50", "a b<c", 3, 50},
      {"/ui?page=abc&per_page=-4", "", 1, 100},
      {"/ui?page=0&per_page=0", "", 1, 1},
      {"/ui?per_page=99999999", "", 1, kMaxNodesPerPage},
      {"/ui?q=" + std::string(1000, 'x'), std::string(kMaxQueryBytes, 'x'), 1, 100},
      {"/ui?q=%zz%4", "%zz%4", 1, 100},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    const GpuMapQuery q = ParseGpuMapQuery(c.target);
    EXPECT_EQ(q.q, c.q);
    EXPECT_EQ(q.page, c.page);
    EXPECT_EQ(q.per_page, c.per_page);
  }
}

// 5000 nodes × 8 GPUs, four pods a node; one GPU crowded with 40 pods.
class LargeClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new ClusterModel();
    for (int i = 0; i < 5000; ++i) {
      const std::string name = absl::StrFormat("node-%04d", i);
      model_->UpsertNode(name, testing::Node(name).Gpus(8).Topology(testing::ParseTopology(testing::kDgxA100))
                                   .inventory(), absl::OkStatus());
      for (int p = 0; p < 4; ++p) {
        model_->UpsertPod(Pod(absl::StrCat(name, "-", p), absl::StrCat("team-", p, "/job-", i, "-", p),
                              absl::StrCat("tenant-", p % 3), name, {Share(p, 500).Limit(1000), Share(p + 4, 250)}));
      }
    }
    for (int p = 0; p < 40; ++p) {
      model_->UpsertPod(Pod(absl::StrCat("crowd-", p), absl::StrCat("crowd/p-", p), "", "node-0000", {Share(7, 10)}));
    }
    snapshot_ = new std::shared_ptr<const ClusterSnapshot>(model_->Publish());
  }
  static void TearDownTestSuite() {
    delete snapshot_;
    delete model_;
  }
  static std::string Render(std::string_view target) {
    return RenderGpuMapPage({.snapshot = snapshot_->get(), .source = "test"}, ParseGpuMapQuery(target));
  }

  static ClusterModel* model_;
  static std::shared_ptr<const ClusterSnapshot>* snapshot_;
};
ClusterModel* LargeClusterTest::model_ = nullptr;
std::shared_ptr<const ClusterSnapshot>* LargeClusterTest::snapshot_ = nullptr;

TEST_F(LargeClusterTest, APageShowsItsHundredNodesAndLinksToTheNext) {
  const std::string page = Render("/ui?page=3");
  EXPECT_THAT(page, HasSubstr("<h3>node-0200</h3>"));
  EXPECT_THAT(page, HasSubstr("<h3>node-0299</h3>"));
  EXPECT_THAT(page, Not(HasSubstr("<h3>node-0199</h3>")));
  EXPECT_THAT(page, Not(HasSubstr("<h3>node-0300</h3>")));
  EXPECT_THAT(page, HasSubstr("page 3 of 50 · nodes 201–300 of 5000"));
  EXPECT_THAT(page, HasSubstr("href=\"?q=&amp;page=4&amp;per_page=100\""));
  EXPECT_THAT(page, HasSubstr("href=\"?q=&amp;page=2&amp;per_page=100\""));
  EXPECT_THAT(page, HasSubstr("5000 nodes · 40000 GPUs (0 unhealthy)"));
}

TEST_F(LargeClusterTest, APagePastTheLastShowsTheLastAndASearchPagesWithinItsMatches) {
  EXPECT_THAT(Render("/ui?page=999"), HasSubstr("page 50 of 50 · nodes 4901–5000 of 5000"));
  const std::string page = Render("/ui?q=node-49&per_page=20&page=2");
  EXPECT_THAT(page, HasSubstr("page 2 of 5 · nodes 21–40 of 100 matching (5000 in all)"));
  EXPECT_THAT(page, HasSubstr("href=\"?q=node-49&amp;page=3&amp;per_page=20\""));
}

TEST_F(LargeClusterTest, ACrowdedGpuDrawsAtMostSixteenPodsAndSumsTheRest) {
  // GPU 7 of node-0000: 40 pods of 10 milli ("crowd-*", first by uid), then one of 250.
  const std::string page = Render("/ui?q=node:node-0000");
  EXPECT_THAT(page, HasSubstr("+25 more pods, 490 milli"));
}

TEST_F(LargeClusterTest, EveryPageIsBoundedWhateverItAsksFor) {
  const std::string page = Render("/ui");
  EXPECT_LT(page.size(), 1'000'000u);
  const std::string widest = Render("/ui?per_page=100000");
  EXPECT_THAT(widest, HasSubstr("nodes 1–200 of 5000"));
  EXPECT_LT(widest.size(), 2'000'000u);
  std::cout << "page of 100 nodes: " << page.size() << " bytes; of 200: " << widest.size() << " bytes\n";
}

}  // namespace
}  // namespace tessera
