// GpuDevice: one CUDA GPU, or one logical GPU carved out of a physical one,
// as the executor and the CUDA kernels see it: an arena allocator with the
// memory limit from the config, four streams (compute, host-to-device,
// device-to-host, device-to-device) ordered with CUDA events, pinned staging
// buffers for host transfers from pageable memory (page-locked memory goes
// by one DMA: device/pinned_memory.h), and a cuBLAS handle bound to the compute
// stream. This header is CUDA-free: streams and handles are opaque void*
// (cudaStream_t, cublasHandle_t) that only kernels/cuda and device/cuda cast.
//
//   ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GpuDevice>> gpus,
//                    CreateGpuDevices(config));         // /gpu:0, /gpu:1, ...
//   GpuDevice* gpu = gpus[0].get();
//   ASSIGN_OR_RETURN(Tensor x_dev, gpu->CopyToDevice(x_host));  // async
//   ... kernels on gpu->compute_stream() ...
//   ASSIGN_OR_RETURN(Tensor y_host, gpu->CopyToHost(y_dev));    // waits
//
// Ordering contract (what makes the arena's immediate reuse of freed blocks
// safe): all work on a device's tensors is ordered with its compute stream.
// Every copy first waits for the compute stream(s) of the devices it touches
// (so it reads finished data and writes memory no kernel still uses), and
// the compute stream(s) then wait for the copy. So a kernel enqueued after a
// copy call sees the copied data, and a tensor may be dropped on the host as
// soon as the last call that uses it has returned.
//
// Thread-safe: copies, waits and kernels may be issued from any thread; each
// call makes its GPU current on the calling thread for its duration.
#ifndef SLUICE_DEVICE_GPU_DEVICE_H_
#define SLUICE_DEVICE_GPU_DEVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/tensor.h"
#include "device/arena.h"
#include "device/device.h"
#include "device/discovery.h"
#include "device/external_memory.h"
#include "proto/config.pb.h"

namespace sluice {

// Whether Conv runs on cuDNN when the config does not say (use_cudnn).
// true since the cuDNN path passed the GPU suite on the H200 (2026-12-01:
// conformance against the CPU, memcheck, ResNet-50 within 4e-7 of the
// direct kernels and 5x to 26x faster). `use_cudnn: false` or
// SLUICE_USE_CUDNN=false runs sluice's own kernels.
inline constexpr bool kUseCudnnByDefault = true;

enum class GpuStream { kCompute, kHostToDevice, kDeviceToHost, kDeviceToDevice };
// "compute", "host-to-device", "device-to-host", "device-to-device".
inline const char* GpuStreamName(GpuStream stream) {
  switch (stream) {
    case GpuStream::kCompute: return "compute";
    case GpuStream::kHostToDevice: return "host-to-device";
    case GpuStream::kDeviceToHost: return "device-to-host";
    case GpuStream::kDeviceToDevice: return "device-to-device";
  }
  return "?";
}

class GpuDevice : public Device {
 public:
  // `index` is the logical index (the N of "/gpu:N").
  GpuDevice(int index, int64_t memory_limit)
      : Device(DeviceType::kGpu, index, memory_limit) {}
  ~GpuDevice() override = default;

  // --- What it is -----------------------------------------------------------
  // The CUDA device ordinal (after CUDA_VISIBLE_DEVICES) this device runs on;
  // logical GPUs of one physical GPU share it.
  virtual int physical_index() const = 0;
  virtual const GpuInfo& info() const = 0;
  virtual bool allow_growth() const = 0;
  // Whether float32 MatMul and Conv may use TF32 tensor cores
  // (RuntimeConfig).
  virtual bool allow_tf32() const = 0;
  // Whether Conv and ConvTranspose may use cuDNN when it is loaded
  // (RuntimeConfig.use_cudnn; false forces sluice's own kernels).
  virtual bool use_cudnn() const { return true; }

