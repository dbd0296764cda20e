#include "extender/program.h"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "config/cluster_file.h"
#include "extender/control_loop.h"
#include "extender/service/admission_handler.h"
#include "extender/service/debug_state.h"
#include "extender/service/gpu_map_page.h"
#include "k8s/client/api_server_config.h"
#include "k8s/sync/pending_requeue.h"
#include "scheduler/common/log.h"
#include "scheduler/common/thread_name.h"
#include "scheduler/framework/cluster_supply.h"
#include "scheduler/model/absl_compat.h"

namespace tessera {
namespace {

absl::Status Prefixed(std::string_view prefix, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(Absl(prefix), status.message()));
}

// How often binds the watch never confirmed are looked for, and the watch's
// first sync (which starts the nudge) is checked.
constexpr absl::Duration kChoreInterval = absl::Seconds(1);

// Requests that may wait for each thread of a pool before the next is
// refused "busy" (kube-scheduler then retries the pod).
constexpr size_t kQueuedPerThread = 16;

// The server counts what it refuses itself in the program's registry.
ProgramOptions WithServerMetrics(ProgramOptions options, MetricsRegistry* metrics) {
  options.server.metrics = metrics;
  return options;
}

// For the start-up line: who may call what over TLS.
std::string ClientAuthNote(ClientAuth auth) {
  switch (auth) {
    case ClientAuth::kNone:
      return "; TLS, no client certificates";
    case ClientAuth::kVerbs:
      return "; TLS, bind and preempt need a verified client certificate";
    case ClientAuth::kAll:
      return "; TLS, every client needs a verified client certificate";
  }
  return "";
}

}  // namespace

struct Program::Nudge {
  std::unique_ptr<k8s::ApiClient> client;
  std::unique_ptr<k8s::KubePodApi> pods;
  std::string scheduler_name;
  std::atomic<bool> stop{false};

  void Run() {
    absl::StatusOr<int> nudged =
        k8s::RequeuePendingPods(*client, *pods, {.scheduler_name = scheduler_name, .stop = &stop}, absl::Now());
    if (!nudged.ok()) {
      LogWarning(absl::StrCat("could not list the pods waiting for ", scheduler_name,
                              "; they wait for kube-scheduler's own retry: ", nudged.status().message()));
    } else if (*nudged > 0) {
      LogInfo(absl::StrCat("nudged ", *nudged, " pending pods of ", scheduler_name,
                           " so that kube-scheduler retries them now"));
    }
  }
};

Program::Program(const ProgramOptions& options, const PluginRegistry& registry)
    : options_(WithServerMetrics(options, &metrics_)),
      registry_(registry),
      score_pool_(options.score_threads == -1 ? WorkerPool::DefaultThreads() : options.score_threads) {}

// The program as the extender service sees it: every read goes to the
// component that owns it, every notification to the one that acts on it.
class Program::Handle final : public SchedulerHandle {
 public:
  explicit Handle(Program& program) : p_(program) {}

  [[nodiscard]] std::shared_ptr<const ClusterSnapshot> Snapshot() const override { return p_.model_.Current(); }
  [[nodiscard]] std::shared_ptr<const ProfileSet> Profiles() const override { return p_.store_->CurrentProfiles(); }
  [[nodiscard]] std::shared_ptr<const TenantSet> Tenants() const override { return p_.store_->CurrentTenants(); }
  [[nodiscard]] bool Synced() const override { return p_.Synced(); }
  [[nodiscard]] Binder* binder() const override { return p_.binder_.get(); }
  [[nodiscard]] WorkerPool* score_pool() const override { return &p_.score_pool_; }
  void PodArrived(std::string_view uid, const PodGpuRequest& request) const override {
    p_.learner_.Observe(uid, request);
  }
  void PodUnschedulable(UnschedulablePod pod) const override {
    if (p_.preemption_ != nullptr) p_.preemption_->NoteUnschedulable(std::move(pod));
  }
  void SchedulerPreempted(std::string_view uid) const override {
    if (p_.preemption_ != nullptr) p_.preemption_->NoteSchedulerPreempted(uid);
  }
  [[nodiscard]] RecentRefusals* refusals() const override { return &p_.refusals_; }

