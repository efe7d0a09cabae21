// The cuDNN loader: its entry points (DynamicLibrary), the version check.
#include "device/cuda/cudnn_library.h"

#include <cstdio>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "device/dynamic_library.h"

namespace sluice {
namespace {

// Calls fn(name, &slot) for every entry point of CudnnApi: the one list of
// what sluice calls.
template <typename Fn>
void ForEachEntryPoint(CudnnApi* api, Fn&& fn) {
  fn("cudnnGetVersion", &api->GetVersion);
  fn("cudnnGetErrorString", &api->GetErrorString);
  fn("cudnnGetLastErrorString", &api->GetLastErrorString);
  fn("cudnnCreate", &api->Create);
  fn("cudnnDestroy", &api->Destroy);
  fn("cudnnSetStream", &api->SetStream);
  fn("cudnnCreateTensorDescriptor", &api->CreateTensorDescriptor);
  fn("cudnnDestroyTensorDescriptor", &api->DestroyTensorDescriptor);
  fn("cudnnSetTensorNdDescriptor", &api->SetTensorNdDescriptor);
  fn("cudnnCreateFilterDescriptor", &api->CreateFilterDescriptor);
  fn("cudnnDestroyFilterDescriptor", &api->DestroyFilterDescriptor);
  fn("cudnnSetFilterNdDescriptor", &api->SetFilterNdDescriptor);
  fn("cudnnCreateConvolutionDescriptor", &api->CreateConvolutionDescriptor);
  fn("cudnnDestroyConvolutionDescriptor", &api->DestroyConvolutionDescriptor);
  fn("cudnnSetConvolutionNdDescriptor", &api->SetConvolutionNdDescriptor);
  fn("cudnnSetConvolutionGroupCount", &api->SetConvolutionGroupCount);
  fn("cudnnSetConvolutionMathType", &api->SetConvolutionMathType);
  fn("cudnnGetConvolutionNdForwardOutputDim",
     &api->GetConvolutionNdForwardOutputDim);
  fn("cudnnGetConvolutionForwardAlgorithmMaxCount",
     &api->GetConvolutionForwardAlgorithmMaxCount);
  fn("cudnnGetConvolutionForwardAlgorithm_v7",
     &api->GetConvolutionForwardAlgorithm_v7);
  fn("cudnnFindConvolutionForwardAlgorithmEx",
     &api->FindConvolutionForwardAlgorithmEx);
  fn("cudnnConvolutionForward", &api->ConvolutionForward);
  fn("cudnnConvolutionBiasActivationForward",
     &api->ConvolutionBiasActivationForward);
  fn("cudnnCreateActivationDescriptor", &api->CreateActivationDescriptor);
  fn("cudnnSetActivationDescriptor", &api->SetActivationDescriptor);
  fn("cudnnDestroyActivationDescriptor", &api->DestroyActivationDescriptor);
  fn("cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
     &api->GetConvolutionBackwardDataAlgorithmMaxCount);
  fn("cudnnGetConvolutionBackwardDataAlgorithm_v7",
     &api->GetConvolutionBackwardDataAlgorithm_v7);
  fn("cudnnFindConvolutionBackwardDataAlgorithmEx",
     &api->FindConvolutionBackwardDataAlgorithmEx);
  fn("cudnnConvolutionBackwardData", &api->ConvolutionBackwardData);
  fn("cudnnBackendCreateDescriptor", &api->BackendCreateDescriptor);
  fn("cudnnBackendDestroyDescriptor", &api->BackendDestroyDescriptor);
  fn("cudnnBackendSetAttribute", &api->BackendSetAttribute);
  fn("cudnnBackendGetAttribute", &api->BackendGetAttribute);
  fn("cudnnBackendFinalize", &api->BackendFinalize);
  fn("cudnnBackendExecute", &api->BackendExecute);
}

struct Loaded {
  absl::StatusOr<std::unique_ptr<CudnnApi>> api;
  CudnnInfo info;
};

const Loaded& ProcessCudnn() {
  static const Loaded* const kLoaded = [] {
    auto* loaded = new Loaded{absl::UnknownError("not loaded"), CudnnInfo()};
    loaded->api = LoadCudnn(kCudnnLibraryName, kMinCudnnVersion, &loaded->info);
    return loaded;
  }();
  return *kLoaded;
}

}  // namespace

const std::vector<std::string>& CudnnSymbolNames() {
  static const std::vector<std::string>* const kNames = [] {
    auto* names = new std::vector<std::string>();
    CudnnApi api;
    ForEachEntryPoint(&api, [&](const char* name, auto*) {
      names->push_back(name);
    });
    return names;
  }();
  return *kNames;
}

absl::Status CudnnApi::Check(cudnnStatus_t status,
                             std::string_view what) const {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  char last[512] = {0};
  if (GetLastErrorString != nullptr) GetLastErrorString(last, sizeof(last));
  std::string message = absl::StrCat(
      absl::string_view(what.data(), what.size()), ": ",
      GetErrorString != nullptr ? GetErrorString(status) : "cuDNN error",
      " (", static_cast<int>(status), ")", last[0] != '\0' ? ": " : "",
      absl::string_view(last));
  if (status == CUDNN_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(message);
  }
  // NOT_SUPPORTED and its sub-codes (9xxx) are in [3000, 4000).
  if (static_cast<int>(status) / 1000 == 3) {
    return absl::UnimplementedError(message);
  }
  return absl::InternalError(message);
}

absl::StatusOr<std::unique_ptr<CudnnApi>> LoadCudnn(const std::string& path,
                                                    int64_t min_version,
                                                    CudnnInfo* info) {
  CudnnInfo local;
  CudnnInfo& out = info != nullptr ? *info : local;
  out = CudnnInfo();
  absl::StatusOr<DynamicLibrary> lib = DynamicLibrary::Open({path});
  if (!lib.ok()) {
    out.reason = std::string(lib.status().message());
    return lib.status();
  }
  auto api = std::make_unique<CudnnApi>();
  api->library = lib->path();
  out.library = api->library;
  ForEachEntryPoint(api.get(), [&](const char* name, auto* slot) {
    lib->Bind(name, slot);
  });
  out.missing_symbols = lib->missing_symbols();
  if (api->GetVersion != nullptr) {
    api->version = static_cast<int64_t>(api->GetVersion());
    out.version = api->version;
  }
  if (absl::Status s = lib->CheckAllBound(); !s.ok()) {
    out.reason = std::string(s.message());
  } else if (api->version < min_version || api->version / 10000 !=
                                                min_version / 10000) {
    out.reason = absl::StrCat(api->library, " is cuDNN ",
                              CudnnVersionString(api->version), "; sluice needs ",
                              CudnnVersionString(min_version),
                              " or a later ", min_version / 10000, ".x");
  }
  if (!out.reason.empty()) {
    return absl::FailedPreconditionError(out.reason);  // ~DynamicLibrary closes it
  }
  api->dl_handle = lib->KeepOpen();
  out.usable = true;
  return api;
}

absl::StatusOr<const CudnnApi*> GetCudnn() {
  const Loaded& loaded = ProcessCudnn();
  if (!loaded.api.ok()) {
    // Said once per process, where a user running a model looks, the
    // first time a kernel wants cuDNN (`sluice devices` only reports it).
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr,
                   "sluice: cuDNN is not used (%s); Conv and ConvTranspose "
                   "run on sluice's own CUDA kernels\n",
                   std::string(loaded.api.status().message()).c_str());
    });
    return loaded.api.status();
  }
  return loaded.api->get();
}

CudnnInfo GetCudnnInfo() { return ProcessCudnn().info; }

}  // namespace sluice