  // --- Streams, for kernels -------------------------------------------------
  // A cudaStream_t. Owned by the device.
  virtual void* stream(GpuStream which) const = 0;
  void* compute_stream() const { return stream(GpuStream::kCompute); }
  // A cublasHandle_t bound to the compute stream, with a workspace taken from
  // this device's arena. Owned by the device.
  virtual void* cublas_handle() const = 0;
  // The cuBLAS workspace: scratch that a GEMM may spread over several
  // operations on the compute stream (a partial product, then its
  // reduction). SetCublasWorkspace points the handle at `workspace` (`bytes`
  // > 0 of this device's memory, 256-byte aligned) for the GEMMs enqueued
  // from now on; ResetCublasWorkspace points it back at the device's own.
  // A recorded CUDA graph gets a workspace of its own (device/gpu_graph.h):
  // a graph launched by one thread can land between two operations of a
  // GEMM another thread is enqueueing, so the two must not share scratch.
  // REQUIRES (both): no other thread enqueues cuBLAS work on this device
  // meanwhile.
  virtual absl::Status SetCublasWorkspace(void* workspace, size_t bytes) = 0;
  virtual absl::Status ResetCublasWorkspace() = 0;
  // The size of the device's own workspace (0: cuBLAS's default pool).
  virtual size_t cublas_workspace_bytes() const = 0;
  // Held by a kernel while it enqueues its cuBLAS calls (kernels/cuda/
  // matmul.cc), so that the operations of one GEMM sit together on the
  // compute stream and GEMMs enqueued by different threads never interleave
  // in the shared workspace (cuBLAS documents a shared handle as
  // thread-safe, but not that one call's operations stay together).
  absl::Mutex& cublas_mutex() const { return cublas_mu_; }
  // Held shared by every copy and exclusively while the compute stream is
  // recorded (device/gpu_graph.h), so that a copy from another thread (a
  // constant uploaded while a plan compiles) waits for the recording to end
  // instead of joining it.
  absl::Mutex& capture_mutex() const { return capture_mu_; }
  // Makes this device's GPU current on the calling thread (cudaSetDevice).
  // Kernel launchers call it before launching.
  virtual absl::Status MakeCurrent() const = 0;

