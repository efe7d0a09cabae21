// CudaKernel (docs/ops.md, "Custom CUDA kernels"): the CPU refuses it with
// the reason; NVRTC compiles a source to a CUBIN, or returns its log (no GPU
// needed: these run wherever libnvrtc is installed); and on a GPU the node
// runs against values computed here on the host. GPU tests skip, with the
// reason, where no GPU is usable; NVRTC tests where NVRTC is missing.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "gmock/gmock.h"
#include "graph/attr_map.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/kernel_registry.h"

#include "testing/gpu_required.h"
#ifdef SLUICE_WITH_CUDA
#include "device/cuda/nvrtc_library.h"
#include "kernels/cuda/nvrtc_kernel_cache.h"
#include "tests/kernels/nvrtc_required.h"
#endif

namespace sluice::testing::cuda_kernel_test {
namespace {

using ::testing::HasSubstr;

constexpr char kSaxpy[] = R"cuda(
extern "C" __global__ void saxpy(const float* x, const float* y, float* out,
                                 long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.5f * x[i] + y[i];
}
)cuda";

// Two outputs of different dtypes: |x|, and (of a fixed shape [1], written
// by thread 0) the element count the kernel was given.
[[maybe_unused]] constexpr char kTwoOutputs[] = R"cuda(
template <typename T>
__global__ void abs_and_count(const T* x, T* absval, int* count, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) absval[i] = x[i] < 0 ? -x[i] : x[i];
  if (i == 0) count[0] = (int)n;
}
)cuda";

[[maybe_unused]] constexpr char kSyntaxError[] = R"cuda(
extern "C" __global__ void broken(const float* x, float* y, long long n) {
  y[0] = x[0] +;
}
)cuda";

// A saxpy node's attributes: y = 2.5 x + y, both float32, shaped like x.
Attrs SaxpyAttrs(const std::string& source = kSaxpy,
                 const std::string& name = "saxpy") {
  return {{"Tin", MakeTypeListAttr({DT_FLOAT, DT_FLOAT})},
          {"output_dtypes", MakeTypeListAttr({DT_FLOAT})},
          {"output_shape_like", MakeIntListAttr({0})},
          {"source", MakeStringAttr(source)},
          {"kernel_name", MakeStringAttr(name)},
          {"block", MakeIntListAttr({128})}};
}

// The GPU tests' inputs (unused in a build without CUDA).
[[maybe_unused]] std::vector<float> Ramp(int n, float scale, float offset) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 97) + offset;
  return v;
}

TEST(CudaKernelCpuTest, CpuRefusesTheNodeWithTheReason) {
  auto graph = OneNodeGraph("CudaKernel", {F32({1}, {1}), F32({2}, {1})},
                            SaxpyAttrs());
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node& node = *(*graph)->FindNode("op");
  absl::Status s = KernelRegistry::Global()->Supports(node, DeviceType::kCpu);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("runs only on a GPU"));
  auto kernel = KernelRegistry::Global()->Create(node, DeviceType::kCpu);
  ASSERT_FALSE(kernel.ok());
  EXPECT_THAT(kernel.status().message(), HasSubstr("'op'"));
}

TEST(CudaKernelCpuTest, RunningOnTheCpuFailsWithoutComputing) {
  auto out = RunOp("CudaKernel", {F32({1}, {1}), F32({2}, {1})}, SaxpyAttrs());
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("runs only on a GPU"));
}

#ifdef SLUICE_WITH_CUDA

TEST(NvrtcTest, CompilesAnExternCKernelToACubin) {
  SLUICE_SKIP_WITHOUT_NVRTC();
  auto out = cuda::CompileToCubin(kSaxpy, "saxpy", {}, 90);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->lowered_name, "saxpy");
  ASSERT_GT(out->cubin.size(), 4u);
  EXPECT_EQ(out->cubin.substr(1, 3), "ELF");
}

TEST(NvrtcTest, ATemplateNameExpressionIsInstantiatedAndMangled) {
  SLUICE_SKIP_WITHOUT_NVRTC();
  auto out = cuda::CompileToCubin(kTwoOutputs, "abs_and_count<float>", {}, 90);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE(out->lowered_name, "abs_and_count<float>");
  EXPECT_THAT(out->lowered_name, HasSubstr("abs_and_count"));
}

TEST(NvrtcTest, ASyntaxErrorReturnsTheCompilerLog) {
  SLUICE_SKIP_WITHOUT_NVRTC();
  auto out = cuda::CompileToCubin(kSyntaxError, "broken", {}, 90);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("could not compile kernel 'broken'"));
  EXPECT_THAT(out.status().message(), HasSubstr("expected an expression"));
  EXPECT_THAT(out.status().message(), HasSubstr("sm_90"));
}

TEST(NvrtcTest, AnUnknownKernelNameIsACompileError) {
  SLUICE_SKIP_WITHOUT_NVRTC();
  auto out = cuda::CompileToCubin(kSaxpy, "saxpy_typo", {}, 90);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("saxpy_typo"));
}

TEST(NvrtcTest, OptionsReachTheCompiler) {
  SLUICE_SKIP_WITHOUT_NVRTC();
  auto out = cuda::CompileToCubin(kSaxpy, "saxpy", {"--no-such-nvrtc-flag"}, 90);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("--no-such-nvrtc-flag"));
  EXPECT_TRUE(cuda::CompileToCubin(kSaxpy, "saxpy", {"-use_fast_math"}, 90).ok());
}

