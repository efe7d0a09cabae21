#include "core/dtype.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace sluice {
namespace {

struct DtypeInfo {
  DataType dtype;
  const char* name;  // numpy / ml_dtypes spelling
  int bits;          // of information; memory is max(bits, 8) / 8 bytes
};

constexpr DtypeInfo kDtypes[] = {
    {DT_FLOAT, "float32", 32},
    {DT_FLOAT16, "float16", 16},
    {DT_BFLOAT16, "bfloat16", 16},
    {DT_DOUBLE, "float64", 64},
    {DT_INT8, "int8", 8},
    {DT_INT32, "int32", 32},
    {DT_INT64, "int64", 64},
    {DT_UINT8, "uint8", 8},
    {DT_BOOL, "bool", 8},
    {DT_INT16, "int16", 16},
    {DT_UINT16, "uint16", 16},
    {DT_UINT32, "uint32", 32},
    {DT_UINT64, "uint64", 64},
    {DT_FLOAT8_E4M3FN, "float8_e4m3fn", 8},
    {DT_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", 8},
    {DT_FLOAT8_E5M2, "float8_e5m2", 8},
    {DT_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", 8},
    {DT_FLOAT8_E8M0, "float8_e8m0fnu", 8},
    {DT_FLOAT4_E2M1, "float4_e2m1fn", 4},
    {DT_INT4, "int4", 4},
    {DT_UINT4, "uint4", 4},
    {DT_INT2, "int2", 2},
    {DT_UINT2, "uint2", 2},
};

const DtypeInfo* Find(DataType dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.dtype == dtype) return &d;
  }
  return nullptr;
}

// Lower case, no "dt_" prefix, no underscores: "DT_FLOAT8_E4M3FN" and
// "float8e4m3fn" both become "float8e4m3fn".
std::string Canonical(const std::string& name) {
  std::string n = absl::AsciiStrToLower(name);
  if (n.rfind("dt_", 0) == 0) n = n.substr(3);
  return absl::StrReplaceAll(n, {{"_", ""}});
}

}  // namespace

size_t DataTypeSize(DataType dtype) {
  const DtypeInfo* d = Find(dtype);
  if (d == nullptr) return 0;
  return d->bits < 8 ? 1 : static_cast<size_t>(d->bits / 8);
}

int DataTypeBits(DataType dtype) {
  const DtypeInfo* d = Find(dtype);
  return d == nullptr ? 0 : d->bits;
}

std::string DataTypeName(DataType dtype) {
  const DtypeInfo* d = Find(dtype);
  return d == nullptr ? "invalid" : d->name;
}

std::string DataTypeNames(absl::Span<const DataType> dtypes) {
  return absl::StrJoin(dtypes, ", ", [](std::string* out, DataType t) {
    absl::StrAppend(out, DataTypeName(t));
  });
}

namespace {

// Every accepted spelling, canonical, to its dtype: built once (the op
// registry parses thousands of type names while it starts, and building
// each candidate's canonical spelling per call was most of its time).
const absl::flat_hash_map<std::string, DataType>& CanonicalNames() {
  static const auto* names = [] {
    auto* m = new absl::flat_hash_map<std::string, DataType>();
    m->emplace("float", DT_FLOAT);
    m->emplace("half", DT_FLOAT16);
    m->emplace("double", DT_DOUBLE);
    // ONNX spells these without the trailing "fnu" / "fn".
    m->emplace("float8e8m0", DT_FLOAT8_E8M0);
    m->emplace("float4e2m1", DT_FLOAT4_E2M1);
    for (const DtypeInfo& d : kDtypes) m->emplace(Canonical(d.name), d.dtype);
    // The enum spelling, e.g. DT_FLOAT8_E4M3FN.
    for (const DtypeInfo& d : kDtypes) {
      m->emplace(Canonical(DataType_Name(d.dtype)), d.dtype);
    }
    return m;
  }();
  return *names;
}

}  // namespace

absl::StatusOr<DataType> ParseDataType(std::string_view name_view) {
  // Debian's Abseil has its own string_view, not std::string_view.
  const std::string name(name_view);
  const auto& names = CanonicalNames();
  if (auto it = names.find(Canonical(name)); it != names.end()) {
    return it->second;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", name,
      "' (expected float32, float16, bfloat16, float64, int8, int16, int32, "
      "int64, uint8, uint16, uint32, uint64, bool, float8_e4m3fn, "
      "float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, "
      "float4_e2m1fn, int4, uint4, int2 or uint2)"));
}

const std::vector<DataType>& AllDataTypes() {
  static const std::vector<DataType> kAll = [] {
    std::vector<DataType> all;
    for (const DtypeInfo& d : kDtypes) all.push_back(d.dtype);
    std::sort(all.begin(), all.end());
    return all;
  }();
  return kAll;
}

bool IsFloatingPoint(DataType dtype) {
  return dtype == DT_FLOAT || dtype == DT_FLOAT16 || dtype == DT_BFLOAT16 ||
         dtype == DT_DOUBLE || IsSmallFloat(dtype);
}

bool IsSignedInteger(DataType dtype) {
  switch (dtype) {
    case DT_INT8: case DT_INT16: case DT_INT32: case DT_INT64:
    case DT_INT4: case DT_INT2:
      return true;
    default:
      return false;
  }
}

bool IsInteger(DataType dtype) {
  switch (dtype) {
    case DT_UINT8: case DT_UINT16: case DT_UINT32: case DT_UINT64:
    case DT_UINT4: case DT_UINT2:
      return true;
    default:
      return IsSignedInteger(dtype);
  }
}

bool IsSmallFloat(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT8_E4M3FN: case DT_FLOAT8_E4M3FNUZ: case DT_FLOAT8_E5M2:
    case DT_FLOAT8_E5M2FNUZ: case DT_FLOAT8_E8M0: case DT_FLOAT4_E2M1:
      return true;
    default:
      return false;
  }
}

bool IsSubByte(DataType dtype) {
  const int bits = DataTypeBits(dtype);
  return bits > 0 && bits < 8;
}

}  // namespace sluice
