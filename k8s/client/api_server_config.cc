#include "k8s/client/api_server_config.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "scheduler/common/file_read.h"
#include "scheduler/common/yaml_load.h"
#include "scheduler/model/absl_compat.h"
#include "yaml-cpp/yaml.h"

namespace tessera::k8s {
namespace {

// Kubeconfigs, certificates and tokens are small; the cap keeps a wrong path
// (a log file) from being read into memory, and ReadRegularFile refuses what
// would block (a FIFO) or never end (/dev/zero).
constexpr int64_t kMaxFileBytes = 4 << 20;

// A kubeconfig with a few hundred contexts is some thousands of nodes.
constexpr yaml_internal::YamlLimits kKubeconfigYamlLimits{
    .max_bytes = size_t{kMaxFileBytes}, .max_nodes = 200'000, .max_depth = 32, .max_documents = 2};

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) { return ReadRegularFile(path, kMaxFileBytes); }

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

std::string Resolve(const std::string& dir, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return absl::StrCat(dir, "/", path);
}

// Finds the entry named `name` in a kubeconfig list (clusters, contexts, users)
// and returns its `field` map (cluster, context, user).
absl::StatusOr<YAML::Node> Named(const YAML::Node& root, const std::string& list, const std::string& name,
                                 const std::string& field, const std::string& file) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (YAML::Node entry : entries) {
      if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() && entry["name"].Scalar() == name) {
        const YAML::Node value = entry[field];
        if (!value || !value.IsMap()) {
          return absl::InvalidArgumentError(absl::StrCat(file, ": ", list, "[name=", name, "].", field,
                                                         " is missing or not a map"));
        }
        return value;
      }
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", list, ": no entry named \"", name, "\""));
}

std::string ScalarOr(const YAML::Node& map, const char* key, std::string fallback = "") {
  const YAML::Node v = map[key];
  return v && v.IsScalar() ? v.Scalar() : fallback;
}

// A PEM given inline (base64 `*-data`) or as a file; `what` names the field for errors.
absl::StatusOr<std::string> PemField(const YAML::Node& map, const char* data_key, const char* file_key,
                                     const std::string& dir, const std::string& where) {
  if (std::string data = ScalarOr(map, data_key); !data.empty()) {
    std::string pem;
    if (!absl::Base64Unescape(data, &pem)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".", data_key, ": not valid base64"));
    }
    return pem;
  }
  if (std::string file = ScalarOr(map, file_key); !file.empty()) {
    absl::StatusOr<std::string> pem = ReadSmallFile(Resolve(dir, file));
    if (!pem.ok()) return absl::InvalidArgumentError(absl::StrCat(where, ".", file_key, ": ", pem.status().message()));
    return pem;
  }
  return std::string();
}

}  // namespace

absl::Status ParseServerUrl(std::string_view url, ApiServerConfig& config) {
  absl::string_view rest = Absl(url);
  if (absl::StartsWith(rest, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("server ", rest, ": plain http is not supported; use https"));
  }
  if (!absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat("server \"", rest, "\": expected https://host[:port][/path]"));
  }
  const size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  config.base_path = slash == absl::string_view::npos ? "" : std::string(absl::StripSuffix(rest.substr(slash), "/"));
  if (authority.empty()) return absl::InvalidArgumentError(absl::StrCat("server ", Absl(url), ": no host"));
  absl::string_view host = authority;
  absl::string_view port = "443";
  if (authority.front() == '[') {  // [v6]:port
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("server ", Absl(url), ": bad IPv6 host"));
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return absl::InvalidArgumentError(absl::StrCat("server ", Absl(url), ": bad port"));
      port = authority.substr(close + 2);
    }
  } else if (const size_t colon = authority.rfind(':'); colon != absl::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  int port_number = 0;
  if (!absl::SimpleAtoi(port, &port_number) || port_number < 1 || port_number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("server ", Absl(url), ": port must be 1..65535"));
  }
  config.host = std::string(host);
  config.port = std::string(port);
  return absl::OkStatus();
}

