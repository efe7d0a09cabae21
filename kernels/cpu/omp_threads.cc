// OpenMP teams and the machine's cores they share (kernels/cpu/omp_threads.h).
#include "kernels/cpu/omp_threads.h"

#include <algorithm>
#include <optional>
#include <thread>

#if SLUICE_HAVE_ONEDNN_CONV
#ifndef _OPENMP
#error "omp_threads.cc needs OpenMP (-fopenmp, kernels/CMakeLists.txt)"
#endif
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
bool RunOnOmpTeam(int threads, absl::FunctionRef<void()> work) {
  (void)threads, (void)work;
  return false;
}
bool InOmpTeam() { return false; }
bool OmpTeamsBuiltIn() { return false; }
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

  int cores() const { return cores_; }

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

// The team size of the OmpThreads scope this thread is in; 0 outside one.
thread_local int team_on_this_thread = 0;

}  // namespace

OmpThreads::OmpThreads(int threads)
    : on_(threads > 1 && omp_get_level() == 0) {
  SerialOnThisThread();
  if (!on_) return;
  held_ = CoreBudget::Get().Acquire(threads);
  omp_set_num_threads(threads);
  team_on_this_thread = threads;
}

OmpThreads::~OmpThreads() {
  if (!on_) return;
  team_on_this_thread = 0;
  omp_set_num_threads(1);
  CoreBudget::Get().Release(held_);
}

bool InOmpTeam() { return omp_get_level() > 0; }
bool OmpTeamsBuiltIn() { return true; }

bool RunOnOmpTeam(int threads, absl::FunctionRef<void()> work) {
  std::optional<OmpThreads> scope;
  if (team_on_this_thread > 0) {
    threads = team_on_this_thread;
  } else {
    threads = std::min(threads, CoreBudget::Get().cores());
    scope.emplace(threads);
  }
#pragma omp parallel num_threads(threads)
  work();
  return true;
}

int OmpCoresFree() { return CoreBudget::Get().free(); }


#endif  // SLUICE_HAVE_ONEDNN_CONV

}  // namespace sluice::cpu
