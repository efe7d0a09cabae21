#include "core/dtype.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace sluice {

size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return 4;
    case DT_FLOAT16: return 2;
    case DT_BFLOAT16: return 2;
    case DT_DOUBLE: return 8;
    case DT_INT8: return 1;
    case DT_INT32: return 4;
    case DT_INT64: return 8;
    case DT_UINT8: return 1;
    case DT_BOOL: return 1;
    default: return 0;
  }
}

std::string DataTypeName(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT: return "float32";
    case DT_FLOAT16: return "float16";
    case DT_BFLOAT16: return "bfloat16";
    case DT_DOUBLE: return "float64";
    case DT_INT8: return "int8";
    case DT_INT32: return "int32";
    case DT_INT64: return "int64";
    case DT_UINT8: return "uint8";
    case DT_BOOL: return "bool";
    default: return "invalid";
  }
}

absl::StatusOr<DataType> ParseDataType(std::string_view name_view) {
  // Debian's Abseil has its own string_view, not std::string_view.
  const std::string name(name_view);
  std::string n = absl::AsciiStrToLower(name);
  if (n.rfind("dt_", 0) == 0) n = n.substr(3);
  if (n == "float32" || n == "float") return DT_FLOAT;
  if (n == "float16" || n == "half") return DT_FLOAT16;
  if (n == "bfloat16") return DT_BFLOAT16;
  if (n == "float64" || n == "double") return DT_DOUBLE;
  if (n == "int8") return DT_INT8;
  if (n == "int32") return DT_INT32;
  if (n == "int64") return DT_INT64;
  if (n == "uint8") return DT_UINT8;
  if (n == "bool") return DT_BOOL;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", name,
      "' (expected float32, float16, bfloat16, float64, int8, int32, int64, "
      "uint8 or bool)"));
}

const std::vector<DataType>& AllDataTypes() {
  static const std::vector<DataType> kAll = {
      DT_FLOAT, DT_FLOAT16, DT_BFLOAT16, DT_DOUBLE, DT_INT8,
      DT_INT32, DT_INT64,   DT_UINT8,    DT_BOOL};
  return kAll;
}

bool IsFloatingPoint(DataType dtype) {
  return dtype == DT_FLOAT || dtype == DT_FLOAT16 || dtype == DT_BFLOAT16 ||
         dtype == DT_DOUBLE;
}

bool IsInteger(DataType dtype) {
  return dtype == DT_INT8 || dtype == DT_INT32 || dtype == DT_INT64 ||
         dtype == DT_UINT8;
}

}  // namespace sluice