 private:
  Program& p_;
};

Program::~Program() = default;

absl::StatusOr<std::unique_ptr<Program>> Program::Build(const ProgramOptions& options,
                                                        const PluginRegistry& registry) {
  std::unique_ptr<Program> p(new Program(options, registry));
  LogInfo(absl::StrCat("score helper threads: ", p->score_pool_.threads(),
                       " (--score_threads; they compute prioritize's nodes the score memo has not seen)"));
  if (absl::Status st = p->OpenPolicy(); !st.ok()) return st;
  if (absl::Status st = p->OpenCluster(); !st.ok()) return st;
  p->LogModel();
  if (absl::Status st = p->StartTelemetry(); !st.ok()) return st;
  p->BuildService();
  return p;
}

absl::Status Program::OpenPolicy() {
  Counter& reload_ok = metrics_.Counter("tessera_policy_reloads_total", "Policy reload attempts by result.",
                                        {{"result", "success"}});
  Counter& reload_failed = metrics_.Counter("tessera_policy_reloads_total", "Policy reload attempts by result.",
                                            {{"result", "failure"}});
  const std::string& path = options_.policy_file;
  absl::StatusOr<std::unique_ptr<PolicyStore>> store =
      PolicyStore::Open(path, registry_, [&reload_ok, &reload_failed, path](const absl::Status& status) {
        if (status.ok()) {
          reload_ok.Inc();
          LogInfo(absl::StrCat("policy reloaded from ", path));
        } else {
          reload_failed.Inc();
          LogError(absl::StrCat("policy reload refused, the previous policy stays in force:\n", status.message()));
        }
      });
  if (!store.ok()) return Prefixed("invalid policy file:\n", store.status());
  store_ = *std::move(store);
  LogInfo(absl::StrCat("policy ", path, ": plugins ", absl::StrJoin(store_->Current()->PluginNames(), ", ")));
  for (const PoolPolicy& pool : store_->CurrentProfiles()->pools()) {
    LogInfo(absl::StrCat("policy ", path, ": task types ", absl::StrJoin(pool.task_types, ", "), " go to node pool ",
                         pool.name, pool.exclusive ? " (exclusive)" : "", " with plugins ",
                         absl::StrJoin(pool.profile->PluginNames(), ", ")));
  }
  return absl::OkStatus();
}

absl::Status Program::OpenCluster() {
  if (options_.cluster_file.empty()) return OpenApiServer();
  if (absl::Status st = LoadClusterFile(options_.cluster_file, model_); !st.ok()) {
    return Prefixed("invalid cluster file:\n", st);
  }
  source_ = absl::StrCat("cluster file ", options_.cluster_file);
  return absl::OkStatus();
}

