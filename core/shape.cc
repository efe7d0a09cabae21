#include "core/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

bool Shape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

absl::StatusOr<int64_t> Shape::NumElements() const {
  if (!IsFullyDefined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", DebugString(), " is not fully defined"));
  }
  int64_t n = 1;
  bool too_big = false;
  for (int64_t d : dims_) {
    if (d == 0) return 0;
    if (n > kMaxElements / d) too_big = true;
    if (!too_big) n *= d;
  }
  if (too_big || n > kMaxElements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape ", DebugString(), " has more than 2^48 elements"));
  }
  return n;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::DebugString() const {
  if (unknown_rank_) return "<unknown rank>";
  return absl::StrCat(
      "[",
      absl::StrJoin(dims_, ",",
                    [](std::string* out, int64_t d) {
                      absl::StrAppend(out, d < 0 ? std::string("?")
                                                 : absl::StrCat(d));
                    }),
      "]");
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (rank() != other.rank()) return false;
  for (int i = 0; i < rank(); ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) {
      return false;
    }
  }
  return true;
}

absl::StatusOr<Shape> ShapeFromProto(const TensorShapeProto& proto,
                                     bool require_defined) {
  if (proto.unknown_rank()) {
    if (proto.dim_size() > 0) {
      return absl::InvalidArgumentError(
          "shape has unknown_rank set but also lists dimensions");
    }
    if (require_defined) {
      return absl::InvalidArgumentError("shape must be fully defined");
    }
    return Shape::UnknownRank();
  }
  if (proto.dim_size() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape has rank ", proto.dim_size(), ", more than ", kMaxRank));
  }
  Shape s(absl::MakeConstSpan(proto.dim().data(), proto.dim_size()));
  for (int64_t d : s.dims()) {
    if (d < kUnknownDim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", s.DebugString(), " has a negative dimension ", d));
    }
    if (d == kUnknownDim && require_defined) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", s.DebugString(), " must be fully defined"));
    }
  }
  if (s.IsFullyDefined()) {
    absl::StatusOr<int64_t> n = s.NumElements();
    if (!n.ok()) return n.status();
  }
  return s;
}

TensorShapeProto ShapeToProto(const Shape& shape) {
  TensorShapeProto p;
  if (shape.unknown_rank()) {
    p.set_unknown_rank(true);
    return p;
  }
  for (int64_t d : shape.dims()) p.add_dim(d);
  return p;
}

}  // namespace sluice
