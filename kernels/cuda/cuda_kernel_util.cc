// Host-side helpers shared by the CUDA OpKernels.
#include "kernels/cuda/cuda_kernel_util.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::cuda {

static_assert(static_cast<int>(GpuDtype::kFloat) == DT_FLOAT);
static_assert(static_cast<int>(GpuDtype::kHalf) == DT_FLOAT16);
static_assert(static_cast<int>(GpuDtype::kBFloat16) == DT_BFLOAT16);
static_assert(static_cast<int>(GpuDtype::kDouble) == DT_DOUBLE);
static_assert(static_cast<int>(GpuDtype::kInt8) == DT_INT8);
static_assert(static_cast<int>(GpuDtype::kInt32) == DT_INT32);
static_assert(static_cast<int>(GpuDtype::kInt64) == DT_INT64);
static_assert(static_cast<int>(GpuDtype::kUInt8) == DT_UINT8);
static_assert(static_cast<int>(GpuDtype::kBool) == DT_BOOL);
static_assert(static_cast<int>(GpuDtype::kInt16) == DT_INT16);
static_assert(static_cast<int>(GpuDtype::kUInt16) == DT_UINT16);
static_assert(static_cast<int>(GpuDtype::kUInt32) == DT_UINT32);
static_assert(static_cast<int>(GpuDtype::kUInt64) == DT_UINT64);
static_assert(static_cast<int>(GpuDtype::kFloat8E4M3FN) == DT_FLOAT8_E4M3FN);
static_assert(static_cast<int>(GpuDtype::kFloat8E4M3FNUZ) ==
              DT_FLOAT8_E4M3FNUZ);
static_assert(static_cast<int>(GpuDtype::kFloat8E5M2) == DT_FLOAT8_E5M2);
static_assert(static_cast<int>(GpuDtype::kFloat8E5M2FNUZ) ==
              DT_FLOAT8_E5M2FNUZ);
static_assert(static_cast<int>(GpuDtype::kFloat8E8M0) == DT_FLOAT8_E8M0);
static_assert(static_cast<int>(GpuDtype::kFloat4E2M1) == DT_FLOAT4_E2M1);
static_assert(static_cast<int>(GpuDtype::kInt4) == DT_INT4);
static_assert(static_cast<int>(GpuDtype::kUInt4) == DT_UINT4);
static_assert(static_cast<int>(GpuDtype::kInt2) == DT_INT2);
static_assert(static_cast<int>(GpuDtype::kUInt2) == DT_UINT2);

absl::StatusOr<GpuContext> GetGpu(OpKernelContext* ctx) {
  auto* gpu = dynamic_cast<GpuDevice*>(ctx->device());
  if (gpu == nullptr) {
    return absl::InternalError(absl::StrCat(
        "a CUDA kernel ran on ", ctx->device() ? ctx->device()->name() : "null",
        ", which is not a GPU device"));
  }
  RETURN_IF_ERROR(gpu->MakeCurrent());
  return GpuContext{gpu, static_cast<cudaStream_t>(gpu->compute_stream())};
}

absl::Status CheckGpuInputs(const OpKernelContext& ctx, const GpuContext& gpu,
                            std::initializer_list<int> host_inputs) {
  if (ctx.num_inputs() != ctx.node().num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected ", ctx.node().num_inputs(), " inputs, got ", ctx.num_inputs()));
  }
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    if (!t.valid()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " is missing"));
    }
    bool host = false;
    for (int h : host_inputs) host = host || h == i;
    if (host ? !t.on_host() : !gpu.device->HoldsMemoryOf(t)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", i, " must be in ", host ? "host memory" : gpu.device->name(),
          " memory, but lives in ",
          t.allocator() ? t.allocator()->Name() : std::string("no buffer")));
    }
  }
  return absl::OkStatus();
}

const std::vector<DataType>& GpuFloatTypes() {
  static const std::vector<DataType> k = {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16,
                                          DT_DOUBLE};
  return k;
}
const std::vector<DataType>& GpuIntFloatTypes() {
  static const std::vector<DataType> k = {DT_FLOAT,  DT_FLOAT16, DT_BFLOAT16,
                                          DT_DOUBLE, DT_INT32,   DT_INT64};
  return k;
}
const std::vector<DataType>& GpuAllTypes() {
  // The dtypes GpuDtype knows; the newer ones (int16, the unsigned types,
  // float8, the sub-byte types) run on the CPU.
  static const std::vector<DataType> k = {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16,
                                          DT_DOUBLE, DT_INT8, DT_INT32,
                                          DT_INT64, DT_UINT8, DT_BOOL};
  return k;
}

std::vector<DataType> GpuTypesWhere(bool (*has)(GpuDtype),
                                    const std::vector<DataType>& candidates) {
  std::vector<DataType> out;
  for (DataType t : candidates) {
    if (has(ToGpuDtype(t))) out.push_back(t);
  }
  return out;
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank());
  int64_t s = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape.dim(i);
  }
  return strides;
}

