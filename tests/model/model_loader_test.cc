// LoadModel and LoadModelGraph (model/model_loader.h) on a prepared model:
// refused with what takes it and the source to give instead.
#include "model/model_loader.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/prepared_model.h"
#include "tests/test_data.h"

namespace sluice {
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

}  // namespace
}  // namespace sluice
