#include "test/testing/control_plane.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "k8s/client/api_server_config.h"
#include "scheduler/model/absl_compat.h"
#include "test/testing/eventually.h"

extern char** environ;

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The label that ties a test's pods to its nodes (ControlPlaneTest).
constexpr const char* kTestLabel = "tessera.io/test";

std::string ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, int lines) {
  if (text.empty()) return text;  // a log never written (no Tessera in a run of kube-scheduler alone)
  size_t pos = text.size();
  for (int n = 0; n <= lines && pos > 0;) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
    ++n;
  }
  return text.substr(pos + 1);
}

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// argv and envp as execve wants them, built before fork(): the test process
// may have threads, so between fork and exec the child makes only
// async-signal-safe calls.
class ExecArgs {
 public:
  ExecArgs(std::vector<std::string> args, const std::map<std::string, std::string>& env) : args_(std::move(args)) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (!env.contains(entry.substr(0, entry.find('=')))) env_.push_back(entry);
    }
    for (const auto& [key, value] : env) env_.push_back(key + "=" + value);
    for (std::string& a : args_) argv_.push_back(a.data());
    argv_.push_back(nullptr);
    for (std::string& e : env_) envp_.push_back(e.data());
    envp_.push_back(nullptr);
  }
  char* const* argv() { return argv_.data(); }
  char* const* envp() { return envp_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<std::string> env_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

struct SpawnOptions {
  std::string log = "/dev/null";  ///< stdout and stderr.
  bool append = false;
  int stdin_fd = -1;               ///< -1: /dev/null.
  bool die_with_us = false;        ///< SIGKILL when the test process ends.
  bool own_session = false;        ///< Out of reach of signals sent to our process group.
};

absl::StatusOr<pid_t> Spawn(ExecArgs& exec, const SpawnOptions& o) {
  const int log_flags = O_WRONLY | O_CREAT | O_CLOEXEC | (o.append ? O_APPEND : O_TRUNC);
  const int log_fd = ::open(o.log.c_str(), log_flags, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("cannot open ", o.log));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (o.die_with_us) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
    }
    if (o.own_session) ::setsid();
    ::dup2(o.stdin_fd >= 0 ? o.stdin_fd : null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    // Nothing else of ours may leak into the child: an inherited end of the
    // watchdog's pipe would keep the watchdog waiting forever.
    ::close_range(3, ~0U, 0);
    ::execve(exec.argv()[0], exec.argv(), exec.envp());
    ::_exit(127);
  }
  ::close(log_fd);
  if (null_fd >= 0) ::close(null_fd);
  if (pid < 0) return absl::InternalError("fork failed");
  return pid;
}

