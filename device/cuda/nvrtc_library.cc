// The NVRTC loader: its entry points (DynamicLibrary) and version.
#include "device/cuda/nvrtc_library.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "device/dynamic_library.h"

namespace sluice {
namespace {

// Calls fn(name, &slot) for every entry point of NvrtcApi.
template <typename Fn>
void ForEachEntryPoint(NvrtcApi* api, Fn&& fn) {
  fn("nvrtcVersion", &api->Version);
  fn("nvrtcGetErrorString", &api->GetErrorString);
  fn("nvrtcCreateProgram", &api->CreateProgram);
  fn("nvrtcDestroyProgram", &api->DestroyProgram);
  fn("nvrtcAddNameExpression", &api->AddNameExpression);
  fn("nvrtcCompileProgram", &api->CompileProgram);
  fn("nvrtcGetLoweredName", &api->GetLoweredName);
  fn("nvrtcGetProgramLogSize", &api->GetProgramLogSize);
  fn("nvrtcGetProgramLog", &api->GetProgramLog);
  fn("nvrtcGetCUBINSize", &api->GetCUBINSize);
  fn("nvrtcGetCUBIN", &api->GetCUBIN);
}

}  // namespace

const std::vector<std::string>& NvrtcLibraryNames() {
  static const std::vector<std::string>* const kNames =
      new std::vector<std::string>{"libnvrtc.so.13", "libnvrtc.so"};
  return *kNames;
}

absl::Status NvrtcApi::Check(nvrtcResult result, std::string_view what) const {
  if (result == NVRTC_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      absl::string_view(what.data(), what.size()), ": ",
      GetErrorString != nullptr ? GetErrorString(result) : "NVRTC error",
      " (", static_cast<int>(result), ")"));
}

absl::StatusOr<std::unique_ptr<NvrtcApi>> LoadNvrtc(const std::string& path) {
  ASSIGN_OR_RETURN(DynamicLibrary lib, DynamicLibrary::Open({path}));
  auto api = std::make_unique<NvrtcApi>();
  api->library = lib.path();
  ForEachEntryPoint(api.get(), [&](const char* name, auto* slot) {
    lib.Bind(name, slot);
  });
  RETURN_IF_ERROR(lib.CheckAllBound());  // ~DynamicLibrary closes it
  api->dl_handle = lib.KeepOpen();
  api->Version(&api->major, &api->minor);
  return api;
}

absl::StatusOr<const NvrtcApi*> GetNvrtc() {
  static const absl::StatusOr<std::unique_ptr<NvrtcApi>>* const kLoaded = [] {
    std::vector<std::string> tried;
    for (const std::string& name : NvrtcLibraryNames()) {
      absl::StatusOr<std::unique_ptr<NvrtcApi>> api = LoadNvrtc(name);
      if (api.ok()) {
        return new absl::StatusOr<std::unique_ptr<NvrtcApi>>(std::move(api));
      }
      tried.push_back(std::string(api.status().message()));
    }
    return new absl::StatusOr<std::unique_ptr<NvrtcApi>>(
        absl::FailedPreconditionError(absl::StrCat(
            "NVRTC (CUDA's run-time compiler, which compiles CudaKernel "
            "nodes) is not available: ",
            absl::StrJoin(tried, "; "),
            ". Install it: pip install sluice[cuda] (or nvidia-cuda-nvrtc) "
            "in this Python environment, or the CUDA toolkit's NVRTC (the "
            "cuda-nvrtc package) with its lib64 folder on LD_LIBRARY_PATH")));
  }();
  if (!kLoaded->ok()) return kLoaded->status();
  return kLoaded->value().get();
}

}  // namespace sluice
