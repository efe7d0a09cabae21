// CudaGpuDevice: the GpuDevice of device/gpu_device.h on the CUDA runtime.
// An ArenaAllocator over cudaMalloc regions, four non-blocking streams,
// pinned double-buffered staging for host copies, and a cuBLAS handle.
#include <algorithm>
#include <atomic>
#include <set>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cublas_api.h"
#include "device/cuda/cuda_status.h"
#include "device/gpu_device.h"
#include "device/gpu_graph.h"
#include "device/parallel_memcpy.h"
#include "device/pinned_memory.h"

namespace sluice {
namespace {

constexpr size_t kStagingChunkBytes = size_t{64} << 20;
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

class CudaRegionSource final : public RegionSource {
 public:
  explicit CudaRegionSource(int ordinal) : ordinal_(ordinal) {}
  std::string Name() const override {
    return absl::StrCat("cudaMalloc on GPU ", ordinal_);
  }
  absl::StatusOr<void*> AllocateRegion(size_t bytes) override {
    ScopedCudaDevice on(ordinal_);
    RETURN_IF_ERROR(on.status());
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0;
      size_t total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      cudaGetLastError();
      return absl::ResourceExhaustedError(absl::StrCat(
          "cudaMalloc of ", bytes, " bytes (", FormatBytes(bytes),
          ") on GPU ", ordinal_, " failed: ", cudaGetErrorString(err), "; ",
          FormatBytes(static_cast<int64_t>(free_bytes)), " free of ",
          FormatBytes(static_cast<int64_t>(total))));
    }
    return p;
  }
  void FreeRegion(void* ptr, size_t /*bytes*/) override {
    ScopedCudaDevice on(ordinal_);
    cudaFree(ptr);
  }

 private:
  const int ordinal_;
};

// Two pinned buffers and the events that say when the GPU is done with them.
struct Staging {
  absl::Mutex mu;
  void* buffer[2] ABSL_GUARDED_BY(mu) = {nullptr, nullptr};
  cudaEvent_t done[2] ABSL_GUARDED_BY(mu) = {nullptr, nullptr};
  bool pending[2] ABSL_GUARDED_BY(mu) = {false, false};

  absl::Status EnsureLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (int b = 0; b < 2; ++b) {
      if (buffer[b] == nullptr) {
        RETURN_IF_CUDA_ERROR(cudaHostAlloc(&buffer[b], kStagingChunkBytes,
                                           cudaHostAllocPortable),
                             "allocating a pinned staging buffer");
      }
      if (done[b] == nullptr) {
        RETURN_IF_CUDA_ERROR(
            cudaEventCreateWithFlags(&done[b], cudaEventDisableTiming),
            "creating a staging event");
      }
    }
    return absl::OkStatus();
  }
  // Blocks until the GPU has finished with buffer `b`.
  absl::Status WaitLocked(int b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!pending[b]) return absl::OkStatus();
    pending[b] = false;
    return CudaStatus(cudaEventSynchronize(done[b]), "waiting for staging");
  }
  void FreeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    for (int b = 0; b < 2; ++b) {
      if (done[b] != nullptr) cudaEventSynchronize(done[b]);
      if (buffer[b] != nullptr) cudaFreeHost(buffer[b]);
      if (done[b] != nullptr) cudaEventDestroy(done[b]);
      buffer[b] = nullptr;
      done[b] = nullptr;
    }
  }
};

