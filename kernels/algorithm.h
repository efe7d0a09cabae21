// Algorithm: one way to run one kind of problem, as CUTLASS's operations
// are: whether it can implement a call, the workspace the call needs, and
// running it. A library's kernel (cuDNN's convolutions, cuBLASLt's matrix
// products) offers the candidates of a problem as Algorithms, and the
// device's AlgorithmCache (algorithm_cache.h) times them once per problem
// and keeps the fastest. CUDA-free: `Call` is the library's own struct (its
// problem, pointers and per-problem state).
//
//   class GemmAlgorithm final : public Algorithm<ConvCall> {
//     std::string Name(const ConvCall&) const override { return "gemm"; }
//     absl::Status CanImplement(const ConvCall& c) const override {...}
//     int64_t WorkspaceBytes(const ConvCall&) const override { return 0; }
//     absl::Status Run(const ConvCall& c, void* ws) const override {...}
//   };
//   ASSIGN_OR_RETURN(AlgorithmCache::Ran ran,
//                    cache->Run(key, {&gemm, &direct}, call, options, &device));
//
// Thread-safety: an Algorithm holds no state of its own; what a problem
// learns lives in the Call, which the caller guards.
#ifndef SLUICE_KERNELS_ALGORITHM_H_
#define SLUICE_KERNELS_ALGORITHM_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace sluice {

template <typename Call>
class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // A short name for timings and diagnostics ("plain algo 1", "gemm").
  virtual std::string Name(const Call& call) const = 0;
  // OK when it can run `call`; otherwise why not (not an error: the next
  // candidate is tried).
  virtual absl::Status CanImplement(const Call& call) const = 0;
  // Bytes of workspace Run needs. REQUIRES: CanImplement is OK.
  virtual int64_t WorkspaceBytes(const Call& call) const = 0;
  // Candidates of one group (>= 0) are alternatives the library has ranked
  // already, best first (cuDNN's algorithms, as cudnnFind timed them): the
  // cache times only the first of a group that runs. -1: no group.
  virtual int RankedGroup() const { return -1; }
  // Enqueues `call` with `workspace` (WorkspaceBytes bytes; null when 0).
  // UNIMPLEMENTED or FAILED_PRECONDITION: it refused (nothing written that
  // matters), the next candidate runs; other errors are failures.
  virtual absl::Status Run(const Call& call, void* workspace) const = 0;
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_ALGORITHM_H_