absl::Status Program::OpenApiServer() {
  absl::StatusOr<k8s::ApiServerConfig> config = options_.kubeconfig.empty()
                                                    ? k8s::InClusterConfig()
                                                    : k8s::LoadKubeconfig(options_.kubeconfig, options_.kube_context);
  if (!config.ok()) return Prefixed("cannot configure the API-server client: ", config.status());
  source_ = config->description;
  k8s::ApiClientOptions client_options;
  client_options.request_timeout = options_.api_timeout;
  // Every bind thread keeps its connection between binds (a fresh TLS
  // handshake costs more than the Binding itself).
  client_options.max_idle_connections = std::max<size_t>(client_options.max_idle_connections,
                                                         static_cast<size_t>(options_.bind_threads) + 2);
  if (!options_.scheduler_name.empty()) {
    absl::StatusOr<std::unique_ptr<k8s::ApiClient>> own = k8s::ApiClient::Create(*config, client_options);
    if (!own.ok()) return Prefixed("cannot configure the API-server client: ", own.status());
    nudge_ = std::make_shared<Nudge>();
    nudge_->client = *std::move(own);
    nudge_->pods = std::make_unique<k8s::KubePodApi>(*nudge_->client);
    nudge_->scheduler_name = options_.scheduler_name;
  }
  if (absl::Status st = OpenLease(*config); !st.ok()) return st;
  if (absl::Status st = OpenCapacityPublisher(*config); !st.ok()) return st;
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = k8s::ApiClient::Create(*std::move(config), client_options);
  if (!client.ok()) return Prefixed("cannot configure the API-server client: ", client.status());
  api_client_ = *std::move(client);
  warmer_ = std::make_unique<k8s::ConnectionWarmer>(
      *api_client_, std::min(static_cast<size_t>(options_.bind_threads), k8s::ConnectionWarmer::kMaxConnections));
  watch_ = std::make_unique<k8s::ClusterWatch>(*api_client_, model_, pods_, &metrics_);
  pod_api_ = std::make_unique<k8s::KubePodApi>(*api_client_);
  binder_ = std::make_unique<Binder>(model_, pods_, *pod_api_, [this] { return store_->Current(); }, metrics_,
                                     BinderOptions{.reservation_ttl = options_.reservation_ttl,
                                                   .tenants = [this] { return store_->CurrentTenants(); },
                                                   .profiles = [this] { return store_->CurrentProfiles(); }});
  tenant_accountant_ = std::make_unique<TenantAccountant>(metrics_, pod_api_.get());
  if (options_.preemption) {
    preemption_ = std::make_unique<PreemptionLoop>(
        PreemptionLoopSources{.model = &model_,
                              .pods = &pods_,
                              .api = pod_api_.get(),
                              .profile = [this] { return store_->Current(); },
                              .profiles = [this] { return store_->CurrentProfiles(); },
                              .tenants = [this] { return store_->CurrentTenants(); },
                              .is_writer = [this] { return Writer() && Synced(); },
                              .metrics = &metrics_});
  }
  LogInfo(absl::StrCat("API server: ", source_, "; watching nodes and pods"));
  return absl::OkStatus();
}

absl::Status Program::OpenLease(const k8s::ApiServerConfig& config) {
  if (!options_.leader_elect) return absl::OkStatus();
  k8s::ApiClientOptions lease_client_options;
  lease_client_options.request_timeout = std::min(options_.api_timeout, options_.lease.retry_period);
  lease_client_options.retry_on_reused_connection = false;  // a repeated lease write is not safe
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = k8s::ApiClient::Create(config, lease_client_options);
  if (!client.ok()) return Prefixed("cannot configure the API-server client: ", client.status());
  lease_client_ = *std::move(client);
  lease_ = std::make_unique<k8s::LeaderLease>(*lease_client_, options_.lease, &metrics_);
  LogInfo(absl::StrCat("writer election: lease ", options_.lease.namespace_name, "/", options_.lease.name, " as ",
                       options_.lease.identity));
  return absl::OkStatus();
}

absl::Status Program::OpenCapacityPublisher(const k8s::ApiServerConfig& config) {
  if (!options_.publish_gpu_capacity) return absl::OkStatus();
  k8s::ApiClientOptions client_options;
  client_options.request_timeout = std::min(options_.api_timeout, absl::Seconds(10));
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = k8s::ApiClient::Create(config, client_options);
  if (!client.ok()) return Prefixed("cannot configure the API-server client: ", client.status());
  capacity_client_ = *std::move(client);
  capacity_ = std::make_unique<k8s::CapacityPublisher>(*capacity_client_, [this] { return Writer(); }, &metrics_);
  return absl::OkStatus();
}

