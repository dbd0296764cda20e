#include "k8s/client/api_server_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <vector>
#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "test/testing/deadline.h"

namespace tessera::k8s {
namespace {

using ::testing::HasSubstr;

// A temporary folder removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-kubeconfig-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& content) const {
    const std::string p = absl::StrCat(path_, "/", name);
    std::ofstream(p) << content;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct UrlCase {
  std::string name;
  std::string url;
  std::string host, port, base_path;
  std::string error;  // substring; empty = success
};

class ServerUrl : public ::testing::TestWithParam<UrlCase> {};

TEST_P(ServerUrl, SplitsHostPortAndPathOrRefuses) {
  const UrlCase& c = GetParam();
  ApiServerConfig config;
  const absl::Status st = ParseServerUrl(c.url, config);
  if (!c.error.empty()) {
    EXPECT_THAT(st.message(), HasSubstr(c.error));
    return;
  }
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(config.host, c.host);
  EXPECT_EQ(config.port, c.port);
  EXPECT_EQ(config.base_path, c.base_path);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ServerUrl,
    ::testing::Values(UrlCase{"HostAndPort", "https://10.0.0.1:6443", "10.0.0.1", "6443", "", ""},
                      UrlCase{"PortDefaultsTo443", "https://kube.example.com", "kube.example.com", "443", "", ""},
                      UrlCase{"PathIsKept", "https://proxy.example.com/k8s/clusters/c-1/", "proxy.example.com", "443",
                              "/k8s/clusters/c-1", ""},
                      UrlCase{"BracketedIpv6", "https://[fd00::1]:6443", "fd00::1", "6443", "", ""},
                      UrlCase{"PlainHttpIsRefused", "http://10.0.0.1:8080", "", "", "", "plain http is not supported"},
                      UrlCase{"NoSchemeIsRefused", "10.0.0.1:6443", "", "", "", "expected https://"},
                      UrlCase{"ABadPortIsRefused", "https://10.0.0.1:99999", "", "", "", "port must be 1..65535"}),
    [](const auto& info) { return info.param.name; });

constexpr char kKubeconfig[] = R"(apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: prod
  cluster:
    server: https://10.1.2.3:6443
    certificate-authority-data: %CA%
- name: staging
  cluster:
    server: https://staging.example.com
    certificate-authority: ca.crt
    insecure-skip-tls-verify: true
contexts:
- name: admin
  context: {cluster: prod, user: admin}
- name: stage
  context: {cluster: staging, user: tokenfile}
- name: sso
  context: {cluster: prod, user: sso}
users:
- name: admin
  user:
    token: s3cret
    client-certificate-data: %CERT%
    client-key-data: %KEY%
- name: tokenfile
  user:
    tokenFile: token.txt
- name: sso
  user:
    exec: {command: kubelogin}
)";

std::string Kubeconfig() {
  std::string text = kKubeconfig;
  auto replace = [&](const std::string& what, const std::string& with) {
    text.replace(text.find(what), what.size(), absl::Base64Escape(with));
  };
  replace("%CA%", "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
  replace("%CERT%", "CERT-PEM");
  replace("%KEY%", "KEY-PEM");
  return text;
}

TEST(Kubeconfig, TheCurrentContextGivesServerCaTokenAndClientCertificate) {
  TempDir dir;
  absl::StatusOr<ApiServerConfig> c = LoadKubeconfig(dir.Write("config", Kubeconfig()));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "10.1.2.3");
  EXPECT_EQ(c->port, "6443");
  EXPECT_THAT(c->ca_pem, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_EQ(c->token, "s3cret");
  EXPECT_EQ(c->client_cert_pem, "CERT-PEM");
  EXPECT_EQ(c->client_key_pem, "KEY-PEM");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_THAT(c->description, HasSubstr("context admin"));
}

TEST(Kubeconfig, FilesAreRelativeToTheKubeconfigAndInsecureIsHonouredOnlyWhenSet) {
  TempDir dir;
  dir.Write("ca.crt", "CA-FROM-FILE");
  const std::string path = dir.Write("config", Kubeconfig());
  absl::StatusOr<ApiServerConfig> c = LoadKubeconfig(path, "stage");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, "CA-FROM-FILE");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token_file, dir.path() + "/token.txt");
}

