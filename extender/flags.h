// The extender's command line, read once into plain values. The only place
// with flags: every component below takes its settings as ProgramOptions.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "extender/server/http_server.h"
#include "scheduler/common/flag_names.h"  // AcceptDashedFlagNames, for main()
#include "k8s/admission/pod_mutation.h"
#include "k8s/sync/leader_lease.h"

namespace tessera {

/// Which callers of the extender listener must present a client certificate
/// that --tls-client-ca-file verifies (--tls-client-auth).
enum class ClientAuth {
  kNone,   ///< nobody: no client certificates are asked for
  kVerbs,  ///< the verbs that change the cluster (bind, preempt); filter, prioritize and the probes stay open
  kAll,    ///< every connection, at the TLS handshake
};

/// Everything the command line sets, validated.
struct ProgramOptions {
  /// The extender listener (--address, --port, --tls-*): the verbs, the
  /// probes, /metrics. Beyond loopback only with TLS or --allow-insecure-listen.
  HttpServerOptions server;
  /// --tls-client-auth; the server's needs_client_cert is set from it where
  /// the router is known (Program), tls_require_client_cert here.
  ClientAuth client_auth = ClientAuth::kNone;
  /// A second, plain-HTTP listener that answers GET only (/healthz, /readyz,
  /// /metrics, /debug) and refuses every verb (403): for kubelet probes and
  /// Prometheus while the verbs stay on loopback or behind client
  /// certificates. port 0: none.
  HttpServerOptions read_only_server;
  /// Path prefix of kube-scheduler's urlPrefix ("/scheduler").
  std::string url_prefix;
  /// Prioritize's helper threads; -1: WorkerPool::DefaultThreads().
  int score_threads = -1;
  std::string policy_file;
  /// 0: reload only on SIGHUP.
  absl::Duration policy_poll_interval;
  /// Non-empty: serve this cluster instead of watching an API server.
  std::string cluster_file;
  /// Empty: the in-cluster service account.
  std::string kubeconfig;
  std::string kube_context;
  absl::Duration reservation_ttl;
  /// The spec.schedulerName of the pods Tessera schedules; once ready, it
  /// nudges those still pending so that kube-scheduler retries them at once.
  /// Empty: no nudge.
  std::string scheduler_name;
  absl::Duration api_timeout;
  /// API-server mode: what Tessera writes on its own initiative (the nudge)
  /// comes only from the replica holding `lease` (k8s/sync/leader_lease.h).
  /// Off: this replica always writes (one replica, or tests).
  bool leader_elect = true;
  k8s::LeaseOptions lease;
  /// API-server mode: the writer keeps each GPU node's tessera.io/gpu-milli
  /// and gpu-memory-mib extended resources equal to its inventory
  /// (k8s/sync/capacity_publisher.h).
  bool publish_gpu_capacity = true;
  /// API-server mode: Tessera's own preemption (extender/service/preemption_loop.h).
  bool preemption = true;
  /// Threads that run binds, each waiting on the API server.
  int bind_threads = 64;
  /// Time a bind may take from its arrival: below kube-scheduler's extender
  /// httpTimeout.
  absl::Duration bind_timeout;
  /// The mutating admission webhook's HTTPS listener (--webhook-*): port 0
  /// means no webhook; otherwise tls_cert_file and tls_key_file are set.
  HttpServerOptions webhook_server;
  /// What the webhook writes into GPU pods (schedulerName, enforcement).
  k8s::PodMutationOptions mutation;
};

/// The parsed flags as options, each checked against its range.
/// \return InvalidArgument naming the flag, its value and its range
///   ("--port must be 0..65535, got 70000"), for every flag out of range,
///   and for an extender listener beyond loopback without TLS (unless
///   --allow-insecure-listen).
absl::StatusOr<ProgramOptions> OptionsFromFlags();

}  // namespace tessera
