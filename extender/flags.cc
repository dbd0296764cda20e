#include "extender/flags.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/model/absl_compat.h"

ABSL_FLAG(std::string, address, "127.0.0.1", "Address to listen on.");
ABSL_FLAG(int, port, 8888, "Port to listen on (0: any free port, printed at start).");
ABSL_FLAG(int, threads, 2, "Threads serving requests (1..64).");
ABSL_FLAG(int, score_threads, -1,
          "Helper threads that share prioritize's work on nodes the score memo has not seen (a new pod shape, a "
          "policy reload). -1: one fewer than the CPUs the process may use (affinity, cgroup CPU limit), at most 7; "
          "0: none; at most 64.");
ABSL_FLAG(std::string, policy_file, "config/examples/default-policy.yaml",
          "YAML policy file: plugins, weights, args. Reloaded on SIGHUP and when it changes.");
ABSL_FLAG(std::string, cluster_file, "",
          "Serve this cluster (nodes, GPUs, allocations) instead of one read from the API server.");
ABSL_FLAG(std::string, kubeconfig, "",
          "Kubeconfig to reach the API server (default: the in-cluster service account).");
ABSL_FLAG(std::string, kube_context, "", "Context of --kubeconfig to use (default: its current-context).");
ABSL_FLAG(absl::Duration, reservation_ttl, absl::Minutes(2),
          "How long a bind's GPUs count before the watch confirms the bound pod.");
ABSL_FLAG(std::string, scheduler_name, "tessera-scheduler",
          "spec.schedulerName of the pods Tessera schedules. Once its watch is in sync after a start, Tessera "
          "annotates those still pending (tessera.io/requeued-at), so that kube-scheduler retries at once the pods "
          "that failed while Tessera was down instead of after its 5-minute unschedulable flush. Empty: no nudge.");
ABSL_FLAG(absl::Duration, api_timeout, absl::Seconds(30), "Timeout of one API-server request.");
ABSL_FLAG(bool, leader_elect, true,
          "Take part in electing, through a coordination.k8s.io Lease, the one replica that writes on its own "
          "initiative (the nudge). Every replica serves filter, prioritize and bind either way. false: this replica "
          "always writes.");
ABSL_FLAG(bool, publish_gpu_capacity, true,
          "Keep each GPU node's extended resources tessera.io/gpu-milli (1000 a GPU) and tessera.io/gpu-memory-mib "
          "equal to its GPU inventory, in status.capacity and status.allocatable, so that kube-scheduler, "
          "ResourceQuota and preemption count GPUs (the writer replica patches node status).");
ABSL_FLAG(bool, preemption, true,
          "API-server mode: when filter finds no node for a GPU pod and kube-scheduler's own preemption cannot "
          "help (it sees a node's GPUs as one number), evict lower-priority pods that free one GPU through the "
          "Eviction API and nominate the pod (the writer replica only).");
ABSL_FLAG(std::string, leader_elect_lease, "kube-system/tessera-extender", "The election's Lease, NAMESPACE/NAME.");
ABSL_FLAG(std::string, leader_elect_identity, "",
          "This replica's holderIdentity in the Lease (default: hostname_<random>, unique per process).");
ABSL_FLAG(absl::Duration, leader_elect_lease_duration, absl::Seconds(15),
          "How long a holder that stopped renewing keeps the Lease before a standby may take it.");
ABSL_FLAG(absl::Duration, leader_elect_renew_deadline, absl::Seconds(10),
          "How long the holder keeps writing without a successful renewal (shorter than the lease duration).");
ABSL_FLAG(absl::Duration, leader_elect_retry_period, absl::Seconds(2),
          "How often every replica tries to take or renew the Lease.");
ABSL_FLAG(int, bind_threads, 64,
          "Threads that run binds (1..256). Each waits on the API server for its Binding, so this many binds are in "
          "flight at once; the HTTP threads never wait for one.");
ABSL_FLAG(absl::Duration, bind_timeout, absl::Seconds(4),
          "Time a bind may take from its arrival, the wait for a bind thread and its API calls included. Keep it "
          "below kube-scheduler's extender httpTimeout (5s unless set), so the answer comes while it still waits.");
ABSL_FLAG(int, webhook_port, 0,
          "HTTPS port of the mutating admission webhook (POST /mutate-pods) that completes GPU pods: extended "
          "resources from annotations or the reverse, schedulerName, NVIDIA_VISIBLE_DEVICES. 0: no webhook.");
ABSL_FLAG(std::string, webhook_cert_file, "",
          "PEM certificate chain the webhook serves (needed with --webhook-port). Re-read when it changes.");