std::string Program::NotReady() const {
  if (watch_ != nullptr) {
    if (std::string why = watch_->NotInStep(); !why.empty()) return why;
  }
  // A frozen API server leaves open watches silent, not broken; the lease,
  // read every retry period, notices (with leader election only).
  if (lease_ != nullptr) {
    const absl::Duration silent = absl::Now() - lease_->LastContact();
    if (silent > options_.lease.renew_deadline) {
      if (silent == absl::InfiniteDuration()) return "the API server has not answered a read of the lease yet";
      return absl::StrCat("the API server has not answered a read of the lease for ",
                          absl::FormatDuration(absl::Trunc(silent, absl::Seconds(1))));
    }
  }
  return "";
}

void Program::LogModel() {
  const std::shared_ptr<const ClusterSnapshot> first = model_.Publish();
  for (NodeIndex i = 0; i < first->node_count(); ++i) {
    const NodeState& n = first->node(i);
    if (!n.inventory_error.ok()) LogWarning(absl::StrCat("node ", n.name, ": ", n.inventory_error.message()));
    for (const std::string& problem : n.problems) LogWarning(absl::StrCat("node ", n.name, ": ", problem));
  }
  LogInfo(absl::StrCat("cluster model: ", first->node_count(), " nodes, ", first->gpu_count(), " GPUs"));
}

// Live GPU metrics (the policy's telemetry: section), refreshed in the
// background into the model; re-applied after every policy reload.
absl::Status Program::StartTelemetry() {
  telemetry_ = std::make_unique<TelemetryRefresher>(model_, metrics_);
  if (absl::Status st = telemetry_->Configure(store_->CurrentTelemetry()); !st.ok()) {
    return Prefixed("invalid telemetry settings: ", st);
  }
  return absl::OkStatus();
}

void Program::ApplyTelemetrySettings() {
  if (absl::Status st = telemetry_->Configure(store_->CurrentTelemetry()); !st.ok()) {
    LogError(absl::StrCat("telemetry settings not applied: ", st.message()));
  }
}

void Program::BuildService() {
  handle_ = std::make_unique<Handle>(*this);
  service_ = std::make_unique<ExtenderService>(*handle_, metrics_);
  router_ = std::make_unique<Router>(
      RouterOptions{.url_prefix = options_.url_prefix,
                    // Answers from a half-synced model would place pods on GPUs
                    // that are taken: not ready until both initial lists are in.
                    .not_ready = [this] { return NotReady(); },
                    .debug_state = [this] { return DebugState(); },
                    .gpu_map = [this](std::string_view target) { return GpuMap(target); },
                    .refresh_gauges = [this] { RefreshGauges(); }},
      *service_, metrics_);
  // Binds wait on the API server and large filters compute on threads of
  // their own; the HTTP threads only read, route and write (request_dispatcher.h).
  const int verb_threads = options_.server.threads;
  dispatcher_ = std::make_unique<RequestDispatcher>(
      DispatcherOptions{.bind_threads = options_.bind_threads,
                        .bind_queue = kQueuedPerThread * static_cast<size_t>(options_.bind_threads),
                        .bind_timeout = options_.bind_timeout,
                        .verb_threads = verb_threads,
                        .verb_queue = kQueuedPerThread * static_cast<size_t>(verb_threads)},
      *router_, metrics_);
  LogInfo(absl::StrCat("bind threads: ", options_.bind_threads, " (--bind-threads), each bind answered within ",
                       absl::FormatDuration(options_.bind_timeout), " (--bind-timeout)"));
}

std::string Program::DebugState() const {
  const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Current();
  DebugInputs in;
  in.snapshot = snapshot.get();
  in.source = source_;
  if (watch_ != nullptr) {
    in.watches = {{"nodes", watch_->node_status()}, {"pods", watch_->pod_status()}};
    in.pod_problems = watch_->pod_problems();
    in.dra = watch_->dra_report();
  }
  if (lease_ != nullptr) {
    in.lease = {.name = absl::StrCat(options_.lease.namespace_name, "/", options_.lease.name),
                .identity = options_.lease.identity,
                .holder = lease_->LastSeenHolder(),
                .leader = lease_->IsLeader()};
  }
  if (tenant_accountant_ != nullptr) in.tenants = tenant_accountant_->Report();
  in.mig_waits = MigWaits(refusals_.List(), *snapshot);
  const WorkloadLearnerStatus workload = learner_.Status();
  in.workload = &workload;
  in.learned_workload_in_force = store_->LearnedWorkload() != nullptr;
  const std::shared_ptr<const ProfileSet> profiles = store_->CurrentProfiles();
  in.profiles = profiles.get();
  return RenderDebugState(in);
}

