// Helpers shared by the `sluice` subcommands (tools/*_command.cc): parsing
// arguments with CLI11 without letting its exceptions escape, loading the
// runtime config the way a session will see it, and printing shapes.
//
//   CLI::App app("sluice inspect");
//   AddInspectOptions(&app, &options);
//   if (int code = ParseCommandLine(app, args, out, err); code != kParsed) {
//     return code;  // help was printed (0) or a usage error (2)
//   }
//
// Stateless functions; thread-compatible.
#ifndef SLUICE_TOOLS_CLI_UTIL_H_
#define SLUICE_TOOLS_CLI_UTIL_H_

#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "core/shape.h"
#include "nlohmann/json.hpp"
#include "proto/config.pb.h"

namespace sluice {

// ParseCommandLine's result when the command should go on and run.
inline constexpr int kParsed = -1;

// Parses `args` (without the program name) into `app`'s options. Returns
// kParsed on success; kExitOk after printing help (--help) or the version
// to `out`; kExitUsage after printing the parse error to `err`.
int ParseCommandLine(CLI::App& app, const std::vector<std::string>& args,
                     std::ostream& out, std::ostream& err);

// The config a session made from `path` would run with: the file ("" means
// the default config), then the environment overrides (one line each in
// `notes`), then validation. Errors name the file or the variable.
absl::StatusOr<RuntimeConfig> LoadEffectiveConfig(
    const std::string& path, std::vector<std::string>* notes);

// [2, -1, 3] for "[2,?,3]"; null for an unknown rank.
nlohmann::json ShapeToJson(const Shape& shape);

// Writes each line of a (possibly multi-line) status message to `out` as
// "PREFIX: line".
void PrintStatusLines(std::ostream& out, const std::string& prefix,
                      const absl::Status& status);

// Reports a command's failure and returns kExitFailure: with `json_mode`,
// {"ok": false, "errors": [one entry per line]} on `out`; otherwise
// "error: line" on `err`.
int FailCommand(const absl::Status& status, bool json_mode, std::ostream& out,
                std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_TOOLS_CLI_UTIL_H_
