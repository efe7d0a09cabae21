// NVRTC compilation, loading and the process-wide cache.
#include "kernels/cuda/nvrtc_kernel_cache.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/cuda/nvrtc_library.h"
#include "device/fault_injector.h"
#include "kernels/cuda/cuda_kernel_util.h"

namespace sluice::cuda {
namespace {

using Key = std::tuple<std::string, std::string, std::vector<std::string>, int>;

struct Cache {
  absl::Mutex mu;
  std::map<Key, std::unique_ptr<CompiledCudaKernel>> kernels ABSL_GUARDED_BY(mu);
  int compilations ABSL_GUARDED_BY(mu) = 0;
};

Cache& GlobalCache() {
  static Cache* const kCache = new Cache();
  return *kCache;
}

// Destroys an NVRTC program when it goes out of scope.
struct ProgramGuard {
  const NvrtcApi* api;
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog != nullptr) api->DestroyProgram(&prog);
  }
};

std::string ProgramLog(const NvrtcApi& api, nvrtcProgram prog) {
  size_t size = 0;
  if (api.GetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) {
    return "";
  }
  std::string log(size, '\0');
  if (api.GetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) {
    log.pop_back();
  }
  return log;
}

// CUBIN -> loaded library and kernel; not cached.
absl::StatusOr<std::unique_ptr<CompiledCudaKernel>> Load(
    const std::string& kernel_name, NvrtcOutput compiled) {
  auto out = std::make_unique<CompiledCudaKernel>();
  out->lowered_name = std::move(compiled.lowered_name);
  out->log = std::move(compiled.log);
  RETURN_IF_ERROR(CudaStatus(
      cudaLibraryLoadData(&out->library, compiled.cubin.data(), nullptr,
                          nullptr, 0, nullptr, nullptr, 0),
      "cudaLibraryLoadData (a CudaKernel's CUBIN)"));
  absl::Status got = CudaStatus(
      cudaLibraryGetKernel(&out->kernel, out->library, out->lowered_name.c_str()),
      "cudaLibraryGetKernel");
  if (!got.ok()) {
    cudaLibraryUnload(out->library);
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", kernel_name, "' (symbol '", out->lowered_name,
        "') is not a __global__ function of the source: ", got.message()));
  }
  return out;
}

}  // namespace

std::string NvrtcArchOption(int sm) {
  return absl::StrCat("--gpu-architecture=sm_", sm);
}

absl::StatusOr<NvrtcOutput> CompileToCubin(
    const std::string& source, const std::string& kernel_name,
    const std::vector<std::string>& options, int sm) {
  ASSIGN_OR_RETURN(const NvrtcApi* api, GetNvrtc());
  ProgramGuard guard{api};
  RETURN_IF_ERROR(api->Check(
      api->CreateProgram(&guard.prog, source.c_str(), "cuda_kernel.cu", 0,
                         nullptr, nullptr),
      "nvrtcCreateProgram"));
  RETURN_IF_ERROR(api->Check(
      api->AddNameExpression(guard.prog, kernel_name.c_str()),
      "nvrtcAddNameExpression"));
  std::vector<std::string> all = options;
  all.push_back(NvrtcArchOption(sm));
  std::vector<const char*> argv;
  for (const std::string& o : all) argv.push_back(o.c_str());
  const nvrtcResult compiled = api->CompileProgram(
      guard.prog, static_cast<int>(argv.size()), argv.data());
  NvrtcOutput out;
  out.log = ProgramLog(*api, guard.prog);
  if (compiled != NVRTC_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NVRTC ", api->major, ".", api->minor, " could not compile kernel '",
        kernel_name, "' (", absl::StrJoin(all, " "), "): ",
        api->GetErrorString(compiled), "\n", out.log));
  }
  const char* lowered = nullptr;
  RETURN_IF_ERROR(api->Check(
      api->GetLoweredName(guard.prog, kernel_name.c_str(), &lowered),
      "nvrtcGetLoweredName"));
  out.lowered_name = lowered != nullptr ? lowered : kernel_name;
  size_t size = 0;
  RETURN_IF_ERROR(api->Check(api->GetCUBINSize(guard.prog, &size),
                             "nvrtcGetCUBINSize"));
  out.cubin.assign(size, '\0');
  RETURN_IF_ERROR(api->Check(api->GetCUBIN(guard.prog, out.cubin.data()),
                             "nvrtcGetCUBIN"));
  return out;
}

absl::StatusOr<const CompiledCudaKernel*> CompileCudaKernel(
    const std::string& source, const std::string& kernel_name,
    const std::vector<std::string>& options, int sm) {
  Cache& cache = GlobalCache();
  Key key(source, kernel_name, options, sm);
  {
    absl::MutexLock lock(&cache.mu);
    auto it = cache.kernels.find(key);
    if (it != cache.kernels.end()) return it->second.get();
  }
  // Compiled outside the lock: NVRTC takes a while, and other kernels'
  // lookups need not wait. Two threads may compile the same key; the
  // first to finish is kept.
  RETURN_IF_ERROR(InjectedFault(FaultKind::kLibrary, "NVRTC compile"));
  ASSIGN_OR_RETURN(NvrtcOutput cubin,
                   CompileToCubin(source, kernel_name, options, sm));
  ASSIGN_OR_RETURN(std::unique_ptr<CompiledCudaKernel> compiled,
                   Load(kernel_name, std::move(cubin)));
  absl::MutexLock lock(&cache.mu);
  ++cache.compilations;
  auto [it, inserted] = cache.kernels.emplace(std::move(key), nullptr);
  if (inserted) {
    it->second = std::move(compiled);
  } else {
    cudaLibraryUnload(compiled->library);
  }
  return it->second.get();
}

absl::StatusOr<std::vector<int>> VisibleCudaArchitectures() {
  int count = 0;
  RETURN_IF_ERROR(CudaStatus(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  std::vector<int> out;
  for (int d = 0; d < count; ++d) {
    int major = 0, minor = 0;
    RETURN_IF_ERROR(CudaStatus(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d),
        "cudaDeviceGetAttribute"));
    RETURN_IF_ERROR(CudaStatus(
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d),
        "cudaDeviceGetAttribute"));
    const int sm = major * 10 + minor;
    if (sm < 75) continue;
    if (std::find(out.begin(), out.end(), sm) == out.end()) out.push_back(sm);
  }
  return out;
}

int CompiledCudaKernelCount() {
  Cache& cache = GlobalCache();
  absl::MutexLock lock(&cache.mu);
  return cache.compilations;
}

}  // namespace sluice::cuda
