// The GPU map page (/ui) of the real tessera-extender binary, rendered by a
// real browser: Debian's chromium, headless. It takes a screenshot (the test
// prints where) and dumps the DOM it built, which must hold the page's SVG
// pictures, the pod refused everywhere with filter's reasons, and no
// element made of a hostile pod name. Skipped, saying why, without chromium;
// failed instead under CI=true.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "test/integration/extender_process.h"
#include "test/testing/http_client.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kPolicy = R"(apiVersion: tessera.io/v1alpha1
kind: SchedulingPolicy
plugins:
  - name: gpu-share
    args: {nodeStrategy: binpack, maxLimitPercent: 200}
  - name: nvlink-topology
)";

// An n×n topology matrix: GPUs of one `group_size` block joined by `nvlinks`
// NVLinks, others over SYS.
std::string Topology(int n, int group_size, int nvlinks) {
  std::vector<std::string> rows;
  for (int a = 0; a < n; ++a) {
    std::vector<std::string> cells;
    for (int b = 0; b < n; ++b) {
      cells.push_back(a == b ? "\"X\"" : a / group_size == b / group_size ? std::to_string(nvlinks) : "\"SYS\"");
    }
    rows.push_back(absl::StrCat("[", absl::StrJoin(cells, ","), "]"));
  }
  return absl::StrCat("[", absl::StrJoin(rows, ","), "]");
}

std::string Inventory(int n, const std::string& model, int memory_mib, int unhealthy = -1) {
  std::vector<std::string> gpus;
  for (int i = 0; i < n; ++i) {
    gpus.push_back(absl::StrCat("{\"index\":", i, ",\"model\":\"", model, "\",\"memoryMiB\":", memory_mib,
                                i == unhealthy ? ",\"healthy\":false" : "", "}"));
  }
  return absl::StrCat("[", absl::StrJoin(gpus, ","), "]");
}

std::string Node(const std::string& name, const std::string& inventory, const std::string& topology) {
  std::string node = absl::StrCat("  - name: ", name, "\n    annotations:\n      tessera.io/gpu-inventory: '",
                                  inventory, "'\n");
  if (!topology.empty()) absl::StrAppend(&node, "      tessera.io/gpu-topology: '", topology, "'\n");
  return node;
}

// A pod holding `shares` (`{"index":0,"milli":250,...}`, comma-separated) of `node`.
std::string Pod(const std::string& ns, const std::string& name, const std::string& tenant, const std::string& node,
                const std::string& shares) {
  return absl::StrCat("  - namespace: ", ns, "\n    name: ", name, "\n    labels: {tessera.io/tenant: ", tenant,
                      "}\n    annotations:\n      tessera.io/gpu-assignment: '{\"node\":\"", node, "\",\"gpus\":[",
                      shares, "]}'\n");
}

std::string Whole(int index) { return absl::StrCat("{\"index\":", index, ",\"milli\":1000}"); }
std::string Part(int index, int milli, int limit, int mib) {
  return absl::StrCat("{\"index\":", index, ",\"milli\":", milli, ",\"limitMilli\":", limit, ",\"memoryMiB\":", mib,
                      "}");
}

// Three nodes: a DGX A100 on NVSwitch with a broken GPU, an HGX H100 as two
// NVLink quads, four PCIe L4s; pods of three tenants, some sharing GPUs.
std::string Cluster() {
  std::string yaml = "nodes:\n";
  yaml += Node("dgx-a100-01", Inventory(8, "NVIDIA-A100-SXM4-80GB", 81920, 5), Topology(8, 8, 12));
  yaml += Node("hgx-h100-02", Inventory(8, "NVIDIA-H100-80GB-HBM3", 81920), Topology(8, 4, 18));
  yaml += Node("pcie-l4-03", Inventory(4, "NVIDIA-L4", 23034), "");
  yaml += "pods:\n";
  yaml += Pod("research", "llama-train-0", "research", "dgx-a100-01",
              absl::StrJoin({Whole(0), Whole(1), Whole(2), Whole(3)}, ","));
  yaml += Pod("research", "bert-finetune", "research", "dgx-a100-01", Part(4, 500, 1000, 40960));
  yaml += Pod("prod", "chat-inference-a", "prod", "dgx-a100-01", Part(4, 250, 500, 20480));
  yaml += Pod("prod", "chat-inference-b", "prod", "dgx-a100-01", Part(6, 300, 600, 16384));
  yaml += Pod("batch", "embed-nightly", "batch", "dgx-a100-01", Part(6, 300, 300, 8192));
  yaml += Pod("research", "vit-sweep-1", "research", "hgx-h100-02", absl::StrJoin({Whole(0), Whole(1)}, ","));
  yaml += Pod("prod", "rerank", "prod", "hgx-h100-02", Part(4, 700, 1000, 30000));
  yaml += Pod("batch", "whisper-batch", "batch", "hgx-h100-02", Part(5, 400, 800, 20000) + "," + Part(6, 400, 800, 20000));
  yaml += Pod("prod", "ocr", "prod", "pcie-l4-03", Part(0, 500, 500, 8000));
  yaml += Pod("batch", "thumbnails", "batch", "pcie-l4-03", Part(0, 250, 500, 4000));
  return yaml;
}

