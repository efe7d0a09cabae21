// OmpThreads: the scope in which a oneDNN call runs on an OpenMP team
// (kernels/cpu/onednn_conv_nhwc.h), and the machine's cores those teams
// share (omp_threads.cc). Free of
// oneDNN's headers; in a build without oneDNN it does nothing.
//
//   {
//     OmpThreads team(threads);   // may wait for other teams' cores
//     primitive.execute(...);     // on a team of `threads`
//   }                              // this thread back to one OpenMP thread
#ifndef SLUICE_KERNELS_CPU_OMP_THREADS_H_
#define SLUICE_KERNELS_CPU_OMP_THREADS_H_

namespace sluice::cpu {

// While alive, oneDNN calls from this thread run on an OpenMP team of
// `threads` (when threads > 1); back to 1 when it goes. Teams are admitted
// while the cores they ask for (at most all of them each) fit the
// machine's (hardware_concurrency) together: a team that does not fit
// waits for others to end, so convolutions of concurrent steps (Run from
// two threads, two sessions) take turns at the cores instead of
// oversubscribing them (an OpenMP team waits at its barriers for its
// slowest thread). Must not be nested on one thread.
class OmpThreads {
 public:
  explicit OmpThreads(int threads);
  ~OmpThreads();
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  const bool on_;
  int held_ = 0;  // cores taken from the budget
};

// How many cores no OmpThreads holds now (tests).
int OmpCoresFree();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_OMP_THREADS_H_
