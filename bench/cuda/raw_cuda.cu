#include "bench/cuda/raw_cuda.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

absl::Status Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename T>
static __global__ void FillKernel(T* p, int64_t n, unsigned seed) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u + seed;
    p[i] = T(static_cast<float>(x % 2001) / 1000.0f - 1.0f);
  }
}

template <typename T>
absl::Status Fill(T* p, int64_t n, unsigned seed) {
  int blocks = static_cast<int>((n + 255) / 256);
  FillKernel<<<blocks, 256>>>(p, n, seed);
  return Check(cudaGetLastError(), "fill");
}

}  // namespace

absl::StatusOr<double> RawGemmSeconds(int n, RawGemm type, int iters) {
  const bool bf16 = type == RawGemm::kBf16;
  const cudaDataType_t data = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute = type == RawGemm::kTf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const int64_t elems = int64_t{n} * n;
  const int64_t bytes = elems * (bf16 ? 2 : 4);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  absl::Status s = Check(cudaMalloc(&a, bytes), "cudaMalloc");
  if (s.ok()) s.Update(Check(cudaMalloc(&b, bytes), "cudaMalloc"));
  if (s.ok()) s.Update(Check(cudaMalloc(&c, bytes), "cudaMalloc"));
  cublasHandle_t handle = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  std::vector<double> times;
  if (s.ok() && bf16) {
    s.Update(Fill(static_cast<__nv_bfloat16*>(a), elems, 1));
    if (s.ok()) s.Update(Fill(static_cast<__nv_bfloat16*>(b), elems, 2));
  } else if (s.ok()) {
    s.Update(Fill(static_cast<float*>(a), elems, 1));
    if (s.ok()) s.Update(Fill(static_cast<float*>(b), elems, 2));
  }
  if (s.ok() && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    s.Update(absl::InternalError("cublasCreate failed"));
  }
  if (s.ok()) {
    // As sluice's GPU device sets its handle.
    cublasSetMathMode(handle, type == RawGemm::kTf32
                                  ? CUBLAS_TF32_TENSOR_OP_MATH
                                  : CUBLAS_DEFAULT_MATH);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    const float one = 1.f, zero = 0.f;
    for (int i = 0; i < iters + 2 && s.ok(); ++i) {
      cudaEventRecord(start);
      if (cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b,
                       data, n, a, data, n, &zero, c, data, n, compute,
                       CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
        s.Update(absl::InternalError("cublasGemmEx failed"));
      }
      cudaEventRecord(stop);
      s.Update(Check(cudaEventSynchronize(stop), "sync"));
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      if (i >= 2) times.push_back(ms * 1e-3);
    }
  }
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  if (handle) cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  if (!s.ok()) return s;
  return Median(times);
}

absl::StatusOr<double> RawHostToDeviceGBps(int64_t bytes, bool pinned,
                                           int iters) {
  void* host = nullptr;
  void* dev = nullptr;
  absl::Status s;
  if (pinned) {
    s.Update(Check(cudaMallocHost(&host, bytes), "cudaMallocHost"));
  } else {
    host = std::malloc(bytes);
    if (host == nullptr) s.Update(absl::ResourceExhaustedError("malloc"));
  }
  if (s.ok()) std::memset(host, 1, bytes);
  if (s.ok()) s.Update(Check(cudaMalloc(&dev, bytes), "cudaMalloc"));
  std::vector<double> rates;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < iters + 1 && s.ok(); ++i) {
    cudaEventRecord(start);
    s.Update(Check(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice),
              "cudaMemcpyAsync"));
    cudaEventRecord(stop);
    s.Update(Check(cudaEventSynchronize(stop), "sync"));
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (i >= 1) rates.push_back(static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(dev);
  if (pinned) {
    cudaFreeHost(host);
  } else {
    std::free(host);
  }
  if (!s.ok()) return s;
  return Median(rates);
}

absl::StatusOr<double> RawPeerCopyGBps(int64_t bytes, int iters) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    cudaGetLastError();
    return absl::FailedPreconditionError("needs two GPUs");
  }
  void* src = nullptr;
  void* dst = nullptr;
  absl::Status s = Check(cudaSetDevice(1), "cudaSetDevice");
  if (s.ok()) s.Update(Check(cudaMalloc(&dst, bytes), "cudaMalloc"));
  if (s.ok()) s.Update(Check(cudaSetDevice(0), "cudaSetDevice"));
  if (s.ok()) s.Update(Check(cudaMalloc(&src, bytes), "cudaMalloc"));
  if (s.ok()) s.Update(Check(cudaMemset(src, 1, bytes), "cudaMemset"));
  std::vector<double> rates;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < iters + 1 && s.ok(); ++i) {
    cudaEventRecord(start);
    s.Update(Check(cudaMemcpyPeerAsync(dst, 1, src, 0, bytes), "cudaMemcpyPeerAsync"));
    cudaEventRecord(stop);
    s.Update(Check(cudaEventSynchronize(stop), "sync"));
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (i >= 1) rates.push_back(static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(src);
  cudaSetDevice(1);
  cudaFree(dst);
  cudaSetDevice(0);
  if (!s.ok()) return s;
  return Median(rates);
}

}  // namespace sluice
