// Keeps a number of keep-alive connections to the API server open, so that a
// burst of binds finds them ready.
//
// Without it the first binds of a burst each open a connection: dozens of
// TLS handshakes at once, which the API server pays for in CPU just when it
// is busiest (measured on the e2e benchmark: a bind took ~190 ms on average
// in a 400-pod burst, ~65 ms with the connections open). Connections idle
// for a minute are replaced (ApiClientOptions::max_idle_age), as the API
// server closes them after 90 s: about one handshake a second for 64
// connections, spread out rather than bunched.
#pragma once

#include <atomic>
#include <cstddef>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s/client/api_client.h"
#include "scheduler/common/clock.h"

namespace tessera::k8s {

class ConnectionWarmer {
 public:
  /// Connections worth keeping warm for binds: one per bind thread, up to
  /// this many; a burst past them opens more as it goes.
  static constexpr size_t kMaxConnections = 64;

  /// Calls client.KeepWarm(connections) now and then every `every` (by
  /// `clock`; tests drive a FakeClock) on a thread of its own. `client` and
  /// `clock` must outlive the warmer.
  ConnectionWarmer(ApiClient& client, size_t connections, absl::Duration every = absl::Seconds(20),
                   const Clock& clock = Clock::Real());
  /// Stops the thread (a connection being opened is opened first, within
  /// the connect timeout).
  ~ConnectionWarmer();
  ConnectionWarmer(const ConnectionWarmer&) = delete;
  ConnectionWarmer& operator=(const ConnectionWarmer&) = delete;

 private:
  void Run();

  ApiClient& client_;
  const size_t connections_;
  const absl::Duration every_;
  const Clock& clock_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;  // only to sleep on
  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace tessera::k8s
