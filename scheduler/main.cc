// tessera-extender: the scheduler extender kube-scheduler calls over HTTP.
// The only place with flags; everything else takes its configuration as values.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "config/cluster_file.h"
#include "config/policy_store.h"
#include "policies/builtin_registry.h"
#include "k8s/client/api_client.h"
#include "k8s/client/api_server_config.h"
#include "k8s/client/pod_api.h"
#include "k8s/sync/cluster_watch.h"
#include "scheduler/cache/cluster_model.h"
#include "scheduler/cache/pod_directory.h"
#include "scheduler/common/log.h"
#include "scheduler/framework/worker_pool.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/server/http_server.h"
#include "scheduler/service/binder.h"
#include "scheduler/service/debug_state.h"
#include "scheduler/service/extender_service.h"
#include "scheduler/service/router.h"
#include "scheduler/telemetry/telemetry_refresher.h"

ABSL_FLAG(std::string, address, "127.0.0.1", "Address to listen on.");
ABSL_FLAG(int, port, 8888, "Port to listen on (0: any free port, printed at start).");
ABSL_FLAG(int, threads, 2, "Threads serving requests.");
ABSL_FLAG(int, score_threads, -1,
          "Helper threads that share prioritize's work on nodes the score memo has not seen (a new pod shape, a "
          "policy reload). -1: one fewer than the CPUs the process may use (affinity, cgroup CPU limit), at most 7; "
          "0: none.");
ABSL_FLAG(std::string, policy_file, "config/examples/default-policy.yaml",
          "YAML policy file: plugins, weights, args. Reloaded on SIGHUP and when it changes.");
ABSL_FLAG(std::string, cluster_file, "",
          "Serve this cluster (nodes, GPUs, allocations) instead of one read from the API server.");
ABSL_FLAG(std::string, kubeconfig, "",
          "Kubeconfig to reach the API server (default: the in-cluster service account).");
ABSL_FLAG(std::string, kube_context, "", "Context of --kubeconfig to use (default: its current-context).");
ABSL_FLAG(absl::Duration, reservation_ttl, absl::Minutes(2),
          "How long a bind's GPUs count before the watch confirms the bound pod.");
ABSL_FLAG(absl::Duration, api_timeout, absl::Seconds(30), "Timeout of one API-server request.");
ABSL_FLAG(std::string, url_prefix, "", "Path prefix of kube-scheduler's urlPrefix (e.g. /scheduler).");
ABSL_FLAG(int64_t, max_body_bytes, int64_t{256} << 20, "Largest request body accepted (413 beyond).");
ABSL_FLAG(int, max_header_bytes, 16 << 10, "Largest request header accepted (431 beyond).");
ABSL_FLAG(absl::Duration, read_timeout, absl::Seconds(30), "Time to receive a whole request.");
ABSL_FLAG(absl::Duration, idle_timeout, absl::Seconds(120), "Time a keep-alive connection may sit idle.");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(25), "On SIGTERM, time to finish requests in flight.");
ABSL_FLAG(absl::Duration, policy_poll_interval, absl::Seconds(2),
          "How often to check the policy file for changes (0: only on SIGHUP).");

