// The GPU convolutions on cuDNN (kernels/cuda/cudnn_conv.h) and on
// sluice's own kernels (the fallback), against the CPU kernels: Conv2D,
// ConvND (1-D, 2-D, 3-D) and ConvTranspose, grouped, depthwise, dilated,
// strided, padded, batch 1 and more, in float32, float16, bfloat16 and
// float64. Also: a memory limit too small for the fastest algorithm's
// workspace still runs the convolution (a smaller or no workspace) and
// matches; forcing the fallback (use_cudnn: false) gives the same results.
// Without a GPU (or in a CPU-only build) every case skips with the reason;
// the CudnnCanExpress cases need no GPU and always run in CUDA builds.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "core/status_macros.h"
#include "device/cudnn_info.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"
#include "testing/compare.h"
#include "testing/gpu_required.h"
#ifdef SLUICE_WITH_CUDA
#include "kernels/cuda/cudnn_conv.h"
#endif

namespace sluice::cudnn_conv_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::IntAttr;
using ::sluice::testing::IntListAttr;
using ::sluice::testing::MakeTensor;
using ::sluice::testing::RunOp;
using ::sluice::testing::RunOpOnGpu;
using ::sluice::testing::StringAttr;
using ::sluice::testing::ToDoubles;
using ::sluice::testing::TypeAttr;

#ifdef SLUICE_WITH_CUDA

// --- Devices ------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<GpuDevice>> MakeGpu(bool use_cudnn, bool tf32,
                                                   int64_t limit, bool growth) {
  DeviceInventory inv = DiscoverDevices();
  if (inv.gpus.empty()) {
    return absl::UnavailableError(absl::StrCat("no GPU: ", inv.no_gpu_reason));
  }
  RuntimeConfig config;
  config.set_allow_growth(growth);
  config.set_allow_tf32(tf32);
  config.set_use_cudnn(use_cudnn);
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GpuDevice>> gpus,
                   CreateGpuDevicesFromSpecs(config, {{0, limit}}));
  return std::move(gpus[0]);
}

struct Gpus {
  std::unique_ptr<GpuDevice> cudnn;     // use_cudnn, TF32 off
  std::unique_ptr<GpuDevice> fallback;  // use_cudnn false
  std::unique_ptr<GpuDevice> tf32;      // use_cudnn, TF32 on
  std::string skip_reason;
};

const Gpus& GetGpus() {
  static const Gpus* gpus = [] {
    auto* g = new Gpus();
    constexpr int64_t kLimit = int64_t{2} << 30;
    auto a = MakeGpu(true, false, kLimit, true);
    auto b = MakeGpu(false, false, kLimit, true);
    auto c = MakeGpu(true, true, kLimit, true);
    if (!a.ok() || !b.ok() || !c.ok()) {
      g->skip_reason = (!a.ok() ? a.status() : !b.ok() ? b.status() : c.status())
                           .ToString();
      return g;
    }
    g->cudnn = *std::move(a);
    g->fallback = *std::move(b);
    g->tf32 = *std::move(c);
    return g;
  }();
  return *gpus;
}

// --- One node on a GPU ------------------------------------------------------------

absl::StatusOr<Tensor> RunOnGpu(GpuDevice* gpu, const std::string& op,
                                const std::vector<Tensor>& inputs,
                                const Attrs& attrs) {
  ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOpOnGpu(gpu, op, inputs, attrs));
  return out[0];
}

// cuDNN runs on the device so far (every cache entry's).
int64_t CudnnRuns(GpuDevice* gpu) {
  int64_t runs = 0;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpu)) runs += e.runs;
  return runs;
}

#endif  // SLUICE_WITH_CUDA

// --- Cases --------------------------------------------------------------------------

struct ConvCase {
  std::string name;
  std::string op;  // Conv2D, ConvND or ConvTranspose
  Shape x, w;
  Attrs attrs;
  // cuDNN cannot express it (asymmetric pads, negative pads): the fallback
  // runs even with cuDNN on.
  bool fallback_only = false;
};

Attrs Window(std::vector<int64_t> s, std::vector<int64_t> p,
             std::vector<int64_t> d, int64_t group = 1) {
  return {{"strides", IntListAttr(s)}, {"pads", IntListAttr(p)},
          {"dilations", IntListAttr(d)}, {"group", IntAttr(group)}};
}

