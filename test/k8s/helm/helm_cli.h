// The real helm and kubectl binaries, run by tests: where they are, how to
// run one and read what it printed, and what a test does without them.
//
// scripts/install-helm.sh puts helm (v4) and kubectl in <source>/.tools/bin;
// $TESSERA_HELM and $TESSERA_KUBECTL override. Without them a chart test is
// skipped saying so; with CI=true it fails instead, so CI cannot pass without
// having run them.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

namespace tessera::deploy {

inline std::string ToolBinary(const char* env_override, const char* name) {
  if (const char* env = std::getenv(env_override); env != nullptr && *env != '\0') return env;
  return std::string(TESSERA_SOURCE_DIR) + "/.tools/bin/" + name;
}
inline std::string HelmBinary() { return ToolBinary("TESSERA_HELM", "helm"); }
inline std::string KubectlBinary() { return ToolBinary("TESSERA_KUBECTL", "kubectl"); }

inline bool HelmTestsInCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

/// Empty when helm is there; else why the test cannot run.
inline std::string MissingHelm() {
  if (::access(HelmBinary().c_str(), X_OK) == 0) return "";
  return "no helm at " + HelmBinary() + " (scripts/install-helm.sh installs it, or set $TESSERA_HELM)";
}

/// In a test's SetUp: skips the test without helm, or fails it with CI=true.
#define TESSERA_REQUIRE_HELM()                                            \
  do {                                                                    \
    if (const std::string missing = ::tessera::deploy::MissingHelm(); !missing.empty()) { \
      if (::tessera::deploy::HelmTestsInCi()) GTEST_FAIL() << missing;    \
      GTEST_SKIP() << missing;                                            \
    }                                                                     \
  } while (false)

struct ProgramResult {
  int exit_code = -1;  ///< 128 + signal when killed; -1 when it could not start.
  std::string out;
  std::string err;
};

namespace internal {
inline std::string ReadAndClose(std::FILE* f) {
  std::string text;
  std::rewind(f);
  char buffer[8192];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  std::fclose(f);
  return text;
}
}  // namespace internal

/// Runs `binary args...` to its end, with `env` set on top of this process's
/// environment. Its output goes to unnamed temporary files, not pipes, so a
/// large manifest cannot fill a pipe while we wait.
inline ProgramResult RunProgram(const std::string& binary, const std::vector<std::string>& args,
                                const std::map<std::string, std::string>& env = {}) {
  ProgramResult result;
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (env.count(entry.substr(0, entry.find('='))) == 0) environment.push_back(entry);
  }
  for (const auto& [k, v] : env) environment.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> words{binary};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  if (out == nullptr || err == nullptr) {
    result.err = "tmpfile failed";
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fileno(out), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fileno(err), STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (spawned == 0 && waitpid(pid, &status, 0) == pid) {
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  result.out = internal::ReadAndClose(out);
  result.err = internal::ReadAndClose(err);
  if (spawned != 0) result.err = "cannot start " + binary;
  return result;
}

/// A file of `text` that is this object's alone (ctest runs the cases of one
/// binary as processes side by side, and a process may hold several), deleted
/// with it.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& text, const std::string& suffix = ".yaml") {
    std::string name = (std::filesystem::temp_directory_path() / ("tessera-helm-XXXXXX" + suffix)).string();
    const int fd = ::mkstemps(name.data(), static_cast<int>(suffix.size()));
    EXPECT_GE(fd, 0) << name;
    if (fd >= 0) ::close(fd);
    path_ = name;
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~ScratchFile() { std::filesystem::remove(path_); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace tessera::deploy
