#include "config/policy_store.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/testing/deadline.h"
#include "test/testing/fake_plugins.h"

namespace tessera {
namespace {

using config_test::FakeRegistry;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::string_view kOnePlugin =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n"
    "  - name: fake-chooser\n"
    "    weight: 2\n";
// The same size as kOnePlugin, so only the content (and the stamp) differ.
constexpr std::string_view kOnePluginWeight3 =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n"
    "  - name: fake-chooser\n"
    "    weight: 3\n";
constexpr std::string_view kTwoPlugins =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n"
    "  - name: fake-chooser\n"
    "  - name: fake-score\n";
constexpr std::string_view kInvalid =
    "apiVersion: tessera.io/v1alpha1\n"
    "kind: SchedulingPolicy\n"
    "plugins:\n"
    "  - name: fake-chooser\n"
    "    weight: 0\n";

class PolicyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "tessera-policy-store-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    path_ = (dir_ / "policy.yaml").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(std::string_view text, const std::string& path) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    ASSERT_TRUE(out.good());
  }
  void Write(std::string_view text) { Write(text, path_); }

  std::unique_ptr<PolicyStore> Open() {
    absl::StatusOr<std::unique_ptr<PolicyStore>> store =
        PolicyStore::Open(path_, registry_, [this](const absl::Status& s) { reports_.push_back(s); });
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Moves the file's mtime far into the past, so that ReloadIfChanged trusts
  // the stamp alone (the racy-clean window has passed).
  void AgeFile() {
    const auto t = std::filesystem::last_write_time(path_);
    std::filesystem::last_write_time(path_, t - std::chrono::hours(1));
  }

  std::filesystem::path dir_;
  std::string path_;
  const PluginRegistry registry_ = FakeRegistry();
  std::vector<absl::Status> reports_;
};

TEST_F(PolicyStoreTest, OpenLoadsTheFile) {
  Write(kTwoPlugins);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(store->Current()->PluginNames(), ElementsAre("fake-chooser", "fake-score"));
  EXPECT_EQ(store->path(), path_);
  EXPECT_TRUE(reports_.empty());  // the first load is Open's result, not a reload
}

TEST_F(PolicyStoreTest, OpenFailsWithTheFullErrorListWhenTheFileIsInvalid) {
  Write(std::string(kInvalid) + "bogus: 1\n");
  absl::StatusOr<std::unique_ptr<PolicyStore>> store = PolicyStore::Open(path_, registry_, nullptr);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.status().message(),
            path_ + ":5:13: plugins[0].weight: must be an integer in 1..100; got 0\n" + path_ +
                ":6:1: bogus: unknown field");
}

TEST_F(PolicyStoreTest, OpenFailsWhenTheFileIsMissing) {
  absl::StatusOr<std::unique_ptr<PolicyStore>> store = PolicyStore::Open(path_, registry_, nullptr);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.status().message(), path_ + ": cannot read: No such file or directory");
}

TEST_F(PolicyStoreTest, ReloadWithAValidNewFileSwapsTheProfile) {
  Write(kOnePlugin);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> before = store->Current();
  Write(kTwoPlugins);
  EXPECT_TRUE(store->Reload().ok());
  EXPECT_NE(store->Current(), before);
  EXPECT_THAT(store->Current()->PluginNames(), ElementsAre("fake-chooser", "fake-score"));
  // A request that took the old profile keeps a working one.
  EXPECT_THAT(before->PluginNames(), ElementsAre("fake-chooser"));
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_TRUE(reports_[0].ok());
}

TEST_F(PolicyStoreTest, ReloadWithAnInvalidFileKeepsTheOldProfileAndReportsTheError) {
  Write(kOnePlugin);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> before = store->Current();
  Write(kInvalid);
  const absl::Status status = store->Reload();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Current(), before);
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_EQ(reports_[0], status);
  EXPECT_EQ(reports_[0].message(), path_ + ":5:13: plugins[0].weight: must be an integer in 1..100; got 0");
}

TEST_F(PolicyStoreTest, TenantsAreReloadedWithTheProfileAndAnInvalidSectionKeepsBoth) {
  Write(std::string(kOnePlugin) + "tenants:\n  - name: research\n    max: {gpuMilli: 2000}\n");
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->CurrentTenants()->size(), 1u);
  EXPECT_EQ(store->CurrentTenants()->tenant(0).max.milli, MilliGpu(2000));
  Write(std::string(kOnePlugin) + "tenants:\n  - name: research\n    max: {gpuMilli: 4000}\n  - name: serving\n");
  ASSERT_TRUE(store->Reload().ok());
  ASSERT_EQ(store->CurrentTenants()->size(), 2u);
  EXPECT_EQ(store->CurrentTenants()->tenant(0).max.milli, MilliGpu(4000));
  const std::shared_ptr<const Profile> profile = store->Current();
  Write(std::string(kOnePlugin) + "tenants:\n  - name: research\n  - name: research\n");
  EXPECT_FALSE(store->Reload().ok());
  EXPECT_EQ(store->CurrentTenants()->size(), 2u) << "the tenants in force stay";
  EXPECT_EQ(store->Current(), profile);
  EXPECT_THAT(std::string(reports_.back().message()), HasSubstr("tenants[1].name: duplicate tenant \"research\""));
}