ABSL_FLAG(std::string, webhook_key_file, "", "PEM private key of --webhook-cert-file.");
ABSL_FLAG(std::string, webhook_scheduler_name, "",
          "schedulerName the webhook sets on GPU pods that name none or default-scheduler (default: "
          "--scheduler-name).");
ABSL_FLAG(std::string, gpu_enforcement, "none",
          "What enforces a pod's GPU share in its container, for the env the webhook injects: none, mps (CUDA MPS "
          "limits) or hami-core (HAMi-core limits).");
ABSL_FLAG(std::string, gpu_vendors, "nvidia",
          "The vendors of the cluster's GPUs, comma-separated (nvidia, amd, intel, ascend, cambricon, hygon): the "
          "webhook hands a pod that selects no vendor (tessera.io/gpu-vendor) its devices in each one's variables "
          "(NVIDIA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK, "
          "ASCEND_VISIBLE_DEVICES, MLU_VISIBLE_DEVICES).");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain the extender listener (--address, --port) serves HTTPS with; with "
          "--tls-key-file. Re-read when it changes. Needed when --address is beyond loopback.");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls-cert-file.");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA certificates that clients' certificates are verified against (kube-scheduler's extender "
          "tlsConfig certFile). Re-read when it changes. Needs --tls-cert-file.");
ABSL_FLAG(std::string, tls_client_auth, "none",
          "Who must present a client certificate that --tls-client-ca-file verifies: none; verbs (bind and "
          "preempt, the verbs that change the cluster, are answered 403 without one; filter, prioritize, the probes "
          "and /metrics stay open); all (every connection, at the handshake).");
ABSL_FLAG(bool, http2, true,
          "With TLS (--tls-cert-file, and the webhook's), offer HTTP/2 by ALPN: kube-scheduler's extender client "
          "then sends every call on one connection at once instead of a connection (and a handshake) per call in "
          "flight. false: HTTP/1.1 only.");
ABSL_FLAG(bool, allow_insecure_listen, false,
          "Serve plain HTTP on an --address beyond loopback (127.0.0.1, ::1), where anyone who reaches the port "
          "could call bind. Without it Tessera refuses to start there without --tls-cert-file.");
ABSL_FLAG(int, read_only_port, 0,
          "Port of a second, plain-HTTP listener that answers GET only (/healthz, /readyz, /metrics, /debug) and "
          "refuses the verbs with 403: for kubelet probes and Prometheus while --address stays on loopback. "
          "0: none.");
ABSL_FLAG(std::string, read_only_address, "0.0.0.0", "Address of --read-only-port.");
ABSL_FLAG(std::string, url_prefix, "", "Path prefix of kube-scheduler's urlPrefix (e.g. /scheduler).");
ABSL_FLAG(int64_t, max_body_bytes, static_cast<int64_t>(tessera::HttpServerOptions{}.body_limit),
          "Largest request body accepted (413 beyond). The default and --max-body-bytes-in-flight's fit the chart's "
          "2 GiB memory limit (extender/service/request_memory.h): raise them together with the container's limit.");
ABSL_FLAG(int64_t, max_body_bytes_in_flight, static_cast<int64_t>(tessera::HttpServerOptions{}.max_body_bytes_in_flight),
          "Request bytes in flight on all connections together: each request reserves its Content-Length from its "
          "header until its answer is written; one that does not fit gets 503 with Retry-After. Requests hold up to "
          "3 times this at once (request_memory.h). At least --max-body-bytes.");
ABSL_FLAG(int, max_connections, static_cast<int>(tessera::HttpServerOptions{}.max_connections),
          "Connections open at once (1..65536); one more is closed when accepted.");
ABSL_FLAG(int, max_header_bytes, 16 << 10, "Largest request header accepted (431 beyond).");
ABSL_FLAG(absl::Duration, read_timeout, absl::Seconds(30), "Time to receive a whole request.");
ABSL_FLAG(absl::Duration, idle_timeout, absl::Seconds(120), "Time a keep-alive connection may sit idle.");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(25), "On SIGTERM, time to finish requests in flight.");
ABSL_FLAG(absl::Duration, policy_poll_interval, absl::Seconds(2),
          "How often to check the policy file for changes (0: only on SIGHUP).");

