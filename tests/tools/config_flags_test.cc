// Tests of the shared config flags (tools/config_flags.h): every command
// that takes them parses them into the same values, the values reach the
// config, and the accepted values come from the proto's enums.
#include "tools/config_flags.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "executor/config_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/tools_test_util.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/place_command.h"

namespace sluice::config_flags_test {
namespace {

using ::testing::HasSubstr;

// A command's options: how to add them to an app, and where its config
// flags land.
struct CommandCase {
  std::string name;
  ConfigFlagSet flags;
  std::function<const ConfigFlagValues*(CLI::App*)> add;
};

std::vector<CommandCase> Commands() {
  // The options live as long as the test (static), one per command.
  static RunOptions run;
  static BenchOptions bench;
  static PlaceOptions place;
  static InspectOptions inspect;
  return {
      {"run", kRunConfigFlags,
       [](CLI::App* app) {
         run = RunOptions();
         AddRunOptions(app, &run);
         return &run.config;
       }},
      {"bench", kBenchConfigFlags,
       [](CLI::App* app) {
         bench = BenchOptions();
         AddBenchOptions(app, &bench);
         return &bench.config;
       }},
      {"place", kPlaceConfigFlags,
       [](CLI::App* app) {
         place = PlaceOptions();
         AddPlaceOptions(app, &place);
         return &place.config;
       }},
      {"inspect", kInspectConfigFlags,
       [](CLI::App* app) {
         inspect = InspectOptions();
         AddInspectOptions(app, &inspect);
         return &inspect.config;
       }},
  };
}

TEST(ConfigFlagsTest, EveryCommandParsesItsConfigFlagsTheSameWay) {
  ScratchDir dir;
  const std::string config = dir.Write("c.pbtxt", "inter_op_threads: 2\n");
  const std::map<std::string, std::string> sample = {
      {"--config", config},          {"--device", "cpu:0"},
      {"--strategy", "single"},      {"--optimization-level", "basic"},
      {"--precision", "bf16"},       {"--conv-layout", "NHWC"},
      {"--cpu-convolutions", "loops"},
  };
  for (const CommandCase& command : Commands()) {
    SCOPED_TRACE(command.name);
    CLI::App app;
    const ConfigFlagValues* values = command.add(&app);
    std::vector<std::string> args = {ExampleFile("mlp.pbtxt")};
    const std::vector<std::string> names = ConfigFlagNames(command.flags);
    ASSERT_GE(names.size(), 3u);
    for (const std::string& flag : names) {
      args.push_back(flag);
      args.push_back(sample.at(flag));
    }
    std::ostringstream out, err;
    ASSERT_EQ(ParseCommandLine(app, args, out, err), kParsed) << err.str();

    RuntimeConfig c;
    ASSERT_TRUE(ApplyConfigFlags(*values, &c).ok());
    auto has = [&](const char* flag) {
      return std::find(names.begin(), names.end(), flag) != names.end();
    };
    EXPECT_EQ(values->config_path, has("--config") ? config : "");
    EXPECT_EQ(c.default_device(), has("--device") ? "cpu:0" : "");
    EXPECT_EQ(c.placement_strategy(),
              has("--strategy")  ? PLACEMENT_SINGLE
              : has("--device") ? PLACEMENT_MANUAL
                                : PLACEMENT_DEFAULT);
    EXPECT_EQ(c.optimization_level(), has("--optimization-level")
                                          ? OPTIMIZATION_BASIC
                                          : OPTIMIZATION_DEFAULT);
    EXPECT_EQ(c.precision(), PRECISION_BFLOAT16);
    EXPECT_EQ(c.conv_layout(), CONV_LAYOUT_NHWC);
    EXPECT_EQ(c.cpu_convolutions(), CPU_CONVOLUTIONS_LOOPS);
  }
}

TEST(ConfigFlagsTest, ABadEnumValueIsAUsageErrorListingTheValues) {
  for (const CommandCase& command : Commands()) {
    SCOPED_TRACE(command.name);
    CLI::App app;
    command.add(&app);
    std::ostringstream out, err;
    EXPECT_EQ(ParseCommandLine(app,
                               {ExampleFile("mlp.pbtxt"), "--conv-layout",
                                "hwcn"},
                               out, err),
              kExitUsage);
    EXPECT_THAT(err.str(), HasSubstr("'hwcn' is not one of auto, nchw, nhwc"));
  }
}

TEST(ConfigFlagsTest, HelpIsTheSameWhereTheContextIs) {
  // run, bench and place take --config, so each flag reads the same there.
  std::vector<std::string> helps;
  for (const CommandCase& command : Commands()) {
    CLI::App app;
    command.add(&app);
    helps.push_back(app.help());
  }
  for (const std::string& help : helps) {
    EXPECT_THAT(help, HasSubstr("{auto,nchw,nhwc}"));
    EXPECT_THAT(help, HasSubstr("Run a float32 model in float16 or bfloat16"));
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(helps[i], HasSubstr("overrides the config's conv_layout"));
  }
  EXPECT_THAT(helps[3], HasSubstr("With --optimized: Convolutions NCHW"));
  EXPECT_THAT(helps[3], HasSubstr("(default all)"));
}

// The values an enum flag takes are its enum's: every short name but
// DEFAULT, in lower case, reaches the config.
TEST(ConfigFlagsTest, EnumFlagsTakeEveryValueOfTheirEnum) {
  const std::map<std::string, std::string> fields = {
      {"placement_strategy", "--strategy"},
      {"optimization_level", "--optimization-level"},
      {"precision", "--precision"},
      {"conv_layout", "--conv-layout"}};
  for (const auto& [field_name, flag] : fields) {
    const google::protobuf::FieldDescriptor* field =
        RuntimeConfig::descriptor()->FindFieldByName(field_name);
    ASSERT_NE(field, nullptr);
    const google::protobuf::EnumDescriptor& type = *field->enum_type();
    for (int v = 0; v < type.value_count(); ++v) {
      const std::string name = ShortEnumName(*type.value(v));
      if (name == "DEFAULT") continue;
      CLI::App app;
      ConfigFlagValues values;
      AddConfigFlags(&app, kPlaceConfigFlags, &values);
      std::ostringstream out, err;
      ASSERT_EQ(ParseCommandLine(app, {flag, absl::AsciiStrToLower(name)},
                                 out, err),
                kParsed)
          << flag << " " << name << ": " << err.str();
      RuntimeConfig c;
      ASSERT_TRUE(ApplyConfigFlags(values, &c).ok());
      EXPECT_EQ(c.GetReflection()->GetEnumValue(c, field),
                type.value(v)->number())
          << flag << " " << name;
    }
  }
}

TEST(ConfigFlagsTest, ApplyNamesTheFlagForABadValueOrUnknownField) {
  RuntimeConfig c;
  ConfigFlagValues values;
  values.fields["precision"] = "int4";
  absl::Status s = ApplyConfigFlags(values, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("--precision: precision: unknown value 'int4'"));
  values.fields.clear();
  values.fields["inter_op_threads"] = "2";
  s = ApplyConfigFlags(values, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("no command-line flag sets the config field "
                        "'inter_op_threads'"));
}

TEST(ConfigFlagsTest, FlagsOverrideTheConfigFile) {
  ScratchDir dir;
  ConfigFlagValues values;
  values.config_path =
      dir.Write("c.pbtxt", "precision: FLOAT16\nconv_layout: NCHW\n");
  values.fields["conv_layout"] = "nhwc";
  std::vector<std::string> notes;
  absl::StatusOr<RuntimeConfig> c = LoadConfigWithFlags(values, &notes);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->precision(), PRECISION_FLOAT16);  // from the file
  EXPECT_EQ(c->conv_layout(), CONV_LAYOUT_NHWC);  // the flag wins
}

TEST(ConfigFlagsTest, PlaceTakesTheStrategyFlagThroughTheConfig) {
  CommandResult r =
      RunCommand(SluiceMain, {"place", ExampleFile("mlp.pbtxt"), "--strategy",
                              "single", "--optimization-level", "none",
                              "--json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["strategy"], "single");
  EXPECT_EQ(j["optimization"]["level"], "none");
}

}  // namespace
}  // namespace sluice::config_flags_test