std::string Program::GpuMap(std::string_view target) const {
  const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Current();
  const std::shared_ptr<const TenantSet> tenants = store_->CurrentTenants();
  return RenderGpuMapPage({.snapshot = snapshot.get(),
                           .tenants = tenants.get(),
                           .refusals = refusals_.List(),
                           .now = absl::Now(),
                           .source = source_},
                          ParseGpuMapQuery(target));
}

void Program::RefreshGauges() {
  const std::shared_ptr<const ClusterSnapshot> snapshot = model_.Current();
  metrics_.Gauge("tessera_model_nodes", "Nodes in the cluster model.").Set(double(snapshot->node_count()));
  metrics_.Gauge("tessera_model_gpus", "GPUs in the cluster model.").Set(double(snapshot->gpu_count()));
  pool_gauges_.Refresh(*snapshot);
  mig_gauges_.Refresh(MigWaits(refusals_.List(), *snapshot));
  metrics_.Gauge("tessera_model_nodes_inventory_errors", "Nodes whose GPU inventory is unparsable.")
      .Set(double(snapshot->nodes_with_inventory_errors()));
  size_t withheld = 0;  // a loop over the nodes per scrape: microseconds at 5000
  for (NodeIndex i = 0; i < snapshot->node_count(); ++i) withheld += snapshot->View(i).gpus_withheld != nullptr;
  metrics_
      .Gauge("tessera_model_nodes_gpus_withheld",
             "Nodes that take no GPU pod because a pod there holds GPUs Tessera cannot count (an unreadable "
             "assignment); see /debug nodeProblems.")
      .Set(double(withheld));
  metrics_.Gauge("tessera_binds_in_flight", "Bind reservations not yet confirmed by the watch.")
      .Set(double(model_.reservation_count()));
  if (capacity_ != nullptr) {
    metrics_.Gauge("tessera_capacity_nodes_pending", "GPU nodes whose extended resources await a status patch.")
        .Set(double(capacity_->pending()));
  }
  if (watch_ == nullptr) return;
  metrics_.Gauge("tessera_api_connections_idle", "Keep-alive connections to the API server ready for binds.")
      .Set(double(api_client_->idle_connections()));
  metrics_.Gauge("tessera_watch_synced", "1 once both initial lists (nodes, pods) are applied.")
      .Set(watch_->synced() ? 1.0 : 0.0);
  metrics_.Gauge("tessera_pod_assignment_problems", "Pods whose assignment annotation is inconsistent now.")
      .Set(double(watch_->pod_problems().size()));
}

