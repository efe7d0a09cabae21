// Helpers shared by the `sluice` subcommands (see cli_util.h).
#include "tools/cli_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "executor/runtime_config.h"
#include "tools/commands.h"

namespace sluice {

int ParseCommandLine(CLI::App& app, const std::vector<std::string>& args,
                     std::ostream& out, std::ostream& err) {
  // CLI11 takes the arguments last-first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    // Help and version are "errors" with exit code 0; exit() prints them to
    // `out`, and real errors (with a hint to use --help) to `err`.
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  } catch (const std::exception& e) {
    // A callback or validator threw something CLI11 did not wrap.
    err << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  return kParsed;
}

absl::StatusOr<RuntimeConfig> LoadEffectiveConfig(
    const std::string& path, std::vector<std::string>* notes) {
  std::vector<std::string> local_notes;
  if (notes == nullptr) notes = &local_notes;
  RuntimeConfig config;
  if (!path.empty()) {
    ASSIGN_OR_RETURN(config, LoadRuntimeConfig(path));
  }
  RETURN_IF_ERROR(ApplyEnvironmentOverrides(&config, notes));
  absl::Status valid = ValidateRuntimeConfig(config);
  if (!valid.ok()) {
    std::string message =
        absl::StrCat(path.empty() ? "runtime config" : path, ": ",
                     valid.message());
    // Say where a value came from when the environment changed it.
    for (const std::string& note : *notes) {
      absl::StrAppend(&message, "\n(environment: ", note, ")");
    }
    return absl::Status(valid.code(), message);
  }
  return config;
}

nlohmann::json ShapeToJson(const Shape& shape) {
  if (shape.unknown_rank()) return nullptr;
  nlohmann::json dims = nlohmann::json::array();
  for (int64_t d : shape.dims()) dims.push_back(d);
  return dims;
}

void PrintStatusLines(std::ostream& out, const std::string& prefix,
                      const absl::Status& status) {
  for (absl::string_view line :
       absl::StrSplit(status.message(), '\n', absl::SkipWhitespace())) {
    out << prefix << ": " << line << "\n";
  }
}

int FailCommand(const absl::Status& status, bool json_mode, std::ostream& out,
                std::ostream& err) {
  if (json_mode) {
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(status.message(), '\n')) {
      if (!line.empty()) lines.emplace_back(line);
    }
    out << nlohmann::json{{"ok", false}, {"errors", lines}}.dump(2) << "\n";
  } else {
    PrintStatusLines(err, "error", status);
  }
  return kExitFailure;
}

}  // namespace sluice