std::vector<ConvCase> Problems() {
  std::vector<ConvCase> c;
  // Conv2D (what the ONNX importer emits for 2-D Conv): ResNet's shapes.
  c.push_back({"Conv2D_resnet_stem_b1", "Conv2D", Shape({1, 3, 32, 32}),
               Shape({16, 3, 7, 7}), Window({2, 2}, {3, 3, 3, 3}, {1, 1})});
  c.push_back({"Conv2D_3x3_b4", "Conv2D", Shape({4, 16, 14, 14}),
               Shape({16, 16, 3, 3}), Window({1, 1}, {1, 1, 1, 1}, {1, 1})});
  c.push_back({"Conv2D_1x1_strided_b2", "Conv2D", Shape({2, 32, 8, 8}),
               Shape({64, 32, 1, 1}), Window({2, 2}, {0, 0, 0, 0}, {1, 1})});
  c.push_back({"Conv2D_grouped_dilated_b3", "Conv2D", Shape({3, 8, 11, 9}),
               Shape({12, 2, 3, 3}), Window({1, 2}, {2, 2, 2, 2}, {2, 2}, 4)});
  c.push_back({"Conv2D_depthwise_b2", "Conv2D", Shape({2, 16, 10, 10}),
               Shape({16, 1, 3, 3}), Window({1, 1}, {1, 1, 1, 1}, {1, 1}, 16)});
  c.push_back({"Conv2D_depthwise_multiplier_strided", "Conv2D", Shape({1, 8, 9, 9}),
               Shape({16, 1, 5, 5}), Window({2, 2}, {2, 2, 2, 2}, {1, 1}, 8)});
  c.push_back({"Conv2D_asymmetric_pads", "Conv2D", Shape({2, 4, 9, 8}),
               Shape({6, 2, 3, 3}), Window({2, 1}, {1, 1, 0, 2}, {1, 2}, 2),
               /*fallback_only=*/true});
  // Asymmetric pads whose extra end padding no window reaches (9 wide,
  // 3 taps, stride 2: 4 positions with or without it): cuDNN runs.
  c.push_back({"Conv2D_end_pad_unread", "Conv2D", Shape({1, 4, 9, 9}),
               Shape({4, 4, 3, 3}), Window({2, 2}, {0, 0, 1, 1}, {1, 1})});
  // ConvND: 1-D, 2-D, 3-D.
  c.push_back({"ConvND_1d_strided_dilated_b2", "ConvND", Shape({2, 3, 20}),
               Shape({4, 3, 3}), Window({2}, {2, 2}, {2})});
  c.push_back({"ConvND_1d_depthwise_b1", "ConvND", Shape({1, 6, 17}),
               Shape({6, 1, 5}), Window({1}, {2, 2}, {1}, 6)});
  c.push_back({"ConvND_2d_grouped_b2", "ConvND", Shape({2, 4, 6, 7}),
               Shape({6, 2, 3, 3}), Window({1, 1}, {1, 1, 1, 1}, {1, 1}, 2)});
  c.push_back({"ConvND_3d_b1", "ConvND", Shape({1, 2, 5, 6, 5}),
               Shape({4, 2, 3, 3, 3}), Window({1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1})});
  c.push_back({"ConvND_3d_strided_dilated_grouped_b2", "ConvND",
               Shape({2, 4, 7, 8, 6}), Shape({4, 2, 2, 3, 2}),
               Window({2, 1, 2}, {1, 1, 0, 1, 1, 0}, {1, 2, 1}, 2)});
  c.push_back({"ConvND_3d_asymmetric_pads", "ConvND", Shape({1, 2, 4, 5, 4}),
               Shape({3, 2, 2, 3, 2}), Window({1, 1, 1}, {0, 1, 0, 0, 1, 1}, {1, 1, 1}),
               /*fallback_only=*/true});
  // ConvTranspose: 1-D, 2-D, 3-D; output_padding; groups.
  Attrs ct2 = Window({2, 2}, {1, 1, 1, 1}, {1, 1}, 2);
  ct2["output_padding"] = IntListAttr({1, 1});
  c.push_back({"ConvTranspose_2d_strided_grouped_b2", "ConvTranspose",
               Shape({2, 4, 5, 6}), Shape({4, 3, 3, 3}), ct2});
  Attrs ct2b = Window({1, 1}, {0, 0, 0, 0}, {2, 1});
  ct2b["output_padding"] = IntListAttr({0, 0});
  c.push_back({"ConvTranspose_2d_dilated_b1", "ConvTranspose",
               Shape({1, 3, 6, 6}), Shape({3, 5, 3, 2}), ct2b});
  Attrs ct1 = Window({3}, {1, 1}, {1});
  ct1["output_padding"] = IntListAttr({2});
  c.push_back({"ConvTranspose_1d_strided_b3", "ConvTranspose", Shape({3, 4, 7}),
               Shape({4, 2, 4}), ct1});
  Attrs ct3 = Window({2, 2, 2}, {0, 0, 0, 0, 0, 0}, {1, 1, 1});
  ct3["output_padding"] = IntListAttr({0, 0, 0});
  c.push_back({"ConvTranspose_3d_b2", "ConvTranspose", Shape({2, 2, 3, 4, 3}),
               Shape({2, 3, 2, 2, 2}), ct3});
  Attrs ctn = Window({2}, {-1, 1}, {2});
  ctn["output_padding"] = IntListAttr({1});
  c.push_back({"ConvTranspose_1d_negative_pad", "ConvTranspose", Shape({1, 2, 5}),
               Shape({2, 3, 4}), ctn, /*fallback_only=*/true});
  return c;
}

struct DtypeCase {
  ConvCase conv;
  DataType dtype;
};

void PrintTo(const DtypeCase& c, std::ostream* os) {
  *os << c.conv.name << "_" << DataTypeName(c.dtype);
}

std::vector<DtypeCase> AllCases() {
  std::vector<DtypeCase> out;
  for (const ConvCase& c : Problems()) {
    for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16, DT_DOUBLE}) {
      out.push_back({c, t});
    }
  }
  return out;
}

