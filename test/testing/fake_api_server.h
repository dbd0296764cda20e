// A fake Kubernetes API server for tests: real Kubernetes JSON over HTTPS on
// 127.0.0.1, backed by an in-memory store of Nodes and Pods, with the fault
// injection a production API client must survive.
//
//   test thread ──AddPod/UpdatePod/...──> store (mutex) ──events──> history
//                                           │                         │
//   client ──TLS──> session (coroutine, one io thread) ──list/get/patch/bind
//                                           └──watch: replay history after N,
//                                              then live events, bookmarks
//
// What it serves, as the real API server does (v1 core group only):
//   GET   /api/v1/nodes[?limit&continue&fieldSelector&labelSelector&resourceVersion]
//   GET   /api/v1/nodes/{name}
//   GET   /api/v1/pods, /api/v1/namespaces/{ns}/pods            (same query)
//   GET   /api/v1/namespaces/{ns}/pods/{name}
//   GET   any list path with watch=1|true [&resourceVersion=N]
//         [&allowWatchBookmarks=true][&timeoutSeconds=T]: a chunked stream of
//         one JSON event per line {"type":...,"object":{...}}.
//   PATCH /api/v1/namespaces/{ns}/pods/{name}   (merge, strategic-merge, json-patch)
//   GET, PATCH /api/v1/namespaces/{ns}/pods/{name}/status   (the status subresource)
//   PATCH /api/v1/nodes/{name}                   (the same)
//   POST  /api/v1/namespaces/{ns}/pods/{name}/binding and /api/v1/namespaces/{ns}/bindings
//   POST  /api/v1/namespaces/{ns}/pods/{name}/eviction   (a policy/v1 Eviction)
// Errors are Status objects ({"kind":"Status","status":"Failure","reason":...,"code":...}).
//
// Semantics worth knowing when writing a client against it:
// * One global resourceVersion counter; every mutation bumps it and appends an
//   event to the history. Objects carry metadata.resourceVersion as a string.
// * List items omit kind/apiVersion (the real server does too); watch event
//   objects carry them. Lists are ordered by key (name, or namespace/name).
// * Pagination: `limit` gives pages and an opaque `continue` token (base64 of
//   {"v":"meta.k8s.io/v1","rv":N,"start":key}). Later pages are read from the
//   current store (not a snapshot) but report the first page's resourceVersion,
//   so a client that watches from it sees everything that changed meanwhile.
//   A token older than the compacted history answers 410 Expired.
// * Watch from resourceVersion "" or "0": synthetic ADDED for every matching
//   object, then live events. From N: every event after N, then live events; N
//   older than the compacted history answers 410 (or an ERROR event, see
//   FakeApiServerOptions::expired_watch_answer). The stream ends cleanly (final
//   chunk, connection kept alive) at timeoutSeconds.
// * fieldSelector: spec.nodeName, status.phase, metadata.name and
//   metadata.namespace with = / == / !=, comma-joined. On a watch an object
//   that starts matching arrives as ADDED and one that stops matching as
//   DELETED, as from the real watch cache. Unknown selectors are ignored (they
//   are visible in the request log). labelSelector is ignored.
// * PATCH preconditions: metadata.uid in the patch body must match the stored
//   object's (422 Invalid "metadata.uid: ... field is immutable" otherwise, as
//   kube-apiserver v1.26 answers a merge or strategic-merge patch), and so must
//   metadata.resourceVersion (409 Conflict otherwise). name, namespace and uid
//   cannot be changed by a patch. A PATCH of pods/{name}/status keeps the
//   stored spec, whatever the patch says (so it sets status.nominatedNodeName,
//   a null removes it).
// * Binding: sets spec.nodeName and a PodScheduled=True condition and answers
//   201 with a Success Status; 409 when the pod is already bound or the
//   Binding's metadata.uid differs; 404 when the pod is missing.
// * Eviction (what kube-apiserver v1.26 does, test/control_plane/eviction_test.cc):
//   404 when the pod is missing; 400 when the Eviction's metadata.name is not
//   the URL's; 429 TooManyRequests (the budget named in details.causes) when
//   RefuseEvictions() covers the pod and it is Running and not being deleted
//   (budgets do not guard Pending, Succeeded or Failed pods); 409 when
//   deleteOptions.preconditions.uid differs (the real server retries that for
//   ~10 s first on a pod that is not Running; DelayNext() stages it). Else 201
//   with a Success Status, and the pod gets a DisruptionTarget condition
//   (MODIFIED), then metadata.deletionTimestamp (MODIFIED), then: a pod that
//   is unbound, finished, or whose spec.terminationGracePeriodSeconds is 0 is
//   DELETED at once; any other stays marked, as for a kubelet to stop it
//   (DeletePod() is that kubelet). The grace period defaults to 30 s when the
//   spec has none, as the real server's defaulting sets it.
//
// Threading: every public method is thread-safe and may be called while
// clients are connected. Methods that act on open connections (DropAllWatches,
// InjectMalformedEvent, ...) have taken effect on the io thread when they
// return. Stop() and the destructor must not be called from a request (there
// is no callback into test code from the io thread, so this cannot happen by
// accident).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "test/testing/tls_test_certs.h"

