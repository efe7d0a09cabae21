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

#include "absl/functional/function_ref.h"

namespace sluice::cpu {

// From this many intra-op threads up, every parallel region (RunBlocks,
// parallel.h) runs on RunOnOmpTeam's team of fixed size, the workers
// oneDNN's convolutions run on from 3 threads (onednn_conv_nhwc.cc), so
// that one set of workers, not two, waits for work between nodes. Below
// it, regions run on the pool's threads (design decision 66).
inline constexpr int kLeastThreadsForTeamRegions = 8;

// While alive, oneDNN calls from this thread run on an OpenMP team of
// `threads` (when threads > 1); back to 1 when it goes. Teams are admitted
// while the cores they ask for (at most all of them each) fit the
// machine's (hardware_concurrency) together: a team that does not fit
// waits for others to end, so convolutions of concurrent steps (Run from
// two threads, two sessions) take turns at the cores instead of
// oversubscribing them (an OpenMP team waits at its barriers for its
// slowest thread). Inside an OpenMP team (a block of RunOnOmpTeam) it does
// nothing: oneDNN runs serially there. Must not be nested on one thread.
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

// Runs work() once on each thread of an OpenMP team of min(threads,
// cores) (the calling thread one of them) and returns when all have
// returned; the team is admitted like an OmpThreads scope, or is the size
// of the scope this thread holds. libgomp keeps a master thread's workers
// for its next team of the same size, so a fixed `threads` starts no
// thread after the first call (design decision 66). Returns false, having
// run nothing, in a build without OpenMP teams (OmpTeamsBuiltIn). Not
// inside a team's work (InOmpTeam).
bool RunOnOmpTeam(int threads, absl::FunctionRef<void()> work);

// Whether this thread is running a team's work (RunOnOmpTeam's, or
// oneDNN's); false in a build without OpenMP teams.
bool InOmpTeam();

// Whether this build runs OpenMP teams (built with oneDNN and its OpenMP):
// without, OmpThreads does nothing and RunOnOmpTeam returns false.
bool OmpTeamsBuiltIn();

// How many cores no OmpThreads holds now (tests).
int OmpCoresFree();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_OMP_THREADS_H_
