// An extender that does nothing but answer: what kube-scheduler pays for
// calling any extender, measured beside Tessera (e2e_throughput's null modes).
//
// Its filter passes on the first node it is given, at once (as Tessera's
// shortlist of one, so kube-scheduler skips scoring); with a binder, its bind
// posts the pod's Binding and answers, as Tessera's bind does, from a pool of
// threads of its own, over connections kept warm as Tessera keeps them
// (k8s::ConnectionWarmer): cold, the burst's first binds would each open one,
// slowing its start as Tessera's is not. It keeps no model, reads nothing
// but the request, and places pods without regard to GPUs: a ceiling to
// compare against, not a scheduler.
#pragma once

#include <cstdint>
#include <memory>

#include <boost/asio/thread_pool.hpp>

#include "absl/status/statusor.h"
#include "extender/server/http_server.h"
#include "k8s/client/api_client.h"
#include "k8s/client/connection_warmer.h"

namespace tessera::bench {

class NullExtender {
 public:
  /// Listens on 127.0.0.1:`port`. `binder` null: filter only (kube-scheduler
  /// binds); else bind posts through it on `bind_threads` threads.
  static absl::StatusOr<std::unique_ptr<NullExtender>> Start(uint16_t port, std::unique_ptr<k8s::ApiClient> binder,
                                                             int bind_threads = 64);
  ~NullExtender();
  NullExtender(const NullExtender&) = delete;
  NullExtender& operator=(const NullExtender&) = delete;

 private:
  NullExtender() = default;

  std::unique_ptr<k8s::ApiClient> binder_;
  std::unique_ptr<k8s::ConnectionWarmer> warmer_;  // of binder_'s connections; stops before binder_ goes
  std::unique_ptr<boost::asio::thread_pool> bind_pool_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace tessera::bench