namespace tessera::testing {

/// The kinds of object the fake serves.
enum class FakeResource { kNodes, kPods };

/// How a watch from a compacted resourceVersion is refused. Both occur with
/// real API servers (etcd vs. watch cache), so clients must handle both.
enum class ExpiredWatchAnswer {
  kHttp410,     ///< HTTP 410 with an Expired Status body, no stream.
  kErrorEvent,  ///< HTTP 200 stream whose only event is ERROR with a 410 Status.
};

/// Malformed lines InjectMalformedEvent can write into a watch stream.
enum class MalformedEvent {
  kNotJson,        ///< `{"type":"MODIFIED","object":{"kind":` (truncated JSON).
  kMissingObject,  ///< `{"type":"MODIFIED"}`.
  kUnknownType,    ///< `{"type":"EXPLODED","object":{...a valid pod or node...}}`.
};

/// Configuration of a FakeApiServer.
struct FakeApiServerOptions {
  /// When set, every request must carry `Authorization: Bearer <token>`;
  /// others get 401 Unauthorized. Changeable later with SetBearerToken().
  std::string bearer_token;
  /// When true the TLS handshake fails unless the client presents a
  /// certificate signed by the test CA.
  bool require_client_cert = false;
  /// Period of BOOKMARK events on streams that allowed them; 0 disables the
  /// periodic ones (SendBookmarks() still works).
  std::chrono::milliseconds bookmark_interval{1000};
  /// How a watch from a compacted resourceVersion is refused.
  ExpiredWatchAnswer expired_watch_answer = ExpiredWatchAnswer::kHttp410;
  /// What to put into the generated certificates.
  TlsTestCertOptions certs;
};

/// Selects requests for fault injection. Empty fields match anything.
/// Examples: FailNext({"GET", "/api/v1/pods", /*watch=*/true}, 500) fails the
/// next pod watch; DelayNext({"PATCH"}, 2s) delays the next PATCH.
struct RequestMatch {
  RequestMatch(std::string method = "", std::string path_prefix = "", std::optional<bool> watch = std::nullopt)
      : method(std::move(method)), path_prefix(std::move(path_prefix)), watch(watch) {}

  std::string method;         ///< "GET", "PATCH", "POST"; "" matches any.
  std::string path_prefix;    ///< Prefix of the path (query excluded); "" matches any.
  std::optional<bool> watch;  ///< true: only watch requests; false: only non-watch.
};

/// One request as the server received it, and what it answered.
struct RecordedRequest {
  std::string method;                          ///< "GET", "PATCH", ...
  std::string target;                          ///< Path and query as sent.
  std::string path;                            ///< Percent-decoded path without the query.
  std::map<std::string, std::string> query;    ///< Percent-decoded query parameters.
  std::map<std::string, std::string> headers;  ///< Lower-case names.
  std::string body;
  bool watch = false;  ///< A watch request (watch=1|true).
  /// Subject CN of the verified client certificate; empty when none.
  std::string client_cert_common_name;
  /// Status answered (200 for a watch stream that started); 0 when the
  /// connection was dropped before an answer (e.g. Stop() during a delay).
  int status = 0;
  /// When the server read it (its monotonic clock), for tests of retry pacing.
  std::chrono::steady_clock::time_point received{};
};

/// Style of the kubeconfig Kubeconfig() writes.
struct KubeconfigOptions {
  /// true: certificate-authority-data / client-*-data (base64 PEM);
  /// false: certificate-authority / client-* file paths (TlsTestCertFiles).
  bool inline_data = true;
  /// Include client-certificate(-data) and client-key(-data).
  bool client_cert = false;
  /// Include `token:` with the configured bearer token (when one is set).
  bool token = true;
  /// Add `insecure-skip-tls-verify: true` and omit the CA.
  bool insecure_skip_tls_verify = false;
  /// Server URL; empty: url().
  std::string server;
};

/// The fake API server. Not copyable or movable.
class FakeApiServer {
 public:
  /// Generates the certificates; listens only after Start().
  explicit FakeApiServer(FakeApiServerOptions options = {});
  /// Stop()s.
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // --- lifecycle -------------------------------------------------------------

