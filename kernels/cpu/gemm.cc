// Gemm: one serial Eigen product per tile of C, the tiles on the pool.
//
// Why tiles and not Eigen's Tensor contraction on the pool (what this file
// used before): the contraction spreads a product over the pool with a
// dependency graph of packing and kernel tasks, which pays off for large
// square products but not for the shapes a CNN at batch 1 has (64 x 12544 x
// 147, 512 x 49 x 4608, 2048 x 49 x 512): on 2 threads it was no faster than
// one, and a [1,2048] x [2048,1000]^T product (a classifier head) took 6 ms
// on the pool against 0.1 ms serially. A tile is a plain Eigen product on
// its own rows of A and columns of B: each tile packs its own operands (the
// cost PlanGemmGrid weighs), nothing is shared, and threads meet only at
// the end.
#include "kernels/cpu/gemm.h"

#include <algorithm>

#define EIGEN_USE_THREADS
#include "Eigen/Core"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/sgemm.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace sluice::cpu {
namespace {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using StridedMap = Eigen::Map<RowMatrix<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using ConstStridedMap = Eigen::Map<const RowMatrix<T>, 0, Eigen::OuterStride<>>;

// Tile steps are multiples of these (Eigen's register blocks are 8 to 24
// floats one way and 4 the other), unless the tile is the whole extent.
constexpr int64_t kRowAlign = 8;
constexpr int64_t kColAlign = 8;
// Packing one element of A or B costs about this many multiply-adds (a
// core does 16 to 32 multiply-adds a cycle and packs 2 to 4 elements).
constexpr int64_t kPackCost = 8;
// GemmFilled fills a B that tiles share in blocks of about this many
// elements.
constexpr int64_t kFillBlockElements = 16 << 10;
// GemmFilled cuts column tiles for the cache no narrower than this.
constexpr int64_t kMinFillColumns = 256;
// At most this many tiles per thread: more only adds packing.
constexpr int64_t kMaxTilesPerThread = 4;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The step for cutting `extent` into about `parts`, rounded up to `align`
// (but never beyond the extent).
int64_t Step(int64_t extent, int64_t parts, int64_t align) {
  const int64_t step = CeilDiv(CeilDiv(extent, parts), align) * align;
  return std::min(step, extent);
}

// c[tile] = op(a)[tile rows] * op(b)[tile columns]: Eigen for double,
// Sgemm (oneDNN's kernel where built in) for float.
template <typename T>
void TileProduct(const T* a, const T* b, T* c, int64_t m, int64_t n,
                 int64_t k, bool ta, bool tb, const GemmTile& t) {
  const int64_t rows = t.row_end - t.row_begin;
  const int64_t cols = t.col_end - t.col_begin;
  StridedMap<T> ct(c + t.row_begin * n + t.col_begin, rows, cols,
                   Eigen::OuterStride<>(n));
  if (k == 0) {
    ct.setZero();
    return;
  }
  // op(A)'s rows [row_begin, row_end): A's rows, or A's columns when
  // transposed; op(B)'s columns likewise.
  ConstStridedMap<T> at = ta ? ConstStridedMap<T>(a + t.row_begin, k, rows,
                                                  Eigen::OuterStride<>(m))
                             : ConstStridedMap<T>(a + t.row_begin * k, rows, k,
                                                  Eigen::OuterStride<>(k));
  ConstStridedMap<T> bt = tb ? ConstStridedMap<T>(b + t.col_begin * k, cols, k,
                                                  Eigen::OuterStride<>(k))
                             : ConstStridedMap<T>(b + t.col_begin, k, cols,
                                                  Eigen::OuterStride<>(n));
  if (!ta && !tb) {
    ct.noalias() = at * bt;
  } else if (ta && !tb) {
    ct.noalias() = at.transpose() * bt;
  } else if (!ta && tb) {
    ct.noalias() = at * bt.transpose();
  } else {
    ct.noalias() = at.transpose() * bt.transpose();
  }
}

template <>
void TileProduct<float>(const float* a, const float* b, float* c, int64_t m,
                        int64_t n, int64_t k, bool ta, bool tb,
                        const GemmTile& t) {
  const int64_t rows = t.row_end - t.row_begin;
  const int64_t cols = t.col_end - t.col_begin;
  Sgemm(ta, tb, rows, cols, k, ta ? a + t.row_begin : a + t.row_begin * k,
        ta ? m : k, tb ? b + t.col_begin * k : b + t.col_begin, tb ? k : n,
        c + t.row_begin * n + t.col_begin, n);
}

}  // namespace

GemmGrid PlanGemmGrid(int64_t m, int64_t n, int64_t k, int threads) {
  const GemmGrid one{std::max<int64_t>(m, 1), std::max<int64_t>(n, 1), 1, 1};
  const int64_t macs = m * n * std::max<int64_t>(k, 1);
  if (threads <= 1 || m <= 0 || n <= 0 || macs < kParallelGemmFlops) {
    return one;
  }
  const int64_t max_tiles = std::min<int64_t>(
      kMaxTilesPerThread * threads,
      std::max<int64_t>(macs / kMinGemmTileMacs, 1));
  // The time of the slowest thread, in multiply-adds over k: waves of tiles,
  // each tile its product and the packing of its operands.
  auto cost = [&](const GemmGrid& g) {
    const int64_t waves = CeilDiv(g.tiles(), threads);
    return waves * (g.row_step * g.col_step +
                    kPackCost * (g.row_step + g.col_step));
  };
  GemmGrid best = one;
  int64_t best_cost = cost(one);
  for (int64_t gm = 1; gm <= std::min(m, max_tiles); ++gm) {
    const int64_t row_step = Step(m, gm, kRowAlign);
    const int64_t row_tiles = CeilDiv(m, row_step);
    if (row_tiles != gm) continue;  // the same grid as a smaller gm
    for (int64_t gn = 1; gn <= n && gm * gn <= max_tiles; ++gn) {
      const int64_t col_step = Step(n, gn, kColAlign);
      const int64_t col_tiles = CeilDiv(n, col_step);
      if (col_tiles != gn) continue;
      const GemmGrid g{row_step, col_step, row_tiles, col_tiles};
      const int64_t c = cost(g);
      if (c < best_cost) {
        best = g;
        best_cost = c;
      }
    }
  }
  return best;
}

