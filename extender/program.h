// The extender program's components, built from its options and wired
// together: the one place that knows every floor (ARCHITECTURE.md).
//
//   policy store ──► profile ─┐
//   cluster file or watch ──► cluster model ──► snapshot ─┼─► extender service ─► router ─► dispatcher ─► HTTP server
//   telemetry refresher ──► cluster model                 │   (the dispatcher's pools run binds and large requests)
//   binder (API-server mode) ◄────────────────────────────┘
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/policy_store.h"
#include "extender/flags.h"
#include "extender/server/http_server.h"
#include "extender/service/binder.h"
#include "extender/service/extender_service.h"
#include "extender/service/mig_advice.h"
#include "extender/service/pool_gauges.h"
#include "extender/service/recent_refusals.h"
#include "extender/service/request_dispatcher.h"
#include "extender/service/router.h"
#include "extender/service/tenant_accounting.h"
#include "k8s/client/api_client.h"
#include "k8s/client/connection_warmer.h"
#include "k8s/client/pod_api.h"
#include "k8s/sync/capacity_publisher.h"
#include "k8s/sync/cluster_watch.h"
#include "k8s/sync/leader_lease.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/framework/registry.h"
#include "scheduler/memo/worker_pool.h"
#include "scheduler/metrics/metrics.h"
#include "telemetry/telemetry_refresher.h"

namespace tessera {

class Program {
 public:
  /// Reads the policy and the cluster (file, or API-server client and watch),
  /// configures telemetry and builds the service. Nothing serves yet.
  /// \return InvalidArgument (bad policy or cluster file, bad telemetry
  ///   settings) or the API-server client's error, each saying what it was.
  static absl::StatusOr<std::unique_ptr<Program>> Build(const ProgramOptions& options,
                                                        const PluginRegistry& registry);

  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();

  /// Listens, starts the watch and the control loop, and serves until SIGTERM
  /// or SIGINT has drained the requests in flight.
  /// With --webhook-port, the admission webhook listens too (HTTPS).
  /// \return the process exit code: 0 after a clean stop, 1 when it cannot listen.
  int Serve();

 private:
  Program(const ProgramOptions& options, const PluginRegistry& registry);

  absl::Status OpenPolicy();
  absl::Status OpenCluster();
  absl::Status OpenApiServer();
  void LogModel();
  absl::Status StartTelemetry();
  void BuildService();
  void ApplyTelemetrySettings();
  void RefreshGauges();
  [[nodiscard]] std::string DebugState() const;
  [[nodiscard]] std::string GpuMap(std::string_view target) const;
  [[nodiscard]] bool Synced() const { return watch_ == nullptr || watch_->synced(); }
  /// Why the model cannot be trusted now (/readyz's 503); empty when it can.
  [[nodiscard]] std::string NotReady() const;
  /// Whether this replica may write on its own initiative now.
  [[nodiscard]] bool Writer() const { return lease_ == nullptr || lease_->IsLeader(); }
  absl::Status OpenLease(const k8s::ApiServerConfig& config);
  absl::Status OpenCapacityPublisher(const k8s::ApiServerConfig& config);
  void Chore();
  // Folds the arrivals filter saw into the learned workload and puts a new
  // mix in force when one is due (scheduler/cache/workload_learner.h).
  void LearnWorkload();
  /// options_.server with the requests that need a client certificate (--tls-client-auth).
  [[nodiscard]] HttpServerOptions ExtenderServerOptions() const;
  /// The --read-only-port listener (null when none): GETs only, the verbs refused.
  absl::StatusOr<std::unique_ptr<HttpServer>> StartReadOnlyServer();
  // The nudge of k8s/sync/pending_requeue.h, with a client of its own: it
  // runs on a detached thread that owns all it touches, so a slow API server
  // never holds up a shutdown.
  struct Nudge;
  // What the extender service reads of the program and tells it
  // (extender/service/scheduler_handle.h).
  class Handle;

  const ProgramOptions options_;
  const PluginRegistry& registry_;
  // Declaration order is construction order: each component outlives those
  // that point to it.
  MetricsRegistry metrics_;
  WorkerPool score_pool_;
  std::unique_ptr<PolicyStore> store_;
  // Filter's arrivals in, the expected workload out (the control loop learns).
  WorkloadLearner learner_{WorkloadLearning{}};
  ClusterModel model_;
  PodDirectory pods_;
  std::string source_;  // "cluster file x" or the API server's description, for logs and /debug
  RecentRefusals refusals_;  // filter writes, the GPU map page reads
  std::unique_ptr<k8s::ApiClient> api_client_;
  std::unique_ptr<k8s::ConnectionWarmer> warmer_;  // keeps api_client_'s bind connections open
  std::unique_ptr<k8s::ClusterWatch> watch_;
  std::unique_ptr<k8s::KubePodApi> pod_api_;
  std::unique_ptr<Binder> binder_;
  std::unique_ptr<TelemetryRefresher> telemetry_;
  std::unique_ptr<Handle> handle_;
  std::unique_ptr<ExtenderService> service_;
  std::unique_ptr<Router> router_;
  // Its threads run binds and large requests: destroyed (joined) before all above.
  std::unique_ptr<RequestDispatcher> dispatcher_;
  std::shared_ptr<Nudge> nudge_;  // API-server mode with --scheduler-name only
  bool nudged_ = false;           // the control loop's: started once per term as the writer
  // API-server mode with --leader-elect: a client of its own with a short
  // deadline, so that a slow API server cannot hold a renewal past the term.
  std::unique_ptr<k8s::ApiClient> lease_client_;
  std::unique_ptr<k8s::LeaderLease> lease_;
  // API-server mode with --publish-gpu-capacity: its own client, as the lease's.
  std::unique_ptr<k8s::ApiClient> capacity_client_;
  std::unique_ptr<k8s::CapacityPublisher> capacity_;
  // API-server mode with --preemption: evicts for pods kube-scheduler's preemption cannot help.
  std::unique_ptr<PreemptionLoop> preemption_;
  // API-server mode: per-tenant gauges, chargeback counters, run-time limits (the control loop's).
  std::unique_ptr<TenantAccountant> tenant_accountant_;
  // tessera_pool_*: allocation and fragmentation per node pool and GPU model (every mode).
  PoolGauges pool_gauges_{metrics_};
  MigAdviceGauges mig_gauges_{metrics_};
  // tessera_workload_*: what the learner saw and whether its mix is in force.
  tessera::Counter& workload_arrivals_ = metrics_.Counter(
      "tessera_workload_arrivals_total", "Pods counted into the learned workload (each pod once, however often filtered).");
  tessera::Gauge& workload_kinds_ = metrics_.Gauge(
      "tessera_workload_learned_kinds", "Kinds of pod in the learned workload in force (0: the policy file's lists are).");
  tessera::Gauge& workload_window_ = metrics_.Gauge(
      "tessera_workload_window_pods", "Arrivals in the learner's window.");
  int64_t arrivals_counted_ = 0;  // LearnWorkload's, for the counter's increments
};

}  // namespace tessera