// Runs a script to its end; its exit code.
absl::StatusOr<int> Run(std::vector<std::string> args, const std::map<std::string, std::string>& env,
                        const std::string& log) {
  ExecArgs exec(std::move(args), env);
  absl::StatusOr<pid_t> pid = Spawn(exec, {.log = log});
  if (!pid.ok()) return pid.status();
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// `n` distinct ports free on 127.0.0.1 now: all sockets are held until the
// last is bound, so no two are the same. Another process may still take one
// before the plane binds it; Start() then tries again with new ones.
absl::StatusOr<std::vector<uint16_t>> FreePorts(int n) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  absl::Status status;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (fd >= 0) ::close(fd);
      status = absl::InternalError("cannot find a free port on 127.0.0.1");
      break;
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

bool ExitedOrGone(pid_t pid, int* status) { return ::waitpid(pid, status, WNOHANG) != 0; }

// Waits up to `timeout` for a child to end; SIGKILL after that.
void Reap(pid_t pid, std::chrono::milliseconds timeout) {
  int status = 0;
  if (!WaitFor([&] { return ExitedOrGone(pid, &status); }, timeout)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
}

// "AHalfGpuPod" -> "a-half-gpu-pod": a namespace and label value (DNS label).
std::string KebabCase(std::string_view name, size_t max) {
  std::string out;
  for (char c : name) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != '-') out.push_back('-');
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(c);
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
    if (out.size() >= max) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

// What ControlPlaneEnvironment found, for every test of the binary.
struct SharedState {
  std::unique_ptr<ControlPlane> plane;
  std::string skip_reason;  ///< No plane here: the tests skip with this.
  std::string failure;      ///< The plane is here but did not start: the tests fail with this.
};
SharedState& Shared() {
  static auto* state = new SharedState();
  return *state;
}

}  // namespace

bool RunningInCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

std::string KubeVersionUnderTest() {
  const char* env = std::getenv("TESSERA_KUBE_VERSION");
  std::string version = env != nullptr && *env != '\0' ? env : "1.26";
  if (!version.empty() && version.front() == 'v') version.erase(0, 1);
  return version;
}

absl::StatusOr<std::string> FindControlPlane(const std::string& version) {
  if (std::find(std::begin(kKubeVersions), std::end(kKubeVersions), version) == std::end(kKubeVersions)) {
    return absl::InvalidArgumentError(absl::StrCat("TESSERA_KUBE_VERSION=", version, " is none of the tested versions (",
                                                   absl::StrJoin(kKubeVersions, ", "), ")"));
  }
  const char* env = std::getenv("TESSERA_KUBE_DIR");
  const bool from_env = env != nullptr && *env != '\0';
  const std::string dir = from_env ? std::string(env) : std::string(TESSERA_KUBE_DEFAULT_DIR);
  const std::string where = from_env ? absl::StrCat("TESSERA_KUBE_DIR=", dir)
                                     : absl::StrCat(dir, " (the default; TESSERA_KUBE_DIR is unset)");
  const std::string bin = version == "1.26" ? "bin/" : absl::StrCat("bin/v", version, "/");
  for (const std::string& file : {std::string("up.sh"), std::string("down.sh"), std::string("unpack.sh"),
                                 bin + "kube-apiserver.xz", bin + "kube-scheduler.xz"}) {
    if (!fs::exists(fs::path(dir) / file)) {
      return absl::NotFoundError(absl::StrCat(
          where, " has no ", file, " (Kubernetes v", version, ")",
          "; set TESSERA_KUBE_DIR to the folder with up.sh, down.sh, unpack.sh and bin/ (shared/kube beside "
          "the Tessera checkout; README, \"Tests on a real control plane\")"));
    }
  }
  const char* etcd_bin = std::getenv("ETCD_BIN");
  if (etcd_bin != nullptr && *etcd_bin != '\0' ? ::access(etcd_bin, X_OK) != 0 : FindOnPath("etcd").empty()) {
    return absl::NotFoundError(
        "etcd is not on the PATH (nor in $ETCD_BIN); install Debian's etcd-server "
        "(scripts/install-deps.sh does)");
  }
  const std::vector<std::pair<std::string, std::string>> programs = {
      {"openssl", "openssl"}, {"curl", "curl"}, {"xz", "xz-utils"}, {"flock", "util-linux"}};
  for (const auto& [program, package] : programs) {
    if (FindOnPath(program).empty()) {
      return absl::NotFoundError(absl::StrCat(program,
                                              " is not on the PATH; install Debian's ", package,
                                              " (scripts/install-deps.sh does)"));
    }
  }
  return dir;
}

// --- ControlPlane -----------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<ControlPlane>> ControlPlane::Start(const Options& options) {
  std::unique_ptr<ControlPlane> plane(new ControlPlane());
  plane->options_ = options;
  std::string pattern = (fs::temp_directory_path() / "tessera-kube-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  plane->run_dir_ = pattern;
  if (absl::Status st = plane->StartWatchdog(); !st.ok()) {
    fs::remove_all(plane->run_dir_);
    return st;
  }
  // From here the destructor (or the watchdog, if we crash) cleans up.

  // unpack.sh writes the binaries into a cache shared by every checkout on the
  // machine; two test runs unpacking at once would write the same files.
  const std::string unpack_log = plane->run_dir_ + "/unpack.log";
  const std::string lock = (fs::temp_directory_path() / "tessera-kube-unpack.lock").string();
  absl::StatusOr<int> unpacked =
      Run({FindOnPath("flock"), lock, options.kube_dir + "/unpack.sh"}, {{"KUBE_VERSION", options.kube_version}}, unpack_log);
  if (!unpacked.ok()) return unpacked.status();
  std::string out = ReadWhole(unpack_log);
  if (*unpacked != 0) return absl::FailedPreconditionError(absl::StrCat("unpack.sh failed: ", out));
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  plane->kube_bin_ = out.substr(out.rfind('\n') + 1);

  absl::Status up;
  for (int attempt = 0; attempt < 3; ++attempt) {
    up = plane->Up();
    if (up.ok()) break;
  }
  if (!up.ok()) return up;

  absl::StatusOr<k8s::ApiServerConfig> config = k8s::LoadKubeconfig(plane->run_dir_ + "/admin.kubeconfig");
  if (!config.ok()) return config.status();
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> api = k8s::ApiClient::Create(*config);
  if (!api.ok()) return api.status();
  plane->api_ = std::move(*api);
  return plane;
}

absl::Status ControlPlane::StartWatchdog() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  // `cat` returns when the last write end closes: we closed it, or we died.
  const std::string script =
      "cat >/dev/null; KUBE_RUN=\"$1\" WIPE=1 \"$2/down.sh\" >/dev/null 2>&1; rm -rf -- \"$1\"";
  ExecArgs exec({"/bin/bash", "-c", script, "tessera-kube-watchdog", run_dir_, options_.kube_dir}, {});
  absl::StatusOr<pid_t> pid = Spawn(exec, {.stdin_fd = fds[0], .own_session = true});
  ::close(fds[0]);
  if (!pid.ok()) {
    ::close(fds[1]);
    return pid.status();
  }
  watchdog_pid_ = *pid;
  watchdog_fd_ = fds[1];
  return absl::OkStatus();
}

