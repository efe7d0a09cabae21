// ONNX initializers in external data, loaded through LoadModel: a weight
// used unchanged becomes a Const that refers to its range of the weights file
// (mapped by BuildGraph when large and aligned), folded values hold their
// bytes, embed_external_data copies everything in, and the results match the
// same model with its weights embedded in the .onnx file. Tampered ranges
// and paths stay clear errors, at import and at build time.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/external_data.h"
#include "core/status_macros.h"
#include "executor/session.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "model/model_loader.h"
#include "onnx/onnx_pb.h"
#include "tests/test_data.h"

namespace sluice::external_data_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kN = 512;                         // w is kN x kN float32:
constexpr int64_t kWBytes = kN * kN * 4;            // 1 MiB, mapped
constexpr int64_t kWOffset = 64;                    // aligned
constexpr int64_t kBOffset = kWOffset + kWBytes;    // b: kN floats, read
constexpr const char* kWeights = "weights/w.bin";   // below the model

std::vector<float> Values(int64_t n, int seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>((i * 37 + seed * 11) % 101 - 50) / 64.0f;
  }
  return v;
}

void SetEntry(onnx::TensorProto* t, const std::string& key,
              const std::string& value) {
  for (auto& e : *t->mutable_external_data()) {
    if (e.key() == key) {
      e.set_value(value);
      return;
    }
  }
  onnx::StringStringEntryProto* e = t->add_external_data();
  e->set_key(key);
  e->set_value(value);
}

onnx::TensorProto* AddWeight(onnx::GraphProto* g, const std::string& name,
                             std::vector<int64_t> dims, bool external,
                             int64_t offset, const std::vector<float>& v) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  if (!external) {
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()),
                                v.size() * sizeof(float)));
    return t;
  }
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  SetEntry(t, "location", kWeights);
  SetEntry(t, "offset", std::to_string(offset));
  SetEntry(t, "length", std::to_string(v.size() * sizeof(float)));
  return t;
}

// y = MatMul(x, w) + Neg(b): w is used unchanged, b only through a folded
// Neg.
onnx::ModelProto Model(bool external) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(1);
  tt->mutable_shape()->add_dim()->set_dim_value(kN);
  AddWeight(g, "w", {kN, kN}, external, kWOffset, Values(kN * kN, 1));
  AddWeight(g, "b", {kN}, external, kBOffset, Values(kN, 2));
  auto node = [&](const std::string& op, std::vector<std::string> in,
                  const std::string& out) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& s : in) n->add_input(s);
    n->add_output(out);
  };
  node("MatMul", {"x", "w"}, "h");
  node("Neg", {"b"}, "nb");
  node("Add", {"h", "nb"}, "y");
  g->add_output()->set_name("y");
  return model;
}

class OnnxExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (TestScratchDir() / "onnx_external_data_test" /
            ::testing::UnitTest::GetInstance()->current_test_info()->name())
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/weights");
    std::string bytes(static_cast<size_t>(kWOffset), '\x7f');
    for (const auto& v : {Values(kN * kN, 1), Values(kN, 2)}) {
      bytes.append(reinterpret_cast<const char*>(v.data()),
                   v.size() * sizeof(float));
    }
    WriteFile(dir_ + "/" + kWeights, bytes);
  }

  static void WriteFile(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  std::string Save(const onnx::ModelProto& model, const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    EXPECT_TRUE(model.SerializeToOstream(&out));
    return path;
  }

  static const NodeDef* FindConst(const GraphDef& def,
                                  const std::string& name) {
    for (const NodeDef& n : def.node()) {
      if (n.name() == name && n.op() == "Const") return &n;
    }
    return nullptr;
  }

  static absl::StatusOr<std::vector<float>> Run(const LoadedGraphDef& model,
                                                const std::vector<float>& x) {
    ASSIGN_OR_RETURN(std::unique_ptr<const Graph> g,
                     BuildGraph(model.def, model.source));
    RuntimeConfig config;
    config.set_use_gpu(false);
    ASSIGN_OR_RETURN(std::unique_ptr<Session> s,
                     Session::Create(std::move(g), config));
    ASSIGN_OR_RETURN(
        std::vector<Tensor> out,
        s->Run({{"x", Tensor::FromVector(x, Shape({1, kN}))}}, {"y"}));
    auto flat = out[0].flat<float>();
    return std::vector<float>(flat.begin(), flat.end());
  }

  std::string dir_;
};

