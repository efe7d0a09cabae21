// The oneDNN engine and streams the CPU convolutions share (onednn_conv.cc,
// onednn_conv_nhwc.cc), and the OpenMP thread count their calls run with.
// Only for files built with SLUICE_HAVE_ONEDNN_CONV (kernels/CMakeLists.txt).
//
// oneDNN (Debian's build uses OpenMP) sizes its work by the calling
// thread's omp_get_max_threads(), both when a primitive is created and
// when it runs. sluice keeps that at 1 on every thread (SerialOnThisThread:
// no OpenMP team spins beside the intra-op pool) except inside an
// OmpThreads scope (omp_threads.h), which gives one call a team of the
// pool's size.
#ifndef SLUICE_KERNELS_CPU_ONEDNN_RUNTIME_H_
#define SLUICE_KERNELS_CPU_ONEDNN_RUNTIME_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/cpu/omp_threads.h"
#include "kernels/cpu/onednn_conv.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace sluice::cpu {

// The process's CPU engine (never destroyed).
dnnl::engine& OneDnnEngine();

// This thread's stream on OneDnnEngine() (in-order; a call returns when the
// primitive has run).
dnnl::stream& OneDnnThreadStream();

// Sets this thread's OpenMP thread count to 1, the first time a thread
// calls it.
void SerialOnThisThread();

// Whether a primitive of implementation `impl` (impl_info_str()) is one
// sluice does not run: oneDNN's reference loops and its im2col + GEMM,
// which the CPU kernels' own loops match.
bool OneDnnImplDeclined(const std::string& impl);

// Appends `activation` to `ops` as eltwise post-ops (relu; clip to [0, 6]
// for ReLU6; hardswish; linear then clip to [0, 1] for hardsigmoid;
// logistic; swish); nothing for kNone.
void AppendActivation(ConvActivation activation, dnnl::post_ops* ops);

// A kernel's latest filters reordered into its plans' layouts, by (plan,
// filter buffer). An Entry has `plan` (a pointer to the plan it was made
// for) and `source` (the filter's Buffer, held so that its address is not
// reused while the entry lives). A filter is reused while it is the same
// buffer, on the runtime's rule that a tensor is not written after it is
// produced (a Const's value is one buffer for the session's life); a
// filter computed each step has a new buffer each step, so only the
// latest kMost are kept. Not thread-safe: the owner's mutex guards it.
template <typename Entry>
class ReorderedFilters {
 public:
  static constexpr size_t kMost = 8;

  // The entry for `plan` and `source`, or null.
  std::shared_ptr<const Entry> Find(const void* plan,
                                    const Buffer* source) const {
    for (const auto& e : entries_) {
      if (e->plan == plan && e->source.get() == source) return e;
    }
    return nullptr;
  }
  // Keeps `e`, dropping the oldest entry beyond kMost.
  void Add(std::shared_ptr<const Entry> e) {
    if (entries_.size() >= kMost) entries_.erase(entries_.begin());
    entries_.push_back(std::move(e));
  }

 private:
  std::vector<std::shared_ptr<const Entry>> entries_;
};


}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_ONEDNN_RUNTIME_H_