// Makes `waiter` wait for the work on `waitee` so far. An event must be
// created and recorded on the waitee's GPU: `waitee_gpu` names it when it is
// not the current one (a peer's stream); the waiter may be on any GPU.
absl::Status StreamWaitStream(cudaStream_t waiter, cudaStream_t waitee,
                              int waitee_gpu = -1) {
  if (waiter == waitee) return absl::OkStatus();
  int current = 0;
  RETURN_IF_CUDA_ERROR(cudaGetDevice(&current), "cudaGetDevice");
  const bool switch_gpu = waitee_gpu >= 0 && waitee_gpu != current;
  if (switch_gpu) {
    RETURN_IF_CUDA_ERROR(cudaSetDevice(waitee_gpu), "cudaSetDevice");
  }
  cudaEvent_t event = nullptr;
  absl::Status s = CudaStatus(
      cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
      "cudaEventCreate");
  if (s.ok()) s = CudaStatus(cudaEventRecord(event, waitee), "cudaEventRecord");
  if (switch_gpu) s.Update(CudaStatus(cudaSetDevice(current), "cudaSetDevice"));
  if (s.ok()) {
    s = CudaStatus(cudaStreamWaitEvent(waiter, event, 0), "cudaStreamWaitEvent");
  }
  cudaEventDestroy(event);  // released once the wait has been satisfied
  return s;
}

class CudaGpuDevice final : public GpuDevice {
 public:
  CudaGpuDevice(int index, const GpuDeviceSpec& spec, GpuInfo info,
                bool allow_growth, bool allow_tf32, bool use_cudnn,
                std::unique_ptr<ArenaAllocator> arena)
      : GpuDevice(index, spec.memory_limit),
        physical_(spec.physical_index),
        info_(std::move(info)),
        allow_growth_(allow_growth),
        allow_tf32_(allow_tf32),
        use_cudnn_(use_cudnn),
        arena_(std::move(arena)) {}

  ~CudaGpuDevice() override {
    ScopedCudaDevice on(physical_);
    Synchronize().IgnoreError();  // also drops the direct copies' sources
    DestroyResources();  // cuDNN handles, their workspaces: before the arena
    if (cublas_ != nullptr) api_->Destroy(cublas_);
    if (workspace_ != nullptr) arena_->Deallocate(workspace_, workspace_bytes_);
    for (cudaStream_t s : streams_) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
    {
      absl::MutexLock lock(&h2d_.mu);
      h2d_.FreeLocked();
    }
    absl::MutexLock lock(&d2h_.mu);
    d2h_.FreeLocked();
  }