// Inputs of `dtype` with values from [-1, 1] (fixed seed per case), and
// the same values as float32 for the CPU reference.
[[maybe_unused]] void MakeInputs(const ConvCase& c, DataType dtype, std::vector<Tensor>* in,
                std::vector<Tensor>* in32) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name) & 0xffff));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const Shape& s : {c.x, c.w}) {
    std::vector<double> v(s.num_elements());
    for (double& e : v) e = u(rng);
    Tensor t = MakeTensor(dtype, s, v);
    in->push_back(t);
    in32->push_back(MakeTensor(DT_FLOAT, s, ToDoubles(t)));  // rounded values
  }
}

// A tensor of `dtype` with values from [-1, 1] drawn from `rng`.
[[maybe_unused]] Tensor RandomTensor(std::mt19937& rng, DataType dtype, const Shape& s) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(s.num_elements());
  for (double& e : v) e = u(rng);
  return MakeTensor(dtype, s, v);
}

// Through the tests' one comparator (testing/compare.h): NaN only against
// NaN, infinities by sign, finite values within rtol * (1 + |cpu|).
[[maybe_unused]] void ExpectClose(const Tensor& gpu, const std::vector<double>& cpu,
                 const Shape& shape, double rtol, const std::string& what) {
  ASSERT_EQ(gpu.shape(), shape) << what;
  EXPECT_EQ(::sluice::testing::CompareValues(
                ToDoubles(gpu), cpu, gpu.dtype(),
                ::sluice::testing::RelativeAndAbsolute(rtol)),
            "")
      << what << " (gpu against cpu)";
}

// Against a float32 CPU reference on the same (rounded) inputs: float32
// and float64 differ by float32's summation order, the 16-bit floats by
// their output rounding.
[[maybe_unused]] double Tolerance(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT16: return 1e-2;
    case DT_BFLOAT16: return 2e-2;
    default: return 1e-4;
  }
}

TEST(CudnnCanExpressTest, TakesSymmetricPadsAndRefusesWhatCudnnCannotDo) {
#ifndef SLUICE_WITH_CUDA
  GTEST_SKIP() << "this build of sluice has no CUDA support";
#else
  cuda::CudnnConvProblem p;
  p.dtype = DT_FLOAT;
  p.batch = 2;
  p.in_channels = 4;
  p.out_channels = 6;
  p.group = 2;
  p.image = {9, 8};
  p.positions = {9, 8};
  p.kernel = {3, 3};
  p.strides = {1, 1};
  p.dilations = {1, 1};
  p.pad_begin = {1, 1};
  EXPECT_TRUE(cuda::CudnnCanExpress(p).ok()) << cuda::CudnnCanExpress(p);
  // Stride 2, pads (0, 1) at the ends of 8: position 3 reads 6..8, and 8
  // is padding; symmetric 0 gives only 3 positions.
  cuda::CudnnConvProblem asym = p;
  asym.image = {8, 8};
  asym.positions = {4, 4};
  asym.strides = {2, 2};
  asym.pad_begin = {0, 0};
  absl::Status s = cuda::CudnnCanExpress(asym);
  EXPECT_TRUE(absl::IsUnimplemented(s)) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("asymmetric"));
  cuda::CudnnConvProblem four = p;
  four.image = {3, 3, 3, 3};
  four.positions = four.kernel = four.strides = four.dilations =
      four.pad_begin = {1, 1, 1, 1};
  EXPECT_TRUE(absl::IsUnimplemented(cuda::CudnnCanExpress(four)));
  cuda::CudnnConvProblem ints = p;
  ints.dtype = DT_INT32;
  EXPECT_TRUE(absl::IsUnimplemented(cuda::CudnnCanExpress(ints)));
  cuda::CudnnConvProblem negative = p;
  negative.pad_begin = {-1, 1};
  EXPECT_TRUE(absl::IsUnimplemented(cuda::CudnnCanExpress(negative)));
  cuda::CudnnConvProblem huge = p;
  huge.batch = int64_t{1} << 26;  // 2^26 * 4 * 72 elements
  EXPECT_TRUE(absl::IsUnimplemented(cuda::CudnnCanExpress(huge)));
#endif
}

class CudnnConvTest : public ::testing::TestWithParam<DtypeCase> {};

// cuDNN (when it loads) and the fallback, each against the CPU, and each
// other.
TEST_P(CudnnConvTest, CudnnAndFallbackMatchTheCpu) {
#ifndef SLUICE_WITH_CUDA
  GTEST_SKIP() << "this build of sluice has no CUDA support";
#else
  const ConvCase& c = GetParam().conv;
  const DataType dtype = GetParam().dtype;
  std::vector<Tensor> in, in32;
  MakeInputs(c, dtype, &in, &in32);
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp(c.op, in32, c.attrs);
  ASSERT_TRUE(cpu.ok()) << "CPU reference failed: " << cpu.status();
  const std::vector<double> ref = ToDoubles((*cpu)[0]);
  const Shape& shape = (*cpu)[0].shape();

  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  const CudnnInfo cudnn = GetCudnnInfo();
  const int64_t runs_before = CudnnRuns(gpus.cudnn.get());
  absl::StatusOr<Tensor> with = RunOnGpu(gpus.cudnn.get(), c.op, in, c.attrs);
  ASSERT_TRUE(with.ok()) << with.status();
  const int64_t runs_after = CudnnRuns(gpus.cudnn.get());
  if (cudnn.usable && !c.fallback_only) {
    EXPECT_GT(runs_after, runs_before) << "cuDNN was not used";
  }
  if (c.fallback_only) {
    EXPECT_EQ(runs_after, runs_before);
  }
  ExpectClose(*with, ref, shape, Tolerance(dtype), c.name + " with cuDNN");

  absl::StatusOr<Tensor> without = RunOnGpu(gpus.fallback.get(), c.op, in, c.attrs);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(CudnnRuns(gpus.fallback.get()), 0);
  ExpectClose(*without, ref, shape, Tolerance(dtype), c.name + " fallback");
  // The two GPU paths agree more closely than either with a float32 CPU in
  // float64 (both accumulate in double).
  ExpectClose(*with, ToDoubles(*without), shape,
              dtype == DT_DOUBLE ? 1e-10 : Tolerance(dtype),
              c.name + " cuDNN vs fallback");
  if (!cudnn.usable) {
    GTEST_SKIP() << "cuDNN is not usable (" << cudnn.reason
                 << "): only the fallback was checked";
  }
#endif
}

