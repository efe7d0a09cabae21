// The oneDNN engine and streams the CPU convolutions share (onednn_conv.cc,
// onednn_conv_nhwc.cc), and the OpenMP thread count their calls run with.
// Only for files built with SLUICE_HAVE_ONEDNN_CONV (kernels/CMakeLists.txt).
//
// oneDNN (Debian's build uses OpenMP) sizes its work by the calling
// thread's omp_get_max_threads(), both when a primitive is created and
// when it runs. sluice keeps that at 1 on every thread (SerialOnThisThread:
// no OpenMP team spins beside the intra-op pool) except inside an
// OmpThreads scope, which gives one call a team of the pool's size.
#ifndef SLUICE_KERNELS_CPU_ONEDNN_RUNTIME_H_
#define SLUICE_KERNELS_CPU_ONEDNN_RUNTIME_H_

#include <string>

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

// While alive, oneDNN calls from this thread run on an OpenMP team of
// `threads` (when threads > 1); back to 1 when it goes.
class OmpThreads {
 public:
  explicit OmpThreads(int threads);
  ~OmpThreads();
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  bool on_;
};

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_ONEDNN_RUNTIME_H_
