// CudaKernel attribute parsing and the launch rule.
#include "graph/cuda_kernel_spec.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// A block or grid: 1 to 3 positive entries within `limits`, padded with 1s.
absl::StatusOr<std::array<int64_t, 3>> LaunchDims(
    const char* attr, const std::vector<int64_t>& v,
    const std::array<int64_t, 3>& limits) {
  if (v.empty() || v.size() > 3) {
    return Invalid(absl::StrCat(attr, " has ", v.size(),
                                " entries; it takes 1 to 3 (x, y, z)"));
  }
  std::array<int64_t, 3> out = {1, 1, 1};
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 1 || v[i] > limits[i]) {
      return Invalid(absl::StrCat(attr, "[", i, "] = ", v[i],
                                  " must be in [1, ", limits[i], "]"));
    }
    out[i] = v[i];
  }
  return out;
}

absl::Status CheckOptions(const std::vector<std::string>& options) {
  for (const std::string& o : options) {
    if (absl::StartsWith(o, "-arch") || absl::StartsWith(o, "--gpu-architecture") ||
        absl::StartsWith(o, "-gpu-architecture")) {
      return Invalid(absl::StrCat(
          "options: '", o, "' sets the architecture, which sluice picks "
          "for each GPU (sm_XY of its compute capability); leave it out"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CudaKernelSpec> ParseCudaKernelSpec(const AttrMap& attrs,
                                                   int num_inputs) {
  CudaKernelSpec spec;
  ASSIGN_OR_RETURN(spec.source, attrs.GetString("source"));
  ASSIGN_OR_RETURN(spec.kernel_name, attrs.GetString("kernel_name"));
  if (spec.source.empty()) return Invalid("source is empty");
  if (spec.kernel_name.empty()) return Invalid("kernel_name is empty");
  ASSIGN_OR_RETURN(spec.options, attrs.GetStringList("options"));
  RETURN_IF_ERROR(CheckOptions(spec.options));
  ASSIGN_OR_RETURN(spec.output_dtypes, attrs.GetTypeList("output_dtypes"));
  const int n = static_cast<int>(spec.output_dtypes.size());
  if (n == 0) return Invalid("output_dtypes is empty: a CudaKernel has at least one output");

  ASSIGN_OR_RETURN(std::vector<int64_t> like,
                   attrs.GetIntList("output_shape_like"));
  ASSIGN_OR_RETURN(std::vector<Shape> shapes, attrs.GetShapeList("output_shapes"));
  if (!like.empty() && static_cast<int>(like.size()) != n) {
    return Invalid(absl::StrCat("output_shape_like has ", like.size(),
                                " entries for ", n, " outputs"));
  }
  if (!shapes.empty() && static_cast<int>(shapes.size()) != n) {
    return Invalid(absl::StrCat("output_shapes has ", shapes.size(),
                                " entries for ", n, " outputs"));
  }
  for (int i = 0; i < n; ++i) {
    const int64_t from = like.empty() ? -1 : like[i];
    if (from >= num_inputs || from < -1) {
      return Invalid(absl::StrCat("output_shape_like[", i, "] = ", from,
                                  ": the node has ", num_inputs,
                                  " inputs (-1: use output_shapes)"));
    }
    spec.output_shape_like.push_back(static_cast<int>(from));
    if (from >= 0) {
      spec.output_shapes.push_back(Shape::UnknownRank());
      continue;
    }
    if (shapes.empty()) {
      return Invalid(absl::StrCat(
          "output ", i, " has no shape: give output_shapes[", i,
          "] or output_shape_like[", i, "] (an input index)"));
    }
    if (!shapes[i].IsFullyDefined()) {
      return Invalid(absl::StrCat("output_shapes[", i, "] = ",
                                  shapes[i].DebugString(),
                                  " is not fully defined"));
    }
    spec.output_shapes.push_back(shapes[i]);
  }

  ASSIGN_OR_RETURN(std::vector<int64_t> block, attrs.GetIntList("block"));
  ASSIGN_OR_RETURN(spec.block, LaunchDims("block", block, kMaxCudaBlockDims));
  const int64_t threads = spec.block[0] * spec.block[1] * spec.block[2];
  if (threads > kMaxCudaBlockThreads) {
    return Invalid(absl::StrCat("block [", absl::StrJoin(block, ", "), "] has ",
                                threads, " threads; at most ",
                                kMaxCudaBlockThreads));
  }
  ASSIGN_OR_RETURN(spec.grid, attrs.GetIntList("grid"));
  if (!spec.grid.empty()) {
    RETURN_IF_ERROR(LaunchDims("grid", spec.grid, kMaxCudaGridDims).status());
  }
  ASSIGN_OR_RETURN(int64_t from_output, attrs.GetInt("grid_from_output"));
  if (from_output < 0 || from_output >= n) {
    return Invalid(absl::StrCat("grid_from_output = ", from_output,
                                ": the node has ", n, " outputs"));
  }
  spec.grid_from_output = static_cast<int>(from_output);
  ASSIGN_OR_RETURN(spec.shared_memory_bytes,
                   attrs.GetInt("shared_memory_bytes"));
  if (spec.shared_memory_bytes < 0 ||
      spec.shared_memory_bytes > kMaxCudaSharedMemoryBytes) {
    return Invalid(absl::StrCat("shared_memory_bytes = ",
                                spec.shared_memory_bytes, " must be in [0, ",
                                kMaxCudaSharedMemoryBytes, "]"));
  }
  return spec;
}

std::vector<Shape> CudaKernelSpec::OutputShapes(
    const std::vector<Shape>& inputs) const {
  std::vector<Shape> out;
  for (size_t i = 0; i < output_shapes.size(); ++i) {
    const int from = output_shape_like[i];
    out.push_back(from >= 0 && from < static_cast<int>(inputs.size())
                      ? inputs[from]
                      : output_shapes[i]);
  }
  return out;
}

absl::StatusOr<CudaLaunch> CudaKernelSpec::Launch(
    const std::vector<Shape>& outputs) const {
  if (grid_from_output >= static_cast<int>(outputs.size())) {
    return absl::InternalError("CudaKernel: fewer output shapes than outputs");
  }
  CudaLaunch launch;
  launch.block = block;
  launch.shared_memory_bytes = shared_memory_bytes;
  ASSIGN_OR_RETURN(launch.element_count,
                   outputs[grid_from_output].NumElements());
  if (!grid.empty()) {
    for (size_t i = 0; i < grid.size(); ++i) launch.grid[i] = grid[i];
    return launch;
  }
  const int64_t threads = block[0] * block[1] * block[2];
  const int64_t blocks = (launch.element_count + threads - 1) / threads;
  if (blocks > kMaxCudaGridDims[0]) {
    return Invalid(absl::StrCat(
        "output ", grid_from_output, " has ", launch.element_count,
        " elements: ", blocks, " blocks of ", threads,
        " threads exceed CUDA's grid limit ", kMaxCudaGridDims[0],
        "; give an explicit grid and loop in the kernel"));
  }
  launch.grid = {blocks, 1, 1};
  return launch;
}

}  // namespace sluice