absl::Status ControlPlane::Up() {
  absl::StatusOr<std::vector<uint16_t>> ports = FreePorts(5);
  if (!ports.ok()) return ports.status();
  api_port_ = (*ports)[0];
  replicas_ = {Replica{.scheduler_name = "kube-scheduler", .extender_port = (*ports)[4], .scheduler_port = (*ports)[3]}};
  std::map<std::string, std::string> env = {
      {"KUBE_RUN", run_dir_},
      {"KUBE_BIN", kube_bin_},
      {"KUBE_VERSION", options_.kube_version},
      {"API_PORT", std::to_string((*ports)[0])},
      {"ETCD_PORT", std::to_string((*ports)[1])},
      {"ETCD_PEER_PORT", std::to_string((*ports)[2])},
      {"SCHED_PORT", std::to_string((*ports)[3])},
      {"EXT_PORT", std::to_string(replicas_[0].extender_port)},
      {"EXT_URL_PATH", options_.url_path},
      {"LEADER_ELECT", options_.leader_elect ? "true" : "false"},
      {"LEASE_DURATION", options_.lease_duration},
      {"RENEW_DEADLINE", options_.renew_deadline},
      {"RETRY_PERIOD", options_.retry_period},
      {"RESET", "1"},
  };
  if (!options_.scheduler_config_template.empty()) env["SCHED_CONFIG_TMPL"] = options_.scheduler_config_template;
  const std::string log = run_dir_ + "/up.log";
  absl::StatusOr<int> code = Run({"/bin/bash", options_.kube_dir + "/up.sh"}, env, log);
  if (code.ok() && *code == 0) return absl::OkStatus();
  // Stop whatever did start before the next attempt uses other ports.
  const std::string up_log = ReadWhole(log);
  (void)Run({"/bin/bash", options_.kube_dir + "/down.sh"}, {{"KUBE_RUN", run_dir_}, {"WIPE", "1"}},
            run_dir_ + "/down.log");
  std::string logs;
  for (const char* name : {"etcd", "kube-apiserver", "kube-scheduler"}) {
    absl::StrAppend(&logs, "\n--- ", name, ".log (tail)\n", Tail(ReadWhole(run_dir_ + "/logs/" + name + ".log"), 15));
  }
  return absl::UnavailableError(absl::StrCat("up.sh failed (", code.ok() ? std::to_string(*code) : "not run",
                                             "):\n", up_log, logs));
}

ControlPlane::~ControlPlane() {
  for (size_t i = 0; i < replicas_.size(); ++i) KillTessera(static_cast<int>(i));
  if (watchdog_fd_ >= 0) {
    ::close(watchdog_fd_);  // the watchdog stops the plane and deletes the folder
    Reap(watchdog_pid_, std::chrono::seconds(60));
  }
}

namespace {
std::string TesseraLog(const std::string& run_dir, int replica) {
  return replica == 0 ? run_dir + "/tessera.log" : absl::StrCat(run_dir, "/tessera-", replica, ".log");
}
}  // namespace

absl::Status ControlPlane::StartTessera(int replica) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return absl::NotFoundError("no such replica");
  Replica& r = replicas_[replica];
  if (r.tessera_pid > 0) return absl::FailedPreconditionError("Tessera is already running");
  std::vector<std::string> args = {options_.extender_binary, absl::StrCat("--port=", r.extender_port),
                                    "--address=127.0.0.1", "--kubeconfig=" + run_dir_ + "/admin.kubeconfig",
                                    "--policy-file=" + options_.policy_file, "--url-prefix=" + options_.url_path};
  args.insert(args.end(), options_.extender_flags.begin(), options_.extender_flags.end());
  ExecArgs exec(std::move(args), {});
  const std::string log = TesseraLog(run_dir_, replica);
  absl::StatusOr<pid_t> pid = Spawn(exec, {.log = log, .append = true, .die_with_us = true});
  if (!pid.ok()) return pid.status();
  r.tessera_pid = *pid;
  bool exited = false;
  const bool ready = WaitFor(
      [&] {
        int status = 0;
        if (ExitedOrGone(r.tessera_pid, &status)) return exited = true;
        return options_.tessera_ready ? options_.tessera_ready(r.extender_port)
                                      : TesseraGet("/readyz", replica).status == 200;
      },
      absl::Seconds(30));
  if (exited) {
    r.tessera_pid = -1;
    return absl::UnavailableError(absl::StrCat("tessera-extender exited at start:\n", Tail(ReadWhole(log), 30)));
  }
  if (ready) return absl::OkStatus();
  KillTessera(replica);
  return absl::DeadlineExceededError(
      absl::StrCat("tessera-extender not ready within 30 s:\n", Tail(ReadWhole(log), 30)));
}

