// The command-line flags that set RuntimeConfig fields, defined once for
// every command that takes them: which field each flag sets, its help, and
// the values it takes (an enum field's flag takes the enum's short names
// from proto/config.proto, lower case, so a value added there is a value of
// the flag with no change here). A command picks the flags it takes; they
// parse into ConfigFlagValues, and ApplyConfigFlags writes them into the
// config after --config and the environment, so a flag overrides both.
//
//   ConfigFlagValues config;
//   AddConfigFlags(app, kConfigFileFlag | kPrecisionFlag, &config);
//   ...  // parse
//   ASSIGN_OR_RETURN(RuntimeConfig c, LoadConfigWithFlags(config, &notes));
//
// Stateless functions; thread-compatible (the values are the caller's).
#ifndef SLUICE_TOOLS_CONFIG_FLAGS_H_
#define SLUICE_TOOLS_CONFIG_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/config.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace sluice {

// The config flags, as bits of the set a command takes.
enum ConfigFlag : unsigned {
  kConfigFileFlag = 1u << 0,         // --config CFG: the file itself
  kDeviceFlag = 1u << 1,             // --device DEV: default_device, manual
  kStrategyFlag = 1u << 2,           // --strategy: placement_strategy
  kOptimizationLevelFlag = 1u << 3,  // --optimization-level
  kPrecisionFlag = 1u << 4,          // --precision
  kConvLayoutFlag = 1u << 5,         // --conv-layout
  kCpuConvolutionsFlag = 1u << 6,    // --cpu-convolutions
};
using ConfigFlagSet = unsigned;

// What the config flags of one command line said.
struct ConfigFlagValues {
  std::string config_path;  // --config; "" = the default config
  // RuntimeConfig field ("precision") -> the value its flag was given; a
  // flag left out has no entry. Programs set entries directly too.
  std::map<std::string, std::string> fields;
};

// Adds the flags in `flags` to `app`, each filling `values`. Enum flags
// check their value while parsing (a usage error names the accepted
// values). `context` starts each flag's help ("With --optimized: ").
void AddConfigFlags(CLI::App* app, ConfigFlagSet flags,
                    ConfigFlagValues* values, absl::string_view context = "");

// Writes `values.fields` into `config` (--device also makes placement
// manual). INVALID_ARGUMENT naming the flag for a value its field cannot
// take, or a field no flag sets; `config` may be part-written then.
absl::Status ApplyConfigFlags(const ConfigFlagValues& values,
                              RuntimeConfig* config);

// The config a command runs with: values.config_path as
// LoadEffectiveConfig (cli_util.h) reads it (environment overrides applied,
// validated), then ApplyConfigFlags. Errors name the file, the variable or
// the flag; what the flags set is validated where the config is used (the
// session, the placer).
absl::StatusOr<RuntimeConfig> LoadConfigWithFlags(
    const ConfigFlagValues& values, std::vector<std::string>* notes);

// The names of the config flags in `flags` ("--config", "--precision"), in
// the order they are added.
std::vector<std::string> ConfigFlagNames(ConfigFlagSet flags);

}  // namespace sluice

#endif  // SLUICE_TOOLS_CONFIG_FLAGS_H_
