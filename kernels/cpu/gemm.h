// Row-major GEMM for the CPU kernels (MatMul, Conv2D, ConvND): C = op(A) *
// op(B) on Eigen, spread over the device's intra-op pool when the product is
// large. With a pool, C is cut into a grid of tiles sized for the pool's
// thread count (PlanGemmGrid), and each tile is one serial Eigen product on
// one thread, as onnxruntime's MLAS threads its GEMM. An optional epilogue
// runs on each tile on the thread that computed it, right after it, while
// the tile is in that core's cache (Conv2D's bias, residual and Relu).
//
//   Gemm<float>(ctx.device()->eigen_cpu_device(), a, b, c, m, n, k,
//               /*transpose_a=*/false, /*transpose_b=*/true);
//   Gemm<float>(pool, a, b, c, m, n, k, false, false,
//               [&](const GemmTile& t) { /* rows, cols of C in t */ });
//   GemmFilled<float>(pool, a, col, c, m, n, k, false,
//                     [&](int64_t k0, int64_t k1, int64_t c0, int64_t c1) {
//                       /* write col's rows k0..k1, columns c0..c1 */ },
//                     [&](const GemmTile& t) {});
//
// Thread-safe; `pool` may be null (run on the calling thread). The epilogue
// runs concurrently on disjoint tiles.
#ifndef SLUICE_KERNELS_CPU_GEMM_H_
#define SLUICE_KERNELS_CPU_GEMM_H_

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace sluice::cpu {

// Rows [row_begin, row_end) and columns [col_begin, col_end) of C.
struct GemmTile {
  int64_t row_begin, row_end, col_begin, col_end;
};

// How C is cut: row_tiles x col_tiles tiles of row_step x col_step (the last
// of each shorter). One tile when the product is small or there is one
// thread.
struct GemmGrid {
  int64_t row_step, col_step, row_tiles, col_tiles;
  int64_t tiles() const { return row_tiles * col_tiles; }
};

// The grid for an m x n x k product on `threads` threads: the fewest tiles
// that keep every thread busy, each tile at least kMinGemmTileMacs of work,
// trading the packing each tile repeats (its rows of A and columns of B)
// against the number of waves of tiles.
GemmGrid PlanGemmGrid(int64_t m, int64_t n, int64_t k, int threads);

// A is [m,k] ([k,m] when transpose_a), B is [k,n] ([n,k] when transpose_b),
// C is [m,n]; all row-major and dense. C is overwritten (zeros when k == 0).
// T is float or double. The epilogue, when given, is called once for each
// tile of C after the tile is written (also when k == 0).
template <typename T>
void Gemm(const Eigen::ThreadPoolDevice* pool, const T* a, const T* b, T* c,
          int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b);
template <typename T>
void Gemm(const Eigen::ThreadPoolDevice* pool, const T* a, const T* b, T* c,
          int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b,
          absl::FunctionRef<void(const GemmTile&)> epilogue);

// Writes rows [k_begin, k_end) and columns [col_begin, col_end) of B.
using GemmFill = absl::FunctionRef<void(int64_t k_begin, int64_t k_end,
                                        int64_t col_begin, int64_t col_end)>;

// Gemm with B (not transposed, [k,n], in `b`) built by the caller where it
// is used: fill_b writes each part of B before any tile reads it. When the
// grid's tiles are whole columns of C, each tile fills its own columns of B
// on its thread and multiplies them while they are in its cache (columns
// cut finer until a tile's part of B is at most kGemmFillBytes); otherwise
// B is filled first, split over its rows on the pool, then the tiles run.
// Conv2D's im2col is the fill. Every element of B is written exactly once.
// T is float.
template <typename T>
void GemmFilled(const Eigen::ThreadPoolDevice* pool, const T* a, T* b, T* c,
                int64_t m, int64_t n, int64_t k, bool transpose_a,
                GemmFill fill_b,
                absl::FunctionRef<void(const GemmTile&)> epilogue);

// The most bytes of B a tile of GemmFilled fills for itself: about half of
// a core's L2 cache.
inline constexpr int64_t kGemmFillBytes = int64_t{512} << 10;

// Products with at least this many multiply-adds use the pool.
inline constexpr int64_t kParallelGemmFlops = int64_t{1} << 18;
// No tile of a parallel product does less than this many multiply-adds
// (about 10 us of one core): below that, handing a tile to another thread
// costs more than it saves.
inline constexpr int64_t kMinGemmTileMacs = int64_t{1} << 16;

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_GEMM_H_