void ControlPlane::KillTessera(int replica) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return;
  pid_t& pid = replicas_[replica].tessera_pid;
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  Reap(pid, std::chrono::seconds(10));
  pid = -1;
}

bool ControlPlane::TesseraRunning(int replica) const {
  return replica >= 0 && replica < static_cast<int>(replicas_.size()) && replicas_[replica].tessera_pid > 0;
}

HttpAnswer ControlPlane::TesseraGet(const std::string& path, int replica) const {
  HttpClient client(replicas_.at(replica).extender_port);
  return client.Get(path);
}

HttpAnswer ControlPlane::TesseraPost(const std::string& verb, const std::string& body, int replica) const {
  HttpClient client(replicas_.at(replica).extender_port);
  return client.Post(options_.url_path + "/" + verb, body);
}

void ControlPlane::WaitUntilTesseraKnowsNode(const std::string& node, absl::Duration timeout) const {
  // A filter for a pod asking a sliver of a GPU on that node alone: Tessera
  // answers "not in Tessera's cluster model (yet)" until its watch has it. No
  // uid, so no preemption notes it.
  const std::string probe = absl::StrCat(
      R"({"Pod":{"metadata":{"name":"tessera-test-probe","namespace":"default",)",
      R"("annotations":{"tessera.io/gpu-fraction":"0.01"}},"spec":{"containers":[]}},"NodeNames":[")", node, R"("]})");
  const absl::Time deadline = absl::Now() + timeout;
  for (int replica = 0; replica < static_cast<int>(replicas_.size()); ++replica) {
    if (replicas_[replica].tessera_pid <= 0) continue;
    // Not plain HTTP (TLS), or not answering: nothing to learn here. Out of
    // time: the test that needs the node fails on its own terms.
    (void)WaitFor(
        [&] {
          const HttpAnswer answer = TesseraPost("filter", probe, replica);
          return answer.status != 200 || answer.body.find("cluster model (yet)") == std::string::npos;
        },
        std::max(deadline - absl::Now(), absl::ZeroDuration()));
  }
}

absl::StatusOr<int> ControlPlane::AddScheduler() {
  if (!options_.leader_elect) return absl::FailedPreconditionError("a second scheduler needs Options::leader_elect");
  absl::StatusOr<std::vector<uint16_t>> ports = FreePorts(2);
  if (!ports.ok()) return ports.status();
  const int replica = static_cast<int>(replicas_.size());
  Replica r{.scheduler_name = absl::StrCat("kube-scheduler-", replica + 1),
            .extender_port = (*ports)[1],
            .scheduler_port = (*ports)[0]};
  std::map<std::string, std::string> env = {
      {"KUBE_RUN", run_dir_},          {"KUBE_BIN", kube_bin_},
      {"NAME", r.scheduler_name},      {"SCHED_PORT", std::to_string((*ports)[0])},
      {"EXT_PORT", std::to_string(r.extender_port)}, {"EXT_URL_PATH", options_.url_path},
      {"LEASE_DURATION", options_.lease_duration},   {"RENEW_DEADLINE", options_.renew_deadline},
      {"RETRY_PERIOD", options_.retry_period}};
  if (!options_.scheduler_config_template.empty()) env["SCHED_CONFIG_TMPL"] = options_.scheduler_config_template;
  const std::string log = absl::StrCat(run_dir_, "/add-", r.scheduler_name, ".log");
  absl::StatusOr<int> code = Run({"/bin/bash", options_.kube_dir + "/add-scheduler.sh"}, env, log);
  if (!code.ok()) return code.status();
  if (*code != 0) return absl::UnavailableError(absl::StrCat("add-scheduler.sh failed:\n", ReadWhole(log)));
  replicas_.push_back(std::move(r));
  return replica;
}

