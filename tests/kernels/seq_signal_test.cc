// The sequence, signal and detection kernels (linear_attention.cc,
// tensor_scatter.cc, recurrent.cc, signal.cc, nms.cc) on small cases worked
// out by hand.
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::seq_signal_test {
namespace {

using ::testing::HasSubstr;

TEST(TensorScatterKernelTest, WritesAtEachBatchIndexLinearAndCircular) {
  const Tensor cache = F32({0, 0, 0, 0, 0, 0}, {2, 3, 1});
  const Tensor update = F32({1, 2, 3, 4}, {2, 2, 1});
  auto lin = RunOp("TensorScatter", {cache, update, I64({0, 1}, {2})},
                   {{"mode", StringAttr("linear")}, {"axis", IntAttr(-2)}});
  ASSERT_TRUE(lin.ok()) << lin.status();
  ExpectTensor((*lin)[0], {2, 3, 1}, {1, 2, 0, 0, 3, 4});
  auto circ = RunOp("TensorScatter", {cache, update, I64({0, 2}, {2})},
                    {{"mode", StringAttr("circular")}, {"axis", IntAttr(1)}});
  ASSERT_TRUE(circ.ok()) << circ.status();
  ExpectTensor((*circ)[0], {2, 3, 1}, {1, 2, 0, 4, 0, 3});
}

TEST(TensorScatterKernelTest, LinearWritePastTheEndIsAnError) {
  auto out = RunOp("TensorScatter",
                   {F32({0, 0, 0}, {1, 3, 1}), F32({1, 2}, {1, 2, 1}),
                    I64({2}, {1})},
                   {{"mode", StringAttr("linear")}, {"axis", IntAttr(-2)}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("outside the cache length"));
}

// One head, Dk = Dv = 1, scale 1: q = [1, 1], k = [1, 2], v = [3, 4].
std::vector<Tensor> LinearInputs(float decay, float beta) {
  return {F32({1, 1}, {1, 2, 1}),         F32({1, 2}, {1, 2, 1}),
          F32({3, 4}, {1, 2, 1}),         F32({0}, {1, 1, 1, 1}),
          F32({decay, decay}, {1, 2, 1}), F32({beta, beta}, {1, 2, 1})};
}

TEST(LinearAttentionKernelTest, EachUpdateRuleByHand) {
  struct Case {
    const char* rule;
    float decay, beta;
    std::vector<double> out;
    double state;
  };
  const std::vector<Case> cases = {
      // S = 3, then 3 + 2*4 = 11.
      {"linear", 0, 0, {3, 11}, 11},
      // S = 3, then 0.5*3 + 8 = 9.5.
      {"gated", std::log(0.5f), 0, {3, 9.5}, 9.5},
      // v1 = 1 * (4 - 3*2) = -2: S = 3 + 2*(-2) = -1.
      {"delta", 0, 1, {3, -1}, -1},
  };
  for (const Case& c : cases) {
    RunOptions two;
    two.num_outputs = 2;
    auto out = RunOp("LinearAttention", LinearInputs(c.decay, c.beta),
                     {{"q_num_heads", IntAttr(1)},
                      {"kv_num_heads", IntAttr(1)},
                      {"scale", FloatAttr(1.0f)},
                      {"update_rule", StringAttr(c.rule)}},
                     two);
    ASSERT_TRUE(out.ok()) << c.rule << ": " << out.status();
    ExpectTensor((*out)[0], {1, 2, 1}, c.out, 1e-5);
    ExpectTensor((*out)[1], {1, 1, 1, 1}, {c.state}, 1e-5);
  }
}

Attrs RecurrentAttrs(const char* cell, const char* direction,
                     const char* activations) {
  return {{"cell", StringAttr(cell)},
          {"direction", StringAttr(direction)},
          {"activations", StringAttr(activations)},
          {"clip", FloatAttr(0)},
          {"linear_before_reset", BoolAttr(false)},
          {"input_forget", BoolAttr(false)}};
}

TEST(RecurrentKernelTest, ReluRnnForwardReverseAndSequenceLengths) {
  RunOptions three;
  three.num_outputs = 3;
  // S = 2, B = 2, I = H = 1, W = R = 1, no bias; batch 1 runs one step.
  const std::vector<Tensor> in = {
      F32({1, 5, 2, 7}, {2, 2, 1}), F32({1}, {1, 1, 1}), F32({1}, {1, 1, 1}),
      F32({0, 0}, {1, 2}),          I32({2, 1}, {2}),    F32({0, 0}, {1, 2, 1}),
      F32({0, 0}, {1, 2, 1}),       F32({0, 0, 0}, {1, 3})};
  auto fwd = RunOp("Recurrent", in, RecurrentAttrs("rnn", "forward", "Relu"),
                   three);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  // Batch 0: h = 1, then 2 + 1 = 3. Batch 1: h = 5, then padding (0).
  ExpectTensor((*fwd)[0], {2, 1, 2, 1}, {1, 5, 3, 0});
  ExpectTensor((*fwd)[1], {1, 2, 1}, {3, 5});
  auto rev = RunOp("Recurrent", in, RecurrentAttrs("rnn", "reverse", "Relu"),
                   three);
  ASSERT_TRUE(rev.ok()) << rev.status();
  // Batch 0 from t = 1: h = 2, then 1 + 2 = 3 at t = 0.
  ExpectTensor((*rev)[0], {2, 1, 2, 1}, {3, 5, 2, 0});
  ExpectTensor((*rev)[1], {1, 2, 1}, {3, 5});
}

TEST(RecurrentKernelTest, GruAndLstmWithZeroWeights) {
  RunOptions three;
  three.num_outputs = 3;
  // Zero weights: every sigmoid gate is 0.5 and every tanh candidate 0.
  auto gru = RunOp("Recurrent",
                   {F32({1}, {1, 1, 1}), F32({0, 0, 0}, {1, 3, 1}),
                    F32({0, 0, 0}, {1, 3, 1}), F32(std::vector<float>(6, 0), {1, 6}),
                    I32({1}, {1}), F32({1}, {1, 1, 1}), F32({0}, {1, 1, 1}),
                    F32({0, 0, 0}, {1, 3})},
                   RecurrentAttrs("gru", "forward", ""), three);
  ASSERT_TRUE(gru.ok()) << gru.status();
  ExpectTensor((*gru)[1], {1, 1, 1}, {0.5}, 1e-6);  // (1 - z) 0 + z 1
  auto lstm = RunOp("Recurrent",
                    {F32({1}, {1, 1, 1}), F32({0, 0, 0, 0}, {1, 4, 1}),
                     F32({0, 0, 0, 0}, {1, 4, 1}),
                     F32(std::vector<float>(8, 0), {1, 8}), I32({1}, {1}),
                     F32({0}, {1, 1, 1}), F32({1}, {1, 1, 1}),
                     F32({0, 0, 0}, {1, 3})},
                    RecurrentAttrs("lstm", "forward", ""), three);
  ASSERT_TRUE(lstm.ok()) << lstm.status();
  // C = f C + i c~ = 0.5; H = o tanh(C).
  ExpectTensor((*lstm)[2], {1, 1, 1}, {0.5}, 1e-6);
  ExpectTensor((*lstm)[1], {1, 1, 1}, {0.5 * std::tanh(0.5)}, 1e-6);
}

Attrs DftAttrs(bool inverse, bool onesided) {
  return {{"inverse", BoolAttr(inverse)}, {"onesided", BoolAttr(onesided)}};
}

TEST(DftKernelTest, ForwardOnesidedAndInverseRealByHand) {
  // DFT of the impulse at 1: e^(-2 pi i k / 4) = 1, -i, -1, i.
  auto fwd = RunOp("DFT", {F32({0, 1, 0, 0}, {1, 4, 1}), I64({0}, {}),
                           I64({1}, {})},
                   DftAttrs(false, false));
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  ExpectTensor((*fwd)[0], {1, 4, 2}, {1, 0, 0, -1, -1, 0, 0, 1}, 1e-6);
  // rfft([1, 2, 3, 4]) = 10, -2 + 2i, -2.
  auto rfft = RunOp("DFT", {F32({1, 2, 3, 4}, {1, 4, 1}), I64({0}, {}),
                            I64({-2}, {})},
                    DftAttrs(false, true));
  ASSERT_TRUE(rfft.ok()) << rfft.status();
  ExpectTensor((*rfft)[0], {1, 3, 2}, {10, 0, -2, 2, -2, 0}, 1e-5);
  // ... and back, with the default length 2 * (3 - 1).
  auto irfft = RunOp("DFT", {F32({10, 0, -2, 2, -2, 0}, {1, 3, 2}),
                             I64({0}, {}), I64({1}, {})},
                     DftAttrs(true, true));
  ASSERT_TRUE(irfft.ok()) << irfft.status();
  ExpectTensor((*irfft)[0], {1, 4, 1}, {1, 2, 3, 4}, 1e-5);
}

TEST(WindowKernelTest, PeriodicAndSymmetricWindows) {
  auto run = [](const char* kind, bool periodic, int64_t size) {
    return RunOp("Window", {I64({size}, {})},
                 {{"T", TypeAttr(DT_FLOAT)},
                  {"window", StringAttr(kind)},
                  {"periodic", BoolAttr(periodic)}});
  };
  auto hann = run("hann", true, 4);
  ASSERT_TRUE(hann.ok()) << hann.status();
  ExpectTensor((*hann)[0], {4}, {0, 0.5, 1, 0.5}, 1e-6);
  auto sym = run("hann", false, 3);
  ASSERT_TRUE(sym.ok()) << sym.status();
  ExpectTensor((*sym)[0], {3}, {0, 1, 0}, 1e-6);
  auto hamming = run("hamming", true, 2);
  ASSERT_TRUE(hamming.ok()) << hamming.status();
  ExpectTensor((*hamming)[0], {2}, {4.0 / 46, 1}, 1e-6);
  auto blackman = run("blackman", true, 2);
  ASSERT_TRUE(blackman.ok()) << blackman.status();
  ExpectTensor((*blackman)[0], {2}, {0, 1}, 1e-6);
}

TEST(NmsKernelTest, SuppressesOverlapsAndHonoursLimits) {
  // Box 1 overlaps box 0 with IoU 0.9 / 1.1; box 2 is apart.
  const Tensor boxes = F32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}, {1, 3, 4});
  const Tensor scores = F32({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  auto run = [&](int64_t max_out, Tensor score_threshold) {
    return RunOp("NonMaxSuppression",
                 {boxes, scores, I64({max_out}, {1}), F32({0.5f}, {1}),
                  score_threshold},
                 {{"center_point_box", IntAttr(0)}});
  };
  auto all = run(3, F32({}, {0}));
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectTensor((*all)[0], {2, 3}, {0, 0, 0, 0, 0, 2});
  auto one = run(1, F32({}, {0}));
  ASSERT_TRUE(one.ok()) << one.status();
  ExpectTensor((*one)[0], {1, 3}, {0, 0, 0});
  auto above = run(3, F32({0.75f}, {1}));
  ASSERT_TRUE(above.ok()) << above.status();
  ExpectTensor((*above)[0], {1, 3}, {0, 0, 0});
}

}  // namespace
}  // namespace sluice::testing::seq_signal_test
