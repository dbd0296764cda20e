// tessera-node-agent: publishes a node's GPUs (inventory, topology, health)
// as the annotations Tessera reads. One per GPU node (a DaemonSet).
//
// flags -> NVML -> API client -> loop until SIGTERM/SIGINT. Exit codes: 0
// after a clean stop (or --print), 1 when NVML cannot be loaded or started
// (the message says why), 2 for a bad flag or an API-server client it cannot
// configure.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/common/flag_names.h"
#include "scheduler/common/flags_reference.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "agent/node_agent.h"
#include "k8s/client/api_client.h"
#include "k8s/client/api_server_config.h"
#include "scheduler/common/json_text.h"
#include "scheduler/common/log.h"
#include "scheduler/common/mutex_mode.h"

ABSL_FLAG(std::string, node_name, "", "The node to annotate (default: $NODE_NAME, from the downward API).");
ABSL_FLAG(std::string, kubeconfig, "", "Kubeconfig file (default: the in-cluster service account).");
ABSL_FLAG(std::string, kube_context, "", "Context of --kubeconfig to use (default: its current-context).");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(60),
          "How often the GPUs are probed and the annotations checked (1s..1h); a critical XID publishes at once.");
ABSL_FLAG(absl::Duration, api_timeout, absl::Seconds(30), "Timeout of one API-server request.");
ABSL_FLAG(std::string, nvml_library, "",
          "NVML to load (default: $TESSERA_NVML_LIBRARY, else libnvidia-ml.so.1 from the loader's path).");
ABSL_FLAG(std::string, ignored_xids, "",
          "Comma-separated XIDs that leave a GPU healthy, besides the application errors 13,31,43,45,68,109.");
ABSL_FLAG(bool, print_reference, false,
          "Print this binary's flags as docs/reference/node-agent-flags.md and exit.");
ABSL_FLAG(bool, print, false, "Probe once, print the annotations as JSON to stdout and exit; no API server.");

namespace tessera::agent {
namespace {

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

absl::StatusOr<NodeAgentOptions> OptionsFromFlags() {
  NodeAgentOptions o;
  o.interval = absl::GetFlag(FLAGS_interval);
  if (o.interval < absl::Seconds(1) || o.interval > absl::Hours(1)) {
    return absl::InvalidArgumentError(absl::StrCat("--interval=", absl::FormatDuration(o.interval), ": must be 1s..1h"));
  }
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_ignored_xids), ',', absl::SkipWhitespace())) {
    uint64_t xid = 0;
    if (!absl::SimpleAtoi(item, &xid)) {
      return absl::InvalidArgumentError(absl::StrCat("--ignored-xids: \"", item, "\" is not an XID number"));
    }
    o.ignored_xids.insert(xid);
  }
  return o;
}

// The annotations of one probe, as a JSON object (what --print shows).
int PrintOnce(NvmlLibrary& nvml) {
  absl::StatusOr<NodeGpus> gpus = ProbeGpus(nvml, {}, nullptr);
  if (!gpus.ok()) {
    LogError(absl::StrCat("probe: ", gpus.status().message()));
    return 1;
  }
  for (const std::string& note : gpus->notes) LogWarning(note);
  std::string out = "{";
  for (const auto& [key, value] : AnnotationsOf(*gpus)) {
    if (!value.has_value()) continue;
    absl::StrAppend(&out, out.size() > 1 ? ",\n " : "\n ", "\"", key, "\": ");
    AppendJsonString(out, *value);
  }
  std::printf("%s\n}\n", out.c_str());
  return 0;
}

absl::StatusOr<std::unique_ptr<k8s::ApiClient>> ApiClientFromFlags() {
  const std::string kubeconfig = absl::GetFlag(FLAGS_kubeconfig);
  absl::StatusOr<k8s::ApiServerConfig> config =
      kubeconfig.empty() ? k8s::InClusterConfig() : k8s::LoadKubeconfig(kubeconfig, absl::GetFlag(FLAGS_kube_context));
  if (!config.ok()) return config.status();
  k8s::ApiClientOptions options;
  options.request_timeout = absl::GetFlag(FLAGS_api_timeout);
  options.max_idle_connections = 1;
  options.user_agent = "tessera-node-agent";
  return k8s::ApiClient::Create(*std::move(config), options);
}

// Runs until SIGTERM or SIGINT; the signals are taken by a thread of their
// own (sigwait), so no handler runs inside NVML or the API client.
int Serve(NvmlLibrary& nvml, const std::string& node_name, const NodeAgentOptions& options) {
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> api = ApiClientFromFlags();
  if (!api.ok()) {
    LogError(absl::StrCat("API server: ", api.status().message()));
    return 2;
  }
  NodePublisher publisher(**api, node_name);
  NodeAgent agent(nvml, publisher, options);
  absl::Notification stop;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    LogInfo(absl::StrCat("signal ", signal, ": stopping"));
    stop.Notify();
  });
  LogInfo(absl::StrCat("node ", node_name, ": watching its GPUs through ", nvml.path(), " every ",
                       absl::FormatDuration(options.interval)));
  agent.Run(stop);
  waiter.join();
  return 0;
}

}  // namespace
}  // namespace tessera::agent

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::agent;
  UseReleaseMutexMode();
  // Blocked before any thread starts, so every thread inherits the mask and
  // only Serve's sigwait takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::SetProgramUsageMessage("Publishes a node's GPU inventory, topology and health for Tessera. See README.md.");
  tessera::AcceptDashedFlagNames(argc, argv);  // --node-name as well as --node_name
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_print_reference)) {
    std::fputs(("# tessera-node-agent flags\n\n<!-- Generated by scripts/generate-reference.sh from the ABSL_FLAG "
                "lines (tessera-node-agent --print-reference); do not edit by hand. -->\n\n" +
                FlagsReferenceMarkdown({"agent/main.cc"}))
                   .c_str(),
               stdout);
    return 0;
  }
  absl::StatusOr<NodeAgentOptions> options = OptionsFromFlags();
  const bool print = absl::GetFlag(FLAGS_print);
  const std::string node_name = absl::GetFlag(FLAGS_node_name).empty() ? EnvOr("NODE_NAME", "")
                                                                         : absl::GetFlag(FLAGS_node_name);
  if (!options.ok() || (!print && node_name.empty())) {
    LogError(options.ok() ? std::string("no node to annotate: pass --node-name or set $NODE_NAME")
                          : std::string(options.status().message()));
    return 2;
  }
  const std::string library = absl::GetFlag(FLAGS_nvml_library).empty()
                                  ? EnvOr("TESSERA_NVML_LIBRARY", std::string(kDefaultNvmlLibrary))
                                  : absl::GetFlag(FLAGS_nvml_library);
  absl::StatusOr<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Load(library);
  absl::Status started = nvml.ok() ? (*nvml)->Init() : nvml.status();
  if (!started.ok()) {
    LogError(absl::StrCat("NVML: ", started.message()));
    return 1;
  }
  return print ? PrintOnce(**nvml) : Serve(**nvml, node_name, *options);
}