namespace {

// Drops size-1 dimensions and merges dimension d into d+1 where every
// operand's strides are contiguous across the pair.
absl::StatusOr<IndexMap> Merge(const std::vector<int64_t>& dims,
                               const std::vector<std::vector<int64_t>>& strides) {
  const int ops = static_cast<int>(strides.size());
  std::vector<int64_t> md;
  std::vector<std::vector<int64_t>> ms(ops);
  int64_t n = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    n *= dims[d];
    if (dims[d] == 1) continue;
    bool merge = !md.empty();
    for (int o = 0; o < ops && merge; ++o) {
      merge = ms[o].back() == strides[o][d] * dims[d];
    }
    if (merge) {
      md.back() *= dims[d];
      for (int o = 0; o < ops; ++o) ms[o].back() = strides[o][d];
    } else {
      md.push_back(dims[d]);
      for (int o = 0; o < ops; ++o) ms[o].push_back(strides[o][d]);
    }
  }
  IndexMap map;
  map.num_elements = n;
  if (n == 0) return map;
  if (md.size() > static_cast<size_t>(kMaxGpuDims)) {
    return absl::UnimplementedError(absl::StrCat(
        "CUDA kernels handle at most ", kMaxGpuDims,
        " non-mergeable dimensions, got ", md.size()));
  }
  map.rank = static_cast<int>(md.size());
  for (int d = 0; d < map.rank; ++d) {
    map.dims[d] = md[d];
    for (int o = 0; o < ops; ++o) map.strides[o][d] = ms[o][d];
  }
  return map;
}

}  // namespace

absl::StatusOr<IndexMap> BroadcastMap(const Shape& out,
                                      std::initializer_list<const Shape*> inputs) {
  std::vector<int64_t> dims(out.dims().begin(), out.dims().end());
  std::vector<std::vector<int64_t>> strides;
  for (const Shape* in : inputs) {
    std::vector<int64_t> own = RowMajorStrides(*in);
    std::vector<int64_t> s(dims.size(), 0);
    const int shift = out.rank() - in->rank();
    for (int d = 0; d < in->rank(); ++d) {
      s[d + shift] = in->dim(d) == 1 ? 0 : own[d];
    }
    strides.push_back(std::move(s));
  }
  return Merge(dims, strides);
}

absl::StatusOr<IndexMap> CopyMap(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& src_strides,
                                 const std::vector<int64_t>& dst_strides) {
  return Merge(dims, {src_strides, dst_strides});
}

KernelDef GpuKernelDef(std::string op,
                       std::map<std::string, std::vector<DataType>> constraints,
                       KernelFactory factory, std::vector<int> host_memory_inputs,
                       KernelSupports supports) {
  KernelDef def;
  def.op = std::move(op);
  def.device = DeviceType::kGpu;
  def.type_constraints = std::move(constraints);
  def.factory = std::move(factory);
  def.host_memory_inputs = std::move(host_memory_inputs);
  def.supports = std::move(supports);
  return def;
}

void RegisterGpu(KernelRegistry* registry, std::string op,
                 std::map<std::string, std::vector<DataType>> constraints,
                 KernelFactory factory, std::vector<int> host_memory_inputs,
                 KernelSupports supports) {
  registry->Register(GpuKernelDef(std::move(op), std::move(constraints),
                                  std::move(factory),
                                  std::move(host_memory_inputs),
                                  std::move(supports)));
}

KernelSupports RanksAtMost(int max_rank) {
  return [max_rank](const Node& node) -> absl::Status {
    auto check = [&](const Shape& s, const char* what, int i) {
      if (s.unknown_rank() || s.rank() <= max_rank) return absl::OkStatus();
      return absl::UnimplementedError(absl::StrCat(
          what, " ", i, " has rank ", s.rank(), " > ", max_rank,
          ": CUDA kernels index at most ", max_rank, " dimensions"));
    };
    for (int i = 0; i < node.num_inputs(); ++i) {
      RETURN_IF_ERROR(check(node.input_shape(i), "input", i));
    }
    for (int i = 0; i < node.num_outputs(); ++i) {
      RETURN_IF_ERROR(check(node.output_shape(i), "output", i));
    }
    return absl::OkStatus();
  };
}

absl::Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(err),
                                          " (", cudaGetErrorName(err), ")"));
}

absl::StatusOr<uint64_t> ReadDeviceFlag(const GpuContext& gpu, const void* flag) {
  cudaStream_t stream = gpu.stream;
  gpu.device->NoteKernelHostWait();
  uint64_t value = 0;
  RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(&value, flag, sizeof(value),
                                             cudaMemcpyDeviceToHost, stream),
                             "reading a kernel's flag"));
  RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream),
                             "waiting for a kernel's flag"));
  return value;
}

absl::StatusOr<std::string> StringAttr(const Node& node, const char* name,
                                       const std::string& default_value) {
  if (!node.attrs().Has(name)) return default_value;
  return node.attrs().GetString(name);
}

}  // namespace sluice::cuda
