// Einsum (einsum.cc), Det (det.cc), CumProd (trilu_cumsum.cc) and the
// reductions ReduceProd, ReduceMin and ReduceMax on bool, 16-bit floats and
// empty sets (reduce.cc): values worked out by hand.
#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::einsum_det_test {
namespace {

using ::testing::HasSubstr;

Attrs Equation(const std::string& eq, int n) {
  return {{"equation", StringAttr(eq)}, {"N", IntAttr(n)}};
}

TEST(EinsumKernelTest, MatMulTransposeTraceAndImplicitOutput) {
  const Tensor a = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = F32({1, 0, 0, 1, 1, 1}, {3, 2});
  auto mm = RunOp("Einsum", {a, b}, Equation("ij,jk->ik", 2));
  ASSERT_TRUE(mm.ok()) << mm.status();
  ExpectTensor((*mm)[0], {2, 2}, {4, 5, 10, 11});
  auto implicit = RunOp("Einsum", {a, b}, Equation("ij,jk", 2));
  ASSERT_TRUE(implicit.ok()) << implicit.status();
  ExpectTensor((*implicit)[0], {2, 2}, {4, 5, 10, 11});
  auto t = RunOp("Einsum", {a}, Equation("ij->ji", 1));
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectTensor((*t)[0], {3, 2}, {1, 4, 2, 5, 3, 6});
  auto trace = RunOp("Einsum", {F32({1, 2, 3, 4}, {2, 2})}, Equation("ii", 1));
  ASSERT_TRUE(trace.ok()) << trace.status();
  ExpectTensor((*trace)[0], {}, {5});
  auto sum = RunOp("Einsum", {a}, Equation("ij->i", 1));
  ASSERT_TRUE(sum.ok()) << sum.status();
  ExpectTensor((*sum)[0], {2}, {6, 15});
}

TEST(EinsumKernelTest, EllipsisDiagonalAndBroadcast) {
  auto diag = RunOp("Einsum", {F32({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2})},
                    Equation("...ii->...i", 1));
  ASSERT_TRUE(diag.ok()) << diag.status();
  ExpectTensor((*diag)[0], {2, 2}, {1, 4, 5, 8});
  // [2,1,2] x [3,2] -> the ellipsis dims 2 and 1 stretch to [2,3].
  auto bc = RunOp("Einsum", {F32({1, 2, 3, 4}, {2, 1, 2}),
                             F32({1, 1, 1, 0, 0, 1}, {3, 2})},
                  Equation("...j,...j->...", 2));
  ASSERT_TRUE(bc.ok()) << bc.status();
  ExpectTensor((*bc)[0], {2, 3}, {3, 1, 2, 7, 3, 4});
}

TEST(EinsumKernelTest, MismatchedLabelSizesAreAnError) {
  auto out = RunOp("Einsum", {F32({1, 2}, {2}), F32({1, 2, 3}, {3})},
                   Equation("i,i->", 2));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("sizes 2 and 3"));
}

TEST(DetKernelTest, DeterminantsOfABatch) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE}) {
    auto out = RunOp("Det", {MakeTensor(t, {2, 2, 2},
                                        {1, 2, 3, 4, 2, 0, 0, 3})});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectTensor((*out)[0], {2}, {-2, 6}, 1e-5);
  }
  auto three = RunOp("Det", {F32({2, 0, 1, 1, 3, 2, 1, 1, 1}, {3, 3})});
  ASSERT_TRUE(three.ok()) << three.status();
  ExpectTensor((*three)[0], {}, {0}, 1e-5);  // 2*(3-2) - 0 + 1*(1-3) = 0
}

TEST(CumProdKernelTest, ExclusiveAndReverse) {
  const Tensor x = F32({1, 2, 3}, {3});
  auto plain = RunOp("CumProd", {x, I64({0}, {})});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ExpectTensor((*plain)[0], {3}, {1, 2, 6});
  auto excl_rev = RunOp("CumProd", {x, I64({0}, {})},
                        {{"exclusive", BoolAttr(true)},
                         {"reverse", BoolAttr(true)}});
  ASSERT_TRUE(excl_rev.ok()) << excl_rev.status();
  ExpectTensor((*excl_rev)[0], {3}, {6, 3, 1});
  auto ints = RunOp("CumProd", {I32({2, 3, 4, 5}, {2, 2}), I64({1}, {})});
  ASSERT_TRUE(ints.ok()) << ints.status();
  ExpectTensor((*ints)[0], {2, 2}, {2, 6, 4, 20});
}

TEST(ReduceKernelTest, ProdMinAndEmptySets) {
  const Tensor x = F32({1, -2, 3, 4, 5, -6}, {2, 3});
  const Attrs rows = {{"axes", IntListAttr({1})}, {"keepdims", BoolAttr(false)}};
  auto prod = RunOp("ReduceProd", {x}, rows);
  ASSERT_TRUE(prod.ok()) << prod.status();
  ExpectTensor((*prod)[0], {2}, {-6, -120});
  auto min = RunOp("ReduceMin", {x}, rows);
  ASSERT_TRUE(min.ok()) << min.status();
  ExpectTensor((*min)[0], {2}, {-2, -6});
  const Tensor empty = F32({}, {2, 0});
  const double inf = std::numeric_limits<double>::infinity();
  auto emax = RunOp("ReduceMax", {empty}, rows);
  auto emin = RunOp("ReduceMin", {empty}, rows);
  auto eprod = RunOp("ReduceProd", {empty}, rows);
  ASSERT_TRUE(emax.ok() && emin.ok() && eprod.ok());
  ExpectTensor((*emax)[0], {2}, {-inf, -inf});
  ExpectTensor((*emin)[0], {2}, {inf, inf});
  ExpectTensor((*eprod)[0], {2}, {1, 1});
  auto imin = RunOp("ReduceMin", {I32({}, {0})}, {{"keepdims", BoolAttr(false)}});
  ASSERT_TRUE(imin.ok()) << imin.status();
  ExpectTensor((*imin)[0], {}, {std::numeric_limits<int32_t>::max()});
}

TEST(ReduceKernelTest, MaxAndMinOfBoolAreAnyAndAll) {
  const Tensor x = Bool({true, true, true, false, false, false}, {3, 2});
  const Attrs rows = {{"axes", IntListAttr({1})}, {"keepdims", BoolAttr(false)}};
  auto any = RunOp("ReduceMax", {x}, rows);
  auto all = RunOp("ReduceMin", {x}, rows);
  ASSERT_TRUE(any.ok() && all.ok());
  ExpectTensor((*any)[0], {3}, {1, 1, 0});
  ExpectTensor((*all)[0], {3}, {1, 0, 0});
}

TEST(ReduceKernelTest, SixteenBitFloatsReduceInFloat) {
  for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
    const Tensor x = MakeTensor(t, {2, 2}, {1.5, -4, 2, 8});
    auto max = RunOp("ReduceMax", {x}, {{"axes", IntListAttr({0})},
                                        {"keepdims", BoolAttr(true)}});
    ASSERT_TRUE(max.ok()) << DataTypeName(t) << ": " << max.status();
    EXPECT_EQ((*max)[0].dtype(), t);
    ExpectTensor((*max)[0], {1, 2}, {2, 8});
    auto sum = RunOp("ReduceSum", {x}, {{"axes", IntListAttr({})},
                                        {"keepdims", BoolAttr(false)}});
    ASSERT_TRUE(sum.ok()) << sum.status();
    ExpectTensor((*sum)[0], {}, {7.5});
  }
}

}  // namespace
}  // namespace sluice::testing::einsum_det_test
