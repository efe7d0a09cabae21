// Gemm: Eigen matrix products, or a Tensor contraction on the thread pool.
#include "kernels/cpu/gemm.h"

#define EIGEN_USE_THREADS
#include "Eigen/Core"
#include "unsupported/Eigen/CXX11/Tensor"

namespace sluice::cpu {
namespace {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T>
void SerialGemm(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
                bool ta, bool tb) {
  Eigen::Map<RowMatrix<T>> cm(c, m, n);
  Eigen::Map<const RowMatrix<T>> am(a, ta ? k : m, ta ? m : k);
  Eigen::Map<const RowMatrix<T>> bm(b, tb ? n : k, tb ? k : n);
  if (!ta && !tb) {
    cm.noalias() = am * bm;
  } else if (ta && !tb) {
    cm.noalias() = am.transpose() * bm;
  } else if (!ta && tb) {
    cm.noalias() = am * bm.transpose();
  } else {
    cm.noalias() = am.transpose() * bm.transpose();
  }
}

template <typename T>
void PoolGemm(const Eigen::ThreadPoolDevice& pool, const T* a, const T* b,
              T* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  using Index = Eigen::Index;
  Eigen::TensorMap<const Eigen::Tensor<const T, 2, Eigen::RowMajor>> at(
      a, ta ? k : m, ta ? m : k);
  Eigen::TensorMap<const Eigen::Tensor<const T, 2, Eigen::RowMajor>> bt(
      b, tb ? n : k, tb ? k : n);
  Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor>> ct(c, m, n);
  const Eigen::array<Eigen::IndexPair<Index>, 1> dims = {
      Eigen::IndexPair<Index>(ta ? 0 : 1, tb ? 1 : 0)};
  ct.device(pool) = at.contract(bt, dims);
}

}  // namespace

template <typename T>
void Gemm(const Eigen::ThreadPoolDevice* pool, const T* a, const T* b, T* c,
          int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    Eigen::Map<RowMatrix<T>>(c, m, n).setZero();
    return;
  }
  if (pool != nullptr && pool->numThreads() > 1 &&
      m * n * k >= kParallelGemmFlops) {
    PoolGemm(*pool, a, b, c, m, n, k, transpose_a, transpose_b);
  } else {
    SerialGemm(a, b, c, m, n, k, transpose_a, transpose_b);
  }
}

template void Gemm<float>(const Eigen::ThreadPoolDevice*, const float*,
                          const float*, float*, int64_t, int64_t, int64_t,
                          bool, bool);
template void Gemm<double>(const Eigen::ThreadPoolDevice*, const double*,
                           const double*, double*, int64_t, int64_t, int64_t,
                           bool, bool);

}  // namespace sluice::cpu
