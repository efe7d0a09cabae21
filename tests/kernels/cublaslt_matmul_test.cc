// FusedMatMul's GPU kernel on cuBLASLt (kernels/cuda/cublaslt_matmul.h) and
// on its fallback (cuBLAS + the row epilogue kernel), against the CPU
// kernel: every epilogue (bias, Relu, tanh Gelu; with and without the
// residual) in float32, float16 and bfloat16, checking that cuBLASLt itself
// ran (its cache counts the runs) and that the fallback gives the same
// results; a memory limit too small for the largest workspace still runs.
// Without a GPU (or in a CPU-only build) every case skips with the reason.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "testing/compare.h"
#include "testing/gpu_required.h"
#ifdef SLUICE_WITH_CUDA
#include "kernels/cuda/cublaslt_matmul.h"
#endif

namespace sluice::cublaslt_matmul_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::BoolAttr;
using ::sluice::testing::IntAttr;
using ::sluice::testing::MakeTensor;
using ::sluice::testing::RunOp;
using ::sluice::testing::RunOpOnGpu;
using ::sluice::testing::StringAttr;
using ::sluice::testing::ToDoubles;

#ifdef SLUICE_WITH_CUDA

absl::StatusOr<std::unique_ptr<GpuDevice>> MakeGpu(int64_t limit) {
  DeviceInventory inv = DiscoverDevices();
  if (inv.gpus.empty()) {
    return absl::UnavailableError(absl::StrCat("no GPU: ", inv.no_gpu_reason));
  }
  RuntimeConfig config;
  config.set_allow_growth(true);
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GpuDevice>> gpus,
                   CreateGpuDevicesFromSpecs(config, {{0, limit}}));
  return std::move(gpus[0]);
}

GpuDevice* SharedGpu(std::string* skip) {
  static auto* gpu = new absl::StatusOr<std::unique_ptr<GpuDevice>>(
      MakeGpu(int64_t{2} << 30));
  if (!gpu->ok()) {
    *skip = gpu->status().ToString();
    return nullptr;
  }
  return (*gpu)->get();
}

double Tolerance(DataType t) { return t == DT_FLOAT ? 1e-5 : 1e-2; }

struct Problem {
  DataType dtype;
  std::string activation;
  bool residual;
  bool transpose_b;
  int64_t rows, k, n;
};

std::string Name(const Problem& p) {
  return absl::StrCat(DataTypeName(p.dtype), " ", p.activation,
                      p.residual ? " residual" : "",
                      p.transpose_b ? " transpose_b" : "", " ", p.rows, "x",
                      p.k, "x", p.n);
}

struct Run {
  std::vector<Tensor> inputs;
  Attrs attrs;
};

Run MakeRun(const Problem& p, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](Shape s) {
    std::vector<double> v(s.num_elements());
    for (double& e : v) e = u(rng);
    return MakeTensor(p.dtype, s, v);
  };
  Run r;
  r.inputs = {random(Shape({p.rows, p.k})),
              random(p.transpose_b ? Shape({p.n, p.k}) : Shape({p.k, p.n})),
              random(Shape({p.n}))};
  if (p.residual) r.inputs.push_back(random(Shape({p.rows, p.n})));
  r.attrs = {{"transpose_b", BoolAttr(p.transpose_b)},
             {"activation", StringAttr(p.activation)},
             {"num_args", IntAttr(p.residual ? 2 : 1)}};
  return r;
}