INSTANTIATE_TEST_SUITE_P(
    Convolutions, CudnnConvTest, ::testing::ValuesIn(AllCases()),
    [](const ::testing::TestParamInfo<DtypeCase>& info) {
      return absl::StrCat(info.param.conv.name, "_",
                          DataTypeName(info.param.dtype));
    });

#ifdef SLUICE_WITH_CUDA

// float32 with TF32 allowed: cuDNN may use tensor cores; judged as a whole
// (||gpu - cpu|| / ||cpu||, as the conformance suite judges TF32 MatMul).
TEST(CudnnConvTf32Test, Tf32ConvolutionIsCloseInNorm) {
  const Gpus& gpus = GetGpus();
  if (gpus.tf32 == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  ConvCase c{"tf32", "Conv2D", Shape({4, 32, 16, 16}), Shape({32, 32, 3, 3}),
             Window({1, 1}, {1, 1, 1, 1}, {1, 1})};
  std::vector<Tensor> in, in32;
  MakeInputs(c, DT_FLOAT, &in, &in32);
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp(c.op, in32, c.attrs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<Tensor> out = RunOnGpu(gpus.tf32.get(), c.op, in, c.attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> g = ToDoubles(*out), r = ToDoubles((*cpu)[0]);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    diff += (g[i] - r[i]) * (g[i] - r[i]);
    norm += r[i] * r[i];
  }
  EXPECT_LE(std::sqrt(diff / norm), 2e-3);
}

// The first problem (of a few) whose fastest cuDNN algorithm needs a
// workspace of at least 256 KiB on this GPU, measured without a tight limit.
struct Hungry {
  ConvCase conv;
  int64_t fastest_workspace = 0;
  int fastest_algo = -1;
};

absl::StatusOr<Hungry> FindHungryProblem(GpuDevice* gpu) {
  std::vector<ConvCase> tries = {
      {"hungry_3x3", "Conv2D", Shape({8, 64, 56, 56}), Shape({64, 64, 3, 3}),
       Window({1, 1}, {1, 1, 1, 1}, {1, 1})},
      {"hungry_5x5", "Conv2D", Shape({4, 32, 64, 64}), Shape({32, 32, 5, 5}),
       Window({1, 1}, {2, 2, 2, 2}, {1, 1})},
      {"hungry_7x7", "Conv2D", Shape({8, 3, 224, 224}), Shape({64, 3, 7, 7}),
       Window({2, 2}, {3, 3, 3, 3}, {1, 1})},
      // Many channels and wide kernels, where FFT and Winograd algorithms
      // (which need large workspaces) tend to be the fastest.
      {"hungry_5x5_wide", "Conv2D", Shape({16, 256, 32, 32}), Shape({256, 256, 5, 5}),
       Window({1, 1}, {2, 2, 2, 2}, {1, 1})},
      {"hungry_3x3_wide", "Conv2D", Shape({32, 256, 28, 28}), Shape({256, 256, 3, 3}),
       Window({1, 1}, {1, 1, 1, 1}, {1, 1})},
  };
  std::string seen;
  for (const ConvCase& c : tries) {
    std::vector<Tensor> in, in32;
    MakeInputs(c, DT_FLOAT, &in, &in32);
    RETURN_IF_ERROR(RunOnGpu(gpu, c.op, in, c.attrs).status());
    const std::string image = absl::StrCat(" image=", c.x.dim(2), ",", c.x.dim(3), " ");
    const std::string n = absl::StrCat(" n=", c.x.dim(0), " ");
    for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpu)) {
      if (!absl::StrContains(e.key, image) || !absl::StrContains(e.key, n) ||
          e.algorithms.empty()) {
        continue;
      }
      if (e.algorithms[0].workspace_bytes >= (int64_t{256} << 10)) {
        return Hungry{c, e.algorithms[0].workspace_bytes, e.algorithms[0].algo};
      }
      absl::StrAppend(&seen, " ", c.name, ": algo ", e.algorithms[0].algo, " needs ",
                      e.algorithms[0].workspace_bytes, " B;");
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "the fastest cuDNN algorithm needs less than 256 KiB of workspace for "
      "every problem tried:", seen));
}