TEST_F(PolicyStoreTest, PoolsArePublishedWithTheProfileAsOneSetAndAnInvalidSectionKeepsThem) {
  const std::string pool = "pools:\n  - name: train\n    taskTypes: [training]\n    plugins: [{name: fake-chooser}]\n";
  Write(std::string(kOnePlugin) + pool);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const ProfileSet> first = store->CurrentProfiles();
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->pools().size(), 1u);
  EXPECT_EQ(first->default_profile(), store->Current()) << "Current() is the set's default";
  EXPECT_EQ(first->PoolFor("training")->name, "train");

  Write(std::string(kTwoPlugins) + pool + "  - name: serve\n    taskTypes: [inference]\n    plugins: [{name: fake-chooser}]\n");
  ASSERT_TRUE(store->Reload().ok());
  const std::shared_ptr<const ProfileSet> second = store->CurrentProfiles();
  ASSERT_EQ(second->pools().size(), 2u);
  EXPECT_EQ(second->default_profile(), store->Current());
  EXPECT_NE(second->PoolFor("training")->profile, first->PoolFor("training")->profile)
      << "a reload builds every profile anew";

  Write(std::string(kOnePlugin) + pool + "  - name: train\n    taskTypes: [x]\n    plugins: [{name: fake-chooser}]\n");
  EXPECT_FALSE(store->Reload().ok());
  EXPECT_EQ(store->CurrentProfiles(), second) << "the set in force stays, pools and default together";
  EXPECT_EQ(store->Current(), second->default_profile());
  EXPECT_THAT(std::string(reports_.back().message()), HasSubstr("pools[1].name: duplicate pool \"train\""));
}

TEST_F(PolicyStoreTest, ReloadOfAMissingFileKeepsTheOldProfile) {
  Write(kOnePlugin);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> before = store->Current();
  std::filesystem::remove(path_);
  EXPECT_EQ(store->Reload().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->Current(), before);
}

// What a hot reload may meet in the policy file's place; each must be
// refused in bounded time and memory, with the policy in force kept.
struct HostileReloadCase {
  std::string name;
  std::function<void()> replace;  // puts the hostile thing in place
  std::string want;                               // a part of the reload's error
};

TEST_F(PolicyStoreTest, AHostileReloadIsRefusedInBoundedTimeAndKeepsThePolicy) {
  const std::vector<HostileReloadCase> cases = {
      // yaml-cpp 0.7's LoadAll adds a null document forever: gigabytes a minute.
      {"a file that is just a comma", [this] { Write(","); }, "invalid YAML: unexpected ','"},
      {"an alias bomb", [this] {
         std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
         for (int i = 1; i < 9; ++i) {
           text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
           for (int k = 0; k < 9; ++k) text += (k > 0 ? ", *a" : "*a") + std::to_string(i - 1);
           text += "]\n";
         }
         Write(text);
       }, "nodes (an alias counts as the nodes it names)"},
      {"deep nesting", [this] { Write(std::string(100000, '[')); }, "nested deeper than"},
      // Opening a FIFO for reading waits for a writer: the reload thread would
      // block for good (and with it SIGTERM's drain, on the same loop).
      {"a FIFO", [this] {
         std::filesystem::remove(path_);
         ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
       }, "not a regular file (a FIFO)"},
      {"a character device", [this] {
         std::filesystem::remove(path_);
         std::filesystem::create_symlink("/dev/zero", path_);
       }, "not a regular file (a character device)"},
  };
  for (const HostileReloadCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::filesystem::remove(path_);
    Write(kOnePlugin);
    std::unique_ptr<PolicyStore> store = Open();
    ASSERT_NE(store, nullptr);
    const std::shared_ptr<const Profile> before = store->Current();
    c.replace();
    // Both triggers, in a child: on a hang the child is killed, not the test.
    const testing::BoundedRun run = testing::RunWithDeadline(
        [&] {
          const absl::Status reload = store->Reload();
          store->ReloadIfChanged();  // the poll reads the file too (racy-clean check)
          if (reload.ok() || store->Current() != before) return 1;
          return std::string(reload.message()).find(c.want) != std::string::npos ? 0 : 2;
        },
        std::chrono::seconds(10));
    ASSERT_TRUE(run.finished) << run.what;
    EXPECT_EQ(run.exit_code, 0) << "1: the reload was not refused or the policy changed; 2: another error";
    EXPECT_LT(run.peak_rss_mib, 1024);
    // Now that it is known to return: the error itself.
    const absl::Status status = store->Reload();
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.want));
    EXPECT_EQ(store->Current(), before);
  }
}

