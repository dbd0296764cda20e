#include "k8s/client/connection_warmer.h"

#include "scheduler/common/thread_name.h"

namespace tessera::k8s {

ConnectionWarmer::ConnectionWarmer(ApiClient& client, size_t connections, absl::Duration every, const Clock& clock)
    : client_(client), connections_(connections), every_(every), clock_(clock), thread_([this] { Run(); }) {}

ConnectionWarmer::~ConnectionWarmer() {
  {
    absl::MutexLock lock(&mu_);  // so that the sleep sees it at once
    stop_.store(true);
  }
  thread_.join();
}

void ConnectionWarmer::Run() {
  NameThisThread("api-warmer");
  while (true) {
    // A round never outlasts the period; an unreachable API server only
    // means the next round tries again (the watch reports the outage).
    (void)client_.KeepWarm(connections_, absl::Now() + every_, &stop_);
    absl::MutexLock lock(&mu_);
    auto stopped = [this] { return stop_.load(); };
    if (clock_.AwaitWithTimeout(mu_, absl::Condition(&stopped), every_)) return;
  }
}

}  // namespace tessera::k8s
