// Tests for executor/runtime_config.h: loading, validation, environment
// overrides and byte sizes.
#include "executor/runtime_config.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "executor/config_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::runtime_config_test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

RuntimeConfig Parse(const std::string& text) {
  absl::StatusOr<RuntimeConfig> c = ParseRuntimeConfig(text);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : RuntimeConfig();
}

void ExpectInvalid(const std::string& text, const std::string& substring) {
  absl::Status s = ValidateRuntimeConfig(Parse(text));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_THAT(std::string(s.message()), HasSubstr(substring)) << text;
}

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(RuntimeConfigTest, LoadsAFullConfigFromFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "sluice_rc_test.pbtxt")
          .string();
  {
    std::ofstream out(path);
    out << "# a comment\n"
           "visible_gpus: [0, 1]\n"
           "gpu_memory_limit { fraction: 0.5 }\n"
           "allow_growth: true\n"
           "gpu { index: 1 memory_limit { bytes: 1073741824 }\n"
           "      logical_devices { memory_limit { bytes: 536870912 } }\n"
           "      logical_devices { memory_limit { bytes: 536870912 } } }\n"
           "logical_cpus {}\n"
           "logical_cpus { memory_limit { bytes: 0 } }\n"
           "placement_strategy: PLACEMENT_SINGLE\n"
           "default_device: \"/gpu:1\"\n"
           "inter_op_threads: 4\n";
  }
  absl::StatusOr<RuntimeConfig> c = LoadRuntimeConfig(path);
  std::remove(path.c_str());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->allow_growth());
  EXPECT_EQ(c->gpu(0).logical_devices_size(), 2);
  EXPECT_TRUE(ValidateRuntimeConfig(*c).ok()) << ValidateRuntimeConfig(*c);
}

TEST(RuntimeConfigTest, MissingFileIsNotFound) {
  absl::StatusOr<RuntimeConfig> c = LoadRuntimeConfig("/no/such/config.pbtxt");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("/no/such"));
}

TEST(RuntimeConfigTest, SyntaxErrorNamesLineAndColumn) {
  absl::StatusOr<RuntimeConfig> c = ParseRuntimeConfig(
      "allow_growth: true\ninter_op_threads: 2\nno_such_field: 3\n", "c.pbtxt");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("c.pbtxt:3:"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("no_such_field"));
}

TEST(RuntimeConfigTest, WrongValueTypeNamesLine) {
  absl::StatusOr<RuntimeConfig> c =
      ParseRuntimeConfig("\n\ninter_op_threads: \"many\"\n", "c.pbtxt");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("c.pbtxt:3:"));
}

// Every enum field of RuntimeConfig, found through its descriptor so that
// a field added to the proto is covered: each value by its short name, its
// short name in lower case and its full name.
TEST(RuntimeConfigTest, EveryEnumFieldTakesShortAndFullNames) {
  const google::protobuf::Descriptor& type = *RuntimeConfig::descriptor();
  int enum_fields = 0;
  for (int f = 0; f < type.field_count(); ++f) {
    const google::protobuf::FieldDescriptor& field = *type.field(f);
    if (field.cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_ENUM) {
      continue;
    }
    ++enum_fields;
    const google::protobuf::EnumDescriptor& e = *field.enum_type();
    for (int v = 0; v < e.value_count(); ++v) {
      const std::string full = e.value(v)->name();
      const std::string short_name = ShortEnumName(*e.value(v));
      EXPECT_NE(short_name, full);
      for (const std::string& name :
           {full, short_name, absl::AsciiStrToLower(short_name)}) {
        const std::string text = field.name() + ": " + name;
        absl::StatusOr<RuntimeConfig> c = ParseRuntimeConfig(text);
        ASSERT_TRUE(c.ok()) << text << ": " << c.status();
        EXPECT_EQ(c->GetReflection()->GetEnumValue(*c, &field),
                  e.value(v)->number())
            << text;
        EXPECT_TRUE(ValidateRuntimeConfig(*c).ok()) << text;
      }
    }
  }
  // placement_strategy, optimization_level, precision, conv_layout.
  EXPECT_GE(enum_fields, 4);
}

