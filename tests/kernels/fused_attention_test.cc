// FusedAttention's CPU kernel against a naive reference in double: masks
// by broadcast, causal mode, Sq != Sk, batch dims that broadcast, fully
// masked rows, the float dtypes. The GPU kernel is checked against this one
// in conformance_test.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::fused_attention_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::BoolAttr;
using ::sluice::testing::FloatAttr;
using ::sluice::testing::IntAttr;
using ::sluice::testing::MakeTensor;
using ::sluice::testing::RunOp;
using ::sluice::testing::StringAttr;
using ::sluice::testing::ToDoubles;

std::vector<double> Random(int64_t n, uint32_t seed, double scale = 2.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// Element offset of index (b, h, i, j) in a tensor of shape `s` (rank 4
// or less, right-aligned) broadcast to rank 4.
int64_t Offset(const Shape& s, const int64_t idx[4]) {
  int64_t off = 0, stride = 1;
  for (int a = 3; a >= 0; --a) {
    const int m = a - (4 - s.rank());
    if (m < 0) break;
    if (s.dim(m) != 1) off += idx[a] * stride;
    stride *= s.dim(m);
  }
  return off;
}

// softmax(scale q k^T + mask, causal) v, in double, with zeros for rows
// that have no key.
std::vector<double> Reference(const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor* mask, double scale, bool causal) {
  const std::vector<double> qd = ToDoubles(q), kd = ToDoubles(k), vd = ToDoubles(v);
  const std::vector<double> md = mask ? ToDoubles(*mask) : std::vector<double>();
  const int64_t b = std::max({q.dim(0), k.dim(0), v.dim(0)});
  const int64_t h = std::max({q.dim(1), k.dim(1), v.dim(1)});
  const int64_t sq = q.dim(2), sk = k.dim(2), d = q.dim(3), dv = v.dim(3);
  std::vector<double> out(b * h * sq * dv, 0.0);
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < h; ++hi) {
      for (int64_t i = 0; i < sq; ++i) {
        std::vector<double> s(sk, -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j < sk; ++j) {
          if (causal && j > i + sk - sq) continue;
          const int64_t qi[4] = {bi, hi, i, 0}, kj[4] = {bi, hi, j, 0};
          double dot = 0;
          for (int64_t x = 0; x < d; ++x) {
            dot += qd[Offset(q.shape(), qi) + x] * kd[Offset(k.shape(), kj) + x];
          }
          s[j] = scale * dot;
          if (mask) {
            const int64_t mi[4] = {bi, hi, i, j};
            s[j] += md[Offset(mask->shape(), mi)];
          }
          mx = std::max(mx, s[j]);
        }
        if (mx == -INFINITY) continue;
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < sk; ++j) {
          const int64_t vj[4] = {bi, hi, j, 0};
          for (int64_t x = 0; x < dv; ++x) {
            out[((bi * h + hi) * sq + i) * dv + x] +=
                s[j] / sum * vd[Offset(v.shape(), vj) + x];
          }
        }
      }
    }
  }
  return out;
}

struct Case {
  Shape q, k, v;
  std::optional<Shape> mask;
  bool causal = false;
  float scale = 0.3f;
};

