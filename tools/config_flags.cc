// The config flags of the `sluice` commands (see config_flags.h).
#include "tools/config_flags.h"

#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/config_fields.h"
#include "tools/cli_util.h"

namespace sluice {
namespace {

namespace pb = google::protobuf;

// One flag: the field it sets and how it is described.
struct FlagDef {
  ConfigFlag bit;
  const char* name;   // "--precision"
  const char* field;  // RuntimeConfig field; "" for --config (the file)
  const char* help;
  // The value when neither the flag nor the config gives one, for the
  // help ("" says nothing).
  const char* default_value;
  // Further values the flag takes, each standing for one of the enum's.
  std::vector<std::pair<std::string, std::string>> aliases;
  // Fields set with this one, to these values.
  std::vector<std::pair<std::string, std::string>> implies;
};

// Every config flag, in the order they are added and applied (--device
// before --strategy, so that an explicit strategy wins over the manual
// placement --device implies).
const std::vector<FlagDef>& Flags() {
  static const auto* flags = new std::vector<FlagDef>{
      {kConfigFileFlag, "--config", "",
       "A RuntimeConfig text proto (proto/config.proto); the flags that "
       "set its fields override it",
       "", {}, {}},
      {kDeviceFlag, "--device", "default_device",
       "Run on this device (e.g. gpu:0, cpu:0): manual placement with it as "
       "the default device",
       "", {}, {{"placement_strategy", "MANUAL"}}},
      {kStrategyFlag, "--strategy", "placement_strategy",
       "Placement: auto (memory-constrained earliest finish time), single "
       "(everything on the fastest device that fits) or manual (requests "
       "only)",
       "auto", {}, {}},
      {kOptimizationLevelFlag, "--optimization-level", "optimization_level",
       "Graph optimisation passes run before placement: none, basic "
       "(rewrites that keep every op) or all (also the fusions)",
       "all", {}, {}},
      {kPrecisionFlag, "--precision", "precision",
       "Run a float32 model in float16 or bfloat16 (weights converted once, "
       "float32 accumulation, outputs in the model's dtype), or model for "
       "its own dtypes",
       "model",
       {{"float32", "MODEL"}, {"fp16", "FLOAT16"}, {"bf16", "BFLOAT16"}},
       {}},
      {kConvLayoutFlag, "--conv-layout", "conv_layout",
       "Convolutions NCHW or NHWC (channels last between them, filters "
       "transposed once); auto: NHWC on a GPU with --precision "
       "float16/bfloat16 or where the model's own permutes to channels last "
       "then cancel, and on the CPU alone in float32 with oneDNN, else NCHW",
       "auto", {}, {}},
      {kCpuConvolutionsFlag, "--cpu-convolutions", "cpu_convolutions",
       "The CPU's float32 convolutions: auto (oneDNN where it measured "
       "faster than sluice's loops), onednn (wherever it takes the problem) "
       "or loops (sluice's own, the reference)",
       "auto", {}, {}},
  };
  return *flags;
}

const pb::FieldDescriptor* FieldOf(const FlagDef& def) {
  if (*def.field == '\0') return nullptr;
  return RuntimeConfig::descriptor()->FindFieldByName(def.field);
}

const pb::EnumDescriptor* EnumOf(const FlagDef& def) {
  const pb::FieldDescriptor* field = FieldOf(def);
  if (field == nullptr ||
      field->cpp_type() != pb::FieldDescriptor::CPPTYPE_ENUM) {
    return nullptr;
  }
  return field->enum_type();
}

// The values an enum flag lists: the short names in lower case but
// "default" (the same as leaving the flag out), then the aliases.
std::vector<std::string> Choices(const FlagDef& def,
                                 const pb::EnumDescriptor& type) {
  std::vector<std::string> choices;
  for (const std::string& name : ShortEnumNames(type)) {
    if (name != "DEFAULT") choices.push_back(absl::AsciiStrToLower(name));
  }
  for (const auto& [alias, value] : def.aliases) choices.push_back(alias);
  return choices;
}

// `value` with an alias replaced by the enum name it stands for.
std::string Unalias(const FlagDef& def, const std::string& value) {
  for (const auto& [alias, name] : def.aliases) {
    if (absl::EqualsIgnoreCase(alias, value)) return name;
  }
  return value;
}

CLI::Validator EnumValidator(const FlagDef& def,
                             const pb::EnumDescriptor& type) {
  const std::vector<std::string> choices = Choices(def, type);
  return CLI::Validator(
      [&def, &type, choices](std::string& value) -> std::string {
        if (ParseEnumValue(type, Unalias(def, value)).ok()) return "";
        return absl::StrCat("'", EscapeForTerminal(value, 100),
                            "' is not one of ", absl::StrJoin(choices, ", "));
      },
      absl::StrCat("{", absl::StrJoin(choices, ","), "}"));
}

std::string Help(const FlagDef& def, bool has_config_file,
                 absl::string_view context) {
  std::string help = absl::StrCat(context, def.help);
  if (*def.field == '\0') return help;
  if (has_config_file) {
    absl::StrAppend(&help, " (overrides the config's ", def.field,
                    *def.default_value != '\0'
                        ? absl::StrCat("; default: the config's, else ",
                                       def.default_value)
                        : std::string(),
                    ")");
  } else if (*def.default_value != '\0') {
    absl::StrAppend(&help, " (default ", def.default_value, ")");
  }
  return help;
}

}  // namespace

void AddConfigFlags(CLI::App* app, ConfigFlagSet flags,
                    ConfigFlagValues* values, absl::string_view context) {
  const bool has_config_file = (flags & kConfigFileFlag) != 0;
  for (const FlagDef& def : Flags()) {
    if ((flags & def.bit) == 0) continue;
    const std::string help = Help(def, has_config_file, context);
    if (def.bit == kConfigFileFlag) {
      app->add_option(def.name, values->config_path, help)
          ->check(RegularFile());
      continue;
    }
    const std::string field = def.field;
    CLI::Option* option = app->add_option_function<std::string>(
        def.name,
        [values, field](const std::string& value) {
          values->fields[field] = value;
        },
        help);
    if (const pb::EnumDescriptor* type = EnumOf(def)) {
      option->check(EnumValidator(def, *type));
    } else {
      option->check(NonEmpty());
    }
  }
}

absl::Status ApplyConfigFlags(const ConfigFlagValues& values,
                              RuntimeConfig* config) {
  for (const auto& [field, value] : values.fields) {
    bool known = false;
    for (const FlagDef& def : Flags()) known = known || field == def.field;
    if (!known || field.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("no command-line flag sets the config field '", field,
                       "'"));
    }
  }
  for (const FlagDef& def : Flags()) {
    if (*def.field == '\0') continue;
    auto it = values.fields.find(def.field);
    if (it == values.fields.end()) continue;
    absl::Status set =
        SetFieldFromText(config, def.field, Unalias(def, it->second));
    if (!set.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(def.name, ": ", set.message()));
    }
    for (const auto& [implied, implied_value] : def.implies) {
      RETURN_IF_ERROR(SetFieldFromText(config, implied, implied_value));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RuntimeConfig> LoadConfigWithFlags(
    const ConfigFlagValues& values, std::vector<std::string>* notes) {
  ASSIGN_OR_RETURN(RuntimeConfig config,
                   LoadEffectiveConfig(values.config_path, notes));
  RETURN_IF_ERROR(ApplyConfigFlags(values, &config));
  return config;
}

std::vector<std::string> ConfigFlagNames(ConfigFlagSet flags) {
  std::vector<std::string> names;
  for (const FlagDef& def : Flags()) {
    if ((flags & def.bit) != 0) names.push_back(def.name);
  }
  return names;
}

}  // namespace sluice