TEST(RuntimeConfigTest, ReadmesShortNamesLoad) {
  RuntimeConfig c = Parse(
      "optimization_level: NONE\nprecision: FLOAT16\nconv_layout: NHWC\n"
      "placement_strategy: SINGLE\n");
  EXPECT_EQ(c.optimization_level(), OPTIMIZATION_NONE);
  EXPECT_EQ(c.precision(), PRECISION_FLOAT16);
  EXPECT_EQ(c.conv_layout(), CONV_LAYOUT_NHWC);
  EXPECT_EQ(c.placement_strategy(), PLACEMENT_SINGLE);
}

TEST(RuntimeConfigTest, AWrongEnumNameListsTheAcceptedNames) {
  absl::StatusOr<RuntimeConfig> c =
      ParseRuntimeConfig("use_gpu: false\noptimization_level: MAX\n", "c.pbtxt");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("c.pbtxt:2:21: optimization_level: unknown value "
                        "'MAX'; use DEFAULT, NONE, BASIC or ALL (or the full "
                        "names OPTIMIZATION_DEFAULT, OPTIMIZATION_NONE, "
                        "OPTIMIZATION_BASIC, OPTIMIZATION_ALL)"));
}

TEST(RuntimeConfigTest, ErrorsAfterAShortNameKeepTheirColumn) {
  // The string is at column 37 of what the user wrote, whatever NHWC
  // became.
  absl::StatusOr<RuntimeConfig> c = ParseRuntimeConfig(
      "conv_layout: NHWC inter_op_threads: \"x\"\n", "c.pbtxt");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("c.pbtxt:1:37: "));
}

TEST(RuntimeConfigTest, UndeclaredEnumNumbersAreInvalid) {
  RuntimeConfig c;
  c.set_precision(static_cast<Precision>(7));
  absl::Status s = ValidateRuntimeConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("precision: unknown value 7; use MODEL, FLOAT16 or "
                        "BFLOAT16"));
}

TEST(RuntimeConfigTest, EmptyConfigIsValid) {
  EXPECT_TRUE(ValidateRuntimeConfig(RuntimeConfig()).ok());
}

TEST(RuntimeConfigTest, RejectsFractionOutOfRange) {
  ExpectInvalid("gpu_memory_limit { fraction: 0 }", "gpu_memory_limit");
  ExpectInvalid("gpu_memory_limit { fraction: 1.5 }", "(0, 1]");
  ExpectInvalid("gpu_memory_limit { fraction: -0.1 }", "fraction");
  ExpectInvalid("gpu_memory_limit { fraction: nan }", "fraction");
  EXPECT_TRUE(
      ValidateRuntimeConfig(Parse("gpu_memory_limit { fraction: 1 }")).ok());
}

TEST(RuntimeConfigTest, RejectsNegativeOrZeroGpuBytes) {
  ExpectInvalid("gpu_memory_limit { bytes: -1 }", "must not be negative");
  ExpectInvalid("gpu { index: 0 memory_limit { bytes: 0 } }",
                "gpu[0].memory_limit: bytes must be > 0");
  ExpectInvalid("logical_cpus { memory_limit { bytes: -5 } }",
                "logical_cpus[0].memory_limit");
}

TEST(RuntimeConfigTest, RejectsBadThreadCounts) {
  ExpectInvalid("inter_op_threads: -1", "inter_op_threads");
  ExpectInvalid("intra_op_threads: 100000", "intra_op_threads");
}

TEST(RuntimeConfigTest, RejectsDuplicateGpuIndex) {
  ExpectInvalid("gpu { index: 1 } gpu { index: 0 } gpu { index: 1 }",
                "gpu[2].index: GPU 1 is configured twice (also gpu[0])");
  ExpectInvalid("visible_gpus: [0, 0]", "visible_gpus[1]: GPU 0 is listed twice");
  ExpectInvalid("gpu { index: -2 }", "gpu[0].index");
}

TEST(RuntimeConfigTest, RejectsGpuNotVisible) {
  ExpectInvalid("visible_gpus: [1] gpu { index: 0 }",
                "gpu[0].index: GPU 0 is not in visible_gpus");
}