absl::Status ControlPlane::SignalComponent(const std::string& name, int signal) {
  const std::string pid_file = absl::StrCat(run_dir_, "/pids/", name, ".pid");
  int pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadWhole(pid_file)), &pid) || pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no pid in ", pid_file));
  }
  if (::kill(pid, signal) != 0) return absl::InternalError(absl::StrCat("kill ", pid, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

absl::Status ControlPlane::KillComponent(const std::string& name) {
  const std::string pid_file = absl::StrCat(run_dir_, "/pids/", name, ".pid");
  int pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadWhole(pid_file)), &pid) || pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no pid in ", pid_file));
  }
  const std::string cmdline = ReadWhole(absl::StrCat("/proc/", pid, "/cmdline"));
  std::vector<std::string> argv = absl::StrSplit(cmdline, '\0', absl::SkipEmpty());
  if (argv.empty()) return absl::NotFoundError(absl::StrCat(name, " (pid ", pid, ") has no command line"));
  if (::kill(pid, SIGKILL) != 0) return absl::InternalError(absl::StrCat("kill ", pid, ": ", std::strerror(errno)));
  // up.sh's child, not ours: wait for it to be gone by its /proc entry.
  if (!Eventually([&] { return ::kill(pid, 0) != 0; }, absl::Seconds(10), absl::StrCat(name, " to die"))) {
    return absl::DeadlineExceededError(absl::StrCat(name, " (pid ", pid, ") outlived SIGKILL"));
  }
  killed_commands_[name] = std::move(argv);
  return absl::OkStatus();
}

absl::Status ControlPlane::RestartComponent(const std::string& name) {
  auto it = killed_commands_.find(name);
  if (it == killed_commands_.end()) return absl::NotFoundError(absl::StrCat(name, " was not killed by KillComponent"));
  std::vector<char*> argv;
  for (std::string& a : it->second) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = absl::StrCat(run_dir_, "/logs/", name, ".log");
  int report[2];
  if (pipe(report) != 0) return absl::InternalError("pipe");
  // Twice forked, as nohup ... & leaves it: init reaps it, so down.sh's
  // kill -0 never waits on a zombie of ours.
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      const int in = open("/dev/null", O_RDONLY);
      dup2(in, STDIN_FILENO);
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
      if (close_range(3, ~0U, 0) != 0) {
        for (int fd = 3; fd < 4096; ++fd) close(fd);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    (void)!write(report[1], &grandchild, sizeof grandchild);
    _exit(0);
  }
  close(report[1]);
  pid_t started = -1;
  const bool got = read(report[0], &started, sizeof started) == static_cast<ssize_t>(sizeof started);
  close(report[0]);
  waitpid(child, nullptr, 0);
  if (!got || started <= 0) return absl::InternalError(absl::StrCat("could not start ", name, " again"));
  std::ofstream(absl::StrCat(run_dir_, "/pids/", name, ".pid")) << started << "\n";
  killed_commands_.erase(it);
  return absl::OkStatus();
}

absl::Status ControlPlane::KillScheduler(int replica) {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return absl::NotFoundError("no such replica");
  const std::string pid_file = absl::StrCat(run_dir_, "/pids/", replicas_[replica].scheduler_name, ".pid");
  int pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadWhole(pid_file)), &pid) || pid <= 0) {
    return absl::NotFoundError(absl::StrCat("no pid in ", pid_file));
  }
  if (::kill(pid, SIGKILL) != 0) return absl::InternalError(absl::StrCat("kill ", pid, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

absl::StatusOr<k8s::ApiResponse> ControlPlane::Call(std::string_view method, const std::string& target,
                                                    const std::string& body, std::string_view content_type) {
  if (content_type.empty() && !body.empty()) content_type = "application/json";
  return api_->Send(method, target, body, content_type);
}

namespace {
absl::Status Expect(const absl::StatusOr<k8s::ApiResponse>& r, std::string_view what,
                    std::initializer_list<int> accepted) {
  if (!r.ok()) return r.status();
  for (int code : accepted) {
    if (r->status == code) return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat(Absl(what), ": HTTP ", r->status, ": ", k8s::StatusMessage(r->body)));
}
}  // namespace

absl::StatusOr<std::unique_ptr<k8s::ApiClient>> ControlPlane::AdminClient(k8s::ApiClientOptions options) const {
  absl::StatusOr<k8s::ApiServerConfig> config = k8s::LoadKubeconfig(run_dir_ + "/admin.kubeconfig");
  if (!config.ok()) return config.status();
  return k8s::ApiClient::Create(*std::move(config), std::move(options));
}

absl::StatusOr<std::string> ControlPlane::SchedulerMetrics(int replica) const {
  if (replica < 0 || replica >= static_cast<int>(replicas_.size())) return absl::NotFoundError("no such replica");
  absl::StatusOr<k8s::ApiServerConfig> config = k8s::LoadKubeconfig(run_dir_ + "/admin.kubeconfig");
  if (!config.ok()) return config.status();
  config->port = std::to_string(replicas_[static_cast<size_t>(replica)].scheduler_port);
  config->insecure_skip_tls_verify = true;  // kube-scheduler serves a certificate it made itself
  absl::StatusOr<std::unique_ptr<k8s::ApiClient>> client = k8s::ApiClient::Create(*std::move(config));
  if (!client.ok()) return client.status();
  absl::StatusOr<k8s::ApiResponse> r = (*client)->Get("/metrics");
  if (!r.ok()) return r.status();
  if (r->status != 200) return absl::UnavailableError(absl::StrCat("kube-scheduler /metrics: HTTP ", r->status));
  return std::move(r->body);
}

absl::Status ControlPlane::CreateNamespace(const std::string& name) {
  const json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}};
  return Expect(Call("POST", "/api/v1/namespaces", ns.dump()), "create namespace " + name, {201, 409});
}