namespace tessera {
namespace {

// More helpers than this only add wake-ups: a request's nodes are split in
// chunks of ScoreMemo::kParallelGrain.
constexpr int kMaxScoreThreads = 64;

std::chrono::milliseconds Millis(absl::Duration d) { return std::chrono::milliseconds(absl::ToInt64Milliseconds(d)); }

int Run() {
  const int score_threads = absl::GetFlag(FLAGS_score_threads);
  if (score_threads < -1 || score_threads > kMaxScoreThreads) {
    LogError(absl::StrCat("--score_threads must be -1 (automatic), 0 (none) or 1..", kMaxScoreThreads, ", got ",
                          score_threads));
    return 2;
  }
  // Prioritize's helpers, shared by every request; started before anything
  // that could use them and joined after the server stops.
  WorkerPool score_pool(score_threads == -1 ? WorkerPool::DefaultThreads() : score_threads);
  LogInfo(absl::StrCat("score helper threads: ", score_pool.threads(),
                       " (--score_threads; they compute prioritize's nodes the score memo has not seen)"));

  MetricsRegistry metrics;
  const PluginRegistry registry = NewBuiltinRegistry();

  Counter& reload_ok = metrics.Counter("tessera_policy_reloads_total", "Policy reload attempts by result.",
                                       {{"result", "success"}});
  Counter& reload_failed = metrics.Counter("tessera_policy_reloads_total", "Policy reload attempts by result.",
                                           {{"result", "failure"}});
  const std::string policy_path = absl::GetFlag(FLAGS_policy_file);
  absl::StatusOr<std::unique_ptr<PolicyStore>> store =
      PolicyStore::Open(policy_path, registry, [&](const absl::Status& status) {
        if (status.ok()) {
          reload_ok.Inc();
          LogInfo(absl::StrCat("policy reloaded from ", policy_path));
        } else {
          reload_failed.Inc();
          LogError(absl::StrCat("policy reload refused, the previous policy stays in force:\n", status.message()));
        }
      });
  if (!store.ok()) {
    LogError(absl::StrCat("invalid policy file:\n", store.status().message()));
    return 2;
  }
  LogInfo(absl::StrCat("policy ", policy_path, ": plugins ", absl::StrJoin((*store)->Current()->PluginNames(), ", ")));

  ClusterModel model;
  PodDirectory pods;
  std::unique_ptr<k8s::ApiClient> api_client;
  std::unique_ptr<k8s::ClusterWatch> watch;
  std::unique_ptr<k8s::KubePodApi> pod_api;
  std::unique_ptr<Binder> binder;
  std::string source;
  if (const std::string cluster_file = absl::GetFlag(FLAGS_cluster_file); !cluster_file.empty()) {
    if (absl::Status st = LoadClusterFile(cluster_file, model); !st.ok()) {
      LogError(absl::StrCat("invalid cluster file:\n", st.message()));
      return 2;
    }
    source = absl::StrCat("cluster file ", cluster_file);
  } else {
    const std::string kubeconfig = absl::GetFlag(FLAGS_kubeconfig);
    absl::StatusOr<k8s::ApiServerConfig> config =
        kubeconfig.empty() ? k8s::InClusterConfig() : k8s::LoadKubeconfig(kubeconfig, absl::GetFlag(FLAGS_kube_context));
    if (!config.ok()) {
      LogError(absl::StrCat("cannot configure the API-server client: ", config.status().message()));
      return 2;
    }
    source = config->description;
    k8s::ApiClientOptions client_options;
    client_options.request_timeout = absl::GetFlag(FLAGS_api_timeout);
    absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = k8s::ApiClient::Create(*std::move(config), client_options);
    if (!client.ok()) {
      LogError(absl::StrCat("cannot configure the API-server client: ", client.status().message()));
      return 2;
    }
    api_client = std::move(*client);
    watch = std::make_unique<k8s::ClusterWatch>(*api_client, model, pods, &metrics);
    pod_api = std::make_unique<k8s::KubePodApi>(*api_client);
    binder = std::make_unique<Binder>(model, pods, *pod_api, [&] { return (*store)->Current(); }, metrics,
                                      BinderOptions{.reservation_ttl = absl::GetFlag(FLAGS_reservation_ttl)});
    LogInfo(absl::StrCat("API server: ", source, "; watching nodes and pods"));
  }
  const std::shared_ptr<const ClusterSnapshot> first = model.Publish();
  for (NodeIndex i = 0; i < first->node_count(); ++i) {
    const NodeState& n = first->node(i);
    if (!n.inventory_error.ok()) LogWarning(absl::StrCat("node ", n.name, ": ", n.inventory_error.message()));
    for (const std::string& p : n.problems) LogWarning(absl::StrCat("node ", n.name, ": ", p));
  }
  LogInfo(absl::StrCat("cluster model: ", first->node_count(), " nodes, ", first->gpu_count(), " GPUs"));

  // Live GPU metrics (the policy's telemetry: section), refreshed in the
  // background into the model; re-applied after every policy reload.
  TelemetryRefresher telemetry(model, metrics);
  if (absl::Status st = telemetry.Configure((*store)->CurrentTelemetry()); !st.ok()) {
    LogError(absl::StrCat("invalid telemetry settings: ", st.message()));
    return 2;
  }
  auto apply_telemetry = [&] {
    if (absl::Status st = telemetry.Configure((*store)->CurrentTelemetry()); !st.ok()) {
      LogError(absl::StrCat("telemetry settings not applied: ", st.message()));
    }
  };

  ExtenderService service({.snapshot = [&] { return model.Current(); },
                           .profile = [&] { return (*store)->Current(); },
                           .binder = binder.get(),
                           .synced = [&] { return watch == nullptr || watch->synced(); },
                           .score_pool = &score_pool},
                          metrics);
  RouterOptions router_options{
      .url_prefix = absl::GetFlag(FLAGS_url_prefix),
      // Answers from a half-synced model would place pods on GPUs that are
      // taken: not ready until both initial lists are in.
      .ready = [&] { return watch == nullptr || watch->synced(); },
      .debug_state =
          [&] {
            const std::shared_ptr<const ClusterSnapshot> snapshot = model.Current();
            DebugInputs in;
            in.snapshot = snapshot.get();
            in.source = source;
            if (watch != nullptr) {
              in.watches = {{"nodes", watch->node_status()}, {"pods", watch->pod_status()}};
              in.pod_problems = watch->pod_problems();
            }
            return RenderDebugState(in);
          },
      .refresh_gauges =
          [&] {
            const auto snapshot = model.Current();
            metrics.Gauge("tessera_model_nodes", "Nodes in the cluster model.").Set(double(snapshot->node_count()));
            metrics.Gauge("tessera_model_gpus", "GPUs in the cluster model.").Set(double(snapshot->gpu_count()));
            metrics.Gauge("tessera_model_nodes_inventory_errors", "Nodes whose GPU inventory is unparsable.")
                .Set(double(snapshot->nodes_with_inventory_errors()));
            metrics.Gauge("tessera_binds_in_flight", "Bind reservations not yet confirmed by the watch.")
                .Set(double(model.reservation_count()));
            if (watch != nullptr) {
              metrics.Gauge("tessera_watch_synced", "1 once both initial lists (nodes, pods) are applied.")
                  .Set(watch->synced() ? 1.0 : 0.0);
              metrics.Gauge("tessera_pod_assignment_problems", "Pods whose assignment annotation is inconsistent now.")
                  .Set(double(watch->pod_problems().size()));
            }
          },
  };
  Router router(std::move(router_options), service, metrics);

  HttpServerOptions options;
  options.address = absl::GetFlag(FLAGS_address);
  options.port = static_cast<uint16_t>(absl::GetFlag(FLAGS_port));
  options.threads = absl::GetFlag(FLAGS_threads);
  options.body_limit = static_cast<size_t>(absl::GetFlag(FLAGS_max_body_bytes));
  options.header_limit = static_cast<uint32_t>(absl::GetFlag(FLAGS_max_header_bytes));
  options.read_timeout = Millis(absl::GetFlag(FLAGS_read_timeout));
  options.idle_timeout = Millis(absl::GetFlag(FLAGS_idle_timeout));
  options.drain_timeout = Millis(absl::GetFlag(FLAGS_drain_timeout));
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(options, [&router](const HttpRequest& r) { return router.Handle(r); });
  if (!server.ok()) {
    LogError(absl::StrCat("cannot serve: ", server.status().message()));
    return 1;
  }
  const std::string base = absl::StrCat("http://", options.address, ":", (*server)->port(),
                                        absl::GetFlag(FLAGS_url_prefix));
  LogInfo(absl::StrCat("serving on ", base, " (POST /filter, /prioritize, /bind; GET /healthz, /readyz, /metrics, /debug)"));
  std::fflush(stderr);

  // Signals and the policy-file poll run on their own small io_context, so a
  // busy request pool never delays a SIGTERM or a reload.
  boost::asio::io_context control;
  boost::asio::signal_set stop_signals(control, SIGTERM, SIGINT);
  boost::asio::signal_set hup(control, SIGHUP);
  boost::asio::steady_timer poll(control);
  boost::asio::steady_timer expiry(control);
  const absl::Duration poll_every = absl::GetFlag(FLAGS_policy_poll_interval);

  stop_signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    LogInfo(absl::StrCat("signal ", signal, ": draining requests in flight"));
    (*server)->Drain();
    hup.cancel();
    poll.cancel();
    expiry.cancel();
  });
  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      LogInfo("SIGHUP: reloading the policy file");
      (void)(*store)->Reload();  // on_reload logs and counts the outcome
      apply_telemetry();
      wait_hup();
    });
  };
  wait_hup();
  std::function<void()> wait_poll = [&] {
    if (poll_every <= absl::ZeroDuration()) return;
    poll.expires_after(Millis(poll_every));
    poll.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if ((*store)->ReloadIfChanged()) apply_telemetry();
      wait_poll();
    });
  };
  wait_poll();
  // Binds whose bound pod the watch never showed release their GPUs. Only
  // while the watch is in sync: a confirmation cannot arrive through a
  // broken watch, and releasing then could double-allocate.
  std::function<void()> wait_expiry = [&] {
    if (binder == nullptr) return;
    expiry.expires_after(std::chrono::seconds(5));
    expiry.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (watch->synced()) binder->ExpireReservations(absl::Now());
      wait_expiry();
    });
  };
  wait_expiry();
  if (watch != nullptr) {
    watch->set_utilization_observer([&telemetry](const std::string& node, std::optional<std::string_view> value) {
      telemetry.OnNodeAnnotation(node, value);
    });
    watch->Start();
  }
  std::thread control_thread([&] { control.run(); });

  (*server)->Wait();
  control.stop();
  control_thread.join();
  if (watch != nullptr) watch->Stop();
  LogInfo("stopped");
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("GPU-aware scheduler extender for kube-scheduler. See README.md.");
  // Kubernetes tools spell flags with dashes (--cluster-file); abseil names
  // them with underscores. Accept both by rewriting the names before parsing.
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
  }
  std::vector<char*> argv2;
  for (std::string& a : args) argv2.push_back(a.data());
  absl::ParseCommandLine(static_cast<int>(argv2.size()), argv2.data());
  return tessera::Run();
}