void Check(const Case& c, DataType dtype, double tol) {
  SCOPED_TRACE(c.q.DebugString() + " " + c.k.DebugString() + " " +
               DataTypeName(dtype) + (c.causal ? " causal" : ""));
  std::vector<Tensor> inputs = {
      MakeTensor(dtype, c.q, Random(c.q.num_elements(), 1)),
      MakeTensor(dtype, c.k, Random(c.k.num_elements(), 2)),
      MakeTensor(dtype, c.v, Random(c.v.num_elements(), 3))};
  if (c.mask) inputs.push_back(MakeTensor(dtype, *c.mask, Random(c.mask->num_elements(), 4)));
  Attrs attrs = {{"scale", FloatAttr(c.scale)}, {"causal", BoolAttr(c.causal)}};
  absl::StatusOr<std::vector<Tensor>> out = RunOp("FusedAttention", inputs, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> want = Reference(inputs[0], inputs[1], inputs[2],
                                             c.mask ? &inputs[3] : nullptr,
                                             c.scale, c.causal);
  const std::vector<double> got = ToDoubles((*out)[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
  }
}

std::vector<Case> Cases() {
  return {
      {Shape({2, 3, 5, 4}), Shape({2, 3, 5, 4}), Shape({2, 3, 5, 4}), std::nullopt},
      {Shape({2, 3, 5, 8}), Shape({2, 3, 5, 8}), Shape({2, 3, 5, 8}),
       Shape({2, 1, 1, 5})},                                    // BERT's mask
      {Shape({1, 2, 7, 16}), Shape({1, 2, 7, 16}), Shape({1, 2, 7, 16}),
       std::nullopt, true},                                     // causal
      {Shape({1, 2, 3, 16}), Shape({1, 2, 9, 16}), Shape({1, 2, 9, 6}),
       Shape({3, 9}), true},                                    // Sq < Sk
      {Shape({2, 4, 6, 8}), Shape({2, 1, 11, 8}), Shape({1, 1, 11, 8}),
       Shape({2, 4, 6, 11})},                                   // broadcast
      {Shape({1, 1, 70, 80}), Shape({1, 1, 130, 80}), Shape({1, 1, 130, 80}),
       Shape({1, 1, 1, 130}), false, 0.11f},                    // past one tile
  };
}

TEST(FusedAttentionCpuTest, MatchesReferenceFloat32) {
  for (const Case& c : Cases()) Check(c, DT_FLOAT, 1e-5);
}

TEST(FusedAttentionCpuTest, MatchesReferenceFloat64) {
  for (const Case& c : Cases()) Check(c, DT_DOUBLE, 1e-12);
}

TEST(FusedAttentionCpuTest, MatchesReferenceHalfTypes) {
  // The reference reads the same rounded inputs; the output is rounded.
  for (const Case& c : Cases()) Check(c, DT_FLOAT16, 2e-3);
  for (const Case& c : Cases()) Check(c, DT_BFLOAT16, 1e-2);
}

TEST(FusedAttentionCpuTest, FullyMaskedRowsGiveZeros) {
  // Sq > Sk, causal: the first Sq - Sk rows see no key.
  Case c{Shape({1, 1, 5, 8}), Shape({1, 1, 3, 8}), Shape({1, 1, 3, 8}),
         std::nullopt, true};
  Check(c, DT_FLOAT, 1e-5);
  std::vector<Tensor> inputs = {
      MakeTensor(DT_FLOAT, Shape({1, 1, 2, 4}), Random(8, 1)),
      MakeTensor(DT_FLOAT, Shape({1, 1, 3, 4}), Random(12, 2)),
      MakeTensor(DT_FLOAT, Shape({1, 1, 3, 4}), Random(12, 3)),
      MakeTensor(DT_FLOAT, Shape({1, 1, 2, 3}),
                 {0, -INFINITY, 0, -INFINITY, -INFINITY, -INFINITY})};
  absl::StatusOr<std::vector<Tensor>> out = RunOp("FusedAttention", inputs);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> got = ToDoubles((*out)[0]);
  const std::vector<double> want =
      Reference(inputs[0], inputs[1], inputs[2], &inputs[3], 1.0, false);
  for (int x = 0; x < 8; ++x) {
    EXPECT_FALSE(std::isnan(got[x])) << x;
    EXPECT_NEAR(got[x], want[x], 1e-5) << x;
  }
  for (int x = 4; x < 8; ++x) EXPECT_EQ(got[x], 0.0);  // row 1: all -inf
}

TEST(FusedAttentionCpuTest, RejectsMismatchedShapes) {
  std::vector<Tensor> inputs = {
      MakeTensor(DT_FLOAT, Shape({1, 1, 2, 4}), Random(8, 1)),
      MakeTensor(DT_FLOAT, Shape({1, 1, 3, 5}), Random(15, 2)),
      MakeTensor(DT_FLOAT, Shape({1, 1, 3, 4}), Random(12, 3))};
  absl::StatusOr<std::vector<Tensor>> out = RunOp("FusedAttention", inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("FusedAttention"));
  inputs[1] = MakeTensor(DT_FLOAT, Shape({1, 1, 3, 4}), Random(12, 2));
  inputs.push_back(MakeTensor(DT_FLOAT, Shape({1, 1, 2, 2}), Random(4, 4)));
  out = RunOp("FusedAttention", inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("mask"));
}

// The BSHD layouts (design decision 29) against the BHSD path: q, k, v
// written into [B, S, C] tensors at column offsets (other columns hold
// values that would show if they were read), the output compared with the
// BHSD result moved to [B, Sq, H*Dv] where out_layout is BSHD.
struct LayoutCase {
  const char* name;
  int64_t b, h, sq, sk, d, dv;
  bool bshd[4];      // q, k, v, out
  int64_t extra[3];  // columns of q, k, v's [B, S, C] before their heads
  bool packed;       // q, k, v one [B, S, C] tensor (needs Sq == Sk)
  int mask;          // 0 none, 1 [B,1,1,Sk], 2 [Sq,Sk]
  bool causal;
  int64_t kv_batch = 0;  // k and v's batch when it broadcasts (1)
};

// [b, h, s, e] values of `x` placed at columns off + h e of a [b, s, c]
// buffer `dst` (other columns unchanged).
void PlaceHeads(const std::vector<double>& x, int64_t b, int64_t h, int64_t s,
                int64_t e, int64_t c, int64_t off, std::vector<double>* dst) {
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < h; ++hi) {
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t x0 = 0; x0 < e; ++x0) {
          (*dst)[(bi * s + i) * c + off + hi * e + x0] =
              x[((bi * h + hi) * s + i) * e + x0];
        }
      }
    }
  }
}