  // --- Copies (see the ordering contract above) -----------------------------
  // Host -> this device. `src` is any host tensor (pageable memory is fine);
  // `dst` is a tensor in this device's memory of the same byte size.
  // Pageable bytes go through pinned staging buffers in chunks,
  // double-buffered, on the host-to-device stream, and the call returns
  // once `src` has been read (the last chunk may still be in flight).
  // Page-locked bytes (device/pinned_memory.h: IsPageLocked) go by one DMA
  // straight from `src`, with no staging copy; the call returns at once, and
  // the device keeps a reference to src's buffer until the DMA is done, so
  // `src` may be dropped at once, but its bytes must not change until the
  // compute-stream work enqueued after the copy is done (Run returns after
  // it). Either way later compute-stream work is ordered after the copy.
  virtual absl::Status CopyHostToDevice(const Tensor& src, Tensor* dst) = 0;
  // This device -> host. Waits for the compute stream's work so far, copies
  // on the device-to-host stream, and returns when `dst` (a host tensor of
  // the same byte size) holds the bytes: by one DMA straight into `dst` when
  // it is page-locked (IsPageLocked), else through pinned staging. The only
  // call that makes the host wait: use it to hand outputs back.
  virtual absl::Status CopyDeviceToHost(const Tensor& src, Tensor* dst) = 0;
  // How many host copies went by one DMA from or into page-locked memory
  // (direct) and how many through the staging buffers, since the device
  // was made. Test doubles count nothing.
  struct HostCopyStats {
    int64_t to_device_direct = 0;
    int64_t to_device_staged = 0;
    int64_t to_host_direct = 0;
    int64_t to_host_staged = 0;
  };
  virtual HostCopyStats host_copy_stats() const { return {}; }
  // Waits for the GPU inside kernels, which read a value back to size an
  // output or check one (NonZero's count, NonMaxSuppression's rows,
  // computed Gather indices, an integer divisor, Loop's condition): the
  // kernels note each one here (kernels/cuda/cuda_kernel_util.h).
  void NoteKernelHostWait() {
    kernel_host_waits_.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t kernel_host_waits() const {
    return kernel_host_waits_.load(std::memory_order_relaxed);
  }
  // This device -> `dst_device` (this one, another logical GPU, or a peer
  // over NVLink / PCIe). Asynchronous on this device's device-to-device
  // stream; both compute streams are ordered after it. `dst` lies in
  // dst_device's memory and has the same byte size.
  virtual absl::Status CopyDeviceToDevice(const Tensor& src,
                                          GpuDevice* dst_device,
                                          Tensor* dst) = 0;
  // Makes `waiter` wait (on the GPU, not the host) for the work enqueued on
  // `waitee` so far, through a CUDA event.
  virtual absl::Status StreamWait(GpuStream waiter, GpuStream waitee) = 0;
  // Blocks the host until all four streams are idle; returns any error an
  // earlier asynchronous operation left behind.
  virtual absl::Status Synchronize() = 0;

  // Whether `t`'s bytes are in this GPU's memory: its arena's, or external
  // memory the caller wrapped for this device (sluice/external_memory.h, a
  // DLPack feed). What kernels and copies check their GPU operands against.
  bool HoldsMemoryOf(const Tensor& t) {
    if (!t.valid() || t.buffer() == nullptr) return false;
    if (t.allocator() == allocator()) return true;
    return !t.on_host() && ExternalMemoryDevice(t) == name();
  }

  // Convenience: allocate on the destination and copy.
  absl::StatusOr<Tensor> CopyToDevice(const Tensor& host) {
    absl::StatusOr<Tensor> dst =
        Tensor::Create(host.dtype(), host.shape(), allocator());
    if (!dst.ok()) return dst.status();
    absl::Status s = CopyHostToDevice(host, &*dst);
    if (!s.ok()) return s;
    return dst;
  }
  absl::StatusOr<Tensor> CopyToHost(const Tensor& device_tensor) {
    absl::StatusOr<Tensor> dst =
        Tensor::Create(device_tensor.dtype(), device_tensor.shape());
    if (!dst.ok()) return dst.status();
    absl::Status s = CopyDeviceToHost(device_tensor, &*dst);
    if (!s.ok()) return s;
    return dst;
  }

  // --- Memory ---------------------------------------------------------------
  virtual AllocatorStats allocator_stats() const = 0;
  // The arena behind allocator(), for its private pools and peak (a replayed
  // step's memory: executor/gpu_graph_runner.h); null when the allocator is
  // not an arena (test doubles).
  virtual ArenaAllocator* arena() { return nullptr; }
  // Hands regions that hold no tensor back to the driver; returns the bytes.
  virtual int64_t ReleaseUnusedMemory() = 0;

  // --- Per-device state of kernel libraries ---------------------------------
  // State a kernel library makes on first use and keeps for as long as the
  // device lives (kernels/cuda/cudnn_conv.cc keeps its cuDNN handle and
  // algorithm cache here, under "cudnn_conv"). A device destroys its
  // resources after its streams are idle and before its memory goes, with
  // its GPU current.
  class Resource {
   public:
    virtual ~Resource() = default;
  };
  using ResourceFactory =
      std::function<absl::StatusOr<std::unique_ptr<Resource>>()>;
  // The resource under `key`, made by `make` on the first call (one call
  // makes it; the others wait). An error from `make` is returned and
  // nothing is kept, so a later call tries again. The pointer is owned by
  // the device and valid until it is destroyed.
  absl::StatusOr<Resource*> GetOrCreateResource(const std::string& key,
                                                const ResourceFactory& make) {
    absl::MutexLock lock(&resource_mu_);
    auto it = resources_.find(key);
    if (it != resources_.end()) return it->second.get();
    absl::StatusOr<std::unique_ptr<Resource>> made = make();
    if (!made.ok()) return made.status();
    Resource* raw = made->get();
    resources_.emplace(key, *std::move(made));
    return raw;
  }

 protected:
  // Destroys every resource; a device's destructor calls it once its
  // streams are idle.
  void DestroyResources() {
    std::map<std::string, std::unique_ptr<Resource>> doomed;
    {
      absl::MutexLock lock(&resource_mu_);
      doomed.swap(resources_);
    }
  }

 private:
  mutable absl::Mutex cublas_mu_;
  mutable absl::Mutex capture_mu_;
  std::atomic<int64_t> kernel_host_waits_{0};
  absl::Mutex resource_mu_;
  std::map<std::string, std::unique_ptr<Resource>> resources_
      ABSL_GUARDED_BY(resource_mu_);
};

// One logical GPU to create: which physical GPU, and its byte limit.
struct GpuDeviceSpec {
  int physical_index = 0;
  int64_t memory_limit = 0;  // bytes, > 0
  // The N of "/gpu:N" the device gets; -1: its position in the list given to
  // CreateGpuDevicesFromSpecs. A session that sets up only the GPUs it
  // placed nodes on keeps the numbering of the whole plan.
  int index = -1;
};

// Memory the runtime leaves on a card for the CUDA context, lazily loaded
// kernel modules, per-thread local memory (which grows on the first launch of
// a kernel with a larger stack frame) and libraries, when no limit is set
// ("the whole card" = free memory minus this). 768 MiB was too little on an
// H200: the first launch of a new kernel failed with cudaErrorMemoryAllocation
// once the arena had reserved the rest (2026-11-29).
inline constexpr int64_t kGpuReservedBytes = int64_t{3} << 30;

// Which logical GPUs `config` asks for on these physical GPUs, in /gpu:N
// order: visible_gpus (all usable GPUs when empty; use_gpu false hides all),
// then per GPU either its logical_devices or one device. A limit is
// GpuConfig.memory_limit, else gpu_memory_limit, else the free memory minus
// kGpuReservedBytes; fractions are of the total memory. Errors
// (INVALID_ARGUMENT, naming the field): an index that is not visible, an
// unusable GPU asked for by index, a limit above the card's total, logical
// limits that together exceed it.
absl::StatusOr<std::vector<GpuDeviceSpec>> PlanGpuDevices(
    const RuntimeConfig& config, const std::vector<GpuInfo>& gpus);

// Discovers the GPUs, plans them, and creates one GpuDevice per spec with
// allow_growth (default true: grow on demand up to the limit) and
// allow_tf32 and use_cudnn from `config`. No GPU (or a CPU-only build)
// gives an empty vector, unless `config` names GPUs by index, which is then
// FAILED_PRECONDITION with the reason. With allow_growth false, each arena
// reserves its whole limit here (RESOURCE_EXHAUSTED if the card cannot).
absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>> CreateGpuDevices(
    const RuntimeConfig& config);
// The same with an explicit plan (tests, tools).
absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>> CreateGpuDevicesFromSpecs(
    const RuntimeConfig& config, const std::vector<GpuDeviceSpec>& specs);

#ifndef SLUICE_WITH_CUDA
// CPU-only builds (no CUDA toolkit): no GPU devices, so that callers need no
// #ifdef. PlanGpuDevices (pure logic) exists in every build.
inline absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>>
CreateGpuDevices(const RuntimeConfig& config) {
  if (config.visible_gpus_size() > 0 || config.gpu_size() > 0) {
    return absl::FailedPreconditionError(
        "the config names GPUs but this build of sluice has no CUDA support");
  }
  return std::vector<std::unique_ptr<GpuDevice>>();
}
inline absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>>
CreateGpuDevicesFromSpecs(const RuntimeConfig& config,
                          const std::vector<GpuDeviceSpec>& specs) {
  if (!specs.empty()) {
    return absl::FailedPreconditionError(
        "this build of sluice has no CUDA support");
  }
  return std::vector<std::unique_ptr<GpuDevice>>();
}
#endif  // SLUICE_WITH_CUDA

}  // namespace sluice

#endif  // SLUICE_DEVICE_GPU_DEVICE_H_