namespace tessera {
namespace {

// Beyond these a setting is a typo, not a deployment: 64 request threads on a
// sidecar, a body larger than the chart's memory, a timeout of a day.
constexpr int kMaxThreads = 64;
constexpr int kMaxScoreThreads = 64;
// Bind threads mostly wait on the API server: more of them are cheap, but
// past this many concurrent Bindings the API server is what limits.
constexpr int kMaxBindThreads = 256;
constexpr int64_t kMaxBodyBytes = int64_t{1} << 30;
// A budget past this is no budget on any machine Tessera runs on.
constexpr int64_t kMaxBodyBytesInFlight = int64_t{64} << 30;
// Past this, file descriptors run out first (and each connection holds buffers).
constexpr int kMaxConnections = 65536;
constexpr int kMaxHeaderBytes = 1 << 20;
const absl::Duration kMaxTimeout = absl::Hours(1);

// Collects every out-of-range flag, so an operator fixes them in one go.
class RangeCheck {
 public:
  template <typename T>
  void Int(std::string_view flag, T value, T min, T max) {
    if (value < min || value > max) {
      errors_.push_back(absl::StrCat("--", Absl(flag), " must be ", min, "..", max, ", got ", value));
    }
  }
  void Duration(std::string_view flag, absl::Duration value, absl::Duration min, absl::Duration max) {
    if (value < min || value > max) {
      errors_.push_back(absl::StrCat("--", Absl(flag), " must be ", absl::FormatDuration(min), "..",
                                     absl::FormatDuration(max), ", got ", absl::FormatDuration(value)));
    }
  }
  void NonEmpty(std::string_view flag, const std::string& value) {
    if (value.empty()) errors_.push_back(absl::StrCat("--", Absl(flag), " must not be empty"));
  }
  void Invalid(std::string_view message) { errors_.emplace_back(message); }
  [[nodiscard]] absl::Status Result() const {
    return errors_.empty() ? absl::OkStatus() : absl::InvalidArgumentError(absl::StrJoin(errors_, "\n"));
  }

 private:
  std::vector<std::string> errors_;
};

std::chrono::milliseconds Millis(absl::Duration d) { return std::chrono::milliseconds(absl::ToInt64Milliseconds(d)); }

// A listen address that only this machine reaches (127.0.0.0/8, ::1).
// "localhost" counts, so that the server's own error (it binds IP literals
// only) is what an operator reads, not one about plain HTTP.
bool IsLoopback(const std::string& address) {
  if (address == "localhost") return true;
  boost::system::error_code ec;
  const boost::asio::ip::address a = boost::asio::ip::make_address(address, ec);
  return !ec && a.is_loopback();
}

absl::StatusOr<ClientAuth> ParseClientAuth(std::string_view value) {
  if (value == "none") return ClientAuth::kNone;
  if (value == "verbs") return ClientAuth::kVerbs;
  if (value == "all") return ClientAuth::kAll;
  return absl::InvalidArgumentError(absl::StrCat("--tls-client-auth must be none, verbs or all, got \"", Absl(value), "\""));
}

// --tls-*, --allow-insecure-listen: the extender listener's TLS, and no
// plain HTTP beyond loopback unless asked for by name.
void CheckListenerTls(RangeCheck& check) {
  const std::string address = absl::GetFlag(FLAGS_address);
  const bool tls = !absl::GetFlag(FLAGS_tls_cert_file).empty();
  if (tls == absl::GetFlag(FLAGS_tls_key_file).empty()) {
    check.Invalid("--tls-cert-file and --tls-key-file go together");
  }
  const bool client_ca = !absl::GetFlag(FLAGS_tls_client_ca_file).empty();
  if (client_ca && !tls) check.Invalid("--tls-client-ca-file needs --tls-cert-file and --tls-key-file");
  absl::StatusOr<ClientAuth> auth = ParseClientAuth(absl::GetFlag(FLAGS_tls_client_auth));
  if (!auth.ok()) {
    check.Invalid(Std(auth.status().message()));
  } else if (*auth != ClientAuth::kNone && !client_ca) {
    check.Invalid(absl::StrCat("--tls-client-auth=", absl::GetFlag(FLAGS_tls_client_auth),
                               " needs --tls-client-ca-file (and TLS: --tls-cert-file, --tls-key-file)"));
  }
  if (!tls && !address.empty() && !IsLoopback(address) && !absl::GetFlag(FLAGS_allow_insecure_listen)) {
    check.Invalid(absl::StrCat(
        "--address=", address,
        " is beyond loopback, where anyone who reaches the port could call bind: serve TLS there "
        "(--tls-cert-file, --tls-key-file; --tls-client-ca-file with --tls-client-auth=verbs to let only "
        "kube-scheduler bind), listen on 127.0.0.1, or pass --allow-insecure-listen"));
  }
}

// --leader-elect-*: the Lease and its timing, consistent with one another.
absl::StatusOr<k8s::LeaseOptions> LeaseFromFlags() {
  k8s::LeaseOptions lease;
  const std::string where = absl::GetFlag(FLAGS_leader_elect_lease);
  const size_t slash = where.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == where.size() ||
      where.find('/', slash + 1) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--leader-elect-lease must be NAMESPACE/NAME, got \"", where, "\""));
  }
  lease.namespace_name = where.substr(0, slash);
  lease.name = where.substr(slash + 1);
  lease.identity = absl::GetFlag(FLAGS_leader_elect_identity);
  if (lease.identity.empty()) lease.identity = k8s::DefaultLeaseIdentity();
  lease.lease_duration = absl::GetFlag(FLAGS_leader_elect_lease_duration);
  lease.renew_deadline = absl::GetFlag(FLAGS_leader_elect_renew_deadline);
  lease.retry_period = absl::GetFlag(FLAGS_leader_elect_retry_period);
  if (lease.lease_duration > kMaxTimeout) return absl::InvalidArgumentError("--leader-elect-lease-duration must be at most 1h");
  if (std::string error = k8s::LeaseOptionsError(lease); !error.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--leader-elect-*: ", error));
  }
  return lease;
}

}  // namespace

