// A real Kubernetes control plane for tests: etcd, kube-apiserver and
// kube-scheduler v1.26 or v1.36 on 127.0.0.1 (the scripts and binaries of
// shared/kube), with the real tessera-extender as kube-scheduler's extender.
//
// Why a real one: the fake API server (fake_api_server.h) answers what we
// believe Kubernetes answers. Only the real kube-scheduler shows how it calls
// the extender (one pod after another, binds in flight while the next pod is
// filtered, what it does with a refusal), and only the real API server how
// bindings, patches and deletes behave. The fake stays for fault injection,
// which a real server cannot do on demand.
//
// Where it is: $TESSERA_KUBE_DIR, else <source>/../shared/kube
// (docs/operations/testing.md, "Tests on a real control plane"). Absent, the tests are skipped
// with one line saying what is missing and how to get it; with CI=true they
// fail instead, so CI cannot pass without having run them.
//
// Starting a plane takes 5-15 s, so a test binary starts one
// (ControlPlaneEnvironment) and its tests share it; ControlPlaneTest gives
// each test its own namespace, and its nodes carry a label only that test's
// pods select, so tests cannot take each other's GPUs.
//
// Every port is a free one picked at start (never the defaults 6443, 2379,
// 10259, 8888), and the state lives in its own temporary folder, so planes of
// several test runs on one machine do not meet. Cleanup survives a crash: a
// watchdog process in its own session waits for the test process to end (a
// pipe closes) and then runs down.sh WIPE=1 and deletes the folder, after a
// normal end, a failed assertion, an abort or ctest's kill on time-out alike.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "test/testing/http_client.h"

namespace tessera::testing {

/// The Kubernetes versions every control-plane test runs against: the oldest
/// Tessera supports and the newest it is tested on (shared/kube has both).
inline constexpr const char* kKubeVersions[] = {"1.26", "1.36"};

/// The version this run's plane is to be: $TESSERA_KUBE_VERSION ("1.26" or
/// "1.36", a leading "v" allowed), else "1.26". test/CMakeLists.txt registers
/// each control-plane binary once per version with it set.
std::string KubeVersionUnderTest();

/// The folder with up.sh, down.sh, unpack.sh and the binaries of `version`
/// (bin/ for 1.26, bin/v<version>/ otherwise): $TESSERA_KUBE_DIR when
/// set, else TESSERA_KUBE_DEFAULT_DIR (<source>/../shared/kube). NotFound, saying what is missing and how
/// to get it, when that folder, that version's binaries, or a program the
/// scripts run (etcd, openssl, curl, xz, flock) is not there.
absl::StatusOr<std::string> FindControlPlane(const std::string& version = KubeVersionUnderTest());

/// True when $CI is "true" (our CI sets it): a missing plane is then a failure.
bool RunningInCi();

/// Begins the one line each test prints when it is skipped for want of a
/// plane, and only then: test/CMakeLists.txt's SKIP_REGULAR_EXPRESSION, so
/// that ctest reports the binary skipped, never passed. (gtest's own
/// "[  SKIPPED ]" would also hide a failing test beside one skipped for
/// another reason.)
inline constexpr const char* kSkipMarker = "control-plane tests skipped, no Kubernetes control plane";

/// A Node with GPUs: the `tessera.io/gpu-inventory` annotation, and through
/// the status subresource capacity = allocatable (CPU, memory, pods,
/// nvidia.com/gpu) and a Ready condition, as a kubelet would report them.
struct GpuNodeSpec {
  std::string name;
  int gpus = 1;
  std::string model = "NVIDIA-A100-SXM4-80GB";
  int64_t memory_mib = 81920;
  std::map<std::string, std::string> labels;
  /// false: no inventory annotation, only the allocatable count (a node
  /// before its node agent has run).
  bool inventory_annotation = true;
  /// GPUs in MIG mode: index -> the inventory's "mig" list of instances
  /// ([{"profile":"3g.40gb","start":4,"uuid":"MIG-..."}]).
  std::map<int, nlohmann::json> mig = {};
  /// The inventory's "vendor" of every GPU; empty: none written (NVIDIA).
  std::string vendor = {};
};

/// A Pod for `tessera-scheduler`, with no containers that could run (nothing
/// runs here) and a grace period of 0, so that a delete removes it at once.
struct PodSpec {
  std::string namespace_name;
  std::string name;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> node_selector;
  std::map<std::string, std::string> labels = {};
  /// spec.priorityClassName; empty: none (priority 0).
  std::string priority_class_name = {};
  /// The container's resource requests, equal to its limits (e.g. tessera.io/gpu-milli: "250").
  std::map<std::string, std::string> resources = {};
};

class ControlPlane {
 public:
  struct Options {
    std::string kube_dir;          ///< FindControlPlane()'s folder.
    /// The Kubernetes version (up.sh's KUBE_VERSION): "1.26" or "1.36".
    std::string kube_version = KubeVersionUnderTest();
    std::string extender_binary;   ///< build/tessera-extender.
    std::string policy_file;       ///< Tessera's --policy-file.
    std::string url_path = "/scheduler";  ///< kube-scheduler's urlPrefix path = Tessera's --url-prefix.
    /// kube-scheduler's configuration template (up.sh's SCHED_CONFIG_TMPL):
    /// empty for the one with Tessera as extender; the benchmark's baseline
    /// names <kube_dir>/scheduler-config-alone.yaml.tmpl.
    std::string scheduler_config_template;
    /// More flags for tessera-extender (e.g. --threads=4).
    std::vector<std::string> extender_flags;
    /// kube-scheduler elects a leader (up.sh's LEADER_ELECT) with these
    /// timings, e.g. "6s", "4s", "1s" for a failover test; AddScheduler()
    /// then starts a second one.
    bool leader_elect = false;
    std::string lease_duration = "15s";
    std::string renew_deadline = "10s";
    std::string retry_period = "2s";
    /// Whether the Tessera on `port` is ready, for StartTessera. Empty: a
    /// plain-HTTP GET /readyz answers 200; a Tessera serving TLS needs an
    /// HTTPS probe instead.
    std::function<bool(uint16_t port)> tessera_ready;
  };