absl::StatusOr<json> ControlPlane::CreateGpuNode(const GpuNodeSpec& spec) {
  json inventory = json::array();
  for (int i = 0; i < spec.gpus; ++i) {
    inventory.push_back({{"index", i},
                         {"uuid", absl::StrCat("GPU-", spec.name, "-", i)},
                         {"model", spec.model},
                         {"memoryMiB", spec.memory_mib},
                         {"numa", 0}});
    if (auto m = spec.mig.find(i); m != spec.mig.end()) inventory.back()["mig"] = m->second;
    if (!spec.vendor.empty()) inventory.back()["vendor"] = spec.vendor;
  }
  json labels = {{"kubernetes.io/hostname", spec.name}};
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", spec.name}, {"labels", labels}, {"annotations", json::object()}}}};
  if (spec.inventory_annotation) node["metadata"]["annotations"]["tessera.io/gpu-inventory"] = inventory.dump();
  if (absl::Status st = Expect(Call("POST", "/api/v1/nodes", node.dump()), "create node " + spec.name, {201});
      !st.ok()) {
    return st;
  }
  // What a kubelet would report; nothing else sets a node's status here.
  const json resources = {
      {"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", std::to_string(spec.gpus)}};
  const json status = {
      {"status",
       {{"capacity", resources},
        {"allocatable", resources},
        {"conditions",
         json::array({{{"type", "Ready"},
                       {"status", "True"},
                       {"reason", "KubeletReady"},
                       {"message", "set by the test harness; nothing heartbeats here"}}})}}}};
  absl::StatusOr<k8s::ApiResponse> patched = Call("PATCH", absl::StrCat("/api/v1/nodes/", spec.name, "/status"),
                                                  status.dump(), "application/merge-patch+json");
  if (absl::Status st = Expect(patched, "set the status of node " + spec.name, {200}); !st.ok()) return st;
  return json::parse(patched->body);
}

absl::Status ControlPlane::LabelNode(const std::string& name, const std::string& key, const std::string& value) {
  const json patch = {{"metadata", {{"labels", {{key, value}}}}}};
  return Expect(Call("PATCH", "/api/v1/nodes/" + name, patch.dump(), "application/merge-patch+json"),
                "label node " + name, {200});
}

absl::Status ControlPlane::DeleteNode(const std::string& name) {
  return Expect(Call("DELETE", "/api/v1/nodes/" + name), "delete node " + name, {200, 404});
}

absl::StatusOr<json> ControlPlane::GetNode(const std::string& name) {
  absl::StatusOr<k8s::ApiResponse> r = Call("GET", "/api/v1/nodes/" + name);
  if (absl::Status st = Expect(r, "get node " + name, {200}); !st.ok()) return st;
  return json::parse(r->body);
}

