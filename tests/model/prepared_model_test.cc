// The prepared model file (model/prepared_model.h): what is written reads
// back as the same graph with its constants mapped from the file, and every
// refusal (another key, another format version, a truncated or corrupt
// file, a file that is no prepared model) says why.
#include "model/prepared_model.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/fingerprint.h"
#include "core/tensor.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"

namespace sluice::prepared_model_test {
namespace {

using ::testing::HasSubstr;

// Two weights: one over the 64-byte constant alignment (so the second one
// starts past padding), one small.
constexpr char kModel[] = R"pb(
  node { name: "x" op: "Input"
         attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "shape" value { shape { dim: -1 dim: 5 } } } }
  node { name: "w" op: "Const"
         attr { key: "value" value { tensor {
           dtype: DT_FLOAT shape { dim: 5 dim: 3 }
           float_val: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
         } } } }
  node { name: "b" op: "Const"
         attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 3 }
           float_val: [0.5, -1, 2] } } } }
  node { name: "mm" op: "MatMul" input: "x" input: "w" }
  node { name: "y" op: "Add" input: "mm" input: "b" }
  signature { inputs { name: "x" } outputs { name: "y" tensor: "y" } }
)pb";

std::unique_ptr<const Graph> Model() {
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kModel, &def));
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

std::vector<PreparedKeyPart> Key(const std::string& layout) {
  std::vector<PreparedKeyPart> key(2);
  key[0].set_name("format");
  key[0].set_value("1");
  key[1].set_name("conv_layout");
  key[1].set_value(layout);
  return key;
}

class PreparedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("sluice_prepared_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "m.sluicemodel").string();
    PreparedModelHeader header;
    for (const PreparedKeyPart& p : Key("NHWC")) *header.add_key() = p;
    header.set_optimization_level("all");
    header.add_removed_nodes("gone");
    graph_ = Model();
    ASSERT_NE(graph_, nullptr);
    ASSERT_TRUE(WritePreparedModel(*graph_, header, path_).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Bytes() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void Rewrite(const std::string& bytes) const {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<const Graph> graph_;
};

TEST_F(PreparedModelTest, ReadsBackTheGraphWithItsConstantsMappedFromTheFile) {
  EXPECT_TRUE(IsPreparedModelFile(path_));
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
  absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, Key("NHWC"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->header.optimization_level(), "all");
  EXPECT_THAT(m->header.removed_nodes(), ::testing::ElementsAre("gone"));
  ASSERT_EQ(m->graph->num_nodes(), graph_->num_nodes());
  for (const char* name : {"w", "b"}) {
    const Tensor* got = m->graph->FindNode(name)->const_value();
    ASSERT_NE(got, nullptr) << name;
    EXPECT_TRUE(TensorsEqual(*got, *graph_->FindNode(name)->const_value()))
        << name;
    EXPECT_EQ(got->allocator()->Name(), "cpu (prepared model file)") << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got->raw_data()) % 64, 0u) << name;
  }
  EXPECT_EQ(m->graph->FindNode("y")->op(), "Add");
  EXPECT_EQ(m->graph->outputs()[0].name, "y");
}

TEST_F(PreparedModelTest, TheConstantsOutliveTheirGraph) {
  Tensor w;
  {
    absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, Key("NHWC"));
    ASSERT_TRUE(m.ok()) << m.status();
    w = *m->graph->FindNode("w")->const_value();
  }
  EXPECT_EQ(w.flat<float>()[14], 15.0f);  // the mapping is still there
}

TEST_F(PreparedModelTest, RefusesAnotherKeyNamingEachDifference) {
  absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, Key("NCHW"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(m.status().message(),
              HasSubstr("conv_layout: 'NHWC' in the file, 'NCHW' here"));
  std::vector<PreparedKeyPart> more = Key("NHWC");
  more.emplace_back().set_name("oneDNN");
  more.back().set_value("3.1");
  m = ReadPreparedModel(path_, more);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(),
              HasSubstr("oneDNN: not in the file, '3.1' here"));
}