  /// Runs unpack.sh and up.sh (a second and third time with other ports if a
  /// port was taken meanwhile) and connects to the API server as admin.
  /// Does not start Tessera.
  static absl::StatusOr<std::unique_ptr<ControlPlane>> Start(const Options& options);
  /// Kills Tessera, stops the plane (down.sh WIPE=1) and deletes its folder.
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // --- Tessera ----------------------------------------------------------------------------

  // Replica 0 is the pair up.sh starts: kube-scheduler and the Tessera it
  // calls. AddScheduler() adds replica 1, 2, ...: one more kube-scheduler
  // (add-scheduler.sh, leader election on) calling a Tessera of its own.

  /// Starts the replica's tessera-extender on the port its kube-scheduler
  /// calls, with the admin kubeconfig (kube-scheduler's own user may not
  /// patch pods, which bind does), and waits until /readyz says its watch is
  /// in sync.
  absl::Status StartTessera(int replica = 0);
  /// SIGKILL, as a crash would: no drain, nothing written on the way out.
  void KillTessera(int replica = 0);
  [[nodiscard]] bool TesseraRunning(int replica = 0) const;
  /// GET or POST to the replica's Tessera; a path of the protocol gets the url prefix.
  HttpAnswer TesseraGet(const std::string& path, int replica = 0) const;
  /// The port the replica's kube-scheduler calls its Tessera on.
  [[nodiscard]] uint16_t TesseraPort(int replica = 0) const { return replicas_.at(replica).extender_port; }
  HttpAnswer TesseraPost(const std::string& verb, const std::string& body, int replica = 0) const;
  /// Waits (at most `timeout`) until every running Tessera that answers plain
  /// HTTP has `node` in its cluster model: a pod created before that is
  /// refused "not now" and waits for kube-scheduler's next retry, which a
  /// loaded machine can push past a test's patience.
  void WaitUntilTesseraKnowsNode(const std::string& node, absl::Duration timeout = absl::Seconds(10)) const;