absl::StatusOr<json> ControlPlane::CreatePod(const PodSpec& spec) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", spec.name}, {"namespace", spec.namespace_name}}},
              {"spec",
               {{"schedulerName", "tessera-scheduler"},
                {"terminationGracePeriodSeconds", 0},
                {"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
  if (!spec.annotations.empty()) pod["metadata"]["annotations"] = spec.annotations;
  if (!spec.node_selector.empty()) pod["spec"]["nodeSelector"] = spec.node_selector;
  if (!spec.labels.empty()) pod["metadata"]["labels"] = spec.labels;
  if (!spec.priority_class_name.empty()) pod["spec"]["priorityClassName"] = spec.priority_class_name;
  if (!spec.resources.empty()) {
    pod["spec"]["containers"][0]["resources"] = {{"requests", spec.resources}, {"limits", spec.resources}};
  }
  absl::StatusOr<k8s::ApiResponse> r =
      Call("POST", absl::StrCat("/api/v1/namespaces/", spec.namespace_name, "/pods"), pod.dump());
  if (absl::Status st = Expect(r, "create pod " + spec.name, {201}); !st.ok()) return st;
  return json::parse(r->body);
}

absl::Status ControlPlane::CreatePriorityClass(const std::string& name, int32_t value) {
  const json pc = {{"apiVersion", "scheduling.k8s.io/v1"},
                   {"kind", "PriorityClass"},
                   {"metadata", {{"name", name}}},
                   {"value", value}};
  return Expect(Call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", pc.dump()), "create PriorityClass " + name,
                {201, 409});
}

absl::StatusOr<json> ControlPlane::GetPod(const std::string& ns, const std::string& name) {
  absl::StatusOr<k8s::ApiResponse> r = Call("GET", absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name));
  if (absl::Status st = Expect(r, "get pod " + name, {200}); !st.ok()) return st;
  return json::parse(r->body);
}

absl::StatusOr<std::vector<json>> ControlPlane::ListPods(const std::string& ns, std::string_view field_selector) {
  std::string target = absl::StrCat("/api/v1/namespaces/", ns, "/pods");
  if (!field_selector.empty()) {
    absl::StrAppend(&target, "?fieldSelector=", absl::StrReplaceAll(Absl(field_selector), {{"=", "%3D"}, {",", "%2C"}}));
  }
  absl::StatusOr<k8s::ApiResponse> r = Call("GET", target);
  if (absl::Status st = Expect(r, "list pods of " + ns, {200}); !st.ok()) return st;
  return json::parse(r->body)["items"].get<std::vector<json>>();
}

absl::Status ControlPlane::DeletePod(const std::string& ns, const std::string& name) {
  return Expect(Call("DELETE", absl::StrCat("/api/v1/namespaces/", ns, "/pods/", name, "?gracePeriodSeconds=0")),
                "delete pod " + name, {200, 202, 404});
}

absl::Status ControlPlane::DeleteAllPods(const std::string& ns) {
  return Expect(Call("DELETE", absl::StrCat("/api/v1/namespaces/", ns, "/pods?gracePeriodSeconds=0")),
                "delete the pods of " + ns, {200});
}

absl::StatusOr<std::vector<json>> ControlPlane::PodEvents(const std::string& ns, const std::string& name) {
  absl::StatusOr<k8s::ApiResponse> r =
      Call("GET", absl::StrCat("/api/v1/namespaces/", ns, "/events?fieldSelector=involvedObject.name%3D", name));
  if (absl::Status st = Expect(r, "list events of " + name, {200}); !st.ok()) return st;
  return json::parse(r->body)["items"].get<std::vector<json>>();
}

absl::StatusOr<std::vector<json>> ControlPlane::WaitForPods(const std::string& ns, std::string_view what,
                                                           const std::function<bool(const std::vector<json>&)>& done,
                                                           absl::Duration timeout) {
  absl::StatusOr<std::vector<json>> pods;
  if (WaitFor(
          [&] {
            pods = ListPods(ns);
            return pods.ok() && done(*pods);
          },
          timeout)) {
    return pods;
  }
  if (!pods.ok()) return pods.status();
  std::vector<std::string> states;
  for (const json& p : *pods) {
    states.push_back(absl::StrCat(p["metadata"]["name"].get<std::string>(), ": ",
                                  IsBound(p) ? "bound to " + p["spec"]["nodeName"].get<std::string>()
                                             : "pending " + UnschedulableMessage(p)));
  }
  return absl::DeadlineExceededError(absl::StrCat("waited ", absl::FormatDuration(timeout), " for ", Absl(what),
                                                  "; the pods of ", ns, ":\n  ", absl::StrJoin(states, "\n  ")));
}

std::string ControlPlane::LogTails(int lines) const {
  std::string out;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const int replica = static_cast<int>(i);
    const std::string tessera = TesseraLog(run_dir_, replica);
    absl::StrAppend(&out, "--- ", tessera.substr(run_dir_.size() + 1), " (tail)\n", Tail(ReadWhole(tessera), lines),
                    "--- ", replicas_[i].scheduler_name, ".log (tail)\n",
                    Tail(ReadWhole(run_dir_ + "/logs/" + replicas_[i].scheduler_name + ".log"), lines));
  }
  return out;
}

// --- reading pods -----------------------------------------------------------------------------

bool IsBound(const json& pod) {
  const auto spec = pod.find("spec");
  if (spec == pod.end()) return false;
  const auto node = spec->find("nodeName");
  return node != spec->end() && node->is_string() && !node->get<std::string>().empty();
}

