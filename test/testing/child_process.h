// A program of ours run as a child process by a test: its own environment,
// stdout and stderr captured, signals, and its exit code. Killed (SIGKILL)
// if the test ends first.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/testing/eventually.h"

extern char** environ;

namespace tessera::testing {

class ChildProcess {
 public:
  /// Starts `binary` with `args`, in this process's environment with `env`
  /// set on top (the environment is built before fork: nothing but exec runs
  /// in the child).
  ChildProcess(const std::string& binary, std::vector<std::string> args,
               const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (env.count(entry.substr(0, entry.find('='))) == 0) environment.push_back(entry);
    }
    for (const auto& [k, v] : env) environment.push_back(k + "=" + v);
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    int out[2], err[2];
    EXPECT_EQ(pipe(out), 0);
    EXPECT_EQ(pipe(err), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      // Nothing else of the test's goes along: Asio opens sockets without
      // FD_CLOEXEC, and a child holding a fake server's listening socket
      // keeps its port after the server stops (and accepts connections nobody answers).
      if (close_range(3, ~0U, 0) != 0) {
        for (int fd = 3; fd < 4096; ++fd) close(fd);
      }
      execve(binary.c_str(), argv.data(), envp.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  ~ChildProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_);
    close(err_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  /// Reads stderr until a line matches `pattern` or `timeout` passes.
  bool WaitForLog(const std::regex& pattern, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return !WaitForLogMatch(pattern, timeout).empty();
  }
  /// WaitForLog, giving the match: [0] the whole match, [1...] its groups;
  /// empty when no line matched in time.
  std::vector<std::string> WaitForLogMatch(const std::regex& pattern,
                                           std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      size_t nl;
      while ((nl = err_text_.find('\n', scanned_)) != std::string::npos) {
        const std::string line = err_text_.substr(scanned_, nl - scanned_);
        scanned_ = nl + 1;
        std::smatch m;
        if (std::regex_search(line, m, pattern)) return std::vector<std::string>(m.begin(), m.end());
      }
      if (std::chrono::steady_clock::now() >= deadline || !ReadSome(err_, err_text_, 50)) return {};
    }
  }
  void Signal(int sig) const { kill(pid_, sig); }
  /// The exit code (128 + signal when killed), or -1 if it did not exit within `timeout`.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    int status = 0;
    if (!WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout)) return -1;
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  /// Everything written to stdout / stderr so far (after the process ended: all of it).
  std::string Stdout() {
    while (ReadSome(out_, out_text_, 0)) {
    }
    return out_text_;
  }
  std::string Stderr() {
    while (ReadSome(err_, err_text_, 0)) {
    }
    return err_text_;
  }

 private:
  // Appends what `fd` has within `timeout_ms`; false at the end of the stream or when nothing came.
  static bool ReadSome(int fd, std::string& text, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return timeout_ms > 0;  // a timeout is not the end of a live stream
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    text.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  bool exited_ = false;
  std::string out_text_;
  std::string err_text_;
  size_t scanned_ = 0;
};

}  // namespace tessera::testing
