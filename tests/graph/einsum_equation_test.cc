// ParseEinsum and EinsumLabelSizes (graph/einsum_equation.h).
#include "graph/einsum_equation.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::einsum_equation_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(EinsumEquationTest, ExplicitOutputAndRepeatedLabels) {
  auto eq = ParseEinsum("bij, bjk -> bik", {3, 3});
  ASSERT_TRUE(eq.ok()) << eq.status();
  EXPECT_THAT(eq->inputs[0], ElementsAre(1, 8, 9));
  EXPECT_THAT(eq->inputs[1], ElementsAre(1, 9, 10));
  EXPECT_THAT(eq->output, ElementsAre(1, 8, 10));
}

TEST(EinsumEquationTest, ImplicitOutputIsSortedSingletonsUppercaseFirst) {
  auto eq = ParseEinsum("ba,aB", {2, 2});
  ASSERT_TRUE(eq.ok()) << eq.status();
  EXPECT_THAT(eq->output, ElementsAre(27, 1));  // 'B' then 'b'
}

TEST(EinsumEquationTest, EllipsisDimsAlignOnTheRight) {
  auto eq = ParseEinsum("...ii->...i", {4});
  ASSERT_TRUE(eq.ok()) << eq.status();
  EXPECT_EQ(eq->num_labels, 54);
  EXPECT_THAT(eq->inputs[0], ElementsAre(52, 53, 8, 8));
  EXPECT_THAT(eq->output, ElementsAre(52, 53, 8));
  auto two = ParseEinsum("...j,j...", {3, 2});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(two->inputs[1], ElementsAre(9, 53));
}

TEST(EinsumEquationTest, SizesStretchEllipsisOnesOnly) {
  auto eq = ParseEinsum("...j,...j->...", {3, 2});
  ASSERT_TRUE(eq.ok());
  auto sizes = EinsumLabelSizes(*eq, {Shape({2, 1, 4}), Shape({3, 4})});
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ((*sizes)[52], 2);
  EXPECT_EQ((*sizes)[53], 3);
  auto letters = ParseEinsum("i,i", {1, 1});
  auto bad = EinsumLabelSizes(*letters, {Shape({1}), Shape({3})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("sizes 1 and 3"));
}

TEST(EinsumEquationTest, MalformedEquationsNameTheProblem) {
  EXPECT_THAT(ParseEinsum("ij,jk->ik", {2}).status().message(),
              HasSubstr("2 operand terms for 1 inputs"));
  EXPECT_THAT(ParseEinsum("ij->ik", {2}).status().message(),
              HasSubstr("in no input"));
  EXPECT_THAT(ParseEinsum("i1", {2}).status().message(),
              HasSubstr("character '1'"));
  EXPECT_THAT(ParseEinsum("ijk", {2}).status().message(),
              HasSubstr("does not fit input 0 of rank 2"));
}

}  // namespace
}  // namespace sluice::einsum_equation_test
