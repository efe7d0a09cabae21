// Command-line forms of OnnxImportOptions.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "onnx/importer.h"

namespace sluice {
namespace {

absl::Status BadFlag(absl::string_view flag, absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", flag, "' is not of the form ", want));
}

}  // namespace

absl::Status ParseInputShapeFlag(absl::string_view flag,
                                 OnnxImportOptions* options) {
  constexpr absl::string_view kForm = "NAME=D0,D1,... (-1 keeps a dim)";
  size_t eq = flag.rfind('=');
  if (eq == absl::string_view::npos || eq == 0) return BadFlag(flag, kForm);
  std::vector<int64_t> dims;
  absl::string_view rest = flag.substr(eq + 1);
  if (!rest.empty()) {
    for (absl::string_view part : absl::StrSplit(rest, ',')) {
      int64_t d = 0;
      if (!absl::SimpleAtoi(part, &d) || d < -1) return BadFlag(flag, kForm);
      dims.push_back(d);
    }
  }
  options->input_shapes[std::string(flag.substr(0, eq))] = std::move(dims);
  return absl::OkStatus();
}

absl::Status ParseDimValueFlag(absl::string_view flag,
                               OnnxImportOptions* options) {
  constexpr absl::string_view kForm = "DIM_NAME=N";
  size_t eq = flag.rfind('=');
  int64_t v = 0;
  if (eq == absl::string_view::npos || eq == 0 ||
      !absl::SimpleAtoi(flag.substr(eq + 1), &v) || v < 0) {
    return BadFlag(flag, kForm);
  }
  options->dim_values[std::string(flag.substr(0, eq))] = v;
  return absl::OkStatus();
}

}  // namespace sluice