void CheckLayout(const LayoutCase& c, DataType dtype, double tol) {
  SCOPED_TRACE(absl::StrCat(c.name, " ", DataTypeName(dtype)));
  const int64_t kvb = c.kv_batch > 0 ? c.kv_batch : c.b;
  const Shape qs({c.b, c.h, c.sq, c.d}), ks({kvb, c.h, c.sk, c.d}),
      vs({kvb, c.h, c.sk, c.dv});
  // The BHSD operands, rounded to dtype, and the BHSD result.
  std::vector<Tensor> bhsd = {MakeTensor(dtype, qs, Random(qs.num_elements(), 1)),
                              MakeTensor(dtype, ks, Random(ks.num_elements(), 2)),
                              MakeTensor(dtype, vs, Random(vs.num_elements(), 3))};
  Shape mask_shape({c.b, 1, 1, c.sk});
  if (c.mask == 2) mask_shape = Shape({c.sq, c.sk});
  if (c.mask) {
    bhsd.push_back(MakeTensor(dtype, mask_shape, Random(mask_shape.num_elements(), 4)));
  }
  Attrs base = {{"scale", FloatAttr(0.3f)}, {"causal", BoolAttr(c.causal)}};
  absl::StatusOr<std::vector<Tensor>> want = RunOp("FusedAttention", bhsd, base);
  ASSERT_TRUE(want.ok()) << want.status();
  // The same operands in the case's layouts.
  const int64_t e[3] = {c.d, c.d, c.dv};
  const int64_t batch[3] = {c.b, kvb, kvb};
  const int64_t seq[3] = {c.sq, c.sk, c.sk};
  std::vector<Tensor> in = bhsd;
  Attrs attrs = base;
  attrs["num_heads"] = IntAttr(c.h);
  attrs["head_dim"] = IntAttr(c.d);
  attrs["v_head_dim"] = IntAttr(c.dv);
  static constexpr const char* kLayouts[] = {"q_layout", "k_layout", "v_layout",
                                             "out_layout"};
  static constexpr const char* kOffsets[] = {"q_offset", "k_offset", "v_offset"};
  for (int i = 0; i < 4; ++i) {
    attrs[kLayouts[i]] = StringAttr(c.bshd[i] ? "BSHD" : "BHSD");
  }
  if (c.packed) {
    const int64_t cols = c.h * (2 * c.d + c.dv) + c.extra[0];
    std::vector<double> buf = Random(c.b * c.sq * cols, 9);
    int64_t off = c.extra[0];
    for (int i = 0; i < 3; ++i) {
      PlaceHeads(ToDoubles(bhsd[i]), c.b, c.h, c.sq, e[i], cols, off, &buf);
      attrs[kOffsets[i]] = IntAttr(off);
      off += c.h * e[i];
    }
    const Tensor t = MakeTensor(dtype, Shape({c.b, c.sq, cols}), buf);
    in[0] = in[1] = in[2] = t;
  } else {
    for (int i = 0; i < 3; ++i) {
      if (!c.bshd[i]) continue;
      const int64_t cols = c.extra[i] + c.h * e[i] + 3;
      std::vector<double> buf = Random(batch[i] * seq[i] * cols, 10 + i);
      PlaceHeads(ToDoubles(bhsd[i]), batch[i], c.h, seq[i], e[i], cols,
                 c.extra[i], &buf);
      in[i] = MakeTensor(dtype, Shape({batch[i], seq[i], cols}), buf);
      attrs[kOffsets[i]] = IntAttr(c.extra[i]);
    }
  }
  absl::StatusOr<std::vector<Tensor>> got = RunOp("FusedAttention", in, attrs);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<double> w = ToDoubles((*want)[0]);
  if (c.bshd[3]) {
    ASSERT_EQ((*got)[0].shape(), Shape({c.b, c.sq, c.h * c.dv}));
    std::vector<double> moved(w.size());
    PlaceHeads(w, c.b, c.h, c.sq, c.dv, c.h * c.dv, 0, &moved);
    w = moved;
  } else {
    ASSERT_EQ((*got)[0].shape(), Shape({c.b, c.h, c.sq, c.dv}));
  }
  const std::vector<double> g = ToDoubles((*got)[0]);
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
  }
}

