// Template definitions for broadcast.h. Not to be included directly.
#ifndef SLUICE_KERNELS_CPU_BROADCAST_INL_H_
#define SLUICE_KERNELS_CPU_BROADCAST_INL_H_

namespace sluice::cpu {

template <int N>
BroadcastPlan<N>::BroadcastPlan(const Shape& out,
                                std::initializer_list<const Shape*> inputs) {
  const int r = out.rank();
  // Per output dim, each input's stride (0 when broadcast).
  std::array<std::array<int64_t, kMaxRank>, N> strides{};
  int k = 0;
  for (const Shape* in : inputs) {
    int64_t s = 1;
    for (int d = r - 1; d >= 0; --d) {
      const int id = d - (r - in->rank());
      const int64_t size = id >= 0 ? in->dim(id) : 1;
      strides[k][d] = (size == 1 && out.dim(d) != 1) ? 0 : s;
      s *= size;
    }
    ++k;
  }
  // Merge dims (dropping size-1 ones) where every input's strides chain:
  // stride[d] == stride[d+1] * dim[d+1].
  int m = 0;  // merged dims so far
  std::array<int64_t, kMaxRank> mdims{};
  std::array<std::array<int64_t, kMaxRank>, N> mstrides{};
  for (int d = 0; d < r; ++d) {
    if (out.dim(d) == 1) continue;
    bool merge = m > 0;
    for (int i = 0; i < N && merge; ++i) {
      merge = mstrides[i][m - 1] == strides[i][d] * out.dim(d);
    }
    if (merge) {
      mdims[m - 1] *= out.dim(d);
      for (int i = 0; i < N; ++i) mstrides[i][m - 1] = strides[i][d];
    } else {
      mdims[m] = out.dim(d);
      for (int i = 0; i < N; ++i) mstrides[i][m] = strides[i][d];
      ++m;
    }
  }
  if (m == 0) {  // a scalar (or all-ones) output
    inner_ = 1;
    for (int i = 0; i < N; ++i) inner_stride_[i] = 0;
    return;
  }
  inner_ = mdims[m - 1];
  for (int i = 0; i < N; ++i) inner_stride_[i] = mstrides[i][m - 1];
  rank_ = m - 1;
  for (int d = 0; d < rank_; ++d) {
    dims_[d] = mdims[d];
    rows_ *= mdims[d];
    for (int i = 0; i < N; ++i) strides_[i][d] = mstrides[i][d];
  }
  if (inner_ == 0) rows_ = 0;
}

template <int N>
template <typename F>
void BroadcastPlan<N>::ForEachRow(int64_t begin, int64_t end, F&& fn) const {
  if (begin >= end) return;
  std::array<int64_t, kMaxRank> idx{};
  std::array<int64_t, N> off{};
  int64_t rem = begin;
  for (int d = rank_ - 1; d >= 0; --d) {
    idx[d] = rem % dims_[d];
    rem /= dims_[d];
    for (int i = 0; i < N; ++i) off[i] += idx[d] * strides_[i][d];
  }
  for (int64_t row = begin; row < end; ++row) {
    fn(row * inner_, off.data());
    for (int d = rank_ - 1; d >= 0; --d) {
      for (int i = 0; i < N; ++i) off[i] += strides_[i][d];
      if (++idx[d] < dims_[d]) break;
      for (int i = 0; i < N; ++i) off[i] -= idx[d] * strides_[i][d];
      idx[d] = 0;
    }
  }
}

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_BROADCAST_INL_H_
