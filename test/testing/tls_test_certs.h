// Throwaway X.509 material for TLS tests, generated at run time with the
// OpenSSL 3 C API: a self-signed CA, a server certificate for loopback and a
// client certificate, both signed by that CA. Nothing is read from or written
// to disk unless asked (TlsTestCertFiles), so tests never depend on checked-in
// keys that expire.
//
// Keys are ECDSA P-256 (fast to generate: a few milliseconds for all three);
// signatures SHA-256; validity from one hour ago to 30 days ahead.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::testing {

/// A certificate and its private key, both PEM.
struct PemKeyPair {
  std::string cert_pem;
  std::string key_pem;  ///< PKCS#8 "BEGIN PRIVATE KEY".
};

/// What to put into the generated certificates.
struct TlsTestCertOptions {
  /// Subject CN of the CA (make two CAs differ to test "wrong CA").
  std::string ca_common_name = "tessera-test-ca";
  /// Subject alternative names of the server certificate.
  std::vector<std::string> server_dns_names = {"localhost"};
  std::vector<std::string> server_ip_addresses = {"127.0.0.1"};
  /// Subject CN of the client certificate (Kubernetes reads it as the user).
  std::string client_common_name = "tessera-scheduler";
  /// Subject O of the client certificate (Kubernetes reads it as a group).
  std::string client_organization = "system:masters";
};

/// A CA with one server and one client certificate signed by it.
struct TlsTestCerts {
  PemKeyPair ca;      ///< Self-signed, basicConstraints CA:TRUE.
  PemKeyPair server;  ///< extendedKeyUsage serverAuth, SANs from the options.
  PemKeyPair client;  ///< extendedKeyUsage clientAuth.

  /// Generates fresh keys and certificates (a new CA on every call).
  /// \return Internal with OpenSSL's error text when generation fails.
  static absl::StatusOr<TlsTestCerts> Generate(const TlsTestCertOptions& options = {});
};

/// TlsTestCerts written as PEM files in a directory, e.g. for a kubeconfig
/// that references files. Move-only; removes the files it wrote (and the
/// directory when it created it) on destruction.
class TlsTestCertFiles {
 public:
  /// Writes ca.crt, server.crt, server.key, client.crt, client.key into `dir`,
  /// or into a fresh mkdtemp directory under $TMPDIR (default /tmp) when
  /// `dir` is empty. Key files get mode 0600.
  static absl::StatusOr<TlsTestCertFiles> Write(const TlsTestCerts& certs, const std::string& dir = "");

  TlsTestCertFiles(TlsTestCertFiles&& other) noexcept;
  TlsTestCertFiles& operator=(TlsTestCertFiles&& other) noexcept;
  TlsTestCertFiles(const TlsTestCertFiles&) = delete;
  TlsTestCertFiles& operator=(const TlsTestCertFiles&) = delete;
  ~TlsTestCertFiles();

  [[nodiscard]] const std::string& dir() const { return dir_; }
  [[nodiscard]] const std::string& ca_cert() const { return ca_cert_; }
  [[nodiscard]] const std::string& server_cert() const { return server_cert_; }
  [[nodiscard]] const std::string& server_key() const { return server_key_; }
  [[nodiscard]] const std::string& client_cert() const { return client_cert_; }
  [[nodiscard]] const std::string& client_key() const { return client_key_; }

  /// Writes `content` to dir()/name (removed with the others) and returns the path.
  absl::StatusOr<std::string> WriteExtra(const std::string& name, const std::string& content);

 private:
  TlsTestCertFiles() = default;
  void Remove();

  std::string dir_;
  bool owns_dir_ = false;
  std::string ca_cert_, server_cert_, server_key_, client_cert_, client_key_;
  std::vector<std::string> written_;
};

}  // namespace tessera::testing