// A device whose arena (reserved whole: allow_growth false) leaves about
// `headroom` bytes once the cuBLAS workspace, x, w and y are in it.
absl::StatusOr<std::unique_ptr<GpuDevice>> TightGpu(const ConvCase& c,
                                                    int64_t out_bytes,
                                                    int64_t headroom) {
  const int64_t need = c.x.num_elements() * 4 + c.w.num_elements() * 4 +
                       out_bytes + 4 * 256 + headroom;
  // The device takes min(32 MiB, limit / 16) for cuBLAS.
  int64_t limit = need * 16 / 15 + 4096;
  if (limit / 16 > (int64_t{32} << 20)) limit = need + (int64_t{32} << 20) + 4096;
  limit = (limit + 255) / 256 * 256;
  return MakeGpu(/*use_cudnn=*/true, /*tf32=*/false, limit, /*growth=*/false);
}

TEST(CudnnConvMemoryTest, ATightLimitRunsASmallerWorkspaceAndMatches) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  absl::StatusOr<Hungry> hungry = FindHungryProblem(gpus.cudnn.get());
  if (absl::IsNotFound(hungry.status())) GTEST_SKIP() << hungry.status();
  ASSERT_TRUE(hungry.ok()) << hungry.status();
  const ConvCase& c = hungry->conv;
  std::vector<Tensor> in, in32;
  MakeInputs(c, DT_FLOAT, &in, &in32);
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp(c.op, in32, c.attrs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const int64_t out_bytes = (*cpu)[0].NumElements() * 4;
  // Each output sums k products of values in [-1, 1], so it is of order
  // sqrt(k) / 3 and float32's rounding error (on either side) grows with it:
  // an output near zero carries the absolute error of a large sum. On the
  // H200 (2026-12-01) the 5x5 problem (k = 6,400) differed by up to 2e-4.
  int64_t k = c.w.dim(1);
  for (int i = 2; i < c.w.rank(); ++i) k *= c.w.dim(i);
  const double rtol = 1e-4 * std::max(1.0, std::sqrt(static_cast<double>(k)) / 8.0);

  // Room for a quarter of the fastest algorithm's workspace, then for none.
  for (int64_t headroom : {hungry->fastest_workspace / 4, int64_t{0}}) {
    SCOPED_TRACE(absl::StrCat("headroom ", headroom, " bytes; the fastest (algo ",
                              hungry->fastest_algo, ") needs ",
                              hungry->fastest_workspace));
    absl::StatusOr<std::unique_ptr<GpuDevice>> tight = TightGpu(c, out_bytes, headroom);
    ASSERT_TRUE(tight.ok()) << tight.status();
    absl::StatusOr<Tensor> out = RunOnGpu(tight->get(), c.op, in, c.attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(*out, ToDoubles((*cpu)[0]), (*cpu)[0].shape(), rtol, c.name);
    std::vector<cuda::CudnnConvCacheEntry> cache = cuda::CudnnConvCache(tight->get());
    ASSERT_EQ(cache.size(), 1u);
    const cuda::CudnnConvCacheEntry& e = cache[0];
    EXPECT_LT(e.find_workspace_bytes, hungry->fastest_workspace);
    if (e.runs > 0) {
      EXPECT_LT(e.last_workspace_bytes, hungry->fastest_workspace);
      EXPECT_LE(e.last_workspace_bytes, headroom + (int64_t{64} << 10));
    } else {
      // No algorithm fitted at all: sluice's own kernel ran.
      EXPECT_TRUE(e.algorithms.empty() || headroom == 0) << e.key;
    }
    EXPECT_LE((*tight)->allocator_stats().peak_bytes_in_use,
              (*tight)->memory_limit());
  }
}

// FusedConv2D with Relu and a residual in float32: cuDNN applies bias,
// side input and Relu in the same call (cudnnConvolutionBiasActivationForward)
// where it takes the problem, else sluice's epilogue kernel does; either
// way the result is the CPU's, on cuDNN and on the fallback.
TEST(CudnnFusedConvTest, BiasResidualReluMatchTheCpuInOneCall) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  const Shape x_shape({2, 8, 12, 12}), w_shape({16, 8, 3, 3});
  const Shape y_shape({2, 16, 12, 12});
  std::mt19937 rng(7);
  auto random = [&](const Shape& s) { return RandomTensor(rng, DT_FLOAT, s); };
  const std::vector<Tensor> in = {random(x_shape), random(w_shape),
                                  random(Shape({16})), random(y_shape)};
  Attrs attrs = {{"pads", IntListAttr({1, 1, 1, 1})},
                 {"activation", StringAttr("relu")}};
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp("FusedConv2D", in, attrs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const std::vector<double> ref = ToDoubles((*cpu)[0]);
  ASSERT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                cuda::CudnnPathPolicy::kFused)
                  .ok());
  for (GpuDevice* gpu : {gpus.cudnn.get(), gpus.fallback.get()}) {
    absl::StatusOr<Tensor> out = RunOnGpu(gpu, "FusedConv2D", in, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(*out, ref, y_shape, Tolerance(DT_FLOAT), gpu->name());
  }
  int64_t fused = 0;
  std::string refused;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpus.cudnn.get())) {
    if (!absl::StrContains(e.key, " image=12,12 ")) continue;
    fused += e.fused_runs;
    if (!e.fused_refused.empty()) refused = e.fused_refused;
  }
  EXPECT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                cuda::CudnnPathPolicy::kMeasure)
                  .ok());
  EXPECT_GT(fused, 0) << "cuDNN did not take the fused call: " << refused;
}

