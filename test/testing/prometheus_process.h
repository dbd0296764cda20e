// A real Prometheus server for tests: started on loopback with a temporary
// config and data directory (ready in well under a second), scraping one
// target five times a second, so that a test waits for scrapes in fractions
// of a second rather than seconds; stopped and
// cleaned up by its destructor (so also when a test fails), and killed by
// the kernel if the test process dies first (PR_SET_PDEATHSIG).
//
// The binary is Debian's `prometheus` package (scripts/install-deps.sh
// installs it); $TESSERA_PROMETHEUS overrides the path. Its absence is an
// error, not a skip: the README's set-up installs it.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "test/testing/eventually.h"
#include "test/testing/http_client.h"

namespace tessera::testing {

class PrometheusProcess {
 public:
  struct Options {
    uint16_t target_port = 0;           ///< The scraped target, 127.0.0.1:target_port/metrics.
    std::string scrape_interval = "200ms";
    std::string scrape_timeout = "150ms";
    /// How far back an instant query looks for a sample (Prometheus' default
    /// is 5m); short, so a stopped target's series vanish quickly.
    std::string lookback_delta = "1s";
  };

  /// The binary to run: $TESSERA_PROMETHEUS, else `prometheus` on the PATH.
  static absl::StatusOr<std::string> FindBinary() {
    if (const char* env = std::getenv("TESSERA_PROMETHEUS"); env != nullptr && *env != '\0') {
      if (::access(env, X_OK) == 0) return std::string(env);
      return absl::NotFoundError(absl::StrCat("$TESSERA_PROMETHEUS=", env, " is not an executable"));
    }
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    dirs += ":/usr/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = absl::StrCat(dirs.substr(start, end - start), "/prometheus");
      if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
    return absl::NotFoundError(
        "the prometheus binary was not found on the PATH: install Debian's `prometheus` package "
        "(scripts/install-deps.sh does) or set $TESSERA_PROMETHEUS");
  }

  /// Starts Prometheus and waits until it is ready (/-/ready answers 200).
  static absl::StatusOr<std::unique_ptr<PrometheusProcess>> Start(const Options& options) {
    absl::StatusOr<std::string> binary = FindBinary();
    if (!binary.ok()) return binary.status();
    absl::Status last;
    for (int attempt = 0; attempt < 3; ++attempt) {  // a free port may be taken before Prometheus binds it
      std::unique_ptr<PrometheusProcess> p(new PrometheusProcess());
      last = p->Launch(*binary, options);
      if (last.ok()) return p;
    }
    return last;
  }

  ~PrometheusProcess() {
    Kill();
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] std::string url() const { return absl::StrCat("http://127.0.0.1:", port_); }

  /// Stops the server now (SIGTERM, then SIGKILL after 5 s). Idempotent.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    if (!WaitFor([&] { return ::waitpid(pid_, &status, WNOHANG) != 0; }, absl::Seconds(5))) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }

  /// The server's log (stdout and stderr), for failure messages.
  [[nodiscard]] std::string Log() const {
    std::ifstream in(dir_ / "prometheus.log");
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

 private:
  PrometheusProcess() = default;

  static uint16_t FreePort() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    return acceptor.local_endpoint().port();
  }

  absl::Status Launch(const std::string& binary, const Options& options) {
    char pattern[] = "/tmp/tessera-prometheus-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) return absl::InternalError("mkdtemp failed");
    dir_ = pattern;
    port_ = FreePort();
    {
      std::ofstream config(dir_ / "prometheus.yml");
      config << "global:\n"
             << "  scrape_interval: " << options.scrape_interval << "\n"
             << "  scrape_timeout: " << options.scrape_timeout << "\n"
             << "scrape_configs:\n"
             << "  - job_name: dcgm\n"
             << "    static_configs:\n"
             << "      - targets: ['127.0.0.1:" << options.target_port << "']\n";
    }
    std::vector<std::string> args = {
        binary,
        absl::StrCat("--config.file=", (dir_ / "prometheus.yml").string()),
        absl::StrCat("--storage.tsdb.path=", (dir_ / "data").string()),
        absl::StrCat("--web.listen-address=127.0.0.1:", port_),
        absl::StrCat("--query.lookback-delta=", options.lookback_delta),
        "--log.level=warn",
    };
    const std::string log = (dir_ / "prometheus.log").string();
    // Everything the child needs is ready before fork(): between fork and
    // exec only async-signal-safe calls are allowed (the test has threads).
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) return absl::InternalError("fork failed");
    if (pid_ == 0) {
      // The child: die with the test, log to a file, become Prometheus.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
        ::close(fd);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    bool exited = false;
    const bool ready = WaitFor(
        [&] {
          int status = 0;
          if (::waitpid(pid_, &status, WNOHANG) == pid_) return exited = true;
          HttpClient client(port_);
          return client.connected() && client.Get("/-/ready").status == 200;
        },
        absl::Seconds(30));
    if (exited) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("prometheus exited at start:\n", Log()));
    }
    if (ready) return absl::OkStatus();
    const std::string output = Log();
    Kill();
    return absl::DeadlineExceededError(absl::StrCat("prometheus not ready within 30 s:\n", output));
  }

  std::filesystem::path dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace tessera::testing
