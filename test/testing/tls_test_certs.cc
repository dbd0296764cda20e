#include "test/testing/tls_test_certs.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::testing {
namespace {

struct BioFree {
  void operator()(BIO* p) const { BIO_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using UniqueBio = std::unique_ptr<BIO, BioFree>;
using UniquePkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using UniqueX509 = std::unique_ptr<X509, X509Free>;
using UniqueExt = std::unique_ptr<X509_EXTENSION, ExtFree>;

// OpenSSL's queued errors as one line (and the queue cleared).
absl::Status OpenSslError(std::string_view what) {
  std::string detail;
  while (const unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    absl::StrAppend(&detail, detail.empty() ? "" : "; ", buf);
  }
  return absl::InternalError(absl::StrCat("generating test certificates: ", absl::string_view(what.data(), what.size()),
                                          ": ", detail.empty() ? "unknown OpenSSL error" : detail));
}

absl::StatusOr<UniquePkey> NewKey() {
  UniquePkey key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslError("EVP_EC_gen");
  return key;
}

absl::StatusOr<std::string> BioString(BIO* bio) {
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  if (len < 0) return OpenSslError("BIO_get_mem_data");
  return std::string(data, static_cast<size_t>(len));
}

absl::StatusOr<std::string> CertPem(X509* cert) {
  UniqueBio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return OpenSslError("PEM_write_bio_X509");
  return BioString(bio.get());
}

absl::StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  UniqueBio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("PEM_write_bio_PrivateKey");
  }
  return BioString(bio.get());
}

absl::Status AddNameEntry(X509_NAME* name, const char* field, const std::string& value) {
  if (value.empty()) return absl::OkStatus();
  if (X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(value.c_str()), -1,
                                 -1, 0) != 1) {
    return OpenSslError(absl::StrCat("subject ", field));
  }
  return absl::OkStatus();
}

// Adds the extension `nid` = `value` (openssl.cnf syntax) with issuer/subject
// context for the key identifiers.
absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  UniqueExt ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslError(absl::StrCat("extension ", OBJ_nid2sn(nid), "=", value));
  }
  return absl::OkStatus();
}

struct CertSpec {
  std::string common_name;
  std::string organization;
  // (nid, value) pairs, added in order.
  std::vector<std::pair<int, std::string>> extensions;
};

// A certificate for `key` signed by `issuer_key`; self-signed when `issuer` is null.
absl::StatusOr<UniqueX509> NewCert(const CertSpec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key) {
  UniqueX509 cert(X509_new());
  if (!cert) return OpenSslError("X509_new");
  if (X509_set_version(cert.get(), 2) != 1) return OpenSslError("X509_set_version");

  // A random positive 64-bit serial: unique per certificate, as CAs must.
  unsigned char serial_bytes[8];
  if (RAND_bytes(serial_bytes, sizeof serial_bytes) != 1) return OpenSslError("RAND_bytes");
  serial_bytes[0] &= 0x7f;
  std::unique_ptr<BIGNUM, decltype(&BN_free)> serial(BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr), BN_free);
  if (!serial || !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()))) {
    return OpenSslError("serial number");
  }

  // Valid from an hour ago (clock skew) to 30 days ahead.
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), 30L * 24 * 3600)) {
    return OpenSslError("validity");
  }

  X509_NAME* subject = X509_get_subject_name(cert.get());
  if (absl::Status st = AddNameEntry(subject, "O", spec.organization); !st.ok()) return st;
  if (absl::Status st = AddNameEntry(subject, "CN", spec.common_name); !st.ok()) return st;
  X509* signer = issuer != nullptr ? issuer : cert.get();
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(signer)) != 1) return OpenSslError("issuer");
  if (X509_set_pubkey(cert.get(), key) != 1) return OpenSslError("X509_set_pubkey");

  for (const auto& [nid, value] : spec.extensions) {
    if (absl::Status st = AddExtension(cert.get(), signer, nid, value); !st.ok()) return st;
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    return OpenSslError("X509_sign");
  }
  return cert;
}

absl::StatusOr<PemKeyPair> ToPem(X509* cert, EVP_PKEY* key) {
  absl::StatusOr<std::string> cert_pem = CertPem(cert);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem = KeyPem(key);
  if (!key_pem.ok()) return key_pem.status();
  return PemKeyPair{.cert_pem = *std::move(cert_pem), .key_pem = *std::move(key_pem)};
}