// ExtenderArgs for a pod asking `annotations`, over every node of Cluster().
std::string FilterArgs(const std::string& name, const nlohmann::json& annotations, const std::string& tenant) {
  nlohmann::json pod = {{"metadata", {{"name", name}, {"namespace", tenant}, {"uid", name + "-uid"}}}};
  pod["metadata"]["annotations"] = annotations;
  pod["metadata"]["labels"]["tessera.io/tenant"] = tenant;
  return nlohmann::json{{"Pod", pod},
                        {"Nodes", nullptr},
                        {"NodeNames", {"dgx-a100-01", "hgx-h100-02", "pcie-l4-03"}}}
      .dump();
}

// The chromium on the PATH, or "" when there is none.
std::string FindChromium() {
  const char* path = std::getenv("PATH");
  const std::vector<std::string> dirs = absl::StrSplit(path != nullptr ? path : "", ':');
  for (const std::string& dir : dirs) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      const fs::path candidate = fs::path(dir) / name;
      if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

// Runs `command` through the shell; its standard output, and its exit code in `code`.
std::string RunCommand(const std::string& command, int& code) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    code = -1;
    return out;
  }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  code = pclose(pipe);
  return out;
}

// The real binary over Cluster(), and the filters of three pods that fit
// nowhere (one named like an HTML element) sent to it as kube-scheduler would.
class GpuMapBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test: ctest runs the two at once, and a file the
    // other rewrites while this one's extender reads it read as torn YAML.
    out_ = fs::path(TESSERA_TEST_OUTPUT_DIR) / "gpu-map" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::create_directories(out_);
    std::ofstream(out_ / "policy.yaml") << kPolicy;
    std::ofstream(out_ / "cluster.yaml") << Cluster();
    tessera_ = std::make_unique<testing::Extender>(std::vector<std::string>{
        "--port=0", "--cluster-file=" + (out_ / "cluster.yaml").string(),
        "--policy-file=" + (out_ / "policy.yaml").string()});
    const std::vector<std::string> m = tessera_->WaitFor(std::regex(R"(serving on http://127\.0\.0\.1:(\d+))"));
    ASSERT_FALSE(m.empty()) << tessera_->AllOutput();
    port_ = static_cast<uint16_t>(std::stoi(m[1]));
    testing::HttpClient client(port_);
    for (const std::string& args :
         {FilterArgs("llama-70b-train", {{"tessera.io/gpu-count", "8"}}, "research"),
          FilterArgs("big-embed",
                     {{"tessera.io/gpu-fraction", "0.8"}, {"tessera.io/gpu-memory", "70Gi"},
                      {"tessera.io/gpu-model", "NVIDIA-L4"}},
                     "batch"),
          FilterArgs("x<img src=x onerror=alert(1)>", {{"tessera.io/gpu-count", "9"}}, "prod")}) {
      ASSERT_EQ(client.Post("/filter", args).status, 200);
    }
  }
  void TearDown() override {
    if (tessera_ == nullptr) return;
    tessera_->Signal(SIGTERM);
    EXPECT_EQ(tessera_->Wait(), 0);
  }
  [[nodiscard]] std::string Url(const std::string& query = "") const {
    return absl::StrCat("http://127.0.0.1:", port_, "/ui", query);
  }

  fs::path out_;
  std::unique_ptr<testing::Extender> tessera_;
  uint16_t port_ = 0;
};