TEST(Kubeconfig, ExecCredentialsAreRefusedWithAReason) {
  TempDir dir;
  absl::StatusOr<ApiServerConfig> c = LoadKubeconfig(dir.Write("config", Kubeconfig()), "sso");
  EXPECT_THAT(c.status().message(), HasSubstr("users[name=sso].user: exec and auth-provider credentials are not supported"));
}

TEST(Kubeconfig, AnUnknownContextOrAMissingFileIsNamed) {
  TempDir dir;
  const std::string path = dir.Write("config", Kubeconfig());
  EXPECT_THAT(LoadKubeconfig(path, "nope").status().message(), HasSubstr("contexts: no entry named \"nope\""));
  EXPECT_THAT(LoadKubeconfig(dir.path() + "/missing").status().message(), HasSubstr("missing: cannot read"));
  EXPECT_THAT(LoadKubeconfig(dir.Write("bad", "clusters: [\n")).status().message(), HasSubstr("bad:"));
}

TEST(Kubeconfig, HostileYamlOrAFifoIsRefusedInBoundedTime) {
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  struct Case {
    std::string name;
    std::string path;
    std::string want;
  };
  const std::vector<Case> cases = {
      // yaml-cpp 0.7 alone parses the first document of "," fine; the rest of
      // the stream is what loops, and Tessera now reads all of it bounded.
      {"a kubeconfig that is just a comma", dir.Write("comma", ","), "comma:1:1: unexpected ','"},
      {"a kubeconfig whose contexts name themselves", dir.Write("cycle", "contexts: &c [*c]\n"),
       "cycle:1:15: an alias may not refer to a node that contains it"},
      {"a FIFO in the kubeconfig's place", fifo, "fifo: cannot read: not a regular file (a FIFO)"},
      {"a device in the kubeconfig's place", "/dev/zero", "/dev/zero: cannot read: not a regular file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const tessera::testing::BoundedRun run = tessera::testing::RunWithDeadline(
        [&] { return LoadKubeconfig(c.path).ok() ? 1 : 0; }, std::chrono::seconds(10));
    ASSERT_TRUE(run.finished) << run.what;
    EXPECT_EQ(run.exit_code, 0);
    EXPECT_THAT(LoadKubeconfig(c.path).status().message(), HasSubstr(c.want));
  }
}

TEST(BearerTokenFile, AFifoInTheTokensPlaceDoesNotBlockTheClient) {
  TempDir dir;
  ApiServerConfig config;
  config.token_file = dir.path() + "/token";
  ASSERT_EQ(::mkfifo(config.token_file.c_str(), 0600), 0);
  const tessera::testing::BoundedRun run = tessera::testing::RunWithDeadline(
      [&] {
        BearerToken token(config);
        return token.Get().ok() ? 1 : 0;
      },
      std::chrono::seconds(10));
  ASSERT_TRUE(run.finished) << run.what;
  EXPECT_EQ(run.exit_code, 0);
  BearerToken token(config);
  EXPECT_THAT(token.Get().status().message(), HasSubstr("token: cannot read: not a regular file (a FIFO)"));
}

TEST(BearerTokenFile, IsReReadWhenKubeletRotatesIt) {
  TempDir dir;
  const std::string file = dir.Write("token", "first\n");
  ApiServerConfig config;
  config.token_file = file;
  BearerToken token(config);
  EXPECT_EQ(*token.Get(), "first");
  // A rotation writes a new file (new size and time).
  dir.Write("token", "second-token\n");
  EXPECT_EQ(*token.Get(), "second-token");
  // A brief gap during rotation keeps the last good token.
  std::filesystem::remove(file);
  EXPECT_EQ(*token.Get(), "second-token");
}

TEST(InCluster, ReadsTheServiceAccountAndTheServiceEnvironment) {
  TempDir dir;
  dir.Write("ca.crt", "CLUSTER-CA");
  dir.Write("token", "sa-token");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  absl::StatusOr<ApiServerConfig> c = InClusterConfig(dir.path());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "10.96.0.1");
  EXPECT_EQ(c->ca_pem, "CLUSTER-CA");
  EXPECT_EQ(c->token_file, dir.path() + "/token");
  EXPECT_THAT(InClusterConfig(dir.path()).status().message(), HasSubstr("KUBERNETES_SERVICE_HOST"));
}

}  // namespace
}  // namespace tessera::k8s