absl::StatusOr<ProgramOptions> OptionsFromFlags() {
  RangeCheck check;
  const int port = absl::GetFlag(FLAGS_port);
  const int threads = absl::GetFlag(FLAGS_threads);
  const int score_threads = absl::GetFlag(FLAGS_score_threads);
  const int64_t body = absl::GetFlag(FLAGS_max_body_bytes);
  const int header = absl::GetFlag(FLAGS_max_header_bytes);
  const int64_t in_flight = absl::GetFlag(FLAGS_max_body_bytes_in_flight);
  const int connections = absl::GetFlag(FLAGS_max_connections);
  const absl::Duration read_timeout = absl::GetFlag(FLAGS_read_timeout);
  const absl::Duration idle_timeout = absl::GetFlag(FLAGS_idle_timeout);
  const absl::Duration drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  const absl::Duration poll = absl::GetFlag(FLAGS_policy_poll_interval);
  const absl::Duration ttl = absl::GetFlag(FLAGS_reservation_ttl);
  const absl::Duration api_timeout = absl::GetFlag(FLAGS_api_timeout);
  const int bind_threads = absl::GetFlag(FLAGS_bind_threads);
  const absl::Duration bind_timeout = absl::GetFlag(FLAGS_bind_timeout);
  check.Int("port", port, 0, 65535);
  check.Int("threads", threads, 1, kMaxThreads);
  check.Int("score_threads", score_threads, -1, kMaxScoreThreads);
  check.Int<int64_t>("max_body_bytes", body, 1024, kMaxBodyBytes);
  check.Int("max_header_bytes", header, 1024, kMaxHeaderBytes);
  // At least one body of the largest size must fit.
  check.Int<int64_t>("max_body_bytes_in_flight", in_flight, std::clamp<int64_t>(body, 1024, kMaxBodyBytes),
                     kMaxBodyBytesInFlight);
  check.Int("max_connections", connections, 1, kMaxConnections);
  check.Duration("read_timeout", read_timeout, absl::Milliseconds(100), kMaxTimeout);
  check.Duration("idle_timeout", idle_timeout, absl::Milliseconds(100), kMaxTimeout);
  check.Duration("drain_timeout", drain_timeout, absl::ZeroDuration(), kMaxTimeout);
  check.Duration("policy_poll_interval", poll, absl::ZeroDuration(), kMaxTimeout);
  check.Duration("reservation_ttl", ttl, absl::Seconds(1), kMaxTimeout);
  check.Duration("api_timeout", api_timeout, absl::Milliseconds(100), kMaxTimeout);
  check.Int("bind_threads", bind_threads, 1, kMaxBindThreads);
  check.Duration("bind_timeout", bind_timeout, absl::Milliseconds(100), kMaxTimeout);
  check.NonEmpty("address", absl::GetFlag(FLAGS_address));
  check.NonEmpty("policy_file", absl::GetFlag(FLAGS_policy_file));
  const int webhook_port = absl::GetFlag(FLAGS_webhook_port);
  check.Int("webhook_port", webhook_port, 0, 65535);
  if (webhook_port != 0) {
    check.NonEmpty("webhook_cert_file", absl::GetFlag(FLAGS_webhook_cert_file));
    check.NonEmpty("webhook_key_file", absl::GetFlag(FLAGS_webhook_key_file));
    if (webhook_port == port) check.Invalid("--webhook_port must differ from --port");
  }
  absl::StatusOr<k8s::GpuEnforcement> enforcement = k8s::ParseGpuEnforcement(absl::GetFlag(FLAGS_gpu_enforcement));
  if (!enforcement.ok()) check.Invalid(absl::StrCat("--gpu_enforcement: ", enforcement.status().message()));
  absl::StatusOr<std::vector<GpuVendor>> vendors = k8s::ParseGpuVendorList(absl::GetFlag(FLAGS_gpu_vendors));
  if (!vendors.ok()) check.Invalid(absl::StrCat("--gpu_vendors: ", vendors.status().message()));
  absl::StatusOr<k8s::LeaseOptions> lease = LeaseFromFlags();
  if (!lease.ok()) check.Invalid(Std(lease.status().message()));
  CheckListenerTls(check);
  const int read_only_port = absl::GetFlag(FLAGS_read_only_port);
  check.Int("read_only_port", read_only_port, 0, 65535);
  if (read_only_port != 0 && (read_only_port == port || read_only_port == webhook_port)) {
    check.Invalid("--read-only-port must differ from --port and --webhook-port");
  }
  if (absl::Status st = check.Result(); !st.ok()) return st;

  ProgramOptions o;
  o.server.address = absl::GetFlag(FLAGS_address);
  o.server.port = static_cast<uint16_t>(port);
  o.server.threads = threads;
  o.server.body_limit = static_cast<size_t>(body);
  o.server.header_limit = static_cast<uint32_t>(header);
  o.server.max_body_bytes_in_flight = static_cast<size_t>(in_flight);
  o.server.max_connections = static_cast<size_t>(connections);
  o.server.read_timeout = Millis(read_timeout);
  o.server.idle_timeout = Millis(idle_timeout);
  o.server.drain_timeout = Millis(drain_timeout);
  o.url_prefix = absl::GetFlag(FLAGS_url_prefix);
  o.score_threads = score_threads;
  o.policy_file = absl::GetFlag(FLAGS_policy_file);
  o.policy_poll_interval = poll;
  o.cluster_file = absl::GetFlag(FLAGS_cluster_file);
  o.kubeconfig = absl::GetFlag(FLAGS_kubeconfig);
  o.kube_context = absl::GetFlag(FLAGS_kube_context);
  o.reservation_ttl = ttl;
  o.scheduler_name = absl::GetFlag(FLAGS_scheduler_name);
  o.api_timeout = api_timeout;
  o.leader_elect = absl::GetFlag(FLAGS_leader_elect);
  o.publish_gpu_capacity = absl::GetFlag(FLAGS_publish_gpu_capacity);
  o.preemption = absl::GetFlag(FLAGS_preemption);
  o.lease = *std::move(lease);
  o.bind_threads = bind_threads;
  o.bind_timeout = bind_timeout;
  o.server.http2 = absl::GetFlag(FLAGS_http2);
  o.webhook_server = o.server;
  o.webhook_server.port = static_cast<uint16_t>(webhook_port);
  o.webhook_server.threads = 1;  // the API server calls a webhook about once a pod
  o.webhook_server.body_limit = std::min(o.server.body_limit, size_t{4} << 20);
  o.webhook_server.max_body_bytes_in_flight = size_t{64} << 20;
  o.webhook_server.tls_cert_file = absl::GetFlag(FLAGS_webhook_cert_file);
  o.webhook_server.tls_key_file = absl::GetFlag(FLAGS_webhook_key_file);
  // The read-only listener: few, small GET requests (probes, scrapes).
  o.read_only_server = o.server;
  o.read_only_server.address = absl::GetFlag(FLAGS_read_only_address);
  o.read_only_server.port = static_cast<uint16_t>(read_only_port);
  o.read_only_server.threads = 1;
  o.read_only_server.body_limit = size_t{64} << 10;
  o.read_only_server.max_body_bytes_in_flight = size_t{1} << 20;
  o.read_only_server.max_connections = 64;
  // The extender listener's TLS, set after the copies above (theirs differ).
  o.server.tls_cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  o.server.tls_key_file = absl::GetFlag(FLAGS_tls_key_file);
  o.server.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);
  o.client_auth = *ParseClientAuth(absl::GetFlag(FLAGS_tls_client_auth));
  o.server.tls_require_client_cert = o.client_auth == ClientAuth::kAll;
  o.mutation.scheduler_name = absl::GetFlag(FLAGS_webhook_scheduler_name);
  if (o.mutation.scheduler_name.empty()) o.mutation.scheduler_name = o.scheduler_name;
  o.mutation.enforcement = *enforcement;
  o.mutation.vendors = *vendors;
  return o;
}

}  // namespace tessera
