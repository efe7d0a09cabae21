// DataFormat (graph/data_format.h).
#include "graph/data_format.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace sluice {

absl::StatusOr<DataFormat> GetDataFormat(const AttrMap& attrs) {
  if (!attrs.Has("data_format")) return DataFormat::kNchw;
  absl::StatusOr<std::string> s = attrs.GetString("data_format");
  if (!s.ok()) return s.status();
  if (*s == "NCHW") return DataFormat::kNchw;
  if (*s == "NHWC") return DataFormat::kNhwc;
  return absl::InvalidArgumentError(absl::StrCat(
      "data_format must be \"NCHW\" or \"NHWC\", got \"", *s, "\""));
}

const char* DataFormatName(DataFormat f) {
  return f == DataFormat::kNhwc ? "NHWC" : "NCHW";
}

Shape NhwcToNchw(const Shape& s) {
  if (s.unknown_rank() || s.rank() != 4) return s;
  return Shape({s.dim(0), s.dim(3), s.dim(1), s.dim(2)});
}

Shape NchwToNhwc(const Shape& s) {
  if (s.unknown_rank() || s.rank() != 4) return s;
  return Shape({s.dim(0), s.dim(2), s.dim(3), s.dim(1)});
}

}  // namespace sluice