// By default the first step times the fused call against the plain call and
// sluice's epilogue kernel, and the problem keeps the faster way: either
// way the result is the CPU's, and the cache says which way and why (or
// that cuDNN's graph API beat both).
TEST(CudnnFusedConvTest, TheFasterOfFusedAndPlainIsMeasuredAndKept) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  const Shape x_shape({1, 32, 10, 10}), w_shape({64, 32, 3, 3});
  const Shape y_shape({1, 64, 5, 5});
  std::mt19937 rng(11);
  auto random = [&](const Shape& s) { return RandomTensor(rng, DT_FLOAT, s); };
  const std::vector<Tensor> in = {random(x_shape), random(w_shape),
                                  random(Shape({64})), random(y_shape)};
  Attrs attrs = {{"pads", IntListAttr({1, 1, 1, 1})},
                 {"strides", IntListAttr({2, 2})},
                 {"activation", StringAttr("relu")}};
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp("FusedConv2D", in, attrs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const std::vector<double> ref = ToDoubles((*cpu)[0]);
  for (int step = 0; step < 3; ++step) {
    absl::StatusOr<Tensor> out = RunOnGpu(gpus.cudnn.get(), "FusedConv2D", in, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(*out, ref, y_shape, Tolerance(DT_FLOAT), "measured");
  }
  int entries = 0;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpus.cudnn.get())) {
    if (!absl::StrContains(e.key, " image=10,10 ")) continue;
    ++entries;
    EXPECT_TRUE(e.path_measured) << e.key;
    EXPECT_EQ(e.runs, 3) << e.key;
    if (e.fused_runs > 0) {
      EXPECT_EQ(e.fused_runs, 3) << e.key;
      EXPECT_EQ(e.fused_refused, "") << e.key;
    } else if (e.graph_runs > 0) {
      // cuDNN's graph API was faster than both legacy ways (seen under
      // compute-sanitizer, whose slowdown differs per kernel).
      EXPECT_EQ(e.graph_runs, 3) << e.key;
      EXPECT_GE(e.graph_engine, 0) << e.key;
    } else {
      EXPECT_TRUE(absl::StrContains(e.fused_refused, "faster")) << e.fused_refused;
    }
  }
  EXPECT_EQ(entries, 1);
}

// The path policy belongs to one device's cache: forced onto the fused
// call, gpus.cudnn does not time the paths, while gpus.tf32 (cuDNN, TF32)
// measures the same problem as by default and records what it timed. A
// device that does not use cuDNN has no policy to set.
TEST(CudnnFusedConvTest, ThePathPolicyIsPerDevice) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  absl::Status off = cuda::SetCudnnPathPolicyForTesting(gpus.fallback.get(),
                                                        cuda::CudnnPathPolicy::kGemm);
  EXPECT_EQ(off.code(), absl::StatusCode::kFailedPrecondition) << off;
  EXPECT_TRUE(absl::StrContains(off.message(), "use_cudnn")) << off;

  const Shape x_shape({1, 8, 11, 11}), w_shape({16, 8, 3, 3});
  const Shape y_shape({1, 16, 11, 11});
  std::mt19937 rng(13);
  auto random = [&](const Shape& s) { return RandomTensor(rng, DT_FLOAT, s); };
  const std::vector<Tensor> in = {random(x_shape), random(w_shape),
                                  random(Shape({16})), random(y_shape)};
  const Attrs attrs = {{"pads", IntListAttr({1, 1, 1, 1})},
                       {"activation", StringAttr("relu")}};
  ASSERT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                 cuda::CudnnPathPolicy::kFused)
                  .ok());
  for (GpuDevice* gpu : {gpus.cudnn.get(), gpus.tf32.get()}) {
    absl::StatusOr<Tensor> out = RunOnGpu(gpu, "FusedConv2D", in, attrs);
    ASSERT_TRUE(out.ok()) << gpu->name() << ": " << out.status();
  }
  EXPECT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                 cuda::CudnnPathPolicy::kMeasure)
                  .ok());
  auto entry = [](GpuDevice* gpu) {
    for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpu)) {
      if (absl::StrContains(e.key, " image=11,11 ")) return e;
    }
    return cuda::CudnnConvCacheEntry();
  };
  const cuda::CudnnConvCacheEntry forced = entry(gpus.cudnn.get());
  const cuda::CudnnConvCacheEntry measured = entry(gpus.tf32.get());
  EXPECT_EQ(forced.runs, 1) << forced.key;
  EXPECT_FALSE(forced.path_measured) << forced.key;
  EXPECT_EQ(forced.path_timings, "") << forced.key;
  EXPECT_EQ(measured.runs, 1) << measured.key;
  EXPECT_TRUE(measured.path_measured) << measured.key;
  EXPECT_TRUE(absl::StrContains(measured.path_timings, "plain "))
      << measured.path_timings;
}

