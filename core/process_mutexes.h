// UseReleaseMutexes: turns off Abseil's mutex deadlock detection for this
// process. Abseil runs it on every Mutex::Lock when it was built without
// NDEBUG, as Debian's libabsl is: each lock looks the mutex up in a graph
// under a process-wide lock (GraphCycles::GetId) and records a stack, about
// 7% of a small convolution's cost a node on the CPU (bench/RESULTS.md,
// 2026-12-06), and a point where every thread of every step meets.
//
//   int main(int argc, char** argv) {
//     sluice::UseReleaseMutexes();
//     ...
//   }
//
// The setting is the process's, so the library never calls this: the
// processes sluice owns do (the `sluice` command, the Python module, the
// executor and soak benchmarks), and a C++ program embedding sluice may. Tests do not, so
// a lock-order cycle still aborts them. Thread-safe; call before the
// first session for the whole effect.
#ifndef SLUICE_CORE_PROCESS_MUTEXES_H_
#define SLUICE_CORE_PROCESS_MUTEXES_H_

namespace sluice {

void UseReleaseMutexes();

}  // namespace sluice

#endif  // SLUICE_CORE_PROCESS_MUTEXES_H_
