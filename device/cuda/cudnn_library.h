// CudnnApi: the cuDNN entry points sluice calls, resolved from
// libcudnn.so.9 at run time. sluice has no link-time dependency on cuDNN:
// the binary starts without it, and the GPU Conv kernels
// (kernels/cuda/cudnn_conv.h) then run sluice's own CUDA kernels. cuDNN 9's
// legacy convolution API (cudnn_cnn.h: cudnnConvolutionForward,
// cudnnConvolutionBackwardData, cudnnFind*AlgorithmEx, the *_v7 heuristics)
// is what is used, beside the graph (backend) API's descriptors, finalize
// and execute for forward convolutions; both ship in libcudnn.so.9.
//
//   ASSIGN_OR_RETURN(const CudnnApi* dnn, GetCudnn());
//   cudnnHandle_t h;
//   RETURN_IF_ERROR(dnn->Check(dnn->Create(&h), "cudnnCreate"));
//
// Thread-safe: GetCudnn loads the library once per process (the first call,
// from any thread) and the result never changes; GetCudnn writes one line
// to stderr the first time it is asked for an unusable cuDNN. The CudnnApi it returns
// lives for the whole process (the library is never closed).
#ifndef SLUICE_DEVICE_CUDA_CUDNN_LIBRARY_H_
#define SLUICE_DEVICE_CUDA_CUDNN_LIBRARY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cudnn.h"
#include "device/cudnn_info.h"

namespace sluice {

// The soname dlopen looks for (in the default linker path).
inline constexpr char kCudnnLibraryName[] = "libcudnn.so.9";

struct CudnnApi {
  // Set by the loader; never change afterwards.
  int64_t version = 0;  // cudnnGetVersion()
  std::string library;  // the file loaded
  void* dl_handle = nullptr;

  // Only the entry points sluice uses (each resolved once, by name).
  decltype(&::cudnnGetVersion) GetVersion = nullptr;
  decltype(&::cudnnGetErrorString) GetErrorString = nullptr;
  decltype(&::cudnnGetLastErrorString) GetLastErrorString = nullptr;
  decltype(&::cudnnCreate) Create = nullptr;
  decltype(&::cudnnDestroy) Destroy = nullptr;
  decltype(&::cudnnSetStream) SetStream = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) CreateTensorDescriptor = nullptr;
  decltype(&::cudnnDestroyTensorDescriptor) DestroyTensorDescriptor = nullptr;
  decltype(&::cudnnSetTensorNdDescriptor) SetTensorNdDescriptor = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) CreateFilterDescriptor = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) DestroyFilterDescriptor = nullptr;
  decltype(&::cudnnSetFilterNdDescriptor) SetFilterNdDescriptor = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) CreateConvolutionDescriptor =
      nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) DestroyConvolutionDescriptor =
      nullptr;
  decltype(&::cudnnSetConvolutionNdDescriptor) SetConvolutionNdDescriptor =
      nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) SetConvolutionGroupCount = nullptr;
  decltype(&::cudnnSetConvolutionMathType) SetConvolutionMathType = nullptr;
  decltype(&::cudnnGetConvolutionNdForwardOutputDim)
      GetConvolutionNdForwardOutputDim = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithmMaxCount)
      GetConvolutionForwardAlgorithmMaxCount = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7)
      GetConvolutionForwardAlgorithm_v7 = nullptr;
  decltype(&::cudnnFindConvolutionForwardAlgorithmEx)
      FindConvolutionForwardAlgorithmEx = nullptr;
  decltype(&::cudnnConvolutionForward) ConvolutionForward = nullptr;
  decltype(&::cudnnConvolutionBiasActivationForward)
      ConvolutionBiasActivationForward = nullptr;
  decltype(&::cudnnCreateActivationDescriptor) CreateActivationDescriptor =
      nullptr;
  decltype(&::cudnnSetActivationDescriptor) SetActivationDescriptor = nullptr;
  decltype(&::cudnnDestroyActivationDescriptor) DestroyActivationDescriptor =
      nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithmMaxCount)
      GetConvolutionBackwardDataAlgorithmMaxCount = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithm_v7)
      GetConvolutionBackwardDataAlgorithm_v7 = nullptr;
  decltype(&::cudnnFindConvolutionBackwardDataAlgorithmEx)
      FindConvolutionBackwardDataAlgorithmEx = nullptr;
  decltype(&::cudnnConvolutionBackwardData) ConvolutionBackwardData = nullptr;
  // The graph (backend) API, for forward convolutions on the engines that
  // the legacy calls do not reach (kernels/cuda/cudnn_graph_conv.h).
  decltype(&::cudnnBackendCreateDescriptor) BackendCreateDescriptor = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) BackendDestroyDescriptor = nullptr;
  decltype(&::cudnnBackendSetAttribute) BackendSetAttribute = nullptr;
  decltype(&::cudnnBackendGetAttribute) BackendGetAttribute = nullptr;
  decltype(&::cudnnBackendFinalize) BackendFinalize = nullptr;
  decltype(&::cudnnBackendExecute) BackendExecute = nullptr;

  // OK for CUDNN_STATUS_SUCCESS; otherwise INTERNAL (RESOURCE_EXHAUSTED for
  // an allocation failure, UNIMPLEMENTED for NOT_SUPPORTED) naming `what`,
  // the status and cuDNN's last error message.
  absl::Status Check(cudnnStatus_t status, std::string_view what) const;
};

// The names of the entry points CudnnApi holds, in its order.
const std::vector<std::string>& CudnnSymbolNames();

// Opens `path` (a soname or a file) and resolves every entry point.
// NOT_FOUND when it cannot be opened; FAILED_PRECONDITION when its
// cudnnGetVersion() is below `min_version` or of another major version, or
// a symbol is missing (`info`, when given, lists what was found either
// way). Each call opens the library again (dlopen counts references): for
// tests; kernels use GetCudnn().
absl::StatusOr<std::unique_ptr<CudnnApi>> LoadCudnn(
    const std::string& path, int64_t min_version = kMinCudnnVersion,
    CudnnInfo* info = nullptr);

// The process-wide cuDNN (kCudnnLibraryName, kMinCudnnVersion), loaded by
// the first call; the same error every call when it is unusable.
absl::StatusOr<const CudnnApi*> GetCudnn();

}  // namespace sluice

#endif  // SLUICE_DEVICE_CUDA_CUDNN_LIBRARY_H_
