// Tests for executor/config_fields.h: short enum names, setting fields from
// text, and expanding short names in config text.
#include "executor/config_fields.h"

#include <string>
#include <vector>

#include "executor/runtime_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"

namespace sluice::config_fields_test {
namespace {

namespace pb = google::protobuf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ShortEnumNameTest, DropsThePrefixTheValuesShare) {
  EXPECT_THAT(ShortEnumNames(*OptimizationLevel_descriptor()),
              ElementsAre("DEFAULT", "NONE", "BASIC", "ALL"));
  EXPECT_THAT(ShortEnumNames(*ConvLayout_descriptor()),
              ElementsAre("AUTO", "NCHW", "NHWC"));
  EXPECT_THAT(ShortEnumNames(*Precision_descriptor()),
              ElementsAre("MODEL", "FLOAT16", "BFLOAT16"));
  EXPECT_THAT(ShortEnumNames(*PlacementStrategy_descriptor()),
              ElementsAre("DEFAULT", "AUTO", "SINGLE", "MANUAL"));
}

TEST(ParseEnumValueTest, TakesShortAndFullNamesInAnyCase) {
  const pb::EnumDescriptor& level = *OptimizationLevel_descriptor();
  EXPECT_EQ(*ParseEnumValue(level, "NONE"), OPTIMIZATION_NONE);
  EXPECT_EQ(*ParseEnumValue(level, "none"), OPTIMIZATION_NONE);
  EXPECT_EQ(*ParseEnumValue(level, "OPTIMIZATION_BASIC"), OPTIMIZATION_BASIC);
  EXPECT_EQ(*ParseEnumValue(level, "optimization_all"), OPTIMIZATION_ALL);
  EXPECT_EQ(*ParseEnumValue(*ConvLayout_descriptor(), "Nhwc"),
            CONV_LAYOUT_NHWC);
}

TEST(ParseEnumValueTest, AWrongNameListsTheAcceptedOnes) {
  absl::StatusOr<int> bad = ParseEnumValue(*OptimizationLevel_descriptor(),
                                           "MAX");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("unknown value 'MAX'; use DEFAULT, NONE, BASIC or ALL "
                        "(or the full names OPTIMIZATION_DEFAULT, "
                        "OPTIMIZATION_NONE, OPTIMIZATION_BASIC, "
                        "OPTIMIZATION_ALL)"));
  // A prefix alone is not a value.
  EXPECT_FALSE(ParseEnumValue(*ConvLayout_descriptor(), "CONV_LAYOUT_").ok());
  EXPECT_FALSE(ParseEnumValue(*ConvLayout_descriptor(), "").ok());
}

TEST(SetFieldFromTextTest, SetsEachKindOfScalar) {
  RuntimeConfig c;
  ASSERT_TRUE(SetFieldFromText(&c, "conv_layout", "nhwc").ok());
  EXPECT_EQ(c.conv_layout(), CONV_LAYOUT_NHWC);
  ASSERT_TRUE(SetFieldFromText(&c, "precision", "PRECISION_BFLOAT16").ok());
  EXPECT_EQ(c.precision(), PRECISION_BFLOAT16);
  ASSERT_TRUE(SetFieldFromText(&c, "use_gpu", "FALSE").ok());
  EXPECT_TRUE(c.has_use_gpu());
  EXPECT_FALSE(c.use_gpu());
  ASSERT_TRUE(SetFieldFromText(&c, "inter_op_threads", "3").ok());
  EXPECT_EQ(c.inter_op_threads(), 3);
  ASSERT_TRUE(SetFieldFromText(&c, "default_device", "/gpu:1").ok());
  EXPECT_EQ(c.default_device(), "/gpu:1");
  ASSERT_TRUE(
      SetFieldFromText(&c, "resource_limits.max_folded_bytes", "4096").ok());
  EXPECT_EQ(c.resource_limits().max_folded_bytes(), 4096);
  ASSERT_TRUE(SetFieldFromText(&c, "gpu_memory_limit.fraction", "0.5").ok());
  EXPECT_DOUBLE_EQ(c.gpu_memory_limit().fraction(), 0.5);
}

TEST(SetFieldFromTextTest, ABadValueNamesTheFieldAndChangesNothing) {
  RuntimeConfig c;
  c.set_precision(PRECISION_FLOAT16);
  absl::Status s = SetFieldFromText(&c, "precision", "int8");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("precision: unknown value 'int8'; use MODEL, FLOAT16 "
                        "or BFLOAT16"));
  EXPECT_EQ(c.precision(), PRECISION_FLOAT16);

  s = SetFieldFromText(&c, "inter_op_threads", "99999999999");
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("inter_op_threads: '99999999999' is not an integer"));
  s = SetFieldFromText(&c, "allow_growth", "yes");
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("allow_growth: 'yes': expected true or false"));
  EXPECT_FALSE(c.has_allow_growth());
  s = SetFieldFromText(&c, "resource_limits.max_folded_bytes", "lots");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(c.has_resource_limits());
}