TEST_F(GpuMapBinaryTest, TheBinaryServesTheMapAsHtmlWithThePodsThatFitNowhereAndOnlyToGet) {
  testing::HttpClient client(port_);
  const testing::HttpAnswer page = client.Get("/ui?q=is:unhealthy");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_THAT(page.body, HasSubstr("<h3>dgx-a100-01</h3>"));
  EXPECT_THAT(page.body, Not(HasSubstr("<h3>hgx-h100-02</h3>")));
  EXPECT_THAT(client.Get("/ui").body, HasSubstr("Pods that fit nowhere (3)"));
  const testing::HttpAnswer post = client.Post("/ui", "");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.allow, "GET");
}

// chromium, headless, on `url`, with a profile of its own under `out`;
// `flags` say what it does. Its standard output, its exit code in `code`.
std::string Chromium(const std::string& chromium, const fs::path& out, const std::string& flags,
                     const std::string& url, int& code) {
  const fs::path profile = out / "profile";
  fs::remove_all(profile);
  return RunCommand(absl::StrCat("timeout 120 '", chromium, "' --headless --no-sandbox --disable-gpu ",
                                 "--disable-dev-shm-usage --no-first-run --user-data-dir='", profile.string(), "' ",
                                 flags, " '", url, "' 2>'", (out / "chromium.log").string(), "'"),
                    code);
}

TEST_F(GpuMapBinaryTest, ARealBrowserDrawsTheNodesGpusAndThePodsThatFitNowhere) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") {
      FAIL() << "chromium is not installed, and CI=true: scripts/install-deps.sh installs it";
    }
    std::cout << "GPU map browser test skipped: no chromium on the PATH (apt-get install chromium)\n";
    GTEST_SKIP() << "no chromium on the PATH";
  }
  const fs::path screenshot = out_ / "gpu-map.png";
  fs::remove(screenshot);
  int code = 0;
  Chromium(chromium, out_,
           absl::StrCat("--hide-scrollbars --screenshot='", screenshot.string(), "' --window-size=1400,1000"), Url(),
           code);
  ASSERT_EQ(code, 0) << "chromium failed; see " << (out_ / "chromium.log");
  ASSERT_TRUE(fs::exists(screenshot)) << "no screenshot; see " << (out_ / "chromium.log");
  std::string png(8, '\0');
  std::ifstream(screenshot, std::ios::binary).read(png.data(), 8);
  EXPECT_EQ(png, "\x89PNG\r\n\x1a\n");
  EXPECT_GT(fs::file_size(screenshot), 20'000u);  // a picture, not a blank page
  std::cout << "GPU map screenshot: " << screenshot.string() << " (" << fs::file_size(screenshot) << " bytes)\n";

  const std::string dom = Chromium(chromium, out_, "--dump-dom", Url("?per_page=50"), code);
  ASSERT_EQ(code, 0) << "chromium failed; see " << (out_ / "chromium.log");
  std::ofstream(out_ / "gpu-map-dom.html") << dom;
  for (const char* drawn : {"<svg class=\"gpus\"", "<rect class=\"share\"", "<rect class=\"gpu unhealthy\"",
                            "<rect class=\"nvlink\"", "<rect class=\"burst\"", "NVLink A: GPU 0 1 2 3 · B: GPU 4 5 6 7",
                            "research/llama-train-0 · tenant research", "<td>research/llama-70b-train</td>",
                            "<td>batch/big-embed</td>", "<b>gpu_memory_too_small</b> on 1 node, e.g. pcie-l4-03",
                            "Pods that fit nowhere (3)"}) {
    EXPECT_THAT(dom, HasSubstr(drawn));
  }
  EXPECT_THAT(dom, HasSubstr("x&lt;img src=x onerror=alert(1)&gt;"));
  EXPECT_THAT(dom, Not(HasSubstr("<img")));
  const std::string searched = Chromium(chromium, out_, "--dump-dom", Url("?q=model:h100"), code);
  EXPECT_THAT(searched, HasSubstr("<h3>hgx-h100-02</h3>"));
  EXPECT_THAT(searched, Not(HasSubstr("<h3>dgx-a100-01</h3>")));
}

}  // namespace
}  // namespace tessera