// GPU against CPU, per element: |gpu - cpu| <= tol * (1 + |cpu|), NaN and
// infinities by class.
void ExpectGpuMatchesCpu(GpuDevice* gpu, const Problem& p, uint32_t seed) {
  const Run r = MakeRun(p, seed);
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp("FusedMatMul", r.inputs, r.attrs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<std::vector<Tensor>> out =
      RunOpOnGpu(gpu, "FusedMatMul", r.inputs, r.attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  // float32: the rounding of a k-term sum grows with sqrt(k), and cuBLASLt
  // may split k where the workspace is small (on the H200 a 512-term sum
  // under a tight limit differed by 1.3e-5 at 0.079).
  const double tol =
      Tolerance(p.dtype) *
      (p.dtype == DT_FLOAT ? std::max(1.0, std::sqrt(static_cast<double>(p.k)) / 8.0) : 1.0);
  // Through the tests' one comparator (testing/compare.h): a NaN or an
  // infinity the CPU did not produce fails, whatever the tolerance.
  EXPECT_EQ(::sluice::testing::CompareValues(
                ToDoubles((*out)[0]), ToDoubles((*cpu)[0]), p.dtype,
                ::sluice::testing::RelativeAndAbsolute(tol)),
            "")
      << Name(p) << " (gpu against cpu)";
}

// cuBLASLt's runs so far for keys naming `dtype` and `activation`, and the
// reason of a refused one.
int64_t LtRuns(GpuDevice* gpu, const Problem& p, std::string* refused) {
  int64_t runs = 0;
  const std::string epilogue = absl::StrCat(" bias+", p.activation,
                                            p.residual ? " +residual" : " ");
  for (const cuda::CublasLtMatmulCacheEntry& e : cuda::CublasLtMatmulCache(gpu)) {
    if (!absl::StartsWith(e.key, absl::StrCat(DataTypeName(p.dtype), " ")) ||
        !absl::StrContains(e.key, epilogue)) {
      continue;
    }
    runs += e.runs;
    if (!e.unsupported.empty()) *refused = e.unsupported;
  }
  return runs;
}

std::vector<Problem> EveryEpilogue() {
  std::vector<Problem> out;
  for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) {
    for (const char* act : {"none", "relu", "gelu_tanh"}) {
      for (bool residual : {false, true}) {
        out.push_back({t, act, residual, false, 48, 64, 40});
      }
    }
    out.push_back({t, "gelu_tanh", true, true, 24, 72, 56});
  }
  return out;
}

TEST(CublasLtMatmulTest, EveryEpilogueAndDtypeRunsOnCublasLtAndMatchesTheCpu) {
  std::string skip;
  GpuDevice* gpu = SharedGpu(&skip);
  if (gpu == nullptr) SLUICE_GPU_UNAVAILABLE(skip);
  uint32_t seed = 1;
  for (const Problem& p : EveryEpilogue()) {
    SCOPED_TRACE(Name(p));
    std::string refused;
    const int64_t before = LtRuns(gpu, p, &refused);
    ExpectGpuMatchesCpu(gpu, p, seed++);
    EXPECT_GT(LtRuns(gpu, p, &refused), before)
        << "cuBLASLt did not run it: " << refused;
  }
}

TEST(CublasLtMatmulTest, TheFallbackMatchesTheCpu) {
  std::string skip;
  GpuDevice* gpu = SharedGpu(&skip);
  if (gpu == nullptr) SLUICE_GPU_UNAVAILABLE(skip);
  ASSERT_TRUE(cuda::DisableCublasLtMatmulForTesting(gpu, true).ok());
  uint32_t seed = 100;
  for (const Problem& p : EveryEpilogue()) {
    SCOPED_TRACE(Name(p));
    std::string refused;
    const int64_t before = LtRuns(gpu, p, &refused);
    ExpectGpuMatchesCpu(gpu, p, seed++);
    EXPECT_EQ(LtRuns(gpu, p, &refused), before) << "cuBLASLt ran while disabled";
  }
  EXPECT_TRUE(cuda::DisableCublasLtMatmulForTesting(gpu, false).ok());
}

TEST(CublasLtMatmulTest, ATransformerSizedProductMatchesTheCpu) {
  // BERT-base's FFN up-projection at batch 2, sequence 128.
  std::string skip;
  GpuDevice* gpu = SharedGpu(&skip);
  if (gpu == nullptr) SLUICE_GPU_UNAVAILABLE(skip);
  ExpectGpuMatchesCpu(gpu, {DT_FLOAT16, "gelu_tanh", false, false, 256, 768, 3072}, 7);
}

TEST(CublasLtMatmulTest, ATightMemoryLimitStillRuns) {
  // 8 MiB: the operands fit, a 32 MiB workspace does not; a smaller
  // algorithm or the fallback runs, with the same result.
  std::string skip;
  if (SharedGpu(&skip) == nullptr) SLUICE_GPU_UNAVAILABLE(skip);
  absl::StatusOr<std::unique_ptr<GpuDevice>> tight = MakeGpu(int64_t{8} << 20);
  ASSERT_TRUE(tight.ok()) << tight.status();
  ExpectGpuMatchesCpu(tight->get(), {DT_FLOAT, "relu", true, false, 256, 512, 256}, 9);
}

#else

TEST(CublasLtMatmulTest, NeedsCuda) {
  GTEST_SKIP() << "this build of sluice has no CUDA support";
}

#endif  // SLUICE_WITH_CUDA

}  // namespace
}  // namespace sluice::cublaslt_matmul_test
