// BroadcastShapes.
#include "kernels/cpu/broadcast.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice::cpu {

absl::StatusOr<Shape> BroadcastShapes(
    std::initializer_list<const Shape*> shapes) {
  int rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->rank());
  Shape out;
  for (int d = 0; d < rank; ++d) out.AddDim(1);
  for (int d = 0; d < rank; ++d) {
    int64_t size = 1;
    bool ok = true;
    for (const Shape* s : shapes) {
      const int id = d - (rank - s->rank());
      if (id < 0) continue;
      const int64_t dim = s->dim(id);
      if (dim == 1) continue;
      if (size != 1 && size != dim) ok = false;
      size = dim;
    }
    if (!ok) {
      std::vector<std::string> names;
      for (const Shape* s : shapes) names.push_back(s->DebugString());
      return absl::InvalidArgumentError(absl::StrCat(
          "shapes ", absl::StrJoin(names, ", "),
          " cannot be broadcast together (dimension ", d - rank, ")"));
    }
    out.set_dim(d, size);
  }
  return out;
}

}  // namespace sluice::cpu