// 1x1 convolutions (stride 1, no padding, one group) may run as one cuBLAS
// GEMM per batch (conv_gemm.h). Forced onto that route, Conv2D and
// FusedConv2D (bias, residual, Relu by sluice's epilogue kernel) give the
// CPU's results at batch 1 and 3, in float32 and float16.
TEST(CudnnConvGemmTest, OneByOneConvolutionsAsGemmMatchTheCpu) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  std::mt19937 rng(5);
  auto random = [&](DataType dtype, const Shape& s) { return RandomTensor(rng, dtype, s); };
  ASSERT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                cuda::CudnnPathPolicy::kGemm)
                  .ok());
  for (DataType dtype : {DT_FLOAT, DT_FLOAT16}) {
    for (int64_t batch : {1, 3}) {
      SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " batch ", batch));
      const Shape x_shape({batch, 24, 9, 7}), w_shape({40, 24, 1, 1});
      const Shape y_shape({batch, 40, 9, 7});
      const Tensor x = random(dtype, x_shape), w = random(dtype, w_shape);
      const Tensor bias = random(dtype, Shape({40})), side = random(dtype, y_shape);
      absl::StatusOr<std::vector<Tensor>> plain_cpu = RunOp("Conv2D", {x, w}, {});
      ASSERT_TRUE(plain_cpu.ok()) << plain_cpu.status();
      absl::StatusOr<Tensor> plain = RunOnGpu(gpus.cudnn.get(), "Conv2D", {x, w}, {});
      ASSERT_TRUE(plain.ok()) << plain.status();
      ExpectClose(*plain, ToDoubles((*plain_cpu)[0]), y_shape, Tolerance(dtype), "Conv2D");
      const Attrs relu = {{"activation", StringAttr("relu")}};
      absl::StatusOr<std::vector<Tensor>> fused_cpu =
          RunOp("FusedConv2D", {x, w, bias, side}, relu);
      ASSERT_TRUE(fused_cpu.ok()) << fused_cpu.status();
      absl::StatusOr<Tensor> fused =
          RunOnGpu(gpus.cudnn.get(), "FusedConv2D", {x, w, bias, side}, relu);
      ASSERT_TRUE(fused.ok()) << fused.status();
      ExpectClose(*fused, ToDoubles((*fused_cpu)[0]), y_shape, Tolerance(dtype),
                  "FusedConv2D");
    }
  }
  EXPECT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                cuda::CudnnPathPolicy::kMeasure)
                  .ok());
  int64_t gemm_runs = 0;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpus.cudnn.get())) {
    if (absl::StrContains(e.key, " image=9,7 ")) gemm_runs += e.gemm_runs;
  }
  EXPECT_EQ(gemm_runs, 8);  // 2 dtypes x 2 batches x (Conv2D, FusedConv2D)
}

// Measured (the default), a 1x1 problem's ways are timed once and the
// fastest kept, whichever it is; the results are the CPU's each step.
TEST(CudnnConvGemmTest, TheWayAOneByOneProblemRunsIsMeasuredOnce) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  std::mt19937 rng(9);
  auto random = [&](const Shape& s) { return RandomTensor(rng, DT_FLOAT, s); };
  const Shape x_shape({1, 256, 7, 7}), w_shape({128, 256, 1, 1});
  const Shape y_shape({1, 128, 7, 7});
  const std::vector<Tensor> in = {random(x_shape), random(w_shape),
                                  random(Shape({128})), random(y_shape)};
  const Attrs relu = {{"activation", StringAttr("relu")}};
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp("FusedConv2D", in, relu);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  for (int step = 0; step < 3; ++step) {
    absl::StatusOr<Tensor> out = RunOnGpu(gpus.cudnn.get(), "FusedConv2D", in, relu);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(*out, ToDoubles((*cpu)[0]), y_shape, Tolerance(DT_FLOAT), "measured");
  }
  int entries = 0;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpus.cudnn.get())) {
    if (!absl::StrContains(e.key, " image=7,7 ") || !absl::StrContains(e.key, "c=256->128")) {
      continue;
    }
    ++entries;
    EXPECT_TRUE(e.path_measured) << e.key;
    EXPECT_EQ(e.runs, 3) << e.key;
    // One way, every step: all GEMM, all fused, all on the graph API, or
    // all plain.
    EXPECT_TRUE(e.gemm_runs == 3 || e.fused_runs == 3 || e.graph_runs == 3 ||
                (e.gemm_runs == 0 && e.fused_runs == 0 && e.graph_runs == 0))
        << e.key << ": " << e.gemm_runs << " GEMM, " << e.fused_runs << " fused, "
        << e.graph_runs << " graph";
  }
  EXPECT_EQ(entries, 1);
}

