// Shapes. `Shape` is the (possibly partial) shape that inference carries: a
// dimension of kUnknownDim is unknown, and a shape may have unknown rank. A
// tensor's shape is always fully defined.
//
//   Shape s({2, kUnknownDim, 3});
//   s.DebugString();                       // "[2,?,3]"
//   absl::StatusOr<int64_t> n = Shape({4, 8}).NumElements();   // 32
//
// Value type; thread-compatible.
#ifndef SLUICE_SHAPE_H_
#define SLUICE_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/proto/types.pb.h"

namespace sluice {

inline constexpr int64_t kUnknownDim = -1;
// No tensor may have more elements than this (2^48): a shape beyond it in a
// file is an error, never an allocation attempt.
inline constexpr int64_t kMaxElements = int64_t{1} << 48;
inline constexpr int kMaxRank = 32;

using DimVector = absl::InlinedVector<int64_t, 6>;

class Shape {
 public:
  Shape() = default;  // a scalar
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(absl::Span<const int64_t> dims)
      : dims_(dims.begin(), dims.end()) {}
  static Shape UnknownRank() {
    Shape s;
    s.unknown_rank_ = true;
    return s;
  }

  bool unknown_rank() const { return unknown_rank_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  void set_dim(int i, int64_t d) { dims_[i] = d; }
  void AddDim(int64_t d) { dims_.push_back(d); }
  const DimVector& dims() const { return dims_; }

  bool IsFullyDefined() const;
  // Product of dims. Error when a dim is unknown or negative, or the product
  // exceeds kMaxElements.
  absl::StatusOr<int64_t> NumElements() const;
  // Like NumElements, for shapes known to be fully defined and in range.
  int64_t num_elements() const;

  // "[2,?,3]", "[]" for a scalar, "<unknown rank>".
  std::string DebugString() const;

  // Whether the two shapes can describe the same tensor (unknowns match all).
  bool IsCompatibleWith(const Shape& other) const;

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.unknown_rank_ == b.unknown_rank_ && a.dims_ == b.dims_;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  DimVector dims_;
  bool unknown_rank_ = false;
};

// From/to proto. FromProto rejects dims < -1, ranks above kMaxRank and
// (when `require_defined`) unknown dimensions.
absl::StatusOr<Shape> ShapeFromProto(const TensorShapeProto& proto,
                                     bool require_defined = false);
TensorShapeProto ShapeToProto(const Shape& shape);

}  // namespace sluice

#endif  // SLUICE_SHAPE_H_