void Program::LearnWorkload() {
  const WorkloadLearning settings = store_->CurrentLearning();
  // A mix carries the cluster as it is now: its CPU per GPU and GPUs by
  // model (host stranding asks whether CPU is what the cluster runs out of,
  // and whether some model is scarce: policies/fgd/fragmentation.h), its idle
  // nodes and free GPU (whether the kinds that take whole nodes are short
  // of idle ones: policies/fgd/host_stranding.h).
  const std::shared_ptr<const ClusterSnapshot> cluster = model_.Current();
  ClusterSupplySum sum;
  for (NodeIndex i = 0; i < cluster->node_count(); ++i) sum.Add(cluster->View(i));
  TargetWorkload::ClusterSupply supply = std::move(sum).Take();
  if (std::shared_ptr<const TargetWorkload> mix = learner_.Learn(settings, supply)) {
    store_->PublishLearnedWorkload(std::move(mix));
  } else if (std::shared_ptr<const TargetWorkload> retold = learner_.Retold(std::move(supply));
             retold != nullptr && store_->RetellLearnedWorkload(retold)) {
    // No mix due, but the cluster moved past what the mix in force judged
    // by (an idle-node reserve opened or closed): re-told, not re-learned.
    learner_.Adopt(std::move(retold));
  }
  const WorkloadLearnerStatus status = learner_.Status();
  // A learner that started over (learning settings changed) hands the policy file's lists back until a pod arrives.
  if (status.learned == nullptr) store_->PublishLearnedWorkload(nullptr);
  workload_arrivals_.Inc(static_cast<double>(status.arrivals - arrivals_counted_));
  arrivals_counted_ = status.arrivals;
  const std::shared_ptr<const TargetWorkload> in_force = store_->LearnedWorkload();
  workload_kinds_.Set(in_force != nullptr ? static_cast<double>(in_force->pods().size()) : 0);
  workload_window_.Set(static_cast<double>(status.window_pods));
}

void Program::Chore() {
  LearnWorkload();
  // A node whose inventory arrived after the DRA claims on its GPUs.
  if (watch_ != nullptr) watch_->ResolveDra();
  if (binder_ == nullptr) return;
  // Binds whose bound pod the watch never showed release their GPUs. Only
  // while the watches follow the API server: a confirmation cannot arrive
  // through a broken watch, and releasing then could double-allocate. The
  // nudge below waits for the same (after an outage, for the pod watch's
  // list: pods nudged before it would be scored on the stale model).
  if (!watch_->in_step()) return;
  binder_->ExpireReservations(absl::Now());
  tenant_accountant_->Tick(*model_.Current(), *store_->CurrentTenants(), absl::Now(), Writer());
  // The nudge: once per term as the writer, on a thread that owns what it
  // touches (Program::Nudge).
  if (nudge_ == nullptr) return;
  if (!Writer()) {
    nudged_ = false;  // a replica that becomes the writer later nudges then
    return;
  }
  if (nudged_) return;
  nudged_ = true;
  std::thread([nudge = nudge_] {
    NameThisThread("ready-nudge");
    nudge->Run();
  }).detach();
}

HttpServerOptions Program::ExtenderServerOptions() const {
  HttpServerOptions o = options_.server;
  if (options_.client_auth == ClientAuth::kVerbs) {
    // The verbs that change the cluster; filter and prioritize only read, and
    // the probes and /metrics must answer the kubelet and Prometheus.
    o.needs_client_cert = [router = router_.get()](const HttpRequest& request) {
      const std::string_view verb = router->Verb(request);
      return verb == "bind" || verb == "preempt";
    };
  }
  return o;
}

absl::StatusOr<std::unique_ptr<HttpServer>> Program::StartReadOnlyServer() {
  if (options_.read_only_server.port == 0) return nullptr;
  return HttpServer::StartAsync(options_.read_only_server, [this](HttpRequest r, HttpResponder respond) {
    // Every verb is a POST: a GET cannot bind, preempt or reserve anything.
    if (r.method() != boost::beast::http::verb::get) {
      return respond(JsonErrorResponse(boost::beast::http::status::forbidden,
                                       "the read-only port answers GET only (/healthz, /readyz, /metrics, /debug); "
                                       "the extender verbs are served on --port"));
    }
    dispatcher_->Handle(std::move(r), std::move(respond));
  });
}

