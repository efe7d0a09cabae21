// Sessions from prepared models (executor/session_model.h): a prepared
// model for the session's setup is used without running the passes and
// gives the outputs a session from its source gives; one that is refused
// (another setup, an older format, a truncated or corrupt file) says why in
// the log and the session loads the source instead; when the source has
// changed too, the session is not created.
#include "executor/session_model.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "executor/runtime_config.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/npy.h"
#include "tests/test_data.h"
#include "tools/convert_command.h"

namespace sluice::prepared_model_session_test {
namespace {

using ::testing::HasSubstr;

bool LogHas(const Session& s, const std::string& text) {
  for (const std::string& line : s.log()) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

class PreparedSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("sluice_prepared_session_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // A copy, so that a test can change it.
    source_ = (dir_ / "cnn.pb").string();
    std::filesystem::copy_file(TestDataPath("examples/cnn.pb"), source_);
    prepared_ = (dir_ / "cnn.sluicemodel").string();
    absl::StatusOr<Tensor> x =
        ReadNpy(TestDataPath("examples/cnn_input.npy"));
    ASSERT_TRUE(x.ok()) << x.status();
    input_ = *x;
    config_.set_use_gpu(false);
    config_.set_conv_layout(CONV_LAYOUT_NHWC);
    std::ostringstream out, err;
    // For the CPU on any machine (a GPU's would be the target where there
    // is one).
    ASSERT_EQ(ConvertMain({source_, prepared_, "--optimized", "--conv-layout",
                           "nhwc", "--device", "cpu:0"},
                          out, err),
              0)
        << out.str() << err.str();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Session> Open(const std::string& path,
                                const RuntimeConfig& config) {
    absl::StatusOr<std::unique_ptr<Session>> s =
        Session::CreateFromFile(path, config);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }
  std::vector<Tensor> Run(Session& s) {
    absl::StatusOr<std::vector<Tensor>> out = s.Run(
        {{s.graph().inputs()[0].name, input_}}, s.DefaultFetchNames());
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : std::vector<Tensor>{};
  }
  // The outputs of `path` under `config` equal those of the source model
  // loaded and optimised the usual way.
  void ExpectSourceOutputs(Session& s, const RuntimeConfig& config) {
    std::unique_ptr<Session> plain = Open(source_, config);
    ASSERT_NE(plain, nullptr);
    EXPECT_FALSE(LogHas(*plain, "passes not run"));
    std::vector<Tensor> want = Run(*plain);
    std::vector<Tensor> got = Run(s);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(TensorsEqual(got[i], want[i])) << i;
    }
  }
  void ChangeBytes(size_t at, char value) {
    std::fstream f(prepared_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.put(value);
  }

  std::filesystem::path dir_;
  std::string source_;
  std::string prepared_;
  Tensor input_;
  RuntimeConfig config_;
};

TEST_F(PreparedSessionTest, UsesThePreparedGraphWithoutRunningThePasses) {
  std::unique_ptr<Session> s = Open(prepared_, config_);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(LogHas(*s, "optimizer: passes not run: " + prepared_));
  // The filters are already channels last (OHWI) in the file.
  bool nhwc_conv = false;
  for (const Node& n : s->graph().nodes()) {
    const AttrValue* f = n.attrs().Find("data_format");
    if (f != nullptr && f->s() == "NHWC") nhwc_conv = true;
  }
  EXPECT_TRUE(nhwc_conv);
  ExpectSourceOutputs(*s, config_);
}

TEST_F(PreparedSessionTest, AFetchOfANodeThePassesRemovedSaysWhy) {
  absl::StatusOr<PreparedModelHeader> h = ReadPreparedModelHeader(prepared_);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_GT(h->removed_nodes_size(), 0);
  std::unique_ptr<Session> s = Open(prepared_, config_);
  ASSERT_NE(s, nullptr);
  absl::StatusOr<std::vector<Tensor>> out =
      s->Run({{s->graph().inputs()[0].name, input_}}, {h->removed_nodes(0)});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("not in the optimised graph"));
}

TEST_F(PreparedSessionTest, AnotherSetupIsRefusedAndTheSourceLoaded) {
  RuntimeConfig nchw = config_;
  nchw.set_conv_layout(CONV_LAYOUT_NCHW);
  std::unique_ptr<Session> s = Open(prepared_, nchw);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(LogHas(*s, "passes not run"));
  EXPECT_TRUE(LogHas(*s, "conv_layout: 'NHWC' in the file, 'NCHW' here"));
  EXPECT_TRUE(LogHas(*s, "loading its source " + source_));
  ExpectSourceOutputs(*s, nchw);
}

TEST_F(PreparedSessionTest, AnOlderFormatIsRefusedAndTheSourceLoaded) {
  ChangeBytes(8, 0);  // format version 0
  std::unique_ptr<Session> s = Open(prepared_, config_);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(LogHas(*s, "is in format 0"));
  ExpectSourceOutputs(*s, config_);
}

TEST_F(PreparedSessionTest, ACorruptFileIsRefusedAndTheSourceLoaded) {
  const auto size = std::filesystem::file_size(prepared_);
  ChangeBytes(size - 3, 0x5a);  // inside the last weight
  std::unique_ptr<Session> s = Open(prepared_, config_);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(LogHas(*s, "the file is corrupt"));
  ExpectSourceOutputs(*s, config_);
}

TEST_F(PreparedSessionTest, ATruncatedFileIsRefusedAndTheSourceLoaded) {
  std::filesystem::resize_file(prepared_,
                               std::filesystem::file_size(prepared_) - 100);
  std::unique_ptr<Session> s = Open(prepared_, config_);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(LogHas(*s, "truncated"));
  ExpectSourceOutputs(*s, config_);
}

TEST_F(PreparedSessionTest, ARefusedFileWhoseSourceChangedIsAnError) {
  RuntimeConfig nchw = config_;
  nchw.set_conv_layout(CONV_LAYOUT_NCHW);
  std::filesystem::copy_file(TestDataPath("examples/transformer_block.pb"),
                             source_,
                             std::filesystem::copy_options::overwrite_existing);
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::CreateFromFile(prepared_, nchw);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("conv_layout"));
  EXPECT_THAT(s.status().message(),
              HasSubstr("has changed since it was prepared"));
  // The file itself still serves the setup it was prepared for.
  std::unique_ptr<Session> same = Open(prepared_, config_);
  ASSERT_NE(same, nullptr);
  EXPECT_TRUE(LogHas(*same, "passes not run"));
}

// The config's prepared_model_cache_dir (decision 49): the first session
// of a model file writes its prepared model there, the next starts from it;
// one of another setup, a corrupt one or one of a changed source is refused
// with the reason, the source loaded and the cache written again.
class PreparedCacheTest : public PreparedSessionTest {
 protected:
  void SetUp() override {
    PreparedSessionTest::SetUp();
    cache_dir_ = (dir_ / "cache").string();
    config_.set_prepared_model_cache_dir(cache_dir_);
    cached_ = PreparedModelCachePath(source_, config_);
  }
  // `config` less the cache, for the reference session.
  static RuntimeConfig NoCache(RuntimeConfig config) {
    config.clear_prepared_model_cache_dir();
    return config;
  }
  std::string cache_dir_;
  std::string cached_;
};

TEST_F(PreparedCacheTest, TheFirstSessionWritesItAndTheNextStartsFromIt) {
  EXPECT_THAT(cached_, HasSubstr(cache_dir_ + "/cnn.pb-"));
  EXPECT_FALSE(std::filesystem::exists(cached_));
  std::unique_ptr<Session> first = Open(source_, config_);
  ASSERT_NE(first, nullptr);
  EXPECT_FALSE(LogHas(*first, "passes not run"));
  EXPECT_TRUE(LogHas(*first, "no prepared model of " + source_ + " yet"));
  EXPECT_TRUE(LogHas(*first, "prepared-model cache: wrote " + cached_));
  ASSERT_TRUE(IsPreparedModelFile(cached_));
  std::unique_ptr<Session> next = Open(source_, config_);
  ASSERT_NE(next, nullptr);
  EXPECT_TRUE(LogHas(*next, "passes not run: started from the prepared-model "
                            "cache " + cached_));
  EXPECT_FALSE(LogHas(*next, "wrote"));
  ExpectSourceOutputs(*next, NoCache(config_));
}

TEST_F(PreparedCacheTest, AnotherSetupIsRefusedAndTheCacheWrittenForIt) {
  ASSERT_NE(Open(source_, config_), nullptr);
  RuntimeConfig nchw = config_;
  nchw.set_conv_layout(CONV_LAYOUT_NCHW);
  std::unique_ptr<Session> s = Open(source_, nchw);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(LogHas(*s, "passes not run"));
  EXPECT_TRUE(LogHas(*s, "conv_layout: 'NHWC' in the file, 'NCHW' here"));
  EXPECT_TRUE(LogHas(*s, "writing the cache again"));
  EXPECT_TRUE(LogHas(*s, "prepared-model cache: wrote " + cached_));
  ExpectSourceOutputs(*s, NoCache(nchw));
  std::unique_ptr<Session> again = Open(source_, nchw);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(LogHas(*again, "passes not run"));
}

TEST_F(PreparedCacheTest, ACorruptCacheFileIsRefusedAndWrittenAgain) {
  ASSERT_NE(Open(source_, config_), nullptr);
  prepared_ = cached_;  // ChangeBytes writes into the cache file
  ChangeBytes(std::filesystem::file_size(cached_) - 3, 0x5a);
  std::unique_ptr<Session> s = Open(source_, config_);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(LogHas(*s, "passes not run"));
  EXPECT_TRUE(LogHas(*s, "the file is corrupt"));
  EXPECT_TRUE(LogHas(*s, "prepared-model cache: wrote " + cached_));
  ExpectSourceOutputs(*s, NoCache(config_));
  std::unique_ptr<Session> again = Open(source_, config_);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(LogHas(*again, "passes not run"));
}

TEST_F(PreparedCacheTest, AChangedSourceIsLoadedNotTheStaleCache) {
  ASSERT_NE(Open(source_, config_), nullptr);
  std::filesystem::copy_file(TestDataPath("examples/transformer_block.pb"),
                             source_,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(TestDataPath("examples/transformer_block.weights"),
                             dir_ / "transformer_block.weights");
  std::unique_ptr<Session> s = Open(source_, config_);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(LogHas(*s, "passes not run"));
  EXPECT_TRUE(LogHas(*s, "has changed since it was prepared"));
  // The transformer block's graph, not the CNN's.
  absl::StatusOr<std::unique_ptr<Session>> plain = Session::CreateFromFile(
      TestDataPath("examples/transformer_block.pb"), NoCache(config_));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(s->graph().num_nodes(), (*plain)->graph().num_nodes());
  for (const Node& n : s->graph().nodes()) {
    EXPECT_EQ(n.op().find("Conv"), std::string::npos) << n.name();
  }
}

TEST_F(PreparedCacheTest, ACacheThatCannotBeWrittenIsLoggedNotAnError) {
  // The cache folder's place is taken by a file.
  std::ofstream(cache_dir_) << "not a folder";
  std::unique_ptr<Session> s = Open(source_, config_);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(LogHas(*s, "prepared-model cache: not written: cannot create " +
                             cache_dir_));
  ExpectSourceOutputs(*s, NoCache(config_));
}

// The stat a session may trust instead of reading a source again.
TEST_F(PreparedCacheTest, AnUntouchedSourceIsKnownByItsStatOnceSettled) {
  absl::StatusOr<PreparedFileStat> st = StatSourceFile(source_);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_NE(st->inode(), 0u);
  EXPECT_TRUE(SourceUnchangedByStat(source_, *st, /*racy_margin_ns=*/0));
  // Copied into place just now: a change in the same clock tick could
  // carry the same times, so the default margin reads it.
  EXPECT_FALSE(SourceUnchangedByStat(source_, *st));
  EXPECT_FALSE(SourceUnchangedByStat(source_, PreparedFileStat(), 0));
  EXPECT_FALSE(SourceUnchangedByStat((dir_ / "gone.pb").string(), *st, 0));
}

TEST_F(PreparedCacheTest, NewBytesWithTheOldSizeAndMtimeAreNotTrusted) {
  absl::StatusOr<PreparedFileStat> st = StatSourceFile(source_);
  ASSERT_TRUE(st.ok()) << st.status();
  // Past the filesystem clock's tick, so that the write's ctime differs.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  {
    std::fstream f(source_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.put('\x5a');
  }
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = st->mtime_ns() / 1'000'000'000;
  times[0].tv_nsec = times[1].tv_nsec = st->mtime_ns() % 1'000'000'000;
  ASSERT_EQ(utimensat(AT_FDCWD, source_.c_str(), times, 0), 0);
  absl::StatusOr<PreparedFileStat> now = StatSourceFile(source_);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->size(), st->size());
  EXPECT_EQ(now->mtime_ns(), st->mtime_ns());
  EXPECT_FALSE(SourceUnchangedByStat(source_, *st, 0));  // its ctime moved
}

TEST_F(PreparedCacheTest, TheFieldIsReadFromAConfigFile) {
  const std::string path = (dir_ / "run.pbtxt").string();
  std::ofstream(path) << "use_gpu: false\nprepared_model_cache_dir: \""
                      << cache_dir_ << "\"\n";
  absl::StatusOr<RuntimeConfig> c = LoadRuntimeConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->prepared_model_cache_dir(), cache_dir_);
}

}  // namespace
}  // namespace sluice::prepared_model_session_test