TEST(RuntimeConfigTest, RejectsVisibleGpusWithUseGpuFalse) {
  ExpectInvalid("use_gpu: false visible_gpus: 0", "use_gpu is false");
  ExpectInvalid("use_gpu: false default_device: \"/gpu:0\"", "default_device");
}

TEST(RuntimeConfigTest, LogicalGpusNeedLimits) {
  ExpectInvalid("gpu { index: 0 logical_devices {} }",
                "gpu[0].logical_devices[0].memory_limit: is required");
}

TEST(RuntimeConfigTest, LogicalGpusMustFitTheirGpu) {
  ExpectInvalid(
      "gpu { index: 0 logical_devices { memory_limit { fraction: 0.6 } } "
      "logical_devices { memory_limit { fraction: 0.6 } } }",
      "fractions add up to 1.2");
  ExpectInvalid(
      "gpu { index: 0 memory_limit { bytes: 1000 } "
      "logical_devices { memory_limit { bytes: 600 } } "
      "logical_devices { memory_limit { bytes: 600 } } }",
      "limits add up to 1.2 KiB");
}

TEST(RuntimeConfigTest, RejectsBadDefaultDevice) {
  ExpectInvalid("default_device: \"/tpu:0\"", "default_device");
  ExpectInvalid("default_device: \"/gpu:*\"", "must name one device");
}

TEST(RuntimeConfigTest, RejectsUnknownPlacementStrategy) {
  RuntimeConfig c;
  c.set_placement_strategy(static_cast<PlacementStrategy>(42));
  absl::Status s = ValidateRuntimeConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("placement_strategy"));
}

TEST(RuntimeConfigTest, EnvironmentOverridesGrowthAndSaysSo) {
  RuntimeConfig c = Parse("allow_growth: false");
  std::vector<std::string> log;
  ASSERT_TRUE(ApplyEnvironmentOverrides(
                  &c, &log, FakeEnv({{"SLUICE_GPU_ALLOW_GROWTH", "true"}}))
                  .ok());
  EXPECT_TRUE(c.allow_growth());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("SLUICE_GPU_ALLOW_GROWTH sets allow_growth to "
                                "true (config: false)"));
}

TEST(RuntimeConfigTest, EnvironmentTurnsGpuGraphsOffAndSaysSo) {
  RuntimeConfig c;
  std::vector<std::string> log;
  ASSERT_TRUE(ApplyEnvironmentOverrides(
                  &c, &log, FakeEnv({{"SLUICE_GPU_GRAPHS", "false"}}))
                  .ok());
  EXPECT_TRUE(c.has_gpu_graphs());
  EXPECT_FALSE(c.gpu_graphs());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("SLUICE_GPU_GRAPHS sets gpu_graphs to false "
                                "(config: true)"));
  RuntimeConfig bad;
  absl::Status s = ApplyEnvironmentOverrides(
      &bad, &log, FakeEnv({{"SLUICE_GPU_GRAPHS", "maybe"}}));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("SLUICE_GPU_GRAPHS: gpu_graphs: 'maybe': "
                                     "expected true or false"));
  EXPECT_FALSE(bad.has_gpu_graphs());
}

TEST(RuntimeConfigTest, EnvironmentTurnsCudnnOffAndSaysSo) {
  RuntimeConfig c;
  std::vector<std::string> log;
  ASSERT_TRUE(ApplyEnvironmentOverrides(
                  &c, &log, FakeEnv({{"SLUICE_USE_CUDNN", "false"}}))
                  .ok());
  EXPECT_TRUE(c.has_use_cudnn());
  EXPECT_FALSE(c.use_cudnn());
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0], HasSubstr("SLUICE_USE_CUDNN sets use_cudnn to false "
                                "(config: true)"));
  RuntimeConfig bad;
  absl::Status s = ApplyEnvironmentOverrides(
      &bad, &log, FakeEnv({{"SLUICE_USE_CUDNN", "no"}}));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("SLUICE_USE_CUDNN"));
  EXPECT_FALSE(bad.has_use_cudnn());
}

