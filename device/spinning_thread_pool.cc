// SpinningThreadPool: one locked queue; idle workers poll its size, then
// sleep on the mutex's condition.
#include "device/spinning_thread_pool.h"

#include <chrono>
#include <utility>

namespace sluice {
namespace {

thread_local const SpinningThreadPool* current_pool = nullptr;
thread_local int current_index = -1;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

SpinningThreadPool::SpinningThreadPool(int num_threads) {
  workers_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

SpinningThreadPool::~SpinningThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

void SpinningThreadPool::Schedule(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(fn));
  queued_.fetch_add(1, std::memory_order_release);
}

int SpinningThreadPool::NumThreads() const {
  return static_cast<int>(workers_.size());
}

int SpinningThreadPool::CurrentThreadId() const {
  return current_pool == this ? current_index : -1;
}

bool SpinningThreadPool::TryPop(std::function<void()>* fn) {
  absl::MutexLock lock(&mu_);
  if (queue_.empty()) return false;
  *fn = std::move(queue_.front());
  queue_.pop_front();
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void SpinningThreadPool::WorkerLoop(int index) {
  current_pool = this;
  current_index = index;
  std::function<void()> fn;
  while (true) {
    if (TryPop(&fn)) {
      fn();
      fn = nullptr;
      continue;
    }
    // Poll for kSpinMicros (checking the clock every 64 polls), then sleep
    // until a task is queued or the pool stops.
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::microseconds(kSpinMicros);
    bool found = false;
    for (int polls = 1; !found; ++polls) {
      if (queued_.load(std::memory_order_acquire) > 0) {
        found = true;
      } else if (polls % 64 == 0 && std::chrono::steady_clock::now() > until) {
        break;
      } else {
        CpuRelax();
      }
    }
    if (found) continue;
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &SpinningThreadPool::HasWorkOrStop));
    if (queue_.empty() && stop_) return;
  }
}

}  // namespace sluice