std::string Annotation(const json& pod, std::string_view key) {
  const json& annotations = pod["metadata"].value("annotations", json::object());
  const auto it = annotations.find(std::string(key));
  return it != annotations.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string UnschedulableMessage(const json& pod) {
  const json conditions = pod.value("status", json::object()).value("conditions", json::array());
  for (const json& c : conditions) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
        c.value("reason", "") == "Unschedulable") {
      return c.value("message", "");
    }
  }
  return "";
}

// --- gtest ------------------------------------------------------------------------------------

ControlPlaneEnvironment::ControlPlaneEnvironment(ControlPlane::Options options) : options_(std::move(options)) {}

ControlPlane* ControlPlaneEnvironment::plane() { return Shared().plane.get(); }

// A failure here is recorded, not fatal: gtest would mark every test of the
// binary skipped after a fatal failure in an environment's SetUp, and ctest's
// SKIP_REGULAR_EXPRESSION would then report a skip. Each test fails instead.
void ControlPlaneEnvironment::SetUp() {
  SharedState& shared = Shared();
  absl::StatusOr<std::string> dir = FindControlPlane();
  if (!dir.ok()) {
    if (RunningInCi()) {
      shared.failure = absl::StrCat("CI=true, so the control-plane tests must run, but ", dir.status().message());
    } else {
      shared.skip_reason = absl::StrCat(kSkipMarker, ": ", dir.status().message());
    }
    return;
  }
  options_.kube_dir = *dir;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<ControlPlane>> plane = ControlPlane::Start(options_);
  if (!plane.ok()) {
    // Everything the plane needs is there, so this is a failure, never a skip.
    ADD_FAILURE() << "the control plane did not start: " << plane.status();
    shared.failure = "the control plane did not start (the failure in the global set-up says why)";
    return;
  }
  shared.plane = std::move(*plane);
  if (const absl::Status st = shared.plane->StartTessera(); !st.ok()) {
    ADD_FAILURE() << st << "\n" << shared.plane->LogTails();
    shared.failure = "Tessera did not start on the control plane (the failure in the global set-up says why)";
    return;
  }
  std::cout << "control plane v" << options_.kube_version << " and Tessera up in "
            << absl::FormatDuration(absl::Trunc(absl::Now() - start, absl::Milliseconds(100))) << " (" << *dir
            << ", state in " << shared.plane->run_dir() << ")" << std::endl;
}

void ControlPlaneEnvironment::TearDown() { Shared().plane.reset(); }

void ControlPlaneTest::SetUp() {
  const SharedState& shared = Shared();
  if (!shared.failure.empty()) GTEST_FAIL() << shared.failure;
  if (!shared.skip_reason.empty()) GTEST_SKIP() << shared.skip_reason;
  if (shared.plane == nullptr) GTEST_FAIL() << "no control plane: register ControlPlaneEnvironment in main()";
  plane_ = shared.plane.get();
  // A test that failed after killing Tessera leaves the next one a Tessera.
  if (!plane_->TesseraRunning()) {
    const absl::Status st = plane_->StartTessera();
    ASSERT_TRUE(st.ok()) << st;
  }
  static int tests = 0;
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  ns_ = KebabCase(absl::StrCat("t", ++tests, "-", info->name()), 40);
  const absl::Status st = plane_->CreateNamespace(ns_);
  ASSERT_TRUE(st.ok()) << st;
}

void ControlPlaneTest::TearDown() {
  if (plane_ == nullptr) return;
  if (HasFailure()) std::cout << plane_->LogTails() << std::endl;
  // Pods first: a pending pod of this test must not wait on as kube-scheduler's work.
  EXPECT_TRUE(plane_->DeleteAllPods(ns_).ok());
  for (const std::string& node : nodes_) EXPECT_TRUE(plane_->DeleteNode(node).ok());
}

absl::StatusOr<json> ControlPlaneTest::Node(const std::string& suffix, int gpus) {
  GpuNodeSpec spec;
  spec.name = suffix;
  spec.gpus = gpus;
  return Node(std::move(spec));
}

absl::StatusOr<json> ControlPlaneTest::Node(GpuNodeSpec spec) {
  spec.name = ns_ + "-" + spec.name;
  spec.labels[kTestLabel] = ns_;
  absl::StatusOr<json> node = plane_->CreateGpuNode(spec);
  if (node.ok()) {
    nodes_.push_back(spec.name);
    plane_->WaitUntilTesseraKnowsNode(spec.name);
  }
  return node;
}

absl::StatusOr<json> ControlPlaneTest::Pod(const std::string& name, const std::string& fraction) {
  return plane_->CreatePod(
      {.namespace_name = ns_, .name = name, .annotations = {{"tessera.io/gpu-fraction", fraction}},
       .node_selector = {{kTestLabel, ns_}}});
}

}  // namespace tessera::testing