TEST(RuntimeConfigTest, EnvironmentOverridesMemoryLimitEverywhere) {
  RuntimeConfig c = Parse(
      "gpu_memory_limit { bytes: 1024 } gpu { index: 0 memory_limit { "
      "fraction: 0.25 } } gpu { index: 1 }");
  std::vector<std::string> log;
  ASSERT_TRUE(ApplyEnvironmentOverrides(
                  &c, &log, FakeEnv({{"SLUICE_GPU_MEMORY_LIMIT", "2GiB"}}))
                  .ok());
  EXPECT_EQ(c.gpu_memory_limit().bytes(), int64_t{2} << 30);
  EXPECT_EQ(c.gpu(0).memory_limit().limit_case(), MemoryLimit::LIMIT_NOT_SET);
  EXPECT_EQ(EffectiveGpuMemoryLimit(c, 0).bytes(), int64_t{2} << 30);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0], HasSubstr("gpu_memory_limit to 2.0 GiB (config: 1.0 KiB)"));
  EXPECT_THAT(log[1], HasSubstr("GPU 0's memory_limit of 25% of the card"));
}

TEST(RuntimeConfigTest, EnvironmentFractionLimit) {
  RuntimeConfig c;
  std::vector<std::string> log;
  ASSERT_TRUE(ApplyEnvironmentOverrides(
                  &c, &log, FakeEnv({{"SLUICE_GPU_MEMORY_LIMIT", "0.5"}}))
                  .ok());
  EXPECT_DOUBLE_EQ(c.gpu_memory_limit().fraction(), 0.5);
  EXPECT_TRUE(ValidateRuntimeConfig(c).ok());
}

TEST(RuntimeConfigTest, NoEnvironmentNoChange) {
  RuntimeConfig c = Parse("allow_growth: true");
  std::vector<std::string> log;
  ASSERT_TRUE(ApplyEnvironmentOverrides(&c, &log, FakeEnv({})).ok());
  EXPECT_THAT(log, IsEmpty());
  EXPECT_TRUE(c.allow_growth());
}

TEST(RuntimeConfigTest, BadEnvironmentValuesNameTheVariable) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"SLUICE_GPU_ALLOW_GROWTH", "yes"},
      {"SLUICE_GPU_ALLOW_GROWTH", ""},
      {"SLUICE_GPU_MEMORY_LIMIT", "lots"},
      {"SLUICE_GPU_MEMORY_LIMIT", "1.5"},
      {"SLUICE_GPU_MEMORY_LIMIT", "-4G"},
      {"SLUICE_GPU_MEMORY_LIMIT", "4XB"},
      {"SLUICE_GPU_MEMORY_LIMIT", "0"},
      {"SLUICE_GPU_MEMORY_LIMIT", ""},
  };
  for (const auto& [name, value] : cases) {
    RuntimeConfig c = Parse("allow_growth: false");
    std::vector<std::string> log;
    absl::Status s =
        ApplyEnvironmentOverrides(&c, &log, FakeEnv({{name, value}}));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << value;
    EXPECT_THAT(std::string(s.message()), HasSubstr(name)) << value;
    EXPECT_THAT(log, IsEmpty());
    EXPECT_FALSE(c.allow_growth());
  }
}

TEST(RuntimeConfigTest, ReadsTheRealEnvironment) {
  setenv("SLUICE_GPU_ALLOW_GROWTH", "FALSE", 1);
  RuntimeConfig c = Parse("allow_growth: true");
  std::vector<std::string> log;
  absl::Status s = ApplyEnvironmentOverrides(&c, &log);
  unsetenv("SLUICE_GPU_ALLOW_GROWTH");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_FALSE(c.allow_growth());
  EXPECT_EQ(log.size(), 1u);
}

TEST(ParseByteSizeTest, AcceptsUnits) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize("4K"), 4096);
  EXPECT_EQ(*ParseByteSize("4KiB"), 4096);
  EXPECT_EQ(*ParseByteSize("4KB"), 4000);
  EXPECT_EQ(*ParseByteSize("512M"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("4GiB"), int64_t{4} << 30);
  EXPECT_EQ(*ParseByteSize("4 gib"), int64_t{4} << 30);
  EXPECT_EQ(*ParseByteSize("1.5G"), int64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("2TB"), int64_t{2000000000000});
  EXPECT_EQ(*ParseByteSize("10B"), 10);
  EXPECT_EQ(*ParseByteSize("9223372036854775807"),
            int64_t{9223372036854775807});
}