TEST_F(OnnxExternalDataTest, UnchangedWeightRefersToTheFileAndIsMapped) {
  absl::StatusOr<LoadedGraphDef> model =
      LoadModel(Save(Model(/*external=*/true), "m.onnx"));
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->source.base_dir, dir_);
  const NodeDef* w = FindConst(model->def, "w");
  ASSERT_NE(w, nullptr);
  const TensorProto& wp = w->attr().at("value").tensor();
  EXPECT_TRUE(wp.content().empty());
  EXPECT_EQ(wp.external().path(), kWeights);
  EXPECT_EQ(wp.external().offset(), kWOffset);
  EXPECT_EQ(wp.external().length(), kWBytes);
  // Neg(b) was folded: its Const holds the new bytes, and b itself is not
  // in the graph.
  EXPECT_EQ(FindConst(model->def, "b"), nullptr);
  int folded = 0;
  for (const NodeDef& n : model->def.node()) {
    if (n.op() != "Const" || n.name() == "w") continue;
    EXPECT_FALSE(n.attr().at("value").tensor().has_external()) << n.name();
    EXPECT_EQ(n.attr().at("value").tensor().content().size(), kN * 4u);
    ++folded;
  }
  EXPECT_EQ(folded, 1);

  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(model->def, model->source);
  ASSERT_TRUE(g.ok()) << g.status();
  const Node* wn = (*g)->FindNode("w");
  ASSERT_NE(wn, nullptr);
  ASSERT_NE(wn->const_value(), nullptr);
  EXPECT_TRUE(IsMappedExternalData(*wn->const_value()));
  EXPECT_FLOAT_EQ(wn->const_value()->flat<float>()[kN + 3],
                  Values(kN * kN, 1)[kN + 3]);
}

TEST_F(OnnxExternalDataTest, GivesTheResultsOfTheEmbeddedModel) {
  absl::StatusOr<LoadedGraphDef> ext =
      LoadModel(Save(Model(/*external=*/true), "ext.onnx"));
  ASSERT_TRUE(ext.ok()) << ext.status();
  absl::StatusOr<LoadedGraphDef> emb =
      LoadModel(Save(Model(/*external=*/false), "emb.onnx"));
  ASSERT_TRUE(emb.ok()) << emb.status();
  const std::vector<float> x = Values(kN, 3);
  absl::StatusOr<std::vector<float>> got = Run(*ext, x);
  ASSERT_TRUE(got.ok()) << got.status();
  absl::StatusOr<std::vector<float>> want = Run(*emb, x);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(*got, *want);  // the same bytes through the same kernels
  // And against the formula, in double.
  const std::vector<float> w = Values(kN * kN, 1), b = Values(kN, 2);
  for (int64_t j : {int64_t{0}, int64_t{7}, kN - 1}) {
    double ref = -b[j];
    for (int64_t i = 0; i < kN; ++i) ref += double(x[i]) * w[i * kN + j];
    EXPECT_NEAR((*got)[j], ref, 1e-3) << "column " << j;
  }
}

TEST_F(OnnxExternalDataTest, EmbedOptionCopiesTheBytesIntoTheGraphDef) {
  OnnxImportOptions options;
  options.embed_external_data = true;
  absl::StatusOr<LoadedGraphDef> model =
      LoadModel(Save(Model(/*external=*/true), "m.onnx"), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->source.base_dir, "");
  const NodeDef* w = FindConst(model->def, "w");
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(w->attr().at("value").tensor().has_external());
  EXPECT_EQ(w->attr().at("value").tensor().content().size(),
            static_cast<size_t>(kWBytes));
  absl::StatusOr<std::vector<float>> got = Run(*model, Values(kN, 3));
  EXPECT_TRUE(got.ok()) << got.status();
}

TEST_F(OnnxExternalDataTest, TamperedRangesAtImportAreClearErrors) {
  onnx::ModelProto model = Model(/*external=*/true);
  onnx::TensorProto* w = model.mutable_graph()->mutable_initializer(0);
  SetEntry(w, "length", std::to_string(kWBytes - 4));
  absl::StatusOr<LoadedGraphDef> got = LoadModel(Save(model, "short.onnx"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(),
              AllOf(HasSubstr("'w'"), HasSubstr("holds 1048572 bytes"),
                    HasSubstr("needs 1048576")));

  SetEntry(w, "length", std::to_string(kWBytes));
  SetEntry(w, "offset", std::to_string(kBOffset));  // runs past the end
  got = LoadModel(Save(model, "past.onnx"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("past the end"));

  SetEntry(w, "offset", std::to_string(kWOffset));
  SetEntry(w, "location", "weights/../../w.bin");
  got = LoadModel(Save(model, "up.onnx"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr("leaves the model's folder"));
}

TEST_F(OnnxExternalDataTest, TamperedRangesAtBuildAreClearErrors) {
  absl::StatusOr<LoadedGraphDef> model =
      LoadModel(Save(Model(/*external=*/true), "m.onnx"));
  ASSERT_TRUE(model.ok()) << model.status();
  auto w_external = [&]() {
    for (NodeDef& n : *model->def.mutable_node()) {
      if (n.name() == "w") {
        return (*n.mutable_attr())["value"].mutable_tensor()->mutable_external();
      }
    }
    return static_cast<ExternalData*>(nullptr);
  };
  ASSERT_NE(w_external(), nullptr);

  w_external()->set_path("../w.bin");
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      BuildGraph(model->def, model->source);
  EXPECT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("leaves the model folder"));

  // The weights file replaced by a shorter one after the import.
  w_external()->set_path(kWeights);
  const std::string replacement = dir_ + "/weights/w.bin.new";
  WriteFile(replacement, std::string(1000, '\0'));
  std::filesystem::rename(replacement, dir_ + "/" + kWeights);
  g = BuildGraph(model->def, model->source);
  EXPECT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(),
              AllOf(HasSubstr(kWeights), HasSubstr("past the end")));
}

}  // namespace
}  // namespace sluice::external_data_test