  /// Listens on 127.0.0.1 and starts the io thread. The first Start() picks an
  /// ephemeral port; later ones (after Stop()) bind the same port again, so a
  /// client reconnects to the "restarted" server. The store survives Stop().
  /// \return Unavailable when the port cannot be bound, Internal when the
  ///         certificates could not be generated, FailedPrecondition when
  ///         already running.
  absl::Status Start();
  /// Closes the listener and every connection (watch streams end without a
  /// final chunk, like a crashed server) and joins the io thread. Idempotent.
  void Stop();
  [[nodiscard]] bool running() const;

  /// The port (0 before the first Start()).
  [[nodiscard]] uint16_t port() const;
  /// "https://127.0.0.1:<port>".
  [[nodiscard]] std::string url() const;
  /// The certificates the server uses (CA to trust, client cert to present).
  [[nodiscard]] const TlsTestCerts& certs() const;
  /// The certificates as files (written on first call; removed with the server).
  absl::StatusOr<const TlsTestCertFiles*> cert_files();
  /// A kubeconfig (YAML) for this server: one cluster, user and context
  /// named "fake", current-context set.
  absl::StatusOr<std::string> Kubeconfig(const KubeconfigOptions& options = {});
  /// Writes Kubeconfig(options) next to the cert files; returns its path.
  absl::StatusOr<std::string> WriteKubeconfig(const KubeconfigOptions& options = {});

  /// Replaces the accepted bearer token (token rotation); "" disables the check.
  void SetBearerToken(std::string token);

  // --- object store (each mutation emits one watch event) --------------------

  /// A minimal valid Node: apiVersion, kind, metadata.name, empty labels,
  /// status.allocatable/capacity with cpu "8" and memory "32Gi".
  [[nodiscard]] static nlohmann::json MinimalNode(const std::string& name);
  /// A minimal valid pending Pod: one container "main" (image "busybox"),
  /// schedulerName "tessera-scheduler", status.phase "Pending".
  [[nodiscard]] static nlohmann::json MinimalPod(const std::string& ns, const std::string& name);

  /// Stores a new Node (ADDED). Fills apiVersion, kind, metadata.uid,
  /// creationTimestamp and resourceVersion when absent; metadata.name is required.
  /// \return the stored object; AlreadyExists / InvalidArgument otherwise.
  absl::StatusOr<nlohmann::json> AddNode(nlohmann::json node);
  /// Replaces a Node (MODIFIED), keeping its uid; bumps resourceVersion.
  absl::StatusOr<nlohmann::json> UpdateNode(nlohmann::json node);
  /// Removes a Node (DELETED). NotFound when absent.
  absl::Status DeleteNode(const std::string& name);

  /// Stores a new Pod (ADDED); metadata.namespace defaults to "default".
  absl::StatusOr<nlohmann::json> AddPod(nlohmann::json pod);
  /// Replaces a Pod (MODIFIED), keeping its uid; bumps resourceVersion.
  absl::StatusOr<nlohmann::json> UpdatePod(nlohmann::json pod);
  /// Applies `mutate` to the stored Pod and stores the result (MODIFIED).
  absl::StatusOr<nlohmann::json> MutatePod(const std::string& ns, const std::string& name,
                                           const std::function<void(nlohmann::json&)>& mutate);
  /// Sets status.phase ("Running", "Succeeded", "Failed", ...) (MODIFIED).
  absl::Status SetPodPhase(const std::string& ns, const std::string& name, const std::string& phase);
  /// Removes a Pod (DELETED, the object carrying the deletion's resourceVersion).
  absl::Status DeletePod(const std::string& ns, const std::string& name);

  /// The stored objects; nullopt when absent.
  [[nodiscard]] std::optional<nlohmann::json> Node(const std::string& name) const;
  [[nodiscard]] std::optional<nlohmann::json> Pod(const std::string& ns, const std::string& name) const;
  [[nodiscard]] size_t NodeCount() const;
  [[nodiscard]] size_t PodCount() const;
  /// The current global resourceVersion.
  [[nodiscard]] int64_t ResourceVersion() const;
  /// Forgets the event history up to now: watches from an older
  /// resourceVersion and continue tokens issued before get 410 Expired, and
  /// open watch streams still behind it get an ERROR 410 event and end.
  void CompactHistory();

  // --- request log -------------------------------------------------------------

