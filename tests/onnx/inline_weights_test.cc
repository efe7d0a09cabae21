// ReadModelLeavingWeightsInFile and the import through it: large inline
// raw_data stays in the file at the ranges the walk records, everything else
// parses as protobuf parses the whole file, the last of two raw_data fields
// wins as in protobuf, and the import gives the same values as importing
// the bytes through protobuf alone. Size mismatches and a file that shrinks
// after the walk are clear errors naming the tensor; bytes the walk cannot
// follow fall back to protobuf's own verdict.
#include "onnx/inline_weights.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/importer.h"
#include "tests/test_data.h"

namespace sluice::inline_weights_test {
namespace {

using ::testing::HasSubstr;

std::string Floats(int64_t n, int seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>((i * 37 + seed * 11) % 101 - 50) / 64.0f;
  }
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(float));
}

onnx::TensorProto* AddRaw(onnx::GraphProto* g, const std::string& name,
                          int32_t type, std::vector<int64_t> dims,
                          std::string raw) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::move(raw));
  return t;
}

// y = x @ w + b, with extra initializers of other kinds beside them: a small
// one (inline), a sub-byte one (int4 above the threshold), one in float_data.
onnx::ModelProto Model() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("inline_weights_test");
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("g");
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(1);
  tt->mutable_shape()->add_dim()->set_dim_value(64);
  AddRaw(g, "w", onnx::TensorProto::FLOAT, {64, 128}, Floats(64 * 128, 1));
  AddRaw(g, "b", onnx::TensorProto::FLOAT, {128}, Floats(128, 2));  // 512 B
  std::string packed(5000, '\0');
  for (size_t i = 0; i < packed.size(); ++i) {
    packed[i] = static_cast<char>((i * 29) & 0xff);
  }
  AddRaw(g, "q", 22 /* INT4 */, {10000}, packed);
  onnx::TensorProto* s = g->add_initializer();
  s->set_name("s");
  s->set_data_type(onnx::TensorProto::FLOAT);
  s->add_dims(2);
  s->add_float_data(1.5f);
  s->add_float_data(-2.0f);
  auto node = [&](const std::string& op, std::vector<std::string> in,
                  const std::string& out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
  };
  node("MatMul", {"x", "w"}, "h");
  node("Add", {"h", "b"}, "y");
  node("Identity", {"q"}, "q_out");
  node("Identity", {"s"}, "s_out");
  g->add_output()->set_name("y");
  g->add_output()->set_name("q_out");
  g->add_output()->set_name("s_out");
  return model;
}

class InlineWeightsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (TestScratchDir() / "onnx_inline_weights_test" /
            ::testing::UnitTest::GetInstance()->current_test_info()->name())
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  std::string Write(const std::string& bytes, const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
  }

  static absl::StatusOr<ModelLeavingWeightsInFile> Walk(
      const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    return ReadModelLeavingWeightsInFile(
        fd, static_cast<int64_t>(std::filesystem::file_size(path)));
  }

  static std::string FileBytes(const std::string& path, int64_t offset,
                               int64_t length) {
    std::ifstream in(path, std::ios::binary);
    in.seekg(offset);
    std::string s(static_cast<size_t>(length), '\0');
    in.read(s.data(), length);
    return s;
  }

  std::string dir_;
};

TEST_F(InlineWeightsTest, LeavesLargeRawDataInTheFileAndParsesTheRest) {
  const onnx::ModelProto model = Model();
  const std::string path = Write(model.SerializeAsString(), "m.onnx");
  absl::StatusOr<ModelLeavingWeightsInFile> read = Walk(path);
  ASSERT_TRUE(read.ok()) << read.status();
  // w (32 KiB) and q (5,000 bytes) are left in the file; b (512 bytes)
  // and s (float_data) are parsed.
  EXPECT_EQ(read->weights.size(), 2u);
  for (int i : {0, 2}) {
    const RawDataInFile* r = read->weights.Find(i);
    ASSERT_NE(r, nullptr) << i;
    const std::string& want = model.graph().initializer(i).raw_data();
    EXPECT_EQ(r->length, static_cast<int64_t>(want.size()));
    EXPECT_EQ(FileBytes(path, r->offset, r->length), want) << i;
    EXPECT_FALSE(read->model->graph().initializer(i).has_raw_data()) << i;
  }
  EXPECT_EQ(read->weights.Find(1), nullptr);
  EXPECT_EQ(read->weights.Find(3), nullptr);
  // Everything else is as protobuf parses it.
  onnx::ModelProto want = model;
  want.mutable_graph()->mutable_initializer(0)->clear_raw_data();
  want.mutable_graph()->mutable_initializer(2)->clear_raw_data();
  EXPECT_EQ(read->model->SerializeAsString(), want.SerializeAsString());
}