absl::Status WriteFile(const std::string& path, const std::string& content, mode_t mode) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out.good()) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  if (::chmod(path.c_str(), mode) != 0) return absl::InternalError(absl::StrCat("cannot chmod ", path));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TlsTestCerts> TlsTestCerts::Generate(const TlsTestCertOptions& options) {
  absl::StatusOr<UniquePkey> ca_key = NewKey();
  if (!ca_key.ok()) return ca_key.status();
  absl::StatusOr<UniqueX509> ca_cert =
      NewCert({.common_name = options.ca_common_name,
               .organization = "",
               .extensions = {{NID_basic_constraints, "critical,CA:TRUE"},
                              {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                              {NID_subject_key_identifier, "hash"}}},
              ca_key->get(), nullptr, nullptr);
  if (!ca_cert.ok()) return ca_cert.status();

  std::vector<std::string> sans;
  for (const std::string& dns : options.server_dns_names) sans.push_back(absl::StrCat("DNS:", dns));
  for (const std::string& ip : options.server_ip_addresses) sans.push_back(absl::StrCat("IP:", ip));
  std::vector<std::pair<int, std::string>> server_extensions = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
      {NID_ext_key_usage, "serverAuth"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (!sans.empty()) server_extensions.emplace_back(NID_subject_alt_name, absl::StrJoin(sans, ","));

  absl::StatusOr<UniquePkey> server_key = NewKey();
  if (!server_key.ok()) return server_key.status();
  absl::StatusOr<UniqueX509> server_cert =
      NewCert({.common_name = "kube-apiserver", .organization = "", .extensions = std::move(server_extensions)},
              server_key->get(), ca_cert->get(), ca_key->get());
  if (!server_cert.ok()) return server_cert.status();

  absl::StatusOr<UniquePkey> client_key = NewKey();
  if (!client_key.ok()) return client_key.status();
  absl::StatusOr<UniqueX509> client_cert =
      NewCert({.common_name = options.client_common_name,
               .organization = options.client_organization,
               .extensions = {{NID_basic_constraints, "critical,CA:FALSE"},
                              {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                              {NID_ext_key_usage, "clientAuth"},
                              {NID_authority_key_identifier, "keyid:always"}}},
              client_key->get(), ca_cert->get(), ca_key->get());
  if (!client_cert.ok()) return client_cert.status();

  TlsTestCerts certs;
  for (auto [out, cert, key] : {std::tuple{&certs.ca, ca_cert->get(), ca_key->get()},
                                std::tuple{&certs.server, server_cert->get(), server_key->get()},
                                std::tuple{&certs.client, client_cert->get(), client_key->get()}}) {
    absl::StatusOr<PemKeyPair> pem = ToPem(cert, key);
    if (!pem.ok()) return pem.status();
    *out = *std::move(pem);
  }
  return certs;
}

absl::StatusOr<TlsTestCertFiles> TlsTestCertFiles::Write(const TlsTestCerts& certs, const std::string& dir) {
  TlsTestCertFiles files;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/tessera-certs-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a temporary directory from ", pattern));
    }
    files.dir_ = std::move(pattern);
    files.owns_dir_ = true;
  } else {
    files.dir_ = dir;
  }
  const struct {
    std::string* path;
    const char* name;
    const std::string* content;
    mode_t mode;
  } outputs[] = {
      {&files.ca_cert_, "ca.crt", &certs.ca.cert_pem, 0644},
      {&files.server_cert_, "server.crt", &certs.server.cert_pem, 0644},
      {&files.server_key_, "server.key", &certs.server.key_pem, 0600},
      {&files.client_cert_, "client.crt", &certs.client.cert_pem, 0644},
      {&files.client_key_, "client.key", &certs.client.key_pem, 0600},
  };
  for (const auto& out : outputs) {
    *out.path = absl::StrCat(files.dir_, "/", out.name);
    files.written_.push_back(*out.path);
    if (absl::Status st = WriteFile(*out.path, *out.content, out.mode); !st.ok()) return st;
  }
  return files;
}

absl::StatusOr<std::string> TlsTestCertFiles::WriteExtra(const std::string& name, const std::string& content) {
  std::string path = absl::StrCat(dir_, "/", name);
  written_.push_back(path);
  if (absl::Status st = WriteFile(path, content, 0600); !st.ok()) return st;
  return path;
}

TlsTestCertFiles::TlsTestCertFiles(TlsTestCertFiles&& other) noexcept { *this = std::move(other); }

TlsTestCertFiles& TlsTestCertFiles::operator=(TlsTestCertFiles&& other) noexcept {
  if (this != &other) {
    Remove();
    dir_ = std::move(other.dir_);
    owns_dir_ = std::exchange(other.owns_dir_, false);
    ca_cert_ = std::move(other.ca_cert_);
    server_cert_ = std::move(other.server_cert_);
    server_key_ = std::move(other.server_key_);
    client_cert_ = std::move(other.client_cert_);
    client_key_ = std::move(other.client_key_);
    written_ = std::exchange(other.written_, {});
  }
  return *this;
}

TlsTestCertFiles::~TlsTestCertFiles() { Remove(); }

void TlsTestCertFiles::Remove() {
  for (const std::string& path : written_) ::unlink(path.c_str());
  written_.clear();
  if (owns_dir_) ::rmdir(dir_.c_str());
  owns_dir_ = false;
}

}  // namespace tessera::testing