  // Streams, cuBLAS handle and workspace. Called once, by the factory.
  absl::Status Init() {
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    for (cudaStream_t& s : streams_) {
      RETURN_IF_CUDA_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                           absl::StrCat(name(), ": creating a stream"));
    }
    ASSIGN_OR_RETURN(api_, LoadCublas());
    RETURN_IF_ERROR(CublasStatus(api_->Create(&cublas_), "cublasCreate"));
    RETURN_IF_ERROR(CublasStatus(api_->SetStream(cublas_, Raw(GpuStream::kCompute)),
                                 "cublasSetStream"));
    workspace_bytes_ = std::min<size_t>(
        kCublasWorkspaceBytes,
        static_cast<size_t>(memory_limit() / 16) / 256 * 256);
    if (workspace_bytes_ > 0) {
      ASSIGN_OR_RETURN(workspace_, arena_->Allocate(workspace_bytes_));
      RETURN_IF_ERROR(CublasStatus(
          api_->SetWorkspace(cublas_, workspace_, workspace_bytes_),
          "cublasSetWorkspace"));
    }
    return CublasStatus(
        api_->SetMathMode(cublas_, allow_tf32_ ? CUBLAS_TF32_TENSOR_OP_MATH
                                               : CUBLAS_DEFAULT_MATH),
        "cublasSetMathMode");
  }

  // Copies use the copy streams and host staging, which a CUDA graph of the
  // compute stream cannot replay (device/gpu_graph.h): on the thread that
  // records the compute stream they fail, and so does the recording. A
  // copy from another thread holds capture_mutex() shared, so it waits for
  // a recording to end, and a recording waits for the copies in flight.
  absl::Status RefuseWhileCapturing(const char* what) const {
    if (!CapturingOnThisThread(this)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        what, " on ", name(),
        " while its compute stream is being captured as a CUDA graph"));
  }

  Allocator* allocator() override { return arena_.get(); }
  ArenaAllocator* arena() override { return arena_.get(); }
  int physical_index() const override { return physical_; }
  const GpuInfo& info() const override { return info_; }
  bool allow_growth() const override { return allow_growth_; }
  bool allow_tf32() const override { return allow_tf32_; }
  bool use_cudnn() const override { return use_cudnn_; }
  void* stream(GpuStream which) const override { return Raw(which); }
  void* cublas_handle() const override { return cublas_; }
  absl::Status SetCublasWorkspace(void* workspace, size_t bytes) override {
    if (workspace == nullptr || bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name(), ": SetCublasWorkspace needs a workspace of at least 1 byte"));
    }
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    return CublasStatus(api_->SetWorkspace(cublas_, workspace, bytes),
                        absl::StrCat(name(), ": cublasSetWorkspace"));
  }
  absl::Status ResetCublasWorkspace() override {
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    if (workspace_ == nullptr) {  // Init set none: cuBLAS's default pool,
      return CublasStatus(       // which cublasSetStream restores
          api_->SetStream(cublas_, Raw(GpuStream::kCompute)),
          absl::StrCat(name(), ": cublasSetStream"));
    }
    return CublasStatus(
        api_->SetWorkspace(cublas_, workspace_, workspace_bytes_),
        absl::StrCat(name(), ": cublasSetWorkspace"));
  }
  size_t cublas_workspace_bytes() const override { return workspace_bytes_; }
  absl::Status MakeCurrent() const override {
    return CudaStatus(cudaSetDevice(physical_), "cudaSetDevice");
  }

  absl::Status CopyHostToDevice(const Tensor& src, Tensor* dst) override {
    RETURN_IF_ERROR(RefuseWhileCapturing("CopyHostToDevice"));
    absl::ReaderMutexLock not_recorded(&capture_mutex());
    RETURN_IF_ERROR(CheckCopy(src, *dst, /*src_on_host=*/true,
                              /*dst_on_host=*/false, "CopyHostToDevice"));
    const size_t n = src.bytes();
    if (n == 0) return absl::OkStatus();
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    ReapDirectSources();
    if (IsPageLocked(src)) return CopyPageLockedToDevice(src, dst);
    to_device_staged_.fetch_add(1, std::memory_order_relaxed);
    cudaStream_t h2d = Raw(GpuStream::kHostToDevice);
    absl::MutexLock lock(&h2d_.mu);
    RETURN_IF_ERROR(h2d_.EnsureLocked());
    RETURN_IF_ERROR(StreamWaitStream(h2d, Raw(GpuStream::kCompute)));
    const char* from = static_cast<const char*>(src.raw_data());
    char* to = static_cast<char*>(dst->raw_data());
    int b = 0;
    for (size_t off = 0; off < n; off += kStagingChunkBytes, b ^= 1) {
      const size_t len = std::min(kStagingChunkBytes, n - off);
      RETURN_IF_ERROR(h2d_.WaitLocked(b));
      ParallelMemcpy(h2d_.buffer[b], from + off, len);
      RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(to + off, h2d_.buffer[b], len,
                                           cudaMemcpyHostToDevice, h2d),
                           absl::StrCat(name(), ": host-to-device copy"));
      RETURN_IF_CUDA_ERROR(cudaEventRecord(h2d_.done[b], h2d),
                           "cudaEventRecord");
      h2d_.pending[b] = true;
    }
    return StreamWaitStream(Raw(GpuStream::kCompute), h2d);
  }

  absl::Status CopyDeviceToHost(const Tensor& src, Tensor* dst) override {
    RETURN_IF_ERROR(RefuseWhileCapturing("CopyDeviceToHost"));
    absl::ReaderMutexLock not_recorded(&capture_mutex());
    RETURN_IF_ERROR(CheckCopy(src, *dst, /*src_on_host=*/false,
                              /*dst_on_host=*/true, "CopyDeviceToHost"));
    const size_t n = src.bytes();
    if (n == 0) return absl::OkStatus();
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    if (IsPageLocked(*dst)) return CopyDeviceToPageLocked(src, dst);
    to_host_staged_.fetch_add(1, std::memory_order_relaxed);
    cudaStream_t d2h = Raw(GpuStream::kDeviceToHost);
    absl::MutexLock lock(&d2h_.mu);
    RETURN_IF_ERROR(d2h_.EnsureLocked());
    RETURN_IF_ERROR(StreamWaitStream(d2h, Raw(GpuStream::kCompute)));
    const char* from = static_cast<const char*>(src.raw_data());
    char* to = static_cast<char*>(dst->raw_data());
    const size_t chunks = (n + kStagingChunkBytes - 1) / kStagingChunkBytes;
    // Called only below, with d2h_.mu held; the annotation tells the
    // analysis so.
    auto enqueue = [&](size_t c)
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(d2h_.mu) -> absl::Status {
      const size_t off = c * kStagingChunkBytes;
      const size_t len = std::min(kStagingChunkBytes, n - off);
      const int b = static_cast<int>(c % 2);
      RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(d2h_.buffer[b], from + off, len,
                                           cudaMemcpyDeviceToHost, d2h),
                           absl::StrCat(name(), ": device-to-host copy"));
      RETURN_IF_CUDA_ERROR(cudaEventRecord(d2h_.done[b], d2h), "cudaEventRecord");
      d2h_.pending[b] = true;
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(enqueue(0));
    for (size_t c = 0; c < chunks; ++c) {
      if (c + 1 < chunks) RETURN_IF_ERROR(enqueue(c + 1));
      const int b = static_cast<int>(c % 2);
      RETURN_IF_ERROR(d2h_.WaitLocked(b));
      const size_t off = c * kStagingChunkBytes;
      ParallelMemcpy(to + off, d2h_.buffer[b],
                     std::min(kStagingChunkBytes, n - off));
    }
    return absl::OkStatus();
  }

  absl::Status CopyDeviceToDevice(const Tensor& src, GpuDevice* dst_device,
                                  Tensor* dst) override {
    RETURN_IF_ERROR(RefuseWhileCapturing("CopyDeviceToDevice"));
    auto* peer = dynamic_cast<CudaGpuDevice*>(dst_device);
    if (peer == nullptr) {
      return absl::InvalidArgumentError(
          "CopyDeviceToDevice: the destination is not a CUDA GPU device");
    }
    RETURN_IF_ERROR(peer->RefuseWhileCapturing("CopyDeviceToDevice"));
    // Both devices' recordings wait, their locks taken in one order (by
    // address) whichever way the copy goes, so copies in both directions
    // cannot deadlock with a recording.
    absl::Mutex* first = &capture_mutex();
    absl::Mutex* second = peer != this ? &peer->capture_mutex() : nullptr;
    if (second != nullptr && std::less<absl::Mutex*>()(second, first)) {
      std::swap(first, second);
    }
    absl::ReaderMutexLock not_recorded(first);
    std::optional<absl::ReaderMutexLock> peer_not_recorded;
    if (second != nullptr) peer_not_recorded.emplace(second);
    if (!HoldsMemoryOf(src) || !peer->HoldsMemoryOf(*dst) ||
        src.bytes() != dst->bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CopyDeviceToDevice ", name(), " -> ", peer->name(), ": ",
          src.DebugString(0), " -> ", dst->DebugString(0),
          " (tensors must live on the two devices and have equal sizes)"));
    }
    const size_t n = src.bytes();
    if (n == 0) return absl::OkStatus();
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    cudaStream_t d2d = Raw(GpuStream::kDeviceToDevice);
    cudaStream_t src_compute = Raw(GpuStream::kCompute);
    cudaStream_t dst_compute = peer->Raw(GpuStream::kCompute);
    RETURN_IF_ERROR(StreamWaitStream(d2d, src_compute));
    RETURN_IF_ERROR(StreamWaitStream(d2d, dst_compute, peer->physical_));
    if (peer->physical_ == physical_) {
      RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst->raw_data(), src.raw_data(), n,
                                           cudaMemcpyDeviceToDevice, d2d),
                           absl::StrCat(name(), " -> ", peer->name(), " copy"));
    } else {
      RETURN_IF_CUDA_ERROR(
          cudaMemcpyPeerAsync(dst->raw_data(), peer->physical_, src.raw_data(),
                              physical_, n, d2d),
          absl::StrCat(name(), " -> ", peer->name(), " peer copy"));
    }
    RETURN_IF_ERROR(StreamWaitStream(src_compute, d2d));
    return StreamWaitStream(dst_compute, d2d);
  }

  absl::Status StreamWait(GpuStream waiter, GpuStream waitee) override {
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    return StreamWaitStream(Raw(waiter), Raw(waitee));
  }

  absl::Status Synchronize() override {
    ScopedCudaDevice on(physical_);
    RETURN_IF_ERROR(on.status());
    absl::Status result;
    for (cudaStream_t s : streams_) {
      if (s == nullptr) continue;
      absl::Status st = CudaStatus(cudaStreamSynchronize(s),
                                   absl::StrCat(name(), ": synchronize"));
      if (result.ok()) result = st;
    }
    // Every DMA is done now. Dropping a source may free page-locked memory
    // (cudaFreeHost synchronises), which a recording of this GPU on another
    // thread would not survive: wait for it to end, as copies do. (The
    // recording thread itself never gets here with a capture open: a
    // synchronisation would have failed the capture.)
    if (!CapturingOnThisThread(this)) {
      absl::ReaderMutexLock not_recorded(&capture_mutex());
      ReapDirectSources();
    }
    return result;
  }

  HostCopyStats host_copy_stats() const override {
    HostCopyStats s;
    s.to_device_direct = to_device_direct_.load(std::memory_order_relaxed);
    s.to_device_staged = to_device_staged_.load(std::memory_order_relaxed);
    s.to_host_direct = to_host_direct_.load(std::memory_order_relaxed);
    s.to_host_staged = to_host_staged_.load(std::memory_order_relaxed);
    return s;
  }

  AllocatorStats allocator_stats() const override { return arena_->GetStats(); }
  int64_t ReleaseUnusedMemory() override {
    // cudaFree synchronizes the device, which a recording on another thread
    // would not survive: wait for it to end, as copies do.
    absl::ReaderMutexLock not_recorded(&capture_mutex());
    return arena_->ReleaseUnused();
  }

 private:
  cudaStream_t Raw(GpuStream which) const {
    return streams_[static_cast<int>(which)];
  }

  // Host -> device by one DMA from page-locked `src`, no staging. The copy
  // stream waits for the compute stream (dst may be memory a kernel just
  // freed) and the compute stream for the copy; `src`'s buffer is kept
  // until an event after the DMA has completed (ReapDirectSources), so the
  // caller may drop it at once. GPU current, capture_mutex() held shared.
  absl::Status CopyPageLockedToDevice(const Tensor& src, Tensor* dst) {
    cudaStream_t h2d = Raw(GpuStream::kHostToDevice);
    cudaStream_t compute = Raw(GpuStream::kCompute);
    RETURN_IF_ERROR(StreamWaitStream(h2d, compute));
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst->raw_data(), src.raw_data(),
                                         src.bytes(), cudaMemcpyHostToDevice,
                                         h2d),
                         absl::StrCat(name(), ": host-to-device copy from "
                                              "page-locked memory"));
    cudaEvent_t done = nullptr;
    RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                         "cudaEventCreate");
    absl::Status recorded =
        CudaStatus(cudaEventRecord(done, h2d), "cudaEventRecord");
    if (!recorded.ok()) {
      // Without the event, wait here for the DMA before letting src go.
      cudaEventDestroy(done);
      recorded.Update(CudaStatus(cudaStreamSynchronize(h2d),
                                 absl::StrCat(name(), ": host-to-device copy")));
      return recorded;
    }
    {
      absl::MutexLock lock(&direct_mu_);
      direct_sources_.push_back({done, src.buffer()});
    }
    to_device_direct_.fetch_add(1, std::memory_order_relaxed);
    return StreamWaitStream(compute, h2d);
  }

  // Device -> host by one DMA into page-locked `dst`, no staging; returns
  // when the bytes are there. GPU current, capture_mutex() held shared.
  absl::Status CopyDeviceToPageLocked(const Tensor& src, Tensor* dst) {
    cudaStream_t d2h = Raw(GpuStream::kDeviceToHost);
    RETURN_IF_ERROR(StreamWaitStream(d2h, Raw(GpuStream::kCompute)));
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst->raw_data(), src.raw_data(),
                                         src.bytes(), cudaMemcpyDeviceToHost,
                                         d2h),
                         absl::StrCat(name(), ": device-to-host copy into "
                                              "page-locked memory"));
    cudaEvent_t done = nullptr;
    RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                         "cudaEventCreate");
    absl::Status s = CudaStatus(cudaEventRecord(done, d2h), "cudaEventRecord");
    if (s.ok()) {
      s = CudaStatus(cudaEventSynchronize(done),
                     absl::StrCat(name(), ": device-to-host copy"));
    } else {
      s = CudaStatus(cudaStreamSynchronize(d2h),
                     absl::StrCat(name(), ": device-to-host copy"));
    }
    cudaEventDestroy(done);
    if (s.ok()) to_host_direct_.fetch_add(1, std::memory_order_relaxed);
    return s;
  }

  // Lets go of the sources of direct copies whose DMA has completed. The
  // buffers are dropped after the lock is released: dropping one may run a
  // caller's release (external memory) or cudaFreeHost. GPU current, and
  // capture_mutex() held shared (no recording of this GPU in progress).
  void ReapDirectSources() {
    std::vector<std::shared_ptr<Buffer>> done;
    {
      absl::MutexLock lock(&direct_mu_);
      for (auto it = direct_sources_.begin(); it != direct_sources_.end();) {
        const cudaError_t state = cudaEventQuery(it->done);
        if (state == cudaErrorNotReady) {
          cudaGetLastError();  // not an error: still in flight
          ++it;
          continue;
        }
        if (state != cudaSuccess) cudaGetLastError();  // reported elsewhere
        cudaEventDestroy(it->done);
        done.push_back(std::move(it->source));
        it = direct_sources_.erase(it);
      }
    }
  }

  absl::Status CheckCopy(const Tensor& src, const Tensor& dst,
                         bool src_on_host, bool dst_on_host,
                         std::string_view what) {
    auto where_ok = [&](const Tensor& t, bool on_host) {
      return t.valid() && (on_host ? t.on_host() : HoldsMemoryOf(t));
    };
    if (!where_ok(src, src_on_host) || !where_ok(dst, dst_on_host) ||
        src.bytes() != dst.bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          absl::string_view(what.data(), what.size()), " on ", name(), ": ",
          src.DebugString(0), " -> ", dst.DebugString(0), " (expected ",
          src_on_host ? "host" : name(), " -> ", dst_on_host ? "host" : name(),
          " tensors of equal size)"));
    }
    return absl::OkStatus();
  }

  // Fixed at construction (streams_, cublas_ and the workspace in Init).
  const int physical_;
  const GpuInfo info_;
  const bool allow_growth_;
  const bool allow_tf32_;
  const bool use_cudnn_;
  const std::unique_ptr<ArenaAllocator> arena_;
  cudaStream_t streams_[4] = {nullptr, nullptr, nullptr, nullptr};
  const CublasApi* api_ = nullptr;  // set with cublas_
  cublasHandle_t cublas_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;

  Staging h2d_;
  Staging d2h_;

  // Sources of host-to-device copies from page-locked memory whose DMA may
  // still be reading them, each with the event recorded after it.
  struct DirectSource {
    cudaEvent_t done = nullptr;
    std::shared_ptr<Buffer> source;
  };
  absl::Mutex direct_mu_;
  std::vector<DirectSource> direct_sources_ ABSL_GUARDED_BY(direct_mu_);
  std::atomic<int64_t> to_device_direct_{0};
  std::atomic<int64_t> to_device_staged_{0};
  std::atomic<int64_t> to_host_direct_{0};
  std::atomic<int64_t> to_host_staged_{0};
};