  /// Requests received so far, oldest first, filtered by method ("" any) and
  /// path prefix ("" any).
  [[nodiscard]] std::vector<RecordedRequest> Requests(std::string_view method = "",
                                                      std::string_view path_prefix = "") const;
  void ClearRequests();
  /// Watch streams ever opened (HTTP 200 sent) for `resource`.
  [[nodiscard]] int WatchConnections(FakeResource resource) const;
  /// TCP connections accepted so far (each a TLS handshake, or an attempt at one).
  [[nodiscard]] int AcceptedConnections() const;
  /// Watch streams open now for `resource`.
  [[nodiscard]] int OpenWatchStreams(FakeResource resource) const;

  // --- fault injection ---------------------------------------------------------

  /// The next `count` requests matching `match` get `http_status` with a
  /// Status body (reason from the code: InternalError, ServiceUnavailable,
  /// TooManyRequests (with Retry-After: 1), Conflict, Expired, ...), without
  /// touching the store. Rules are checked in the order added.
  void FailNext(const RequestMatch& match, int http_status, int count = 1);
  /// The next `count` requests matching `match` are handled after `delay`
  /// (the request takes effect after the delay even when the client gave up).
  void DelayNext(const RequestMatch& match, std::chrono::milliseconds delay, int count = 1);
  /// The next `count` requests matching `match` are held before they are
  /// handled, until ReleaseHeld(): a latch, so a test sees how many requests
  /// a client has in flight at once (HeldRequests()) without timing anything.
  /// Held requests take effect when released, even when the client gave up.
  void HoldNext(const RequestMatch& match, int count = 1);
  /// The next `count` requests matching `match` take effect, and then their
  /// connection closes without an answer: a write that landed while the
  /// client saw only a broken connection.
  void AnswerNothingNext(const RequestMatch& match, int count = 1);
  /// Requests being held now.
  [[nodiscard]] int HeldRequests() const;
  /// Blocks until at least `n` requests are held (woken as each is), or
  /// `timeout` passes. \return whether they were.
  [[nodiscard]] bool WaitForHeldRequests(int n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  /// Lets every held request go on, and drops the hold rules not yet used up.
  void ReleaseHeld();
  /// The next `count` PATCHes of pods answer 409 Conflict ("the object has
  /// been modified") without applying.
  void ConflictNextPatch(int count = 1);
  /// The next `count` Bindings answer 409 Conflict without binding.
  void ConflictNextBinding(int count = 1);
  /// Evictions of the pod answer 429 TooManyRequests naming `budget`, as when
  /// a PodDisruptionBudget allows no disruption now, until AllowEvictions().
  /// As with a real budget, only while the pod is Running and not being
  /// deleted (SetPodPhase(ns, name, "Running") first); any other is evicted.
  void RefuseEvictions(const std::string& ns, const std::string& name, const std::string& budget);
  void AllowEvictions(const std::string& ns, const std::string& name);
  /// Every watch stream of `resource` open now closes its TCP connection
  /// (no final chunk, no TLS close_notify) after writing `events` more event
  /// lines (0: at once; bookmarks do not count, malformed lines do). Streams
  /// opened later are not affected.
  void DropWatchStreamsAfter(FakeResource resource, int events);
  /// Closes every open watch stream's connection at once, both resources.
  void DropAllWatches();
  /// Writes one malformed line to every open watch stream of `resource`; when
  /// none is open, to the next one that opens (after its replay).
  void InjectMalformedEvent(FakeResource resource, MalformedEvent kind = MalformedEvent::kNotJson);
  /// The next `count` watch streams of `resource` start with a malformed
  /// event (MalformedEvent::kNotJson) before anything else: a server that
  /// keeps sending the same bad event to every new watch.
  void MalformNextWatches(FakeResource resource, int count);
  /// Every open watch stream of `resource` gets an ERROR event with a 410
  /// Expired Status and then ends cleanly (what a real server does to a
  /// watcher that fell too far behind).
  void ExpireWatches(FakeResource resource);
  /// Every open stream that allowed bookmarks gets a BOOKMARK now.
  void SendBookmarks();
  /// The next `count` watch requests of `resource` get a stream whose only
  /// event is ERROR with a 504 Timeout Status, cause ResourceVersionTooLarge
  /// and `retry_after_seconds` in its details: what a v1.36 API server answers
  /// a watch from a resourceVersion its watch cache has not reached yet (on
  /// etcd 3.4, until the resource next changes). Watches after them are served.
  void RefuseNextWatchesAsTooLarge(FakeResource resource, int count, int retry_after_seconds = 1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::testing
