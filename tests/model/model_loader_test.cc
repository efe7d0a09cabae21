// LoadModel and LoadModelGraph (model/model_loader.h): a prepared model is
// refused with what takes it and the source to give instead; a GraphDef's
// Const values come out the same as BuildGraph's, with the graph's def
// holding none of their bytes, and a Const that does not decode is still
// an error naming its node.
#include "model/model_loader.h"

#include <cstring>
#include <filesystem>

#include <string>

#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "model/prepared_model.h"
#include "tests/test_data.h"

namespace sluice::model_loader_test {
namespace {

using ::testing::HasSubstr;

TEST(ModelLoaderTest, APreparedModelIsRefusedNamingItsSource) {
  absl::StatusOr<std::unique_ptr<const Graph>> g =
      LoadModelGraph(TestDataPath("examples/mlp.pbtxt"));
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string path = (std::filesystem::temp_directory_path() /
                            "sluice_model_loader_test.sluicemodel")
                               .string();
  PreparedModelHeader header;
  header.set_source_path("/models/mlp.pbtxt");
  ASSERT_TRUE(WritePreparedModel(**g, header, path).ok());
  absl::StatusOr<std::unique_ptr<const Graph>> again = LoadModelGraph(path);
  absl::StatusOr<LoadedGraphDef> def = LoadModel(path);
  std::filesystem::remove(path);
  for (const absl::Status& s : {again.status(), def.status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("is a prepared model"));
    EXPECT_THAT(s.message(), HasSubstr("source model, /models/mlp.pbtxt"));
  }
}

TEST(ModelLoaderTest, AGraphDefsConstantsBecomeTheGraphsWithoutACopyInItsDef) {
  const std::string path = TestDataPath("examples/cnn.pb");
  absl::StatusOr<std::unique_ptr<const Graph>> loaded = LoadModelGraph(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<std::unique_ptr<const Graph>> built = LoadGraph(path);
  ASSERT_TRUE(built.ok()) << built.status();
  int consts = 0;
  for (const Node& n : (*built)->nodes()) {
    if (!n.is_const()) continue;
    const Node* m = (*loaded)->FindNode(n.name());
    ASSERT_NE(m, nullptr) << n.name();
    ASSERT_NE(m->const_value(), nullptr) << n.name();
    ASSERT_EQ(m->const_value()->bytes(), n.const_value()->bytes());
    EXPECT_EQ(std::memcmp(m->const_value()->raw_data(),
                          n.const_value()->raw_data(), n.const_value()->bytes()),
              0)
        << n.name();
    ++consts;
  }
  EXPECT_GT(consts, 2);
  for (const NodeDef& d : (*loaded)->def().node()) {
    if (d.op() != "Const") continue;
    const TensorProto& t = d.attr().at("value").tensor();
    EXPECT_TRUE(t.content().empty() && t.float_val_size() == 0) << d.name();
  }
}

TEST(ModelLoaderTest, AConstantThatDoesNotDecodeIsAnErrorNamingItsNode) {
  absl::StatusOr<LoadedGraphDef> def =
      LoadGraphDef(TestDataPath("examples/cnn.pb"));
  ASSERT_TRUE(def.ok()) << def.status();
  std::string name;
  for (NodeDef& n : *def->def.mutable_node()) {
    if (n.op() != "Const") continue;
    TensorProto* t = (*n.mutable_attr())["value"].mutable_tensor();
    if (t->content().size() < 8) continue;
    t->mutable_content()->resize(t->content().size() - 4);  // one float short
    name = n.name();
    break;
  }
  ASSERT_FALSE(name.empty());
  const std::string path = (std::filesystem::temp_directory_path() /
                            "sluice_model_loader_test_short.pb")
                               .string();
  ASSERT_TRUE(SaveGraphDef(def->def, path).ok());
  absl::StatusOr<std::unique_ptr<const Graph>> g = LoadModelGraph(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr(name));
  EXPECT_THAT(g.status().message(), HasSubstr("attribute 'value'"));
}

}  // namespace
}  // namespace sluice::model_loader_test
