// Tests for reports/placement_report.h: a model placed on planned devices,
// its JSON, text and Graphviz from one report.
#include "reports/placement_report.h"

#include <sstream>
#include <string>

#include "executor/runtime_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/model_loader.h"
#include "tests/test_data.h"

namespace sluice::placement_report_test {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<PlacementReport> PlaceMlp(const PlacementRequest& request,
                                         const std::string& config_text) {
  absl::StatusOr<std::unique_ptr<const Graph>> graph =
      LoadModelGraph(TestDataPath("examples/mlp.pbtxt"));
  if (!graph.ok()) return graph.status();
  absl::StatusOr<RuntimeConfig> config = ParseRuntimeConfig(config_text);
  if (!config.ok()) return config.status();
  return PlaceForReport(request, *config, *std::move(graph), {"first note"});
}

TEST(PlacementReportTest, PlansAbsentDevicesWithReasonsWhenExplained) {
  PlacementRequest request;
  request.model_name = "mlp";
  request.devices = "2xgpu:16GiB";
  request.batch = 8;
  request.explain = true;
  absl::StatusOr<PlacementReport> report = PlaceMlp(request, "");
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json j = PlacementReportJson(*report);
  EXPECT_EQ(j["model"], "mlp");
  EXPECT_EQ(j["batch"], 8);
  ASSERT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][1]["name"], "/gpu:1");
  EXPECT_EQ(j["nodes"].size(), static_cast<size_t>(report->graph().num_nodes()));
  for (const nlohmann::json& node : j["nodes"]) {
    EXPECT_FALSE(node["reason"].get<std::string>().empty()) << node;
  }
  EXPECT_EQ(j["notes"][0], "first note");
  EXPECT_EQ(j["optimization"]["level"], "all");
  std::ostringstream text;
  PrintPlacementReport(*report, text);
  EXPECT_THAT(text.str(), HasSubstr("note: first note\n"));
  EXPECT_THAT(text.str(), HasSubstr("estimated step time: "));
  EXPECT_THAT(PlacementDot(*report), HasSubstr("digraph placement {"));
}

TEST(PlacementReportTest, UnexplainedNodesHaveNoReasonAndTheLevelIsTheConfigs) {
  PlacementRequest request;
  request.devices = "cpu";
  absl::StatusOr<PlacementReport> report =
      PlaceMlp(request, "optimization_level: NONE placement_strategy: SINGLE");
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json j = PlacementReportJson(*report);
  EXPECT_EQ(j["strategy"], "single");
  EXPECT_EQ(j["optimization"]["level"], "none");
  EXPECT_FALSE(j["nodes"][0].contains("reason"));
}

TEST(PlacementReportTest, ABadDevicesSpecIsInvalidArgument) {
  PlacementRequest request;
  request.devices = "3xtpu";
  absl::StatusOr<PlacementReport> report = PlaceMlp(request, "");
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(report.status().message()), HasSubstr("tpu"));
}

}  // namespace
}  // namespace sluice::placement_report_test
