// Where the API server is and how to authenticate to it: from a kubeconfig
// file or from the in-cluster service account.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace tessera::k8s {

/// Everything the client needs to reach one API server. PEM strings are the
/// decoded contents (kubeconfig's *-data fields or the files they name).
struct ApiServerConfig {
  std::string host;                   ///< "10.96.0.1", "kube.example.com"
  std::string port = "443";
  std::string base_path;              ///< Path of the server URL, usually empty.
  std::string ca_pem;                 ///< Trusted CAs; empty: the system's.
  bool insecure_skip_tls_verify = false;  ///< Only when the kubeconfig says so.
  std::string token;                  ///< Static bearer token.
  std::string token_file;             ///< Bearer token file, re-read when it changes (rotation).
  std::string client_cert_pem;        ///< Client certificate chain (mutual TLS).
  std::string client_key_pem;
  std::string description;            ///< For logs: where this came from.
};

/// Reads a kubeconfig (the context `context`, or current-context when
/// empty): server, certificate-authority(-data), insecure-skip-tls-verify,
/// token, tokenFile, client-certificate(-data), client-key(-data). Relative
/// file paths are relative to the kubeconfig's folder, as kubectl does.
/// exec and auth-provider users are refused with a message saying so.
/// Errors name the file and the field.
absl::StatusOr<ApiServerConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

/// The in-cluster config: KUBERNETES_SERVICE_HOST/PORT and the service
/// account's token and CA under `secrets_dir`.
inline constexpr std::string_view kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
absl::StatusOr<ApiServerConfig> InClusterConfig(std::string_view secrets_dir = kServiceAccountDir);

/// Splits "https://host:port/path" into the config's host, port and path.
/// Plain http is refused: credentials must not travel in the clear.
absl::Status ParseServerUrl(std::string_view url, ApiServerConfig& config);

/// The bearer token of a config: the static one, or the file's contents,
/// re-read whenever the file's modification time or size changes (kubelet
/// rotates projected service-account tokens in place). Thread-safe.
class BearerToken {
 public:
  explicit BearerToken(const ApiServerConfig& config);
  /// Empty when the config has no token. A file that cannot be read keeps the
  /// last good token (and the error is returned only before the first read).
  absl::StatusOr<std::string> Get();

 private:
  std::string static_token_;
  std::string file_;
  absl::Mutex mu_;
  std::string cached_ ABSL_GUARDED_BY(mu_);
  int64_t mtime_ns_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t size_ ABSL_GUARDED_BY(mu_) = -1;
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessera::k8s
