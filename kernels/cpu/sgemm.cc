// Sgemm on oneDNN's dnnl_sgemm, or on Eigen.
//
// Debian's oneDNN runs on OpenMP: called outside a parallel region,
// dnnl_sgemm would fork an OpenMP team of omp_get_max_threads() threads,
// whose idle workers spin on the cores sluice's own pool needs (the
// `onednn` branch measured a 10x slower step that way). Each thread that
// calls it therefore sets its own OpenMP thread count to 1 first (the count
// is per thread in libgomp), so dnnl_sgemm runs serially on the caller and
// no OpenMP thread is ever started.
#include "kernels/cpu/sgemm.h"

#include <algorithm>

#include "Eigen/Core"

#if SLUICE_HAVE_ONEDNN_SGEMM
#include <omp.h>

#include "device/fault_injector.h"
#include "oneapi/dnnl/dnnl.h"

namespace sluice::cpu {
namespace {
// The width of oneDNN 2.6's column blocks (see Sgemm).
constexpr int64_t kOneDnnColumnBlock = 48;
}  // namespace
}  // namespace sluice::cpu
#endif

namespace sluice::cpu {
namespace {

using FloatRowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using FloatStridedMap = Eigen::Map<FloatRowMatrix, 0, Eigen::OuterStride<>>;
using ConstFloatStridedMap =
    Eigen::Map<const FloatRowMatrix, 0, Eigen::OuterStride<>>;

void EigenSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                const float* a, int64_t lda, const float* b, int64_t ldb,
                float* c, int64_t ldc, bool accumulate) {
  FloatStridedMap ct(c, m, n, Eigen::OuterStride<>(ldc));
  if (k == 0) {
    if (!accumulate) ct.setZero();
    return;
  }
  ConstFloatStridedMap at(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstFloatStridedMap bt(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  if (accumulate) {
    if (!ta && !tb) {
      ct.noalias() += at * bt;
    } else if (ta && !tb) {
      ct.noalias() += at.transpose() * bt;
    } else if (!ta && tb) {
      ct.noalias() += at * bt.transpose();
    } else {
      ct.noalias() += at.transpose() * bt.transpose();
    }
  } else if (!ta && !tb) {
    ct.noalias() = at * bt;
  } else if (ta && !tb) {
    ct.noalias() = at.transpose() * bt;
  } else if (!ta && tb) {
    ct.noalias() = at * bt.transpose();
  } else {
    ct.noalias() = at.transpose() * bt.transpose();
  }
}

bool UseOneDnn() {
#if SLUICE_HAVE_ONEDNN_SGEMM
  return true;
#else
  return false;
#endif
}

}  // namespace

bool SgemmUsesOneDnn() { return UseOneDnn(); }

void Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
           int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
           bool accumulate) {
#if SLUICE_HAVE_ONEDNN_SGEMM
  if (UseOneDnn() && k > 0) {
    thread_local const bool serial = [] {
      omp_set_num_threads(1);
      return true;
    }();
    (void)serial;
    // dnnl_sgemm is row-major; leading dimensions are at least 1. A call
    // that fails (or that a test's fault injector fails,
    // device/fault_injector.h) is redone on Eigen.
    auto call = [&](int64_t cols, const float* bp, float* cp) {
      if (!InjectedFault(FaultKind::kLibrary, "dnnl_sgemm").ok()) return false;
      return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, cols, k, 1.0f, a,
                        std::max<int64_t>(lda, 1), bp,
                        std::max<int64_t>(ldb, 1), accumulate ? 1.0f : 0.0f,
                        cp, std::max<int64_t>(ldc, 1)) == dnnl_success;
    };
    // oneDNN 2.6 blocks C's columns by 48 and runs a block of one column
    // as slowly as a full one: 512 x 49 x 4608 (ResNet-50's last 3x3 at
    // batch 1, 7x7 = 49 positions) took 3.2-3.4 ms on one core of the
    // development VM, its first 48 columns 2.1-2.4 ms and the last column
    // alone (a matrix-vector product) 0.2-0.5 ms. So a lone column past a
    // multiple of 48 is a call of its own. (Two to twelve columns past it
    // cost the same either way.)
    if (n > kOneDnnColumnBlock && n % kOneDnnColumnBlock == 1 &&
        call(n - 1, b, c)) {
      const float* last_b = tb ? b + (n - 1) * ldb : b + (n - 1);
      if (!call(1, last_b, c + (n - 1))) {
        EigenSgemm(ta, tb, m, 1, k, a, lda, last_b, ldb, c + (n - 1), ldc,
                   accumulate);
      }
      return;
    }
    if (call(n, b, c)) return;
  }
#endif
  EigenSgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

}  // namespace sluice::cpu
