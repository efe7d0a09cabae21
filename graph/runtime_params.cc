#include "graph/runtime_params.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice {

absl::StatusOr<std::vector<int64_t>> IntParamValues(const Tensor& t,
                                                    absl::string_view what) {
  if (t.rank() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be a scalar or a vector, got shape ",
                     t.shape().DebugString()));
  }
  const int64_t n = t.NumElements();
  if (n > kMaxParamValues) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " has ", n, " values, more than ", kMaxParamValues));
  }
  std::vector<int64_t> out;
  out.reserve(n);
  if (t.dtype() == DT_INT64) {
    const int64_t* p = t.data<int64_t>();
    out.assign(p, p + n);
  } else if (t.dtype() == DT_INT32) {
    const int32_t* p = t.data<int32_t>();
    out.assign(p, p + n);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must be int32 or int64, got ", DataTypeName(t.dtype())));
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> OnnxReshapeDims(
    const Shape& input, std::vector<int64_t> dims, bool allowzero) {
  if (allowzero) {
    const bool zero = std::find(dims.begin(), dims.end(), 0) != dims.end();
    const bool minus_one =
        std::find(dims.begin(), dims.end(), -1) != dims.end();
    if (zero && minus_one) {
      return absl::InvalidArgumentError(
          "a reshape with allowzero may not have both 0 and -1 in its shape");
    }
    return dims;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 0) continue;
    if (input.unknown_rank() || static_cast<int>(i) >= input.rank()) {
      if (!input.unknown_rank()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shape entry ", i, " is 0 (copy the input's dimension) but the "
            "input ", input.DebugString(), " has rank ", input.rank()));
      }
      dims[i] = kUnknownDim;
      continue;
    }
    dims[i] = input.dim(i);
  }
  return dims;
}

absl::StatusOr<int64_t> RangeLength(double start, double limit,
                                    double delta) {
  if (delta == 0) return absl::InvalidArgumentError("Range: delta is 0");
  if (!std::isfinite(start) || !std::isfinite(limit) ||
      !std::isfinite(delta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Range: start ", start, ", limit ", limit, " and delta ",
                     delta, " must be finite"));
  }
  const double count = std::ceil((limit - start) / delta);
  if (!(count > 0)) return 0;
  if (count > static_cast<double>(kMaxElements)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Range from ", start, " to ", limit, " by ", delta, " has ", count,
        " elements, more than a tensor may hold"));
  }
  return static_cast<int64_t>(count);
}

void ShapeSliceBounds(int rank, int64_t start, int64_t end, int64_t* begin_out,
                      int64_t* end_out) {
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  *begin_out = start;
  *end_out = end;
}

}  // namespace sluice
