// The NVRTC loader: dlopen, one dlsym per entry point.
#include "device/cuda/nvrtc_library.h"

#include <dlfcn.h>

#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return absl::NotFoundError(
        absl::StrCat(path, " not found: ", err != nullptr ? err : ""));
  }
  auto api = std::make_unique<NvrtcApi>();
  api->dl_handle = handle;
  api->library = path;
  std::vector<std::string> missing;
  ForEachEntryPoint(api.get(), [&](const char* name, auto* slot) {
    dlerror();
    void* p = dlsym(handle, name);
    if (p == nullptr) {
      missing.push_back(name);
      return;
    }
    *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(p);
  });
  if (!missing.empty()) {
    dlclose(handle);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " lacks ", absl::StrJoin(missing, ", ")));
  }
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
            ". Install the CUDA toolkit's NVRTC (the cuda-nvrtc package) "
            "or add its lib64 folder to LD_LIBRARY_PATH")));
  }();
  if (!kLoaded->ok()) return kLoaded->status();
  return kLoaded->value().get();
}

}  // namespace sluice