TEST(SetFieldFromTextTest, RefusesUnknownRepeatedAndMessageFields) {
  RuntimeConfig c;
  EXPECT_EQ(SetFieldFromText(&c, "no_such_field", "1").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(SetFieldFromText(&c, "resource_limits.nope", "1").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(SetFieldFromText(&c, "visible_gpus", "1").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetFieldFromText(&c, "gpu_memory_limit", "1").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ExpandShortEnumNamesTest, RewritesOnlyEnumValues) {
  absl::StatusOr<ExpandedText> e = ExpandShortEnumNames(
      "optimization_level: none  # NONE in a comment stays\n"
      "default_device: \"NONE\"\n"
      "resource_limits { max_folded_bytes: 1 }, conv_layout:NHWC;\n"
      "precision: PRECISION_FLOAT16\n",
      "<test>", *RuntimeConfig::descriptor());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->text,
            "optimization_level: OPTIMIZATION_NONE  # NONE in a comment "
            "stays\n"
            "default_device: \"NONE\"\n"
            "resource_limits { max_folded_bytes: 1 }, "
            "conv_layout:CONV_LAYOUT_NHWC;\n"
            "precision: PRECISION_FLOAT16\n");
  ASSERT_EQ(e->shifts.size(), 2u);
  // Line 0: "none" (columns 20-23) became 17 characters.
  EXPECT_EQ(e->OriginalColumn(0, 20 + 17 + 2), 20 + 4 + 2);
  EXPECT_EQ(e->OriginalColumn(0, 5), 5);
  EXPECT_EQ(e->OriginalColumn(1, 30), 30);
}

TEST(ExpandShortEnumNamesTest, AWrongNameIsAnErrorAtItsPosition) {
  absl::StatusOr<ExpandedText> e = ExpandShortEnumNames(
      "use_gpu: false\n  conv_layout: HWCN\n", "cfg.pbtxt",
      *RuntimeConfig::descriptor());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("cfg.pbtxt:2:16: conv_layout: unknown value 'HWCN'; "
                        "use AUTO, NCHW or NHWC"));
}

TEST(ExpandShortEnumNamesTest, LeavesTextItCannotFollowToTheParser) {
  // A syntax error before the enum: nothing is rewritten, no error here
  // (the text parser reports it with its position).
  absl::StatusOr<ExpandedText> e = ExpandShortEnumNames(
      "use_gpu: { optimization_level: NONE", "<test>",
      *RuntimeConfig::descriptor());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->text, "use_gpu: { optimization_level: NONE");
  // Unknown fields are skipped, values and all.
  e = ExpandShortEnumNames("bogus { x: NONE } precision: FLOAT16", "<test>",
                           *RuntimeConfig::descriptor());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->text, "bogus { x: NONE } precision: PRECISION_FLOAT16");
}

TEST(CheckEnumFieldsTest, AnUndeclaredNumberNamesTheFieldAndTheNames) {
  RuntimeConfig c;
  EXPECT_TRUE(CheckEnumFields(c).ok());
  c.set_conv_layout(static_cast<ConvLayout>(9));
  absl::Status s = CheckEnumFields(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("conv_layout: unknown value 9; use AUTO, NCHW or NHWC"));
}

TEST(ConfigTextTest, OneLinePerFieldThatParsesBackToTheSameConfig) {
  absl::StatusOr<RuntimeConfig> c = ParseRuntimeConfig(
      "optimization_level: BASIC gpu { index: 1 memory_limit { fraction: 0.5 } "
      "logical_devices { memory_limit { bytes: 1024 } } } visible_gpus: 1 "
      "visible_gpus: 0 allow_growth: false default_device: \"/gpu:0\" "
      "cpu_convolutions: LOOPS resource_limits { max_folded_bytes: 7 }");
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string text = ConfigText(*c);
  EXPECT_EQ(text,
            "visible_gpus: 1\n"
            "visible_gpus: 0\n"
            "allow_growth: false\n"
            "gpu { index: 1 memory_limit { fraction: 0.5 } logical_devices "
            "{ memory_limit { bytes: 1024 } } }\n"
            "default_device: \"/gpu:0\"\n"
            "optimization_level: OPTIMIZATION_BASIC\n"
            "resource_limits { max_folded_bytes: 7 }\n"
            "cpu_convolutions: CPU_CONVOLUTIONS_LOOPS\n");
  absl::StatusOr<RuntimeConfig> back = ParseRuntimeConfig(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->SerializeAsString(), c->SerializeAsString());
  EXPECT_EQ(ConfigText(RuntimeConfig()), "");
}

}  // namespace
}  // namespace sluice::config_fields_test