int Program::Serve() {
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::StartAsync(ExtenderServerOptions(), [this](HttpRequest r, HttpResponder respond) {
        dispatcher_->Handle(std::move(r), std::move(respond));
      });
  if (!server.ok()) {
    LogError(absl::StrCat("cannot serve: ", server.status().message()));
    return 1;
  }
  absl::StatusOr<std::unique_ptr<HttpServer>> read_only = StartReadOnlyServer();
  if (!read_only.ok()) {
    LogError(absl::StrCat("cannot serve the read-only port: ", read_only.status().message()));
    (*server)->Drain();
    return 1;
  }
  if (*read_only != nullptr) {
    LogInfo(absl::StrCat("read-only port on http://", options_.read_only_server.address, ":", (*read_only)->port(),
                         " (GET /healthz, /readyz, /metrics, /debug; verbs refused)"));
  }
  // The admission webhook: a listener of its own (TLS, its own port), so a
  // slow or hostile webhook client shares nothing with kube-scheduler's calls.
  std::unique_ptr<HttpServer> webhook;
  if (options_.webhook_server.port != 0) {
    absl::StatusOr<std::unique_ptr<HttpServer>> started =
        HttpServer::Start(options_.webhook_server, MakeAdmissionHandler(options_.mutation, metrics_));
    if (!started.ok()) {
      LogError(absl::StrCat("cannot serve the admission webhook: ", started.status().message()));
      (*server)->Drain();
      if (*read_only != nullptr) (*read_only)->Drain();
      return 1;
    }
    webhook = *std::move(started);
    LogInfo(absl::StrCat("admission webhook on https://", options_.webhook_server.address, ":", webhook->port(),
                         kMutatePodsPath, " (schedulerName ", options_.mutation.scheduler_name, ")"));
  }

  ControlActions actions;
  actions.on_stop = [&server, &webhook, &read_only](int signal) {
    LogInfo(absl::StrCat("signal ", signal, ": draining requests in flight"));
    (*server)->Drain();
    if (webhook != nullptr) webhook->Drain();
    if (*read_only != nullptr) (*read_only)->Drain();
  };
  actions.on_hup = [this] {
    LogInfo("SIGHUP: reloading the policy file");
    (void)store_->Reload();  // the store's callback logs and counts the outcome
    ApplyTelemetrySettings();
  };
  actions.on_poll = [this] {
    if (store_->ReloadIfChanged()) ApplyTelemetrySettings();
  };
  actions.poll_every = options_.policy_poll_interval;
  actions.on_chore = [this] { Chore(); };
  actions.chore_every = kChoreInterval;
  if (lease_ != nullptr) lease_->Start();
  if (watch_ != nullptr && capacity_ != nullptr) {
    watch_->set_capacity_observer([this](const std::string& node, std::optional<k8s::NodeGpuCapacity> capacity) {
      capacity_->Observe(node, std::move(capacity));
    });
    capacity_->Start();
  }
  if (watch_ != nullptr) {
    watch_->set_utilization_observer([this](const std::string& node, std::optional<std::string_view> value) {
      telemetry_->OnNodeAnnotation(node, value);
    });
    watch_->Start();
  }
  if (preemption_ != nullptr) preemption_->Start();
  {
    ControlLoop control(std::move(actions));
    // Announced only now that SIGTERM drains: one sent on seeing this line
    // (a test, a supervisor) must not find the default action, which kills.
    const bool tls = !options_.server.tls_cert_file.empty();
    LogInfo(absl::StrCat("serving on ", tls ? "https://" : "http://", options_.server.address, ":",
                         (*server)->port(), options_.url_prefix,
                         " (POST /filter, /prioritize, /bind; GET /healthz, /readyz, /metrics, /debug, /ui)",
                         tls ? ClientAuthNote(options_.client_auth) : ""));
    std::fflush(stderr);
    (*server)->Wait();
    if (webhook != nullptr) webhook->Wait();
    if (*read_only != nullptr) (*read_only)->Wait();
  }
  if (nudge_ != nullptr) nudge_->stop.store(true);
  if (capacity_ != nullptr) capacity_->Stop();
  if (preemption_ != nullptr) preemption_->Stop();
  // Released, so that a standby writes at once instead of after the term.
  if (lease_ != nullptr) lease_->Stop(/*release=*/true);
  if (watch_ != nullptr) watch_->Stop();
  LogInfo("stopped");
  return 0;
}

}  // namespace tessera