namespace {

// Runs fn on each tile of `grid` over [0,m) x [0,n), on the pool when there
// is more than one.
void ForEachTile(const Eigen::ThreadPoolDevice* pool, const GemmGrid& grid,
                 int64_t m, int64_t n, int64_t k,
                 absl::FunctionRef<void(const GemmTile&)> fn) {
  auto run_tile = [&](int64_t index) {
    const int64_t i = index / grid.col_tiles, j = index % grid.col_tiles;
    fn(GemmTile{i * grid.row_step, std::min(m, (i + 1) * grid.row_step),
                j * grid.col_step, std::min(n, (j + 1) * grid.col_step)});
  };
  RunBlocks(pool, grid.tiles(), run_tile);
}

}  // namespace

template <typename T>
void Gemm(const Eigen::ThreadPoolDevice* pool, const T* a, const T* b, T* c,
          int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b,
          absl::FunctionRef<void(const GemmTile&)> epilogue) {
  if (m <= 0 || n <= 0) return;
  const int threads = pool == nullptr ? 1 : pool->numThreads();
  ForEachTile(pool, PlanGemmGrid(m, n, k, threads), m, n, k,
              [&](const GemmTile& t) {
                TileProduct(a, b, c, m, n, k, transpose_a, transpose_b, t);
                epilogue(t);
              });
}

template <typename T>
void GemmFilled(const Eigen::ThreadPoolDevice* pool, const T* a, T* b, T* c,
                int64_t m, int64_t n, int64_t k, bool transpose_a,
                GemmFill fill_b,
                absl::FunctionRef<void(const GemmTile&)> epilogue) {
  if (m <= 0 || n <= 0) return;
  const int threads = pool == nullptr ? 1 : pool->numThreads();
  GemmGrid grid = PlanGemmGrid(m, n, k, threads);
  auto product = [&](const GemmTile& t) {
    TileProduct<T>(a, b, c, m, n, k, transpose_a, false, t);
    epilogue(t);
  };
  if (grid.row_tiles > 1) {
    // Tiles share columns: fill all of B first, split over its rows.
    // Blocks of rows of about kFillBlockElements elements.
    const int64_t rows = std::max<int64_t>(1, kFillBlockElements / n);
    RunBlocks(pool, CeilDiv(k, rows), [&](int64_t b) {
      fill_b(b * rows, std::min(k, (b + 1) * rows), 0, n);
    });
    ForEachTile(pool, grid, m, n, k, product);
    return;
  }
  // Each tile fills its own columns of B and reads them back at once, from
  // its core's cache: columns are cut finer until a tile's part of B fits.
  // Each extra column tile packs A again: keep tiles at least
  // kMinFillColumns wide (A's packing then costs at most kPackCost /
  // kMinFillColumns of the product).
  const int64_t bytes = grid.col_step * std::max<int64_t>(k, 1) *
                        static_cast<int64_t>(sizeof(T));
  const int64_t parts = std::min(CeilDiv(bytes, kGemmFillBytes),
                                 grid.col_step / kMinFillColumns);
  if (parts > 1) {
    const int64_t step = CeilDiv(grid.col_step, parts);
    grid.col_step = std::max(kColAlign, CeilDiv(step, kColAlign) * kColAlign);
    grid.col_step = std::min(grid.col_step, n);
    grid.col_tiles = CeilDiv(n, grid.col_step);
  }
  ForEachTile(pool, grid, m, n, k, [&](const GemmTile& t) {
    fill_b(0, k, t.col_begin, t.col_end);
    product(t);
  });
}

template <typename T>
void Gemm(const Eigen::ThreadPoolDevice* pool, const T* a, const T* b, T* c,
          int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b) {
  Gemm<T>(pool, a, b, c, m, n, k, transpose_a, transpose_b,
          [](const GemmTile&) {});
}

template void Gemm<float>(const Eigen::ThreadPoolDevice*, const float*,
                          const float*, float*, int64_t, int64_t, int64_t, bool,
                          bool);
template void Gemm<float>(const Eigen::ThreadPoolDevice*, const float*,
                          const float*, float*, int64_t, int64_t, int64_t, bool,
                          bool, absl::FunctionRef<void(const GemmTile&)>);
template void Gemm<double>(const Eigen::ThreadPoolDevice*, const double*,
                           const double*, double*, int64_t, int64_t, int64_t,
                           bool, bool);
template void Gemm<double>(const Eigen::ThreadPoolDevice*, const double*,
                           const double*, double*, int64_t, int64_t, int64_t,
                           bool, bool,
                           absl::FunctionRef<void(const GemmTile&)>);
template void GemmFilled<float>(const Eigen::ThreadPoolDevice*, const float*,
                                float*, float*, int64_t, int64_t, int64_t, bool,
                                GemmFill,
                                absl::FunctionRef<void(const GemmTile&)>);

}  // namespace sluice::cpu