std::vector<LayoutCase> LayoutCases() {
  return {
      {"token_major", 2, 3, 5, 5, 4, 4, {true, true, true, true}, {0, 0, 0},
       false, 1, false},
      {"packed_causal", 2, 2, 7, 7, 8, 8, {true, true, true, true}, {0, 0, 0},
       true, 0, true},
      {"packed_offset_dv", 1, 3, 70, 70, 16, 8, {true, true, true, true},
       {5, 0, 0}, true, 2, false},
      {"mixed_q_v", 2, 2, 3, 9, 8, 6, {true, false, true, false}, {3, 0, 1},
       false, 2, true},
      {"out_only", 2, 2, 6, 6, 8, 8, {false, false, false, true}, {0, 0, 0},
       false, 1, false},
      {"kv_batch_broadcast", 2, 2, 4, 6, 8, 8, {true, true, true, true},
       {0, 2, 0}, false, 0, false, 1},
  };
}

TEST(FusedAttentionCpuTest, LayoutsMatchBhsdFloat32) {
  for (const LayoutCase& c : LayoutCases()) CheckLayout(c, DT_FLOAT, 1e-6);
}

TEST(FusedAttentionCpuTest, LayoutsMatchBhsdOtherFloats) {
  // Same inputs, same per-row arithmetic: equal up to the output rounding.
  for (const LayoutCase& c : LayoutCases()) CheckLayout(c, DT_DOUBLE, 1e-14);
  for (const LayoutCase& c : LayoutCases()) CheckLayout(c, DT_FLOAT16, 1e-3);
  for (const LayoutCase& c : LayoutCases()) CheckLayout(c, DT_BFLOAT16, 1e-2);
}

TEST(FusedAttentionCpuTest, RejectsBadLayouts) {
  const Tensor x = MakeTensor(DT_FLOAT, Shape({1, 3, 8}), Random(24, 1));
  Attrs attrs = {{"q_layout", StringAttr("BSHD")}, {"k_layout", StringAttr("BSHD")},
                 {"v_layout", StringAttr("BSHD")}, {"num_heads", IntAttr(2)},
                 {"head_dim", IntAttr(4)},          {"v_head_dim", IntAttr(4)},
                 {"k_offset", IntAttr(2)}};
  absl::StatusOr<std::vector<Tensor>> out = RunOp("FusedAttention", {x, x, x}, attrs);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("from column 2"));
  attrs["k_offset"] = IntAttr(0);
  attrs["q_layout"] = StringAttr("BHDS");
  out = RunOp("FusedAttention", {x, x, x}, attrs);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("q_layout"));
  attrs["q_layout"] = StringAttr("BSHD");
  attrs["num_heads"] = IntAttr(0);
  out = RunOp("FusedAttention", {x, x, x}, attrs);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("num_heads"));
  // A BSHD operand of rank 4.
  attrs["num_heads"] = IntAttr(2);
  const Tensor y = MakeTensor(DT_FLOAT, Shape({1, 3, 2, 4}), Random(24, 1));
  out = RunOp("FusedAttention", {y, x, x}, attrs);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("rank 3"));
}

}  // namespace
}  // namespace sluice::fused_attention_test
