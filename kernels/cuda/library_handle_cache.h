// LibraryHandleCache: what the kernels of one CUDA library keep per device.
// A library handle (made with the device current, destroyed with the
// device), a cache of per-problem entries by key (descriptors, the
// algorithms found, counters) and the cache's options, all under one mutex,
// kept as a GpuDevice resource. cuDNN's convolutions (cudnn_conv.cc) and
// cuBLASLt's matrix products (cublaslt_matmul.cc) each keep one.
//
//   using State = LibraryHandleCache<CudnnApi, cudnnHandle_t, Entry>;
//   ASSIGN_OR_RETURN(State* st, State::For(gpu, "cudnn_conv", api,
//       [&](cudnnHandle_t* h) { return api->Check(api->Create(h), "cudnnCreate"); }));
//   absl::MutexLock lock(&st->mu());
//   std::unique_ptr<Entry>& entry = st->cache()[key];  // null: not seen yet
//
// `Api` is a loader's table of entry points with Destroy(Handle) (CudnnApi,
// CublasLtApi); it outlives every device. Thread-safe: For may be called
// from any thread; the handle, the cache and the options are used only
// under mu() (a library handle must not be used by two threads at once).
#ifndef SLUICE_KERNELS_CUDA_LIBRARY_HANDLE_CACHE_H_
#define SLUICE_KERNELS_CUDA_LIBRARY_HANDLE_CACHE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/gpu_device.h"

namespace sluice::cuda {

// Options for a cache that has none.
struct NoCacheOptions {};

template <typename Api, typename Handle, typename Entry,
          typename Options = NoCacheOptions>
class LibraryHandleCache final : public GpuDevice::Resource {
 public:
  // Makes a handle in *handle (the device is current); on an error it
  // leaves nothing to destroy.
  using CreateHandle = std::function<absl::Status(Handle* handle)>;

  // The state `gpu` keeps under `key`, made on the first call with
  // `create`. An error from `create` is returned and nothing kept, so a
  // later call tries again. Owned by the device. REQUIRES: every call
  // with one key passes the same Api, Handle, Entry and Options types.
  static absl::StatusOr<LibraryHandleCache*> For(GpuDevice* gpu,
                                                 const std::string& key,
                                                 const Api* api,
                                                 const CreateHandle& create) {
    ASSIGN_OR_RETURN(
        GpuDevice::Resource * r,
        gpu->GetOrCreateResource(
            key, [&]() -> absl::StatusOr<std::unique_ptr<GpuDevice::Resource>> {
              RETURN_IF_ERROR(gpu->MakeCurrent());
              Handle handle{};
              RETURN_IF_ERROR(create(&handle));
              return std::unique_ptr<GpuDevice::Resource>(
                  new LibraryHandleCache(api, handle));
            }));
    return static_cast<LibraryHandleCache*>(r);
  }

  // The entries go first (their descriptors may need the library), then
  // the handle.
  ~LibraryHandleCache() override {
    absl::MutexLock lock(&mu_);
    cache_.clear();
    api_->Destroy(handle_);
  }
  LibraryHandleCache(const LibraryHandleCache&) = delete;
  LibraryHandleCache& operator=(const LibraryHandleCache&) = delete;

  const Api* api() const { return api_; }
  Handle handle() const { return handle_; }
  absl::Mutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }
  std::map<std::string, std::unique_ptr<Entry>>& cache()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cache_;
  }
  Options& options() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return options_; }

 private:
  LibraryHandleCache(const Api* api, Handle handle)
      : api_(api), handle_(handle) {}

  // Fixed at construction.
  const Api* const api_;
  const Handle handle_;

  absl::Mutex mu_;  // held for every use of handle_, the cache and options
  std::map<std::string, std::unique_ptr<Entry>> cache_ ABSL_GUARDED_BY(mu_);
  Options options_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_LIBRARY_HANDLE_CACHE_H_
