// kernels/cpu/gemm.h: the tile grid covers C exactly and keeps each thread
// busy, and the tiled product (with its per-tile epilogue) matches a naive
// product on pools of every size, including more threads than tiles.
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "device/cpu_device.h"
#include "gtest/gtest.h"

namespace sluice::cpu::gemm_test {
namespace {

// Every (m, n, k) the tests use: odd sizes, vectors, one row or column, an
// empty inner dimension, and ResNet-50's convolutions at batch 1.
struct Size {
  int64_t m, n, k;
};
const Size kSizes[] = {{1, 1, 1},      {3, 5, 7},       {1, 1000, 2048},
                       {1000, 1, 300}, {37, 1001, 13},  {129, 67, 131},
                       {64, 3136, 64}, {512, 49, 1152}, {2048, 49, 64},
                       {9, 17, 0},     {333, 7, 517}};

TEST(GemmGridTest, TilesCoverTheProductExactlyOnce) {
  for (const Size& s : kSizes) {
    for (int threads : {1, 2, 3, 4, 7, 16, 64}) {
      const GemmGrid g = PlanGemmGrid(s.m, s.n, s.k, threads);
      SCOPED_TRACE(::testing::Message() << s.m << "x" << s.n << "x" << s.k
                                      << " on " << threads << " threads");
      ASSERT_GE(g.row_tiles, 1);
      ASSERT_GE(g.col_tiles, 1);
      // The last tile reaches the end; none starts past it.
      EXPECT_GE(g.row_step * g.row_tiles, s.m);
      EXPECT_LT(g.row_step * (g.row_tiles - 1), s.m);
      EXPECT_GE(g.col_step * g.col_tiles, s.n);
      EXPECT_LT(g.col_step * (g.col_tiles - 1), s.n);
      EXPECT_LE(g.tiles(), 4 * threads);
      if (threads == 1 || s.m * s.n * s.k < kParallelGemmFlops) {
        EXPECT_EQ(g.tiles(), 1);
      } else {
        EXPECT_GE(g.row_step * g.col_step * s.k, kMinGemmTileMacs);
      }
    }
  }
}

TEST(GemmGridTest, LargeProductsUseEveryThread) {
  // ResNet-50's last 3x3 convolution at batch 1 (49 output columns) and a
  // classifier head (one row): both split so that no thread idles.
  for (int threads : {2, 4, 16}) {
    EXPECT_GE(PlanGemmGrid(512, 49, 4608, threads).tiles(), threads);
    EXPECT_GE(PlanGemmGrid(1, 1000, 2048, threads).tiles(), threads);
    EXPECT_GE(PlanGemmGrid(64, 12544, 147, threads).tiles(), threads);
  }
}

template <typename T>
std::vector<T> Values(int64_t n, int seed) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(((i * 7 + seed * 13) % 17) - 8) / T(8);
  }
  return v;
}

template <typename T>
void CheckGemm(const Size& s, bool ta, bool tb, int threads) {
  SCOPED_TRACE(::testing::Message() << s.m << "x" << s.n << "x" << s.k
                                  << " ta " << ta << " tb " << tb << " on "
                                  << threads << " threads");
  const std::vector<T> a = Values<T>(s.m * s.k, 1), b = Values<T>(s.k * s.n, 2);
  // C starts as NaN: every element must be written.
  std::vector<T> c(s.m * s.n, std::nan(""));
  std::vector<int> seen(s.m * s.n, 0);  // tiles are disjoint: no race
  CpuDevice cpu(0, 0, threads);
  Gemm<T>(cpu.eigen_cpu_device(), a.data(), b.data(), c.data(), s.m, s.n, s.k,
          ta, tb, [&](const GemmTile& t) {
            for (int64_t i = t.row_begin; i < t.row_end; ++i) {
              for (int64_t j = t.col_begin; j < t.col_end; ++j) {
                ++seen[i * s.n + j];
              }
            }
          });
  const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-12;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        want += static_cast<double>(ta ? a[p * s.m + i] : a[i * s.k + p]) *
                static_cast<double>(tb ? b[j * s.k + p] : b[p * s.n + j]);
      }
      ASSERT_NEAR(c[i * s.n + j], want, tol * (1 + std::abs(want)))
          << "at " << i << "," << j;
      ASSERT_EQ(seen[i * s.n + j], 1) << "epilogue at " << i << "," << j;
    }
  }
}

TEST(GemmTest, FloatMatchesNaiveOnEveryPoolSize) {
  for (const Size& s : kSizes) {
    for (int threads : {1, 2, 3, 16}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) CheckGemm<float>(s, ta, tb, threads);
      }
    }
  }
}

TEST(GemmTest, DoubleMatchesNaiveWithMoreThreadsThanTiles) {
  for (const Size& s : {Size{37, 1001, 13}, Size{1, 1000, 2048},
                        Size{129, 67, 131}, Size{5, 3, 2}}) {
    CheckGemm<double>(s, false, true, 64);
    CheckGemm<double>(s, true, false, 7);
  }
}

// GemmFilled: B starts as NaN and is written only by the fill; every element
// must be filled exactly once, before it is read, whether the tiles fill
// their own columns (cut finer to fit the cache) or B is filled first.
void CheckFilled(const Size& s, int threads) {
  SCOPED_TRACE(::testing::Message() << s.m << "x" << s.n << "x" << s.k
                                    << " on " << threads << " threads");
  const std::vector<float> a = Values<float>(s.m * s.k, 1);
  const std::vector<float> source = Values<float>(s.k * s.n, 2);
  std::vector<float> b(s.k * s.n, std::nanf("")), c(s.m * s.n, std::nanf(""));
  std::vector<int> filled(s.k * s.n, 0);  // parts are disjoint: no race
  CpuDevice cpu(0, 0, threads);
  GemmFilled<float>(
      cpu.eigen_cpu_device(), a.data(), b.data(), c.data(), s.m, s.n, s.k,
      false,
      [&](int64_t k0, int64_t k1, int64_t c0, int64_t c1) {
        for (int64_t p = k0; p < k1; ++p) {
          for (int64_t j = c0; j < c1; ++j) {
            b[p * s.n + j] = source[p * s.n + j];
            ++filled[p * s.n + j];
          }
        }
      },
      [](const GemmTile&) {});
  for (int64_t p = 0; p < s.k * s.n; ++p) ASSERT_EQ(filled[p], 1) << p;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        want += static_cast<double>(a[i * s.k + p]) * source[p * s.n + j];
      }
      ASSERT_NEAR(c[i * s.n + j], want, 1e-4 * (1 + std::abs(want)))
          << "at " << i << "," << j;
    }
  }
}

TEST(GemmFilledTest, FillsEveryElementOnceBeforeItIsRead) {
  // Tiles of whole columns, cut finer for the cache (k * n * 4 bytes well
  // above kGemmFillBytes); tiles over rows (B filled first); one tile.
  for (int threads : {1, 2, 3, 16}) {
    CheckFilled({64, 3001, 197}, threads);
    CheckFilled({512, 49, 300}, threads);
    CheckFilled({3, 5, 7}, threads);
    CheckFilled({9, 17, 0}, threads);
  }
  EXPECT_GT(int64_t{3001} * 197 * 4, 2 * kGemmFillBytes);
  EXPECT_GT(PlanGemmGrid(512, 49, 300, 3).row_tiles, 1);
}

}  // namespace
}  // namespace sluice::cpu::gemm_test