absl::StatusOr<ApiServerConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  yaml_internal::YamlDocuments parsed = yaml_internal::LoadYamlDocuments(*text, kKubeconfigYamlLimits);
  if (parsed.error) {
    const YAML::Mark& m = parsed.error->mark;
    return absl::InvalidArgumentError(m.is_null() ? absl::StrCat(path, ": ", parsed.error->message)
                                                  : absl::StrCat(path, ":", m.line + 1, ":", m.column + 1, ": ",
                                                                 parsed.error->message));
  }
  // Like YAML::Load: the first document is the kubeconfig.
  const YAML::Node root = parsed.documents.empty() ? YAML::Node() : parsed.documents[0];
  if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a kubeconfig (expected a map)"));

  std::string context_name(context);
  if (context_name.empty()) context_name = ScalarOr(root, "current-context");
  if (context_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": current-context is not set and no context was given"));
  }
  absl::StatusOr<YAML::Node> ctx = Named(root, "contexts", context_name, "context", path);
  if (!ctx.ok()) return ctx.status();
  const std::string cluster_name = ScalarOr(*ctx, "cluster");
  const std::string user_name = ScalarOr(*ctx, "user");
  absl::StatusOr<YAML::Node> cluster = Named(root, "clusters", cluster_name, "cluster", path);
  if (!cluster.ok()) return cluster.status();

  const std::string dir = Dirname(path);
  const std::string cluster_where = absl::StrCat(path, ": clusters[name=", cluster_name, "].cluster");
  ApiServerConfig config;
  config.description = absl::StrCat("kubeconfig ", path, " (context ", context_name, ")");
  const std::string server = ScalarOr(*cluster, "server");
  if (server.empty()) return absl::InvalidArgumentError(absl::StrCat(cluster_where, ".server is missing"));
  if (absl::Status s = ParseServerUrl(server, config); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(cluster_where, ".server: ", s.message()));
  }
  absl::StatusOr<std::string> ca = PemField(*cluster, "certificate-authority-data", "certificate-authority", dir,
                                            cluster_where);
  if (!ca.ok()) return ca.status();
  config.ca_pem = std::move(*ca);
  config.insecure_skip_tls_verify = ScalarOr(*cluster, "insecure-skip-tls-verify") == "true";

  if (!user_name.empty()) {
    absl::StatusOr<YAML::Node> user = Named(root, "users", user_name, "user", path);
    if (!user.ok()) return user.status();
    const std::string user_where = absl::StrCat(path, ": users[name=", user_name, "].user");
    if ((*user)["exec"] || (*user)["auth-provider"]) {
      return absl::UnimplementedError(absl::StrCat(
          user_where, ": exec and auth-provider credentials are not supported; use a token, a token file or a "
                      "client certificate (in a cluster, the service account needs no kubeconfig)"));
    }
    config.token = ScalarOr(*user, "token");
    if (std::string file = ScalarOr(*user, "tokenFile"); !file.empty()) config.token_file = Resolve(dir, file);
    absl::StatusOr<std::string> cert = PemField(*user, "client-certificate-data", "client-certificate", dir, user_where);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = PemField(*user, "client-key-data", "client-key", dir, user_where);
    if (!key.ok()) return key.status();
    if (cert->empty() != key->empty()) {
      return absl::InvalidArgumentError(absl::StrCat(user_where, ": a client certificate needs its key, and a key its certificate"));
    }
    config.client_cert_pem = std::move(*cert);
    config.client_key_pem = std::move(*key);
  }
  return config;
}

absl::StatusOr<ApiServerConfig> InClusterConfig(std::string_view secrets_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (use --kubeconfig)");
  }
  ApiServerConfig config;
  const std::string h = host;
  const std::string url = absl::StrCat("https://", h.find(':') != std::string::npos ? absl::StrCat("[", h, "]") : h,
                                       ":", port);
  if (absl::Status s = ParseServerUrl(url, config); !s.ok()) return s;
  const std::string dir(secrets_dir);
  absl::StatusOr<std::string> ca = ReadSmallFile(dir + "/ca.crt");
  if (!ca.ok()) return ca.status();
  config.ca_pem = std::move(*ca);
  config.token_file = dir + "/token";
  config.description = absl::StrCat("in-cluster service account (", url, ")");
  BearerToken probe(config);
  if (absl::StatusOr<std::string> t = probe.Get(); !t.ok()) return t.status();
  return config;
}

BearerToken::BearerToken(const ApiServerConfig& config) : static_token_(config.token), file_(config.token_file) {}

absl::StatusOr<std::string> BearerToken::Get() {
  if (file_.empty()) return static_token_;
  struct stat st {};
  absl::MutexLock lock(&mu_);
  if (::stat(file_.c_str(), &st) != 0) {
    if (loaded_) return cached_;  // keep the last good token through a rotation's brief gap
    return absl::UnavailableError(absl::StrCat(file_, ": cannot read the token: ", std::strerror(errno)));
  }
  const int64_t mtime = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  if (loaded_ && mtime == mtime_ns_ && st.st_size == size_) return cached_;
  absl::StatusOr<std::string> text = ReadSmallFile(file_);
  if (!text.ok()) {
    if (loaded_) return cached_;
    return text.status();
  }
  cached_ = std::string(absl::StripAsciiWhitespace(*text));
  mtime_ns_ = mtime;
  size_ = st.st_size;
  loaded_ = true;
  return cached_;
}

}  // namespace tessera::k8s