  /// Starts one more kube-scheduler (needs Options::leader_elect) whose
  /// extender is a new replica's Tessera (not started). \return its replica number.
  absl::StatusOr<int> AddScheduler();
  /// SIGKILL to the replica's kube-scheduler: its lease stays until it expires.
  absl::Status KillScheduler(int replica);
  /// Sends `signal` to a component up.sh started: "kube-apiserver", "etcd",
  /// "kube-scheduler", ... (its pid file under pids/). SIGSTOP and SIGCONT
  /// freeze and resume it, for chaos tests.
  absl::Status SignalComponent(const std::string& name, int signal);
  /// SIGKILL to a component up.sh started, as a crash would; its command
  /// line is kept for RestartComponent.
  absl::Status KillComponent(const std::string& name);
  /// Starts a component KillComponent killed again as up.sh started it (the
  /// same command line, its log appended, its pid file rewritten so that
  /// down.sh stops it). Does not wait for it to serve.
  absl::Status RestartComponent(const std::string& name);

  // --- Kubernetes objects, through the API server as admin ---------------------------------

  absl::Status CreateNamespace(const std::string& name);
  absl::StatusOr<nlohmann::json> CreateGpuNode(const GpuNodeSpec& spec);
  /// Sets the label `key` = `value` on the node (a NodeUpdate for kube-scheduler).
  absl::Status LabelNode(const std::string& name, const std::string& key, const std::string& value);
  absl::Status DeleteNode(const std::string& name);
  absl::StatusOr<nlohmann::json> GetNode(const std::string& name);
  absl::StatusOr<nlohmann::json> CreatePod(const PodSpec& spec);
  /// A PriorityClass `name` of `value` (an existing one of that name is kept).
  absl::Status CreatePriorityClass(const std::string& name, int32_t value);
  absl::StatusOr<nlohmann::json> GetPod(const std::string& ns, const std::string& name);
  /// The namespace's pods; `field_selector` as the API takes it, e.g.
  /// "spec.nodeName=" for the pods not bound yet.
  absl::StatusOr<std::vector<nlohmann::json>> ListPods(const std::string& ns, std::string_view field_selector = "");
  /// Deletes at once (grace period 0): nothing would confirm a graceful end.
  absl::Status DeletePod(const std::string& ns, const std::string& name);
  absl::Status DeleteAllPods(const std::string& ns);
  /// Any request to the API server as admin (e.g. a MutatingWebhookConfiguration,
  /// a pod written by hand); `body` JSON unless `content_type` says otherwise.
  /// A client of its own as admin, for tests that hand one to Tessera's own
  /// components (the lease, the capacity publisher) or call from threads.
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> AdminClient(k8s::ApiClientOptions options = {}) const;
  /// kube-scheduler's /metrics (replica's), read as admin.
  absl::StatusOr<std::string> SchedulerMetrics(int replica = 0) const;
  absl::StatusOr<k8s::ApiResponse> Send(std::string_view method, const std::string& target,
                                        const std::string& body = "", std::string_view content_type = "") {
    return Call(method, target, body, content_type);
  }
  /// The events whose involved object is the pod.
  absl::StatusOr<std::vector<nlohmann::json>> PodEvents(const std::string& ns, const std::string& name);

  /// Polls the namespace's pods until `done(pods)` or `timeout`; returns the
  /// last list either way, with DeadlineExceeded (naming `what`) on time-out.
  absl::StatusOr<std::vector<nlohmann::json>> WaitForPods(
      const std::string& ns, std::string_view what,
      const std::function<bool(const std::vector<nlohmann::json>&)>& done, absl::Duration timeout = absl::Seconds(30));