// Peer access is a property of the process (of its CUDA contexts), not of a
// session: each ordered pair is enabled once, so a second session (and the
// sanitizer) never sees cudaErrorPeerAccessAlreadyEnabled.
absl::Mutex peer_mu(absl::kConstInit);
std::set<std::pair<int, int>>& EnabledPeers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(peer_mu) {
  static auto* const kEnabled = new std::set<std::pair<int, int>>();
  return *kEnabled;
}

absl::Status EnablePeerAccess(const std::vector<GpuDeviceSpec>& specs) {
  absl::MutexLock lock(&peer_mu);
  std::vector<int> physical;
  for (const GpuDeviceSpec& s : specs) {
    if (std::find(physical.begin(), physical.end(), s.physical_index) ==
        physical.end()) {
      physical.push_back(s.physical_index);
    }
  }
  for (int a : physical) {
    for (int b : physical) {
      if (a == b) continue;
      int can = 0;
      if (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || !can) {
        cudaGetLastError();
        continue;  // peer copies then go through the host, driver-staged
      }
      if (EnabledPeers().count({a, b}) > 0) continue;
      ScopedCudaDevice on(a);
      RETURN_IF_ERROR(on.status());
      cudaError_t err = cudaDeviceEnablePeerAccess(b, 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // enabled outside sluice: fine
      } else {
        RETURN_IF_CUDA_ERROR(err, absl::StrCat("enabling peer access GPU ", a,
                                               " -> GPU ", b));
      }
      EnabledPeers().insert({a, b});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>> CreateFromSpecs(
    const RuntimeConfig& config, const std::vector<GpuDeviceSpec>& specs,
    const DeviceInventory& inv) {
  std::vector<std::unique_ptr<GpuDevice>> devices;
  // Memory growth is the default (as in PyTorch, and TensorFlow 2 with
  // memory growth on): an arena reserves regions on demand, up to its limit.
  const bool growth = !config.has_allow_growth() || config.allow_growth();
  for (size_t i = 0; i < specs.size(); ++i) {
    const GpuDeviceSpec& spec = specs[i];
    if (spec.physical_index < 0 ||
        spec.physical_index >= static_cast<int>(inv.gpus.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("no GPU ", spec.physical_index, " (",
                       inv.gpus.size(), " visible)"));
    }
    const int index = spec.index >= 0 ? spec.index : static_cast<int>(i);
    const std::string name = absl::StrCat("/gpu:", index);
    ASSIGN_OR_RETURN(
        std::unique_ptr<ArenaAllocator> arena,
        ArenaAllocator::Create(
            {.name = name, .limit = spec.memory_limit, .allow_growth = growth},
            std::make_unique<CudaRegionSource>(spec.physical_index)));
    auto device = std::make_unique<CudaGpuDevice>(
        index, spec, inv.gpus[spec.physical_index], growth,
        config.allow_tf32(),
        config.has_use_cudnn() ? config.use_cudnn() : kUseCudnnByDefault,
        std::move(arena));
    RETURN_IF_ERROR(device->Init());
    devices.push_back(std::move(device));
  }
  RETURN_IF_ERROR(EnablePeerAccess(specs));
  return devices;
}

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>> CreateGpuDevicesFromSpecs(
    const RuntimeConfig& config, const std::vector<GpuDeviceSpec>& specs) {
  if (specs.empty()) return std::vector<std::unique_ptr<GpuDevice>>();
  return CreateFromSpecs(config, specs, DiscoverDevices());
}

absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>> CreateGpuDevices(
    const RuntimeConfig& config) {
  if (config.has_use_gpu() && !config.use_gpu()) {
    return std::vector<std::unique_ptr<GpuDevice>>();
  }
  DeviceInventory inv = DiscoverDevices();
  if (inv.gpus.empty()) {
    if (config.visible_gpus_size() > 0 || config.gpu_size() > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the config names GPUs but none can be used: ", inv.no_gpu_reason));
    }
    return std::vector<std::unique_ptr<GpuDevice>>();
  }
  ASSIGN_OR_RETURN(std::vector<GpuDeviceSpec> specs,
                   PlanGpuDevices(config, inv.gpus));
  return CreateFromSpecs(config, specs, inv);
}

}  // namespace sluice