TEST(NvrtcTest, AMissingLibraryIsNotFoundNamingIt) {
  auto api = LoadNvrtc("libnvrtc-not-installed.so.99");
  EXPECT_EQ(api.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(api.status().message(), HasSubstr("libnvrtc-not-installed.so.99"));
}

// --- On a GPU ----------------------------------------------------------------

// /gpu:0, made once; null (with the reason) where no GPU is usable.
struct TestGpu {
  std::unique_ptr<GpuDevice> gpu;
  std::string skip_reason;
};

const TestGpu& GetTestGpu() {
  static const TestGpu* gpu = [] {
    auto* g = new TestGpu();
    DeviceInventory inv = DiscoverDevices();
    bool usable = false;
    for (const GpuInfo& info : inv.gpus) usable = usable || info.usable;
    if (!usable) {
      g->skip_reason = absl::StrCat("no usable GPU: ", inv.no_gpu_reason);
      return g;
    }
    RuntimeConfig config;
    config.set_allow_growth(true);
    auto made = CreateGpuDevicesFromSpecs(config, {{0, int64_t{1} << 30}});
    if (!made.ok()) {
      g->skip_reason = absl::StrCat("cannot create /gpu:0: ", made.status().ToString());
      return g;
    }
    g->gpu = std::move((*made)[0]);
    return g;
  }();
  return *gpu;
}

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    if (GetTestGpu().gpu == nullptr) SLUICE_GPU_UNAVAILABLE(GetTestGpu().skip_reason); \
  } while (0)

TEST(CudaKernelGpuTest, SaxpyMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  SLUICE_SKIP_WITHOUT_NVRTC();
  const int n = 1000;  // not a multiple of the block: the last block's tail
  std::vector<float> x = Ramp(n, 0.25f, -3.0f), y = Ramp(n, -0.5f, 1.0f);
  auto out = RunOpOnGpu(GetTestGpu().gpu.get(), "CudaKernel",
                        {F32(x, {10, 100}), F32(y, {10, 100})}, SaxpyAttrs());
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = 2.5f * x[i] + y[i];
  ExpectTensor((*out)[0], Shape({10, 100}), want, 1e-5);
}

TEST(CudaKernelGpuTest, TwoOutputsOfATemplateWithAFixedShapeAndAnExplicitGrid) {
  SKIP_WITHOUT_GPU();
  SLUICE_SKIP_WITHOUT_NVRTC();
  const int n = 777;
  std::vector<float> x = Ramp(n, 0.5f, -20.0f);
  Attrs attrs = {
      {"Tin", MakeTypeListAttr({DT_FLOAT})},
      {"output_dtypes", MakeTypeListAttr({DT_FLOAT, DT_INT32})},
      {"output_shape_like", MakeIntListAttr({0, -1})},
      {"output_shapes", MakeShapeListAttr({Shape(), Shape({1})})},
      {"source", MakeStringAttr(kTwoOutputs)},
      {"kernel_name", MakeStringAttr("abs_and_count<float>")},
      {"block", MakeIntListAttr({64})},
      {"grid", MakeIntListAttr({13})}};  // 13 * 64 = 832 >= 777
  auto out = RunOpOnGpu(GetTestGpu().gpu.get(), "CudaKernel", {F32(x, {n})}, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = std::fabs(x[i]);
  ExpectTensor((*out)[0], Shape({n}), want);
  EXPECT_EQ((*out)[1].dtype(), DT_INT32);
  ExpectTensor((*out)[1], Shape({1}), {n});
}

TEST(CudaKernelGpuTest, ASyntaxErrorFailsKernelCreationWithTheLog) {
  SKIP_WITHOUT_GPU();
  SLUICE_SKIP_WITHOUT_NVRTC();
  auto out = RunOpOnGpu(GetTestGpu().gpu.get(), "CudaKernel",
                        {F32({1}, {1})},
                        {{"Tin", MakeTypeListAttr({DT_FLOAT})},
                         {"output_dtypes", MakeTypeListAttr({DT_FLOAT})},
                         {"output_shape_like", MakeIntListAttr({0})},
                         {"source", MakeStringAttr(kSyntaxError)},
                         {"kernel_name", MakeStringAttr("broken")}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("expected an expression"));
}

TEST(CudaKernelGpuTest, TheSameSourceCompilesOncePerProcess) {
  SKIP_WITHOUT_GPU();
  SLUICE_SKIP_WITHOUT_NVRTC();
  const std::string source = absl::StrCat(kSaxpy, "// cache test\n");
  auto first = RunOpOnGpu(GetTestGpu().gpu.get(), "CudaKernel",
                          {F32({1, 2}, {2}), F32({3, 4}, {2})},
                          SaxpyAttrs(source));
  ASSERT_TRUE(first.ok()) << first.status();
  const int compiled = cuda::CompiledCudaKernelCount();
  auto second = RunOpOnGpu(GetTestGpu().gpu.get(), "CudaKernel",
                           {F32({5, 6, 7}, {3}), F32({1, 1, 1}, {3})},
                           SaxpyAttrs(source));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(cuda::CompiledCudaKernelCount(), compiled);
  ExpectTensor((*second)[0], Shape({3}), {13.5, 16, 18.5});
}

TEST(CudaKernelGpuTest, AnEmptyOutputLaunchesNothing) {
  SKIP_WITHOUT_GPU();
  SLUICE_SKIP_WITHOUT_NVRTC();
  auto out = RunOpOnGpu(GetTestGpu().gpu.get(), "CudaKernel",
                        {F32({}, {0, 3}), F32({}, {0, 3})}, SaxpyAttrs());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0, 3}));
}

#endif  // SLUICE_WITH_CUDA

}  // namespace
}  // namespace sluice::testing::cuda_kernel_test
