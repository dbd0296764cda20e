// The real tessera-extender binary as a child process, with its stderr
// captured, for the tests that run the whole program (TESSERA_EXTENDER_BINARY).
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tessera::testing {

// A child process running the extender, with its stderr captured.
class Extender {
 public:
  explicit Extender(std::vector<std::string> args) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      std::vector<char*> argv{const_cast<char*>(TESSERA_EXTENDER_BINARY)};
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(TESSERA_EXTENDER_BINARY, argv.data());
      _exit(127);
    }
    close(fds[1]);
    err_ = fds[0];
  }
  ~Extender() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(err_);
  }

  /// Reads stderr until `pattern` matches a line (or `timeout`); returns the match.
  std::smatch WaitFor(const std::regex& pattern, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      size_t nl;
      while ((nl = pending_.find('\n')) != std::string::npos) {
        lines_.push_back(pending_.substr(0, nl));
        pending_.erase(0, nl + 1);
      }
      for (; scanned_ < lines_.size(); ++scanned_) {
        std::smatch m;
        if (std::regex_search(lines_[scanned_], m, pattern)) {
          ++scanned_;
          return m;
        }
      }
      pollfd p{err_, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char buf[4096];
        const ssize_t n = read(err_, buf, sizeof buf);
        if (n <= 0) break;
        pending_.append(buf, static_cast<size_t>(n));
      }
    }
    return {};
  }
  /// Everything the process wrote to stderr (drains the pipe until it closes).
  std::string AllOutput() {
    char buf[4096];
    ssize_t n;
    while ((n = read(err_, buf, sizeof buf)) > 0) pending_.append(buf, static_cast<size_t>(n));
    std::string all;
    for (const std::string& l : lines_) all += l + "\n";
    return all + pending_;
  }
  void Signal(int sig) const { kill(pid_, sig); }
  /// The exit code, or -1 if it did not exit within `timeout`.
  int Wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int err_ = -1;
  bool exited_ = false;
  std::string pending_;
  std::vector<std::string> lines_;
  size_t scanned_ = 0;
};

}  // namespace tessera::testing
