// SpinningThreadPool: the CPU device's intra-op pool. An Eigen
// ThreadPoolInterface whose idle workers keep polling for work for a while
// (kSpinMicros) before they sleep, as onnxruntime's intra-op threads do, so
// that the next parallel region of a step (the next kernel, a
// convolution's next phase) finds them running instead of paying a wake-up
// per worker, and so that the OS does not hand their cores to other work
// between two kernels.
//
//   SpinningThreadPool pool(/*num_threads=*/8);
//   Eigen::ThreadPoolDevice device(&pool, pool.NumThreads());
//   pool.Schedule([] { /* runs on a worker */ });
//
// Thread-safe: Schedule may be called from any thread, workers included.
// The destructor runs the tasks still queued, then joins the workers.
#ifndef SLUICE_DEVICE_SPINNING_THREAD_POOL_H_
#define SLUICE_DEVICE_SPINNING_THREAD_POOL_H_

#include <atomic>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "unsupported/Eigen/CXX11/ThreadPool"

namespace sluice {

class SpinningThreadPool final : public Eigen::ThreadPoolInterface {
 public:
  // How long an idle worker polls before it sleeps.
  static constexpr int kSpinMicros = 200;

  explicit SpinningThreadPool(int num_threads);
  ~SpinningThreadPool() override;
  SpinningThreadPool(const SpinningThreadPool&) = delete;
  SpinningThreadPool& operator=(const SpinningThreadPool&) = delete;

  void Schedule(std::function<void()> fn) override;
  int NumThreads() const override;
  // The worker's index in [0, NumThreads()), or -1 off the pool.
  int CurrentThreadId() const override;

 private:
  void WorkerLoop(int index);
  // Pops a task if one is queued.
  bool TryPop(std::function<void()>* fn);
  bool HasWorkOrStop() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stop_;
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // queue_.size(), readable without the lock while spinning.
  std::atomic<int> queued_{0};
  // Fixed after construction.
  std::vector<std::thread> workers_;
};

}  // namespace sluice

#endif  // SLUICE_DEVICE_SPINNING_THREAD_POOL_H_
