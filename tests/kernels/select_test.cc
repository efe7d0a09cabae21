// TopK, Unique (topk_unique.cc), NonZero, Compress, OneHot, EyeLike,
// ReverseSequence (select.cc) and Dropout (identity.cc): values worked out
// by hand, outputs sized at run time.
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::select_test {
namespace {

using ::testing::HasSubstr;

TEST(SelectKernelTest, TopKLargestAndSmallestWithTiesInIndexOrder) {
  const Tensor x = F32({3, 1, 3, 2, 5, 5, 0, 1}, {2, 4});
  RunOptions two;
  two.num_outputs = 2;
  auto big = RunOp("TopK", {x, I64({2}, {1})}, {{"axis", IntAttr(1)}}, two);
  ASSERT_TRUE(big.ok()) << big.status();
  ExpectTensor((*big)[0], {2, 2}, {3, 3, 5, 5});
  ExpectTensor((*big)[1], {2, 2}, {0, 2, 0, 1});
  auto small = RunOp("TopK", {x, I64({3}, {})},
                     {{"axis", IntAttr(-1)}, {"largest", BoolAttr(false)}},
                     two);
  ASSERT_TRUE(small.ok()) << small.status();
  ExpectTensor((*small)[0], {2, 3}, {1, 2, 3, 0, 1, 5});
  ExpectTensor((*small)[1], {2, 3}, {1, 3, 0, 2, 3, 0});
}

TEST(SelectKernelTest, TopKRefusesKLargerThanTheAxis) {
  RunOptions two;
  two.num_outputs = 2;
  auto out = RunOp("TopK", {F32({1, 2}, {2}), I64({3}, {1})}, {}, two);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("k = 3"));
}

TEST(SelectKernelTest, UniqueFlattenedSortedAndInFirstOccurrenceOrder) {
  RunOptions four;
  four.num_outputs = 4;
  const Tensor x = F32({2, 1, 1, 3, 4, 3}, {6});
  auto unsorted = RunOp("Unique", {x}, {{"sorted", BoolAttr(false)}}, four);
  ASSERT_TRUE(unsorted.ok()) << unsorted.status();
  ExpectTensor((*unsorted)[0], {4}, {2, 1, 3, 4});
  ExpectTensor((*unsorted)[1], {4}, {0, 1, 3, 4});
  ExpectTensor((*unsorted)[2], {6}, {0, 1, 1, 2, 3, 2});
  ExpectTensor((*unsorted)[3], {4}, {1, 2, 2, 1});
  auto sorted = RunOp("Unique", {x}, {}, four);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  ExpectTensor((*sorted)[0], {4}, {1, 2, 3, 4});
  ExpectTensor((*sorted)[1], {4}, {1, 0, 3, 4});
  ExpectTensor((*sorted)[2], {6}, {1, 0, 0, 2, 3, 2});
  ExpectTensor((*sorted)[3], {4}, {2, 1, 2, 1});
}

TEST(SelectKernelTest, UniqueRowsAlongAnAxis) {
  RunOptions four;
  four.num_outputs = 4;
  auto out = RunOp("Unique", {I64({1, 0, 0, 1, 0, 0, 2, 3, 4}, {3, 3})},
                   {{"flatten", BoolAttr(false)}, {"axis", IntAttr(0)}}, four);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3}, {1, 0, 0, 2, 3, 4});
  ExpectTensor((*out)[1], {2}, {0, 2});
  ExpectTensor((*out)[2], {3}, {0, 0, 1});
  ExpectTensor((*out)[3], {2}, {2, 1});
}

TEST(SelectKernelTest, NonZeroListsIndicesPerDimension) {
  auto out = RunOp("NonZero", {Bool({true, false, true, true}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3}, {0, 1, 1, 0, 0, 1});
  auto none = RunOp("NonZero", {F32({0, 0}, {2})});
  ASSERT_TRUE(none.ok()) << none.status();
  ExpectTensor((*none)[0], {1, 0}, {});
  // A scalar is one element of rank 1, as NumPy and onnxruntime have it.
  auto scalar = RunOp("NonZero", {F32({3}, {})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  ExpectTensor((*scalar)[0], {1, 1}, {0});
  auto zero = RunOp("NonZero", {F32({0}, {})});
  ASSERT_TRUE(zero.ok()) << zero.status();
  ExpectTensor((*zero)[0], {1, 0}, {});
}

TEST(SelectKernelTest, CompressAlongAnAxisAndFlattened) {
  const Tensor x = F32({1, 2, 3, 4, 5, 6}, {3, 2});
  auto rows = RunOp("Compress", {x, Bool({false, true, true}, {3})},
                    {{"flatten", BoolAttr(false)}, {"axis", IntAttr(0)}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ExpectTensor((*rows)[0], {2, 2}, {3, 4, 5, 6});
  auto flat = RunOp("Compress", {x, Bool({false, true, false, false, true},
                                         {5})});
  ASSERT_TRUE(flat.ok()) << flat.status();
  ExpectTensor((*flat)[0], {2}, {2, 5});
  auto too_long = RunOp("Compress", {x, Bool({false, false, false, true}, {4})},
                        {{"flatten", BoolAttr(false)}, {"axis", IntAttr(0)}});
  ASSERT_FALSE(too_long.ok());
  EXPECT_THAT(too_long.status().message(), HasSubstr("index 3"));
}

TEST(SelectKernelTest, OneHotWrapsNegativeIndicesAndSkipsOutOfRange) {
  auto out = RunOp("OneHot",
                   {I64({0, -1, 5}, {3}), F32({4}, {}), F32({2, 9}, {2})},
                   {{"axis", IntAttr(0)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {4, 3},
               {9, 2, 2, 2, 2, 2, 2, 2, 2, 2, 9, 2});
}

TEST(SelectKernelTest, EyeLikeFillsDiagonalK) {
  auto out = RunOp("EyeLike", {F32({0, 0, 0, 0, 0, 0}, {2, 3})},
                   {{"DstT", TypeAttr(DT_INT32)}, {"k", IntAttr(1)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DT_INT32);
  ExpectTensor((*out)[0], {2, 3}, {0, 1, 0, 0, 0, 1});
}

TEST(SelectKernelTest, ReverseSequenceReversesEachBatchPrefix) {
  // time_axis 1, batch_axis 0: rows are sequences.
  auto out = RunOp("ReverseSequence",
                   {F32({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}), I64({1, 3}, {2})},
                   {{"batch_axis", IntAttr(0)}, {"time_axis", IntAttr(1)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 4}, {0, 1, 2, 3, 6, 5, 4, 7});
  auto bad = RunOp("ReverseSequence",
                   {F32({0, 1, 2, 3}, {2, 2}), I64({3, 1}, {2})},
                   {{"batch_axis", IntAttr(0)}, {"time_axis", IntAttr(1)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("sequence_lens[0] = 3"));
}

TEST(SelectKernelTest, DropoutPassesThroughWithAllTrueMask) {
  RunOptions two;
  two.num_outputs = 2;
  const Tensor x = F32({1, -2, 3}, {3});
  auto zero = RunOp("Dropout", {x, F32({0.0f}, {}), Bool({true}, {})}, {},
                    two);
  ASSERT_TRUE(zero.ok()) << zero.status();
  ExpectTensor((*zero)[0], {3}, {1, -2, 3});
  ExpectTensor((*zero)[1], {3}, {1, 1, 1});
  auto train = RunOp("Dropout", {x, F32({0.5f}, {}), Bool({true}, {})}, {},
                     two);
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace sluice::testing::select_test
