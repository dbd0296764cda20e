// Tessera as extender/program.cc wires it, against a fake API server, for
// the integration tests: kube-scheduler's requests over HTTP to Tessera's
// server, Tessera's over HTTPS to the API server.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/policy_loader.h"
#include "extender/server/http_server.h"
#include "extender/service/binder.h"
#include "extender/service/debug_state.h"
#include "extender/service/extender_service.h"
#include "extender/service/request_dispatcher.h"
#include "extender/service/router.h"
#include "k8s/annotations.h"
#include "k8s/client/api_client.h"
#include "k8s/client/pod_api.h"
#include "k8s/sync/cluster_watch.h"
#include "policies/builtin_registry.h"
#include "test/testing/fake_api_server.h"
#include "test/testing/service_fixture.h"

namespace tessera::testing {

inline nlohmann::json GpuNode(const std::string& name, int gpus) {
  nlohmann::json node = FakeApiServer::MinimalNode(name);
  node["metadata"]["labels"]["nvidia.com/gpu.count"] = std::to_string(gpus);
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
  node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "81920";
  return node;
}

inline nlohmann::json PendingPod(const std::string& name, const std::string& fraction) {
  nlohmann::json pod = FakeApiServer::MinimalPod("ml", name);
  pod["metadata"]["annotations"][std::string(k8s::kGpuFraction)] = fraction;
  return pod;
}

// ExtenderArgs as kube-scheduler sends them with nodeCacheCapable: true.
inline std::string FilterArgs(const nlohmann::json& pod, const std::vector<std::string>& nodes) {
  nlohmann::json args;
  args["Pod"] = pod;
  args["Nodes"] = nullptr;
  args["NodeNames"] = nodes;
  return args.dump();
}

inline std::string BindArgs(const nlohmann::json& pod, const std::string& node) {
  return nlohmann::json{{"PodName", pod["metadata"]["name"]},
                        {"PodNamespace", pod["metadata"]["namespace"]},
                        {"PodUID", pod["metadata"]["uid"]},
                        {"Node", node}}
      .dump();
}

// What a test may change of Tessera's wiring.
struct TesseraOptions {
  DispatcherOptions dispatcher;
  std::chrono::milliseconds drain_timeout{25000};
};

// One Tessera, wired as extender/program.cc wires it: API client, watch,
// binder, extender service, router, dispatcher and HTTP server (2 io threads).
class Tessera {
 public:
  explicit Tessera(FakeApiServer& api, TesseraOptions tessera_options = {}) : registry_(NewBuiltinRegistry()) {
    k8s::ApiServerConfig config;
    config.host = "127.0.0.1";
    config.port = std::to_string(api.port());
    config.ca_pem = api.certs().ca.cert_pem;
    client_ = *k8s::ApiClient::Create(config);
    profile_ = *LoadPolicyText(kBinpackPolicy, "policy.yaml", registry_);
    k8s::ClusterWatchOptions watch_options;
    watch_options.min_backoff = absl::Milliseconds(20);
    watch_ = std::make_unique<k8s::ClusterWatch>(*client_, model_, pods_, &metrics_, watch_options);
    pod_api_ = std::make_unique<k8s::KubePodApi>(*client_);
    binder_ = std::make_unique<Binder>(model_, pods_, *pod_api_, [this] { return profile_; }, metrics_);
    handle_.snapshot = [this] { return model_.Current(); };
    handle_.profile = [this] { return profile_; };
    handle_.bind = binder_.get();
    handle_.synced = [this] { return watch_->synced(); };
    service_ = std::make_unique<ExtenderService>(handle_, metrics_);
    RouterOptions router_options;
    router_options.not_ready = [this] { return watch_->NotInStep(); };
    router_options.debug_state = [this] {
      const auto snapshot = model_.Current();
      return RenderDebugState({.snapshot = snapshot.get(),
                               .watches = {{"pods", watch_->pod_status()}},
                               .pod_problems = watch_->pod_problems(),
                               .source = "test"});
    };
    router_ = std::make_unique<Router>(std::move(router_options), *service_, metrics_);
    dispatcher_ = std::make_unique<RequestDispatcher>(tessera_options.dispatcher, *router_, metrics_);
    HttpServerOptions options;
    options.port = 0;
    options.drain_timeout = tessera_options.drain_timeout;
    server_ = *HttpServer::StartAsync(options, [this](HttpRequest r, HttpResponder respond) {
      dispatcher_->Handle(std::move(r), std::move(respond));
    });
    watch_->Start();
  }
  ~Tessera() {
    server_->Drain();
    server_->Wait();
    watch_->Stop();
  }

  uint16_t port() const { return server_->port(); }
  bool WaitForSync() { return watch_->WaitForSync(absl::Seconds(10)); }
  /// SIGTERM's drain; the future is ready once the server has stopped.
  std::future<void> Drain() {
    server_->Drain();
    return std::async(std::launch::async, [this] { server_->Wait(); });
  }
  std::string Metrics() { return metrics_.Render(); }
  ClusterModel& model() { return model_; }
  /// Pods the watch has shown Tessera: a bind reserves at once only for these
  /// (others are read from the API server on a bind thread, later).
  size_t KnownPods() const { return pods_.size(); }
  int64_t Held(std::string_view node, int32_t gpu) const {
    const auto s = model_.Current();
    const auto i = s->FindNode(node);
    return i ? s->View(*i).UsageOf(gpu).guaranteed.value() : -1;
  }

 private:
  PluginRegistry registry_;
  std::shared_ptr<const Profile> profile_;
  std::unique_ptr<k8s::ApiClient> client_;
  MetricsRegistry metrics_;
  ClusterModel model_;
  PodDirectory pods_;
  std::unique_ptr<k8s::ClusterWatch> watch_;
  std::unique_ptr<k8s::KubePodApi> pod_api_;
  std::unique_ptr<Binder> binder_;
  testing::FunctionHandle handle_;
  std::unique_ptr<ExtenderService> service_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<RequestDispatcher> dispatcher_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace tessera::testing