TEST_F(InlineWeightsTest, TheLastOfTwoRawDataFieldsWinsAsInProtobuf) {
  // An initializer whose bytes carry raw_data twice (a message merged from
  // two pieces): protobuf keeps the last. Both orders, large and small.
  const std::string large = Floats(2048, 3), small = Floats(4, 4);
  for (bool large_last : {false, true}) {
    onnx::ModelProto model = Model();
    onnx::TensorProto first, second;
    first.set_raw_data(large_last ? small : large);
    second.set_raw_data(large_last ? large : small);
    onnx::TensorProto* b = model.mutable_graph()->mutable_initializer(1);
    b->clear_dims();
    b->add_dims(large_last ? 2048 : 4);
    b->clear_raw_data();
    // The initializer's bytes, then two more raw_data fields appended.
    std::string init = b->SerializeAsString() + first.SerializeAsString() +
                       second.SerializeAsString();
    model.mutable_graph()->mutable_initializer()->DeleteSubrange(1, 1);
    std::string bytes = model.SerializeAsString();
    // GraphProto.initializer is field 5; ModelProto.graph field 7: append a
    // graph holding just this initializer (protobuf merges the two graphs).
    std::string graph;
    graph.push_back(static_cast<char>((5 << 3) | 2));
    std::string len;
    for (uint64_t v = init.size(); ; v >>= 7) {
      if (v < 0x80) { len.push_back(static_cast<char>(v)); break; }
      len.push_back(static_cast<char>((v & 0x7f) | 0x80));
    }
    graph += len + init;
    std::string glen;
    for (uint64_t v = graph.size(); ; v >>= 7) {
      if (v < 0x80) { glen.push_back(static_cast<char>(v)); break; }
      glen.push_back(static_cast<char>((v & 0x7f) | 0x80));
    }
    bytes += std::string(1, static_cast<char>((7 << 3) | 2)) + glen + graph;
    onnx::ModelProto parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    const int index = parsed.graph().initializer_size() - 1;
    ASSERT_EQ(parsed.graph().initializer(index).raw_data(),
              large_last ? large : small);

    const std::string path = Write(bytes, "twice.onnx");
    absl::StatusOr<ModelLeavingWeightsInFile> read = Walk(path);
    ASSERT_TRUE(read.ok()) << read.status();
    const RawDataInFile* r = read->weights.Find(index);
    absl::StatusOr<Tensor> t =
        TensorFromOnnx(read->model->graph().initializer(index), dir_, r);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(std::string(static_cast<const char*>(t->raw_data()),
                          t->bytes()),
              large_last ? large : small)
        << large_last;
  }
}

TEST_F(InlineWeightsTest, ImportGivesTheValuesOfTheWholeParse) {
  const std::string bytes = Model().SerializeAsString();
  const std::string path = Write(bytes, "m.onnx");
  absl::StatusOr<OnnxImport> from_file =
      ImportOnnxSharingValues(path, OnnxImportOptions());
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  absl::StatusOr<GraphDef> from_bytes =
      ImportOnnxBytes(bytes, dir_, OnnxImportOptions(), "m.onnx");
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  int compared = 0;
  for (const NodeDef& n : from_bytes->node()) {
    if (n.op() != "Const") continue;
    auto it = from_file->const_values.find(n.name());
    ASSERT_NE(it, from_file->const_values.end()) << n.name();
    const std::string& want = n.attr().at("value").tensor().content();
    EXPECT_EQ(std::string(static_cast<const char*>(it->second.raw_data()),
                          it->second.bytes()),
              want)
        << n.name();
    ++compared;
  }
  EXPECT_EQ(compared, 4);
}

TEST_F(InlineWeightsTest, RawDataOfTheWrongSizeIsAClearError) {
  onnx::ModelProto model = Model();
  model.mutable_graph()->mutable_initializer(0)->set_dims(1, 127);
  absl::StatusOr<GraphDef> def = ImportOnnx(
      Write(model.SerializeAsString(), "m.onnx"), OnnxImportOptions());
  ASSERT_FALSE(def.ok());
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(def.status().message(),
              HasSubstr("ONNX tensor 'w': raw_data holds 32768 bytes, the "
                        "tensor needs 32512"));
}

TEST_F(InlineWeightsTest, AFileThatShrinksAfterTheWalkIsDataLoss) {
  const std::string path =
      Write(Model().SerializeAsString(), "m.onnx");
  absl::StatusOr<ModelLeavingWeightsInFile> read = Walk(path);
  ASSERT_TRUE(read.ok()) << read.status();
  const RawDataInFile* r = read->weights.Find(0);
  ASSERT_NE(r, nullptr);
  std::filesystem::resize_file(path, static_cast<uintmax_t>(r->offset + 100));
  absl::StatusOr<Tensor> t =
      TensorFromOnnx(read->model->graph().initializer(0), dir_, r);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(), HasSubstr("ONNX tensor 'w'"));
  EXPECT_THAT(t.status().message(), HasSubstr("the file ended early"));
}

TEST_F(InlineWeightsTest, BytesTheWalkCannotFollowGetProtobufsVerdict) {
  const std::string bytes = Model().SerializeAsString();
  // Cut inside w's raw_data: the walk finds a field past the end, and the
  // import reports what protobuf reports.
  const std::string cut = Write(bytes.substr(0, bytes.size() / 2), "cut.onnx");
  absl::StatusOr<ModelLeavingWeightsInFile> read = Walk(cut);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<GraphDef> def = ImportOnnx(cut, OnnxImportOptions());
  ASSERT_FALSE(def.ok());
  EXPECT_THAT(def.status().message(),
              HasSubstr("not a valid ONNX model (the ModelProto does not "
                        "parse)"));
  // A group (wire type 3, which ONNX never uses) at the top level: the walk
  // declines and protobuf, which skips unknown groups, parses the model.
  std::string grouped = bytes;
  grouped += std::string("\x9b\x06\x9c\x06", 4);  // field 99: start, end
  const std::string with_group = Write(grouped, "group.onnx");
  EXPECT_FALSE(Walk(with_group).ok());
  absl::StatusOr<GraphDef> parsed = ImportOnnx(with_group, OnnxImportOptions());
  EXPECT_TRUE(parsed.ok()) << parsed.status();
}

}  // namespace
}  // namespace sluice::inline_weights_test
