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
// Flags and file arguments are checked before a command runs: every numeric
// flag against its range, every file argument for being a regular file (a
// directory, device or FIFO is refused after a stat, never opened), each
// message naming the flag and the value. Text that came from a model or a
// file is escaped before it reaches a terminal (EscapeForTerminal).
//
// Stateless functions; thread-compatible.
#ifndef SLUICE_TOOLS_CLI_UTIL_H_
#define SLUICE_TOOLS_CLI_UTIL_H_

#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/escape.h"  // EscapeForTerminal, FormatCount
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

// A regular file at `path`, checked with stat (so a FIFO is never opened):
// NOT_FOUND "'PATH' does not exist", or INVALID_ARGUMENT "'PATH' exists but
// is not a regular file (a directory)" (or a FIFO, a device, a socket).
absl::Status CheckRegularFile(const std::string& path);

// For a file the command will write: OK when `path` does not exist or is a
// regular file; otherwise as CheckRegularFile, prefixed with `flag`.
absl::Status CheckOutputFile(const std::string& path, absl::string_view flag);

// CLI11 validators whose messages name the value (CLI11 adds the flag):
// an existing regular file; an integer in [lo, hi]; an unsigned 64-bit
// integer in decimal; a finite number in (lo, hi] (lo excluded).
CLI::Validator RegularFile();
CLI::Validator IntegerIn(int64_t lo, int64_t hi);
CLI::Validator Uint64();
CLI::Validator FiniteAbove(double lo, double hi);
// A value that is not empty or blank ("--device ''" would otherwise mean
// the default).
CLI::Validator NonEmpty();

// The most lines PrintStatusLines and FailCommand print of one status; the
// rest become "... and N more lines".
inline constexpr int kMaxStatusLines = 100;

// `j` as indented JSON; bytes that are not UTF-8 become U+FFFD rather than
// throwing.
std::string DumpJson(const nlohmann::json& j);

// The config a session made from `path` would run with: the file ("" means
// the default config), then the environment overrides (one line each in
// `notes`), then validation. Errors name the file or the variable.
absl::StatusOr<RuntimeConfig> LoadEffectiveConfig(
    const std::string& path, std::vector<std::string>* notes);

// [2, -1, 3] for "[2,?,3]"; null for an unknown rank.
nlohmann::json ShapeToJson(const Shape& shape);

// Writes each line of a (possibly multi-line) status message to `out` as
// "PREFIX: line", escaped (EscapeForTerminal), at most kMaxStatusLines.
void PrintStatusLines(std::ostream& out, const std::string& prefix,
                      const absl::Status& status);

// Reports a command's failure and returns kExitFailure: with `json_mode`,
// {"ok": false, "errors": [one entry per line]} on `out`; otherwise
// "error: line" on `err`.
int FailCommand(const absl::Status& status, bool json_mode, std::ostream& out,
                std::ostream& err);

}  // namespace sluice

#endif  // SLUICE_TOOLS_CLI_UTIL_H_
