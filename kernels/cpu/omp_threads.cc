// OpenMP teams and the machine's cores they share (kernels/cpu/omp_threads.h).
#include "kernels/cpu/omp_threads.h"

#include <algorithm>
#include <thread>

#if SLUICE_HAVE_ONEDNN_CONV
#include <omp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kernels/cpu/onednn_runtime.h"
#endif

namespace sluice::cpu {

#if !SLUICE_HAVE_ONEDNN_CONV

// No OpenMP teams without oneDNN.
OmpThreads::OmpThreads(int threads) : on_(false) { (void)threads; }
OmpThreads::~OmpThreads() { (void)on_, (void)held_; }
int OmpCoresFree() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

#else

namespace {

// The machine's cores handed out to OpenMP teams (OmpThreads).
class CoreBudget {
 public:
  static CoreBudget& Get() {
    static CoreBudget* budget = new CoreBudget(static_cast<int>(
        std::max(1u, std::thread::hardware_concurrency())));
    return *budget;
  }

  // Takes min(want, cores) cores, waiting while fewer are free; returns
  // how many it took.
  int Acquire(int want) {
    const int n = std::min(want, cores_);
    absl::MutexLock lock(&mu_);
    while (free_ < n) cv_.Wait(&mu_);
    free_ -= n;
    return n;
  }

  void Release(int n) {
    absl::MutexLock lock(&mu_);
    free_ += n;
    cv_.SignalAll();
  }

  int free() {
    absl::MutexLock lock(&mu_);
    return free_;
  }

 private:
  explicit CoreBudget(int cores) : cores_(cores), free_(cores) {}

  const int cores_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  int free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

OmpThreads::OmpThreads(int threads) : on_(threads > 1) {
  SerialOnThisThread();
  if (!on_) return;
  held_ = CoreBudget::Get().Acquire(threads);
  omp_set_num_threads(threads);
}

OmpThreads::~OmpThreads() {
  if (!on_) return;
  omp_set_num_threads(1);
  CoreBudget::Get().Release(held_);
}

int OmpCoresFree() { return CoreBudget::Get().free(); }


#endif  // SLUICE_HAVE_ONEDNN_CONV

}  // namespace sluice::cpu
