#include "kernels/host_params.h"

#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/type_visit.h"

namespace sluice {

absl::StatusOr<int64_t> HostScalarInt(const Tensor& t, absl::string_view what) {
  if (t.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must hold one value, got shape ", t.shape().DebugString()));
  }
  if (t.dtype() == DT_INT64) return t.data<int64_t>()[0];
  if (t.dtype() == DT_INT32) return t.data<int32_t>()[0];
  return absl::InvalidArgumentError(absl::StrCat(what, " must be an integer"));
}

absl::StatusOr<std::vector<int64_t>> HostInt64s(const Tensor& t,
                                                absl::string_view what) {
  std::vector<int64_t> out(t.NumElements());
  absl::Status s = cpu::VisitOrdered(t.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (cpu::kIsStdInteger<T>) {
        out[i] = static_cast<int64_t>(p[i]);
      } else {
        double d;
        if constexpr (std::is_floating_point_v<T>) {
          d = static_cast<double>(p[i]);
        } else {
          d = static_cast<double>(static_cast<float>(p[i]));  // half, bf16
        }
        if (!(std::abs(d) < 9.2e18)) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, " element ", i, " (", d,
                           ") is not a finite int64"));
        }
        out[i] = static_cast<int64_t>(d);
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status CheckDropoutInference(const Tensor& ratio, const Tensor& training) {
  RETURN_IF_ERROR(cpu::CheckDtype(training, DT_BOOL, "training_mode"));
  if (ratio.NumElements() != 1 || training.NumElements() != 1) {
    return absl::InvalidArgumentError(
        "Dropout's ratio and training_mode must be scalars");
  }
  double r = 0;
  RETURN_IF_ERROR(cpu::VisitFloat(ratio.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    r = static_cast<double>(static_cast<float>(ratio.data<T>()[0]));
    return absl::OkStatus();
  }));
  if (training.data<bool>()[0] && r != 0) {
    return absl::UnimplementedError(absl::StrCat(
        "Dropout in training mode with ratio ", r,
        " (random dropping) is not supported; sluice runs inference"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> CompressSelection(const Tensor& condition,
                                                       int64_t n) {
  RETURN_IF_ERROR(cpu::CheckDtype(condition, DT_BOOL, "condition"));
  RETURN_IF_ERROR(cpu::CheckRank(condition, 1, "condition"));
  const bool* c = condition.data<bool>();
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < condition.NumElements(); ++i) {
    if (!c[i]) continue;
    if (i >= n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "condition selects index ", i, " but the axis has ", n, " entries"));
    }
    keep.push_back(i);
  }
  return keep;
}

absl::Status CheckSequenceLens(const Tensor& lens_t, int64_t batch,
                               int64_t steps) {
  RETURN_IF_ERROR(cpu::CheckDtype(lens_t, DT_INT64, "sequence_lens"));
  if (lens_t.rank() != 1 || lens_t.dim(0) != batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sequence_lens must have shape [", batch, "], got ",
        lens_t.shape().DebugString()));
  }
  const int64_t* lens = lens_t.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    if (lens[b] < 0 || lens[b] > steps) {
      return absl::InvalidArgumentError(
          absl::StrCat("sequence_lens[", b, "] = ", lens[b],
                       " is outside [0, ", steps, "]"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorScatterPlan> PlanTensorScatter(const Tensor& cache,
                                                    const Tensor& update,
                                                    const Tensor& where,
                                                    int64_t axis_attr) {
  RETURN_IF_ERROR(cpu::CheckDtype(update, cache.dtype(), "update"));
  RETURN_IF_ERROR(cpu::CheckDtype(where, DT_INT64, "write_indices"));
  const int rank = cache.rank();
  TensorScatterPlan p;
  ASSIGN_OR_RETURN(p.axis, NormalizeAxis(axis_attr, rank));
  if (p.axis == 0 || update.rank() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TensorScatter needs update of the cache's rank and axis > 0; cache ",
        cache.shape().DebugString(), ", update ",
        update.shape().DebugString(), ", axis ", axis_attr));
  }
  for (int i = 0; i < rank; ++i) {
    const int64_t c = cache.shape().dim(i), u = update.shape().dim(i);
    if (i == p.axis ? u > c : u != c) {
      return absl::InvalidArgumentError(absl::StrCat(
          "update ", update.shape().DebugString(), " does not fit cache ",
          cache.shape().DebugString(), " at dim ", i));
    }
  }
  const int64_t batch = cache.shape().dim(0);
  if (where.NumElements() != batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "write_indices has ", where.NumElements(), " values for batch ",
        batch));
  }
  for (int i = 0; i < p.axis; ++i) p.prefix *= cache.shape().dim(i);
  for (int i = p.axis + 1; i < rank; ++i) p.inner *= cache.shape().dim(i);
  p.len = cache.shape().dim(p.axis);
  p.steps = update.shape().dim(p.axis);
  p.per_batch = batch == 0 ? 1 : p.prefix / batch;
  return p;
}

}  // namespace sluice