// Forward convolutions may run on a plan of cuDNN's graph API
// (cudnn_graph_conv.h). Forced onto that route, Conv2D and FusedConv2D (the
// epilogue by sluice's kernel) give the CPU's results in float32, float16
// and bfloat16, at batch 1 and 3, for strided, padded, dilated, grouped and
// depthwise windows, and every problem did run there.
TEST(CudnnConvGraphTest, ConvolutionsOnTheGraphApiMatchTheCpu) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  struct Window {
    int64_t c, o, group, k, stride, pad, dilation;
  };
  const std::vector<Window> windows = {
      {16, 32, 1, 3, 1, 1, 1},  // 3x3, same padding
      {8, 16, 1, 7, 2, 3, 1},   // the stem of a ResNet, small
      {16, 24, 1, 1, 2, 0, 1},  // strided 1x1 (a downsample)
      {16, 16, 4, 3, 1, 2, 2},  // grouped, dilated
      {32, 32, 32, 3, 2, 1, 1}, // depthwise, strided
  };
  std::mt19937 rng(11);
  ASSERT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                cuda::CudnnPathPolicy::kGraph)
                  .ok());
  int problems = 0;
  for (DataType dtype : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) {
    for (int64_t batch : {1, 3}) {
      for (const Window& win : windows) {
        SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " batch ", batch, " c=", win.c,
                                  "->", win.o, " g=", win.group, " k=", win.k,
                                  " s=", win.stride, " d=", win.dilation));
        const int64_t h = 13, wd = 11;
        const int64_t span = win.dilation * (win.k - 1) + 1;
        const int64_t oh = (h + 2 * win.pad - span) / win.stride + 1;
        const int64_t ow = (wd + 2 * win.pad - span) / win.stride + 1;
        const Shape x_shape({batch, win.c, h, wd}), y_shape({batch, win.o, oh, ow});
        const Tensor x = RandomTensor(rng, dtype, x_shape);
        const Tensor w =
            RandomTensor(rng, dtype, Shape({win.o, win.c / win.group, win.k, win.k}));
        const Attrs attrs = {{"strides", IntListAttr({win.stride, win.stride})},
                             {"pads", IntListAttr({win.pad, win.pad, win.pad, win.pad})},
                             {"dilations", IntListAttr({win.dilation, win.dilation})},
                             {"group", IntAttr(win.group)}};
        absl::StatusOr<std::vector<Tensor>> cpu = RunOp("Conv2D", {x, w}, attrs);
        ASSERT_TRUE(cpu.ok()) << cpu.status();
        absl::StatusOr<Tensor> gpu = RunOnGpu(gpus.cudnn.get(), "Conv2D", {x, w}, attrs);
        ASSERT_TRUE(gpu.ok()) << gpu.status();
        ExpectClose(*gpu, ToDoubles((*cpu)[0]), y_shape, Tolerance(dtype), "Conv2D");
        Attrs fused_attrs = attrs;
        fused_attrs["activation"] = StringAttr("relu");
        const Tensor bias = RandomTensor(rng, dtype, Shape({win.o}));
        const Tensor side = RandomTensor(rng, dtype, y_shape);
        absl::StatusOr<std::vector<Tensor>> fused_cpu =
            RunOp("FusedConv2D", {x, w, bias, side}, fused_attrs);
        ASSERT_TRUE(fused_cpu.ok()) << fused_cpu.status();
        absl::StatusOr<Tensor> fused =
            RunOnGpu(gpus.cudnn.get(), "FusedConv2D", {x, w, bias, side}, fused_attrs);
        ASSERT_TRUE(fused.ok()) << fused.status();
        ExpectClose(*fused, ToDoubles((*fused_cpu)[0]), y_shape, Tolerance(dtype),
                    "FusedConv2D");
        ++problems;
      }
    }
  }
  EXPECT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                cuda::CudnnPathPolicy::kMeasure)
                  .ok());
  int64_t graph_runs = 0;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpus.cudnn.get())) {
    if (!absl::StrContains(e.key, " image=13,11 ")) continue;
    EXPECT_GT(e.graph_runs, 0) << e.key << ": " << e.graph_refused;
    EXPECT_GE(e.graph_engine, 0) << e.key;
    graph_runs += e.graph_runs;
  }
  EXPECT_EQ(graph_runs, 2 * problems);  // Conv2D and FusedConv2D each
}

// Measured, a 3x3 problem in bfloat16 times the graph API's plans beside the
// legacy algorithms once and runs one way every step, with the CPU's
// results.
TEST(CudnnConvGraphTest, TheGraphApiIsTimedWithTheOtherWays) {
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  if (!GetCudnnInfo().usable) GTEST_SKIP() << GetCudnnInfo().reason;
  std::mt19937 rng(12);
  const Shape x_shape({4, 64, 14, 14}), w_shape({64, 64, 3, 3});
  const Shape y_shape({4, 64, 14, 14});
  const std::vector<Tensor> in = {RandomTensor(rng, DT_BFLOAT16, x_shape),
                                  RandomTensor(rng, DT_BFLOAT16, w_shape),
                                  RandomTensor(rng, DT_BFLOAT16, Shape({64}))};
  const Attrs attrs = {{"pads", IntListAttr({1, 1, 1, 1})},
                       {"activation", StringAttr("relu")}};
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp("FusedConv2D", in, attrs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  for (int step = 0; step < 3; ++step) {
    absl::StatusOr<Tensor> out = RunOnGpu(gpus.cudnn.get(), "FusedConv2D", in, attrs);
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(*out, ToDoubles((*cpu)[0]), y_shape, Tolerance(DT_BFLOAT16), "measured");
  }
  int entries = 0;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpus.cudnn.get())) {
    if (!absl::StrContains(e.key, "bfloat16 NC2d n=4 c=64->64") ||
        !absl::StrContains(e.key, " image=14,14 ")) {
      continue;
    }
    ++entries;
    EXPECT_TRUE(e.path_measured) << e.key;
    EXPECT_EQ(e.runs, 3) << e.key;
    EXPECT_TRUE(e.graph_runs == 3 || e.graph_runs == 0) << e.key << ": " << e.graph_runs;
    EXPECT_EQ(e.graph_runs == 3, e.graph_engine >= 0) << e.key;
    if (e.graph_runs == 0) {
      EXPECT_FALSE(e.graph_refused.empty()) << e.key;
    }
  }
  EXPECT_EQ(entries, 1);
}

#endif  // SLUICE_WITH_CUDA

}  // namespace
}  // namespace sluice::cudnn_conv_test
