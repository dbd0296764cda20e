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
#include "scheduler/cache/cluster_model.h"
#include "scheduler/common/log.h"
#include "scheduler/metrics/metrics.h"
#include "scheduler/model/absl_compat.h"
#include "scheduler/server/http_server.h"
#include "scheduler/service/extender_service.h"
#include "scheduler/service/router.h"

ABSL_FLAG(std::string, address, "127.0.0.1", "Address to listen on.");
ABSL_FLAG(int, port, 8888, "Port to listen on (0: any free port, printed at start).");
ABSL_FLAG(int, threads, 2, "Threads serving requests.");
ABSL_FLAG(std::string, policy_file, "config/examples/default-policy.yaml",
          "YAML policy file: plugins, weights, args. Reloaded on SIGHUP and when it changes.");
ABSL_FLAG(std::string, cluster_file, "",
          "Serve this cluster (nodes, GPUs, allocations) instead of one read from the API server.");
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

std::chrono::milliseconds Millis(absl::Duration d) { return std::chrono::milliseconds(absl::ToInt64Milliseconds(d)); }

int Run() {
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
  if (const std::string cluster_file = absl::GetFlag(FLAGS_cluster_file); !cluster_file.empty()) {
    if (absl::Status st = LoadClusterFile(cluster_file, model); !st.ok()) {
      LogError(absl::StrCat("invalid cluster file:\n", st.message()));
      return 2;
    }
  } else {
    LogWarning("no --cluster-file: the cluster model is empty (the API-server watch is not part of this version)");
  }
  const std::shared_ptr<const ClusterSnapshot> first = model.Publish();
  for (NodeIndex i = 0; i < first->node_count(); ++i) {
    const NodeState& n = first->node(i);
    if (!n.inventory_error.ok()) LogWarning(absl::StrCat("node ", n.name, ": ", n.inventory_error.message()));
    for (const std::string& p : n.problems) LogWarning(absl::StrCat("node ", n.name, ": ", p));
  }
  LogInfo(absl::StrCat("cluster model: ", first->node_count(), " nodes, ", first->gpu_count(), " GPUs"));

  ExtenderService service({.snapshot = [&] { return model.Current(); },
                           .profile = [&] { return (*store)->Current(); }},
                          metrics);
  RouterOptions router_options{
      .url_prefix = absl::GetFlag(FLAGS_url_prefix),
      .ready = [] { return true; },
      .refresh_gauges =
          [&] {
            const auto snapshot = model.Current();
            metrics.Gauge("tessera_model_nodes", "Nodes in the cluster model.").Set(double(snapshot->node_count()));
            metrics.Gauge("tessera_model_gpus", "GPUs in the cluster model.").Set(double(snapshot->gpu_count()));
            metrics.Gauge("tessera_model_nodes_inventory_errors", "Nodes whose GPU inventory is unparsable.")
                .Set(double(snapshot->nodes_with_inventory_errors()));
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
  LogInfo(absl::StrCat("serving on ", base, " (POST /filter, /prioritize; GET /healthz, /readyz, /metrics)"));
  std::fflush(stderr);

  // Signals and the policy-file poll run on their own small io_context, so a
  // busy request pool never delays a SIGTERM or a reload.
  boost::asio::io_context control;
  boost::asio::signal_set stop_signals(control, SIGTERM, SIGINT);
  boost::asio::signal_set hup(control, SIGHUP);
  boost::asio::steady_timer poll(control);
  const absl::Duration poll_every = absl::GetFlag(FLAGS_policy_poll_interval);

  stop_signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    LogInfo(absl::StrCat("signal ", signal, ": draining requests in flight"));
    (*server)->Drain();
    hup.cancel();
    poll.cancel();
  });
  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      LogInfo("SIGHUP: reloading the policy file");
      (void)(*store)->Reload();  // on_reload logs and counts the outcome
      wait_hup();
    });
  };
  wait_hup();
  std::function<void()> wait_poll = [&] {
    if (poll_every <= absl::ZeroDuration()) return;
    poll.expires_after(Millis(poll_every));
    poll.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      (*store)->ReloadIfChanged();
      wait_poll();
    });
  };
  wait_poll();
  std::thread control_thread([&] { control.run(); });

  (*server)->Wait();
  control.stop();
  control_thread.join();
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