  /// The last lines of Tessera's and kube-scheduler's logs, for a failing test.
  [[nodiscard]] std::string LogTails(int lines = 40) const;
  [[nodiscard]] const std::string& run_dir() const { return run_dir_; }
  /// "1.26" or "1.36": the version this plane runs.
  [[nodiscard]] const std::string& kube_version() const { return options_.kube_version; }
  /// Where this version's kube-apiserver, kube-scheduler (and 1.36's
  /// kube-controller-manager) were unpacked.
  [[nodiscard]] const std::string& kube_bin() const { return kube_bin_; }

 private:
  ControlPlane() = default;
  absl::Status StartWatchdog();
  absl::Status Up();
  absl::StatusOr<k8s::ApiResponse> Call(std::string_view method, const std::string& target,
                                        const std::string& body = "", std::string_view content_type = "");

  Options options_;
  std::string run_dir_;
  std::string kube_bin_;
  uint16_t api_port_ = 0;
  struct Replica {
    std::string scheduler_name;  ///< Its pid file under pids/ and its log under logs/.
    uint16_t extender_port = 0;
    uint16_t scheduler_port = 0;  ///< kube-scheduler's secure port (/metrics).
    pid_t tessera_pid = -1;
  };
  std::vector<Replica> replicas_;
  std::unique_ptr<k8s::ApiClient> api_;
  pid_t watchdog_pid_ = -1;
  std::map<std::string, std::vector<std::string>> killed_commands_;  // KillComponent's, by name
  int watchdog_fd_ = -1;  ///< Our end of the watchdog's pipe: closing it stops the plane.
};

// --- reading pods ------------------------------------------------------------------------

/// The pod has a node (spec.nodeName).
bool IsBound(const nlohmann::json& pod);
/// An annotation's value, "" when absent.
std::string Annotation(const nlohmann::json& pod, std::string_view key);
/// kube-scheduler's PodScheduled=False message when it found no node for the
/// pod (reason Unschedulable), "" otherwise.
std::string UnschedulableMessage(const nlohmann::json& pod);

// --- gtest --------------------------------------------------------------------------------

/// Starts the plane and Tessera before the binary's first test and stops them
/// after its last. Register it in main(): AddGlobalTestEnvironment(new
/// ControlPlaneEnvironment(options)); options.kube_dir is filled in here.
class ControlPlaneEnvironment : public ::testing::Environment {
 public:
  explicit ControlPlaneEnvironment(ControlPlane::Options options);
  void SetUp() override;
  void TearDown() override;

  /// The running plane; nullptr when there is none.
  static ControlPlane* plane();

 private:
  ControlPlane::Options options_;
};

/// A test on the shared plane: skipped (one line) when there is none; its own
/// namespace, named after the test; nodes it creates with Node() carry the
/// label `tessera.io/test: <namespace>` and pods from Pod() select it. Its
/// pods and nodes are deleted after it, and a failing test prints the logs.
class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  /// A node `<namespace>-<suffix>` of this test.
  absl::StatusOr<nlohmann::json> Node(const std::string& suffix, int gpus);
  /// The same from a full spec: `spec.name` is the suffix.
  absl::StatusOr<nlohmann::json> Node(GpuNodeSpec spec);
  /// A pod of this test asking for `fraction` of one GPU.
  absl::StatusOr<nlohmann::json> Pod(const std::string& name, const std::string& fraction);

  ControlPlane& plane() { return *plane_; }
  [[nodiscard]] const std::string& ns() const { return ns_; }

 private:
  ControlPlane* plane_ = nullptr;
  std::string ns_;
  std::vector<std::string> nodes_;
};

/// A ControlPlaneTest with an API client of its own as admin, for tests that
/// hand one to Tessera's components (the lease, the capacity publisher, the pod API).
class ControlPlaneClientTest : public ControlPlaneTest {
 protected:
  void SetUp() override {
    ControlPlaneTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = plane().AdminClient();
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  k8s::ApiClient& client() { return *client_; }

 private:
  std::unique_ptr<k8s::ApiClient> client_;
};

}  // namespace tessera::testing
