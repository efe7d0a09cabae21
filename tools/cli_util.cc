// Helpers shared by the `sluice` subcommands (see cli_util.h).
#include "tools/cli_util.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "executor/runtime_config.h"
#include "tools/commands.h"

namespace sluice {

namespace {

// The first "--flag" in `args` that `app` (or the subcommand args[0] names)
// does not know, skipping the values of options that take one; "" if none.
std::string FirstUnknownFlag(CLI::App& app,
                             const std::vector<std::string>& args) {
  CLI::App* target = &app;
  size_t i = 0;
  if (!args.empty()) {
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == args[0]) {
        target = sub;
        i = 1;
      }
    }
  }
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const CLI::Option* option = target->get_option_no_throw(name);
    if (option == nullptr) option = app.get_option_no_throw(name);
    if (option == nullptr) return name;
    if (eq == std::string::npos && option->get_type_size() != 0) ++i;
  }
  return "";
}

}  // namespace

int ParseCommandLine(CLI::App& app, const std::vector<std::string>& args,
                     std::ostream& out, std::ostream& err) {
  // CLI11 takes the arguments last-first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::RequiredError& e) {
    // CLI11 reports a missing MODEL (or subcommand) before an unknown flag,
    // which hides the mistake: name the flag first.
    if (const std::string flag = FirstUnknownFlag(app, args); !flag.empty()) {
      err << "error: unknown flag '" << EscapeForTerminal(flag, 100)
          << "'\nRun with --help for more information.\n";
      return kExitUsage;
    }
    app.exit(e, out, err);
    return kExitUsage;
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

namespace {

// "a directory", "a FIFO", ... for a stat mode that is not a regular file.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

}  // namespace

absl::Status CheckRegularFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
      return absl::NotFoundError(
          absl::StrCat("'", EscapeForTerminal(path), "' does not exist"));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot stat '", EscapeForTerminal(path), "': ", std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", EscapeForTerminal(path),
                     "' exists but is not a regular file (", KindOf(st.st_mode),
                     ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputFile(const std::string& path, absl::string_view flag) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (S_ISREG(st.st_mode)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": '", EscapeForTerminal(path),
                   "' exists but is not a regular file (", KindOf(st.st_mode),
                   ")"));
}

CLI::Validator RegularFile() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        absl::Status s = CheckRegularFile(path);
        return s.ok() ? std::string() : std::string(s.message());
      },
      "FILE");
}

CLI::Validator IntegerIn(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& value) -> std::string {
        int64_t v = 0;
        if (!absl::SimpleAtoi(value, &v) || v < lo || v > hi) {
          return absl::StrCat("'", EscapeForTerminal(value, 100),
                              "' is not an integer from ", FormatCount(lo),
                              " to ", FormatCount(hi));
        }
        return std::string();
      },
      absl::StrCat("INT in [", lo, ", ", hi, "]"));
}

CLI::Validator Uint64() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        uint64_t v = 0;
        const bool digits =
            !value.empty() &&
            std::all_of(value.begin(), value.end(),
                        [](char c) { return c >= '0' && c <= '9'; });
        if (!digits || !absl::SimpleAtoi(value, &v)) {
          return absl::StrCat("'", EscapeForTerminal(value, 100),
                              "' is not an integer from 0 to "
                              "18446744073709551615");
        }
        return std::string();
      },
      "UINT64");
}

CLI::Validator FiniteAbove(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& value) -> std::string {
        double v = 0;
        if (!absl::SimpleAtod(value, &v) || !std::isfinite(v) || v <= lo ||
            v > hi) {
          return absl::StrCat("'", EscapeForTerminal(value, 100),
                              "' is not a number above ", lo, " and at most ",
                              hi);
        }
        return std::string();
      },
      absl::StrCat("NUMBER in (", lo, ", ", hi, "]"));
}

CLI::Validator NonEmpty() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.find_first_not_of(" \t") != std::string::npos) return "";
        return "empty; leave the flag out for the default";
      },
      "");
}

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
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
  NoteDeprecatedFields(config, notes);
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
  std::vector<absl::string_view> lines =
      absl::StrSplit(status.message(), '\n', absl::SkipWhitespace());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i == kMaxStatusLines) {
      out << prefix << ": ... and " << FormatCount(static_cast<int64_t>(lines.size() - i))
          << " more lines\n";
      break;
    }
    out << prefix << ": " << EscapeForTerminal(lines[i]) << "\n";
  }
}

int FailCommand(const absl::Status& status, bool json_mode, std::ostream& out,
                std::ostream& err) {
  if (json_mode) {
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(status.message(), '\n')) {
      if (!line.empty()) lines.emplace_back(line);
    }
    out << DumpJson(nlohmann::json{{"ok", false}, {"errors", lines}}) << "\n";
  } else {
    PrintStatusLines(err, "error", status);
  }
  return kExitFailure;
}

}  // namespace sluice