TEST_F(PolicyStoreTest, ReloadIfChangedDoesNothingWhileTheFileIsUnchanged) {
  Write(kOnePlugin);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> before = store->Current();
  // Fresh file: the racy-clean check reads and compares the content.
  EXPECT_FALSE(store->ReloadIfChanged());
  EXPECT_FALSE(store->ReloadIfChanged());
  EXPECT_EQ(store->Current(), before);
  EXPECT_TRUE(reports_.empty());
}

TEST_F(PolicyStoreTest, ReloadIfChangedDetectsASameSizeRewrite) {
  Write(kOnePlugin);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> before = store->Current();
  // Immediately, possibly within one file-system clock tick: same size, and
  // maybe the same mtime; the stamp's ctime/mtime or the content check must
  // still catch it.
  Write(kOnePluginWeight3);
  EXPECT_TRUE(store->ReloadIfChanged());
  EXPECT_NE(store->Current(), before);
  EXPECT_FALSE(store->ReloadIfChanged());
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_TRUE(reports_[0].ok());
}

TEST_F(PolicyStoreTest, ReloadIfChangedDetectsARewriteOfAnOldFile) {
  Write(kOnePlugin);
  AgeFile();
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->ReloadIfChanged());
  Write(kTwoPlugins);
  EXPECT_TRUE(store->ReloadIfChanged());
  EXPECT_THAT(store->Current()->PluginNames(), ElementsAre("fake-chooser", "fake-score"));
}

TEST_F(PolicyStoreTest, ReloadIfChangedDetectsAFileReplacedByRename) {
  // How editors and ConfigMap volume updates replace a file.
  Write(kOnePlugin);
  AgeFile();
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::string staged = (dir_ / "policy.yaml.new").string();
  Write(kTwoPlugins, staged);
  std::filesystem::rename(staged, path_);
  EXPECT_TRUE(store->ReloadIfChanged());
  EXPECT_THAT(store->Current()->PluginNames(), ElementsAre("fake-chooser", "fake-score"));
}

TEST_F(PolicyStoreTest, AFileThatStaysInvalidIsReportedOnceNotEveryPoll) {
  Write(kOnePlugin);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> before = store->Current();
  Write(kInvalid);
  EXPECT_TRUE(store->ReloadIfChanged());
  EXPECT_FALSE(store->ReloadIfChanged());
  EXPECT_FALSE(store->ReloadIfChanged());
  EXPECT_EQ(store->Current(), before);
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_THAT(std::string(reports_[0].message()), HasSubstr("plugins[0].weight"));
  // Fixing the file is picked up by the next poll.
  Write(kTwoPlugins);
  EXPECT_TRUE(store->ReloadIfChanged());
  EXPECT_THAT(store->Current()->PluginNames(), ElementsAre("fake-chooser", "fake-score"));
  ASSERT_EQ(reports_.size(), 2u);
  EXPECT_TRUE(reports_[1].ok());
}

TEST_F(PolicyStoreTest, ADeletedFileKeepsTheOldProfileAndIsReportedOnce) {
  Write(kOnePlugin);
  std::unique_ptr<PolicyStore> store = Open();
  ASSERT_NE(store, nullptr);
  const std::shared_ptr<const Profile> before = store->Current();
  std::filesystem::remove(path_);
  EXPECT_TRUE(store->ReloadIfChanged());
  EXPECT_FALSE(store->ReloadIfChanged());
  EXPECT_EQ(store->Current(), before);
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_EQ(reports_[0].code(), absl::StatusCode::kNotFound);
}

TEST_F(PolicyStoreTest, CurrentIsSafeWhileReloadsRun) {
  Write(kOnePlugin);
  absl::StatusOr<std::unique_ptr<PolicyStore>> opened = PolicyStore::Open(path_, registry_, nullptr);
  ASSERT_TRUE(opened.ok()) << opened.status();
  PolicyStore& store = **opened;
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  std::atomic<int64_t> reads{0};
  for (int i = 0; i < 2; ++i) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        ASSERT_NE(store.Current(), nullptr);
        reads.fetch_add(1);
      }
    });
  }
  // Until the readers have overlapped many reloads (bounded, in case a
  // thread never gets scheduled).
  for (int i = 0; i < 10'000 && (i < 50 || reads.load() < 1000); ++i) {
    EXPECT_TRUE(store.Reload().ok());
    (void)store.ReloadIfChanged();
  }
  stop.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_GT(reads.load(), 0);
}

}  // namespace
}  // namespace tessera
