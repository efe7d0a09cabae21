// AlgorithmCache: per device, which of a problem's candidate algorithms
// (algorithm.h) runs it. The first call of a problem that may be timed
// runs every candidate that can implement it within the workspace limit,
// times it and keeps the candidates fastest first; every call then runs
// the first in that order that can implement it, whose workspace the
// device can give now and that does not refuse. cuDNN's convolution paths
// (cuda/cudnn_conv.cc) and cuBLASLt's matrix products
// (cuda/cublaslt_matmul.cc) share one per GPU (cuda/gpu_algorithm_cache.h
// supplies its Device: the arena's workspace, CUDA event timing).
// CUDA-free, so its logic is tested with fake algorithms on any machine.
//
//   AlgorithmCache::Options options;
//   options.library = "cuBLASLt";
//   options.max_workspace_bytes = 32 << 20;
//   ASSIGN_OR_RETURN(AlgorithmCache::Ran ran,
//                    cache->Run(key, algorithms, call, options, &device));
//   if (ran.index < 0) return refuse(ran.why_not);  // none could run it
//
// Thread-safe: calls may come from any thread. REQUIRES: calls with one
// key are serialised by the caller (the library's handle mutex), and pass
// the same candidates in the same order while that key's choice stands.
#ifndef SLUICE_KERNELS_ALGORITHM_CACHE_H_
#define SLUICE_KERNELS_ALGORITHM_CACHE_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "kernels/algorithm.h"

namespace sluice {

// One candidate of one call, as the cache sees it: an Algorithm bound to
// the call.
struct AlgorithmCandidate {
  std::string name;
  absl::Status can_implement;
  int64_t workspace_bytes = 0;
  int ranked_group = -1;  // Algorithm::RankedGroup
  std::function<absl::Status(void* workspace)> run;
};

class AlgorithmCache {
 public:
  // Where candidates run: the device's workspace and timer.
  class Device {
   public:
    virtual ~Device() = default;
    // A workspace of `bytes` (> 0), held until the tensor goes.
    // RESOURCE_EXHAUSTED: the device has no room for it now.
    virtual absl::StatusOr<Tensor> Workspace(int64_t bytes) = 0;
    // Whether timing may happen now (not while a CUDA graph is recorded).
    virtual bool CanTime() const = 0;
    // Milliseconds one `run` takes (after an untimed first run).
    virtual absl::StatusOr<float> Time(const std::function<absl::Status()>& run) = 0;
  };

  struct Options {
    std::string library;  // "cuDNN": part of the key, and of messages
    // Candidates asking for more are skipped.
    int64_t max_workspace_bytes = std::numeric_limits<int64_t>::max();
    // false: run in the given order and never time (a path forced for
    // tests, say).
    bool time = true;
  };

  // What one call ran.
  struct Ran {
    int index = -1;  // the candidate that ran; -1: none did (why_not says why)
    int64_t workspace_bytes = 0;
    bool timed_now = false;  // this call timed the candidates
    std::string why_not;
  };

  // What the cache knows of one problem.
  struct Entry {
    bool timed = false;
    std::vector<std::string> names;  // the candidates timed, as given
    std::vector<float> times_ms;     // per candidate; -1: not timed
    std::vector<int> order;          // fastest first, then the untimed
    // "plain algo 1 0.1 ms, gemm 0.08 ms, graph engine 7: refused ...: gemm"
    std::string timings;
    int64_t runs = 0;
    std::string last;  // the name of the last candidate that ran
    int64_t last_workspace_bytes = 0;
  };

  AlgorithmCache() = default;
  AlgorithmCache(const AlgorithmCache&) = delete;
  AlgorithmCache& operator=(const AlgorithmCache&) = delete;

  // Runs one call of problem `key` on one of `candidates` (see above).
  // Errors: a failure (not a refusal) of the candidate that ran, or of the
  // device.
  absl::StatusOr<Ran> Run(const std::string& key,
                          absl::Span<const AlgorithmCandidate> candidates,
                          const Options& options, Device* device);

  // The same with the library's algorithms bound to `call`.
  template <typename Call>
  absl::StatusOr<Ran> Run(const std::string& key,
                          absl::Span<const Algorithm<Call>* const> algorithms,
                          const Call& call, const Options& options, Device* device) {
    std::vector<AlgorithmCandidate> candidates;
    candidates.reserve(algorithms.size());
    for (const Algorithm<Call>* a : algorithms) {
      AlgorithmCandidate c;
      c.name = a->Name(call);
      c.can_implement = a->CanImplement(call);
      if (c.can_implement.ok()) c.workspace_bytes = a->WorkspaceBytes(call);
      c.ranked_group = a->RankedGroup();
      c.run = [a, &call](void* workspace) { return a->Run(call, workspace); };
      candidates.push_back(std::move(c));
    }
    return Run(key, candidates, options, device);
  }

  // What is known of `key` of `library` (nullopt-like: an Entry never run).
  Entry Find(const std::string& library, const std::string& key) const;

  // Timing in this process, over every cache (every GPU and session): how
  // many problems have had their candidates timed, and while any is being
  // timed the library of the latest to start ("" when none is), for a
  // progress line while a first step searches
  // (tools/first_step_progress.h).
  struct Activity {
    int64_t problems_timed = 0;
    std::string timing_now;
  };
  static Activity ProcessActivity();

 private:
  // Times the candidates into *e.
  absl::Status Time(absl::Span<const AlgorithmCandidate> candidates,
                    const Options& options, Device* device, Entry* e);

  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_ALGORITHM_CACHE_H_