TEST(ParseByteSizeTest, RejectsGarbage) {
  for (const char* text : {"", "GiB", "-1", "4 XB", "1e3", "9223372036854775808",
                           "99999999999T", "1.2.3G"}) {
    absl::StatusOr<int64_t> n = ParseByteSize(text);
    EXPECT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(n.status().message()), HasSubstr("byte size"));
  }
}

TEST(ParseMemoryLimitTest, FractionOrBytes) {
  EXPECT_DOUBLE_EQ(ParseMemoryLimit("1.0")->fraction(), 1.0);
  EXPECT_EQ(ParseMemoryLimit("1")->bytes(), 1);
  EXPECT_EQ(ParseMemoryLimit("0.5GiB")->bytes(), int64_t{1} << 29);
  EXPECT_FALSE(ParseMemoryLimit("0.0").ok());
}

TEST(FormatBytesTest, BinaryUnits) {
  EXPECT_EQ(FormatBytes(100), "100 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{80} << 30), "80.0 GiB");
}

TEST(ResolveMemoryLimitTest, FractionBytesAndWholeCard) {
  MemoryLimit none;
  EXPECT_EQ(ResolveMemoryLimit(none, 1000), 1000);
  MemoryLimit half;
  half.set_fraction(0.5);
  EXPECT_EQ(ResolveMemoryLimit(half, 1001), 500);
  MemoryLimit big;
  big.set_bytes(5000);
  EXPECT_EQ(ResolveMemoryLimit(big, 1000), 1000);
  EXPECT_EQ(ResolveMemoryLimit(big, 0), 5000);
}

TEST(EffectiveGpuMemoryLimitTest, PerGpuWinsOverDefault) {
  RuntimeConfig c = Parse(
      "gpu_memory_limit { fraction: 0.5 } gpu { index: 1 memory_limit { "
      "bytes: 7 } }");
  EXPECT_DOUBLE_EQ(EffectiveGpuMemoryLimit(c, 0).fraction(), 0.5);
  EXPECT_EQ(EffectiveGpuMemoryLimit(c, 1).bytes(), 7);
}

TEST(MergeRuntimeConfigTest, TheOverlayWinsFieldByFieldAndGpusMergeByIndex) {
  absl::StatusOr<RuntimeConfig> base = ParseRuntimeConfig(
      "allow_growth: false inter_op_threads: 4 gpu_memory_limit { bytes: 1024 } "
      "gpu { index: 0 memory_limit { bytes: 10 } } "
      "gpu { index: 1 logical_devices { memory_limit { fraction: 0.5 } } } "
      "logical_cpus {} logical_cpus {} resource_limits { max_folded_bytes: 5 }");
  absl::StatusOr<RuntimeConfig> overlay = ParseRuntimeConfig(
      "allow_growth: true gpu_memory_limit { fraction: 0.25 } "
      "gpu { index: 1 memory_limit { bytes: 20 } } gpu { index: 2 } "
      "logical_cpus {} resource_limits { max_created_tensor_bytes: 6 }");
  ASSERT_TRUE(base.ok() && overlay.ok());
  const RuntimeConfig m = MergeRuntimeConfig(*base, *overlay);
  EXPECT_TRUE(m.allow_growth());
  EXPECT_EQ(m.inter_op_threads(), 4);
  EXPECT_FALSE(m.gpu_memory_limit().has_bytes());
  EXPECT_EQ(m.gpu_memory_limit().fraction(), 0.25);
  ASSERT_EQ(m.gpu_size(), 3);
  EXPECT_EQ(m.gpu(0).memory_limit().bytes(), 10);
  EXPECT_EQ(m.gpu(1).memory_limit().bytes(), 20);
  EXPECT_EQ(m.gpu(1).logical_devices_size(), 1);  // kept: the overlay lists none
  EXPECT_EQ(m.gpu(2).index(), 2);
  EXPECT_EQ(m.logical_cpus_size(), 1);  // replaced whole
  EXPECT_EQ(m.resource_limits().max_folded_bytes(), 5);
  EXPECT_EQ(m.resource_limits().max_created_tensor_bytes(), 6);
}

}  // namespace
}  // namespace sluice::runtime_config_test