TEST_F(PreparedModelTest, RefusesAnOlderFormatVersion) {
  std::string bytes = Bytes();
  bytes[8] = 0;  // the version's low byte: format 0
  Rewrite(bytes);
  absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, Key("NHWC"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(m.status().message(), HasSubstr("is in format 0; this sluice "
                                              "reads format 1"));
  // Its header still says where it came from (the fallback's source).
  absl::StatusOr<PreparedModelHeader> h = ReadPreparedModelHeader(path_);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->optimization_level(), "all");
}

TEST_F(PreparedModelTest, RefusesATruncatedFile) {
  const std::string bytes = Bytes();
  for (size_t keep : {bytes.size() - 1, size_t{100}, size_t{20}}) {
    Rewrite(bytes.substr(0, keep));
    absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, Key("NHWC"));
    ASSERT_FALSE(m.ok()) << keep;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss) << keep;
    EXPECT_THAT(m.status().message(), HasSubstr("truncated")) << keep;
  }
}

TEST_F(PreparedModelTest, RefusesAChangedByteAnywhere) {
  const std::string bytes = Bytes();
  // In the header, in the graph (after the 40-byte prefix and the header,
  // whose size is the prefix's uint64 at byte 16), in the last weight.
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data() + 16, sizeof header_bytes);
  for (size_t at : {size_t{45}, static_cast<size_t>(40 + header_bytes + 5),
                    bytes.size() - 4}) {
    std::string changed = bytes;
    changed[at] ^= 0x10;
    Rewrite(changed);
    absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, Key("NHWC"));
    ASSERT_FALSE(m.ok()) << at;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kDataLoss) << at;
    EXPECT_THAT(m.status().message(), HasSubstr("fingerprint")) << at;
  }
}

TEST_F(PreparedModelTest, HeaderChangedWithItsFingerprintIsRefusedOrReadRight) {
  // Every header byte set to 0xff in turn, the header fingerprint made to
  // match (as a careless writer would), read with the file's own key: each
  // is refused with a status, or reads back the same weights (a change to
  // a field the reader does not rely on, such as a pass's record).
  const std::string bytes = Bytes();
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data() + 16, sizeof header_bytes);
  int refused = 0;
  for (size_t at = 40; at < 40 + header_bytes; ++at) {
    std::string changed = bytes;
    changed[at] = static_cast<char>(0xff);
    const uint64_t f = Fingerprint64(changed.data() + 40, header_bytes);
    std::memcpy(changed.data() + 24, &f, sizeof f);
    Rewrite(changed);
    absl::StatusOr<PreparedModelHeader> h = ReadPreparedModelHeader(path_);
    if (!h.ok()) {
      ++refused;
      continue;
    }
    std::vector<PreparedKeyPart> key(h->key().begin(), h->key().end());
    absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, key);
    if (!m.ok()) {
      ++refused;
      continue;
    }
    for (const char* name : {"w", "b"}) {
      const Node* n = m->graph->FindNode(name);
      ASSERT_NE(n, nullptr) << "byte " << at;
      EXPECT_TRUE(TensorsEqual(*n->const_value(),
                               *graph_->FindNode(name)->const_value()))
          << "byte " << at;
    }
  }
  EXPECT_GT(refused, 0);
}

TEST_F(PreparedModelTest, RefusesAFileThatIsNoPreparedModel) {
  Rewrite("node { name: 'x' op: 'Input' }");
  EXPECT_FALSE(IsPreparedModelFile(path_));
  absl::StatusOr<PreparedModel> m = ReadPreparedModel(path_, Key("NHWC"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("is not a prepared model"));
  EXPECT_FALSE(IsPreparedModelFile((dir_ / "missing").string()));
}

}  // namespace
}  // namespace sluice::prepared_model_test
