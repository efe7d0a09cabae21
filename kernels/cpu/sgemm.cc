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
#include <cstdlib>
#include <cstring>

#include "Eigen/Core"

#if SLUICE_HAVE_ONEDNN_SGEMM
#include <omp.h>

#include "oneapi/dnnl/dnnl.h"
#endif

namespace sluice::cpu {
namespace {

using RowMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using StridedMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
using ConstStridedMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

void EigenSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                const float* a, int64_t lda, const float* b, int64_t ldb,
                float* c, int64_t ldc, bool accumulate) {
  StridedMap ct(c, m, n, Eigen::OuterStride<>(ldc));
  if (k == 0) {
    if (!accumulate) ct.setZero();
    return;
  }
  ConstStridedMap at(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstStridedMap bt(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
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
  static const bool use = [] {
    const char* v = std::getenv("SLUICE_CPU_SGEMM");
    return v == nullptr || std::strcmp(v, "eigen") != 0;
  }();
  return use;
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
    // dnnl_sgemm is row-major; leading dimensions are at least 1.
    if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a,
                   std::max<int64_t>(lda, 1), b, std::max<int64_t>(ldb, 1),
                   accumulate ? 1.0f : 0.0f, c,
                   std::max<int64_t>(ldc, 1)) == dnnl_success) {
      return;
    }
  }
#endif
  EigenSgemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

}  // namespace sluice::cpu
