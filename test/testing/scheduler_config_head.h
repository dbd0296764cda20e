// What every kube-scheduler configuration template here shares with
// ../shared/kube's (up.sh fills in the @...@ placeholders): the client, the
// leader election and the two profiles, everything but `extenders:`.
#pragma once

namespace tessera::testing {

inline constexpr char kSchedulerConfigHead[] = R"(apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: "@KUBECONFIG@"
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: @LEADER_ELECT@
  resourceNamespace: kube-system
  resourceName: kube-scheduler
  leaseDuration: @LEASE_DURATION@
  renewDeadline: @RENEW_DEADLINE@
  retryPeriod: @RETRY_PERIOD@
percentageOfNodesToScore: 100
profiles:
  - schedulerName: default-scheduler
  - schedulerName: tessera-scheduler
)";

}  // namespace tessera::testing
