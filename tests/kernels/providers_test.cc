// The execution providers (kernels/execution_provider.h): what each tells
// the optimizer, its libraries, its threading rule, and the sets a session
// and a plan get (kernels/providers.h).
#include "kernels/providers.h"

#include <memory>
#include <string>
#include <vector>

#include "core/tensor_proto.h"
#include "device/cpu_device.h"
#include "graph/attr_map.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "kernels/cpu/omp_threads.h"
#include "kernels/cpu/onednn_conv.h"

namespace sluice::providers_test {
namespace {

TEST(CpuProviderTest, PrefersChannelsLastInFloat32WhereOneDnnRunsIt) {
  const CpuProvider automatic;
  const OptimizationTarget t = automatic.Target();
  EXPECT_EQ(t.provider, "cpu");
  EXPECT_EQ(t.conv_layout_float32, cpu::OneDnnConvolutionsBuiltIn()
                                       ? DataFormat::kNhwc
                                       : DataFormat::kNchw);
  EXPECT_EQ(t.conv_layout_reduced, DataFormat::kNchw);
  EXPECT_FALSE(t.grouped_convs_stay_nchw);
  EXPECT_TRUE(t.convs_apply_smooth_activations);
  const CpuProvider loops({.convolutions = CpuConvPath::kLoops});
  EXPECT_FALSE(loops.RunsNhwcConvolutionsOnOneDnn());
  EXPECT_EQ(loops.Target().conv_layout_float32, DataFormat::kNchw);
}

TEST(CpuProviderTest, OptionsComeFromTheConfig) {
  RuntimeConfig config;
  EXPECT_EQ(CpuProviderOptionsFromConfig(config).convolutions,
            CpuConvPath::kAuto);
  config.set_cpu_convolutions(CPU_CONVOLUTIONS_LOOPS);
  EXPECT_EQ(CpuProviderOptionsFromConfig(config).convolutions,
            CpuConvPath::kLoops);
  config.set_cpu_convolutions(CPU_CONVOLUTIONS_ONEDNN);
  EXPECT_EQ(CpuProviderOptionsFromConfig(config).convolutions,
            CpuConvPath::kOneDnn);
}

TEST(CpuProviderTest, ReportsOneDnn) {
  const std::vector<LibraryReport> libs = CpuProvider().Libraries();
  ASSERT_EQ(libs.size(), 1u);
  EXPECT_EQ(libs[0].name, "oneDNN");
  EXPECT_EQ(libs[0].available, cpu::OneDnnConvolutionsBuiltIn());
  EXPECT_FALSE(libs[0].detail.empty());
  if (libs[0].available) {
    EXPECT_NE(libs[0].detail.find("oneDNN "), std::string::npos) << libs[0].detail;
  }
}

// x [1, 4, 8, 8] -> Conv2D (data_format as given) -> y; w [4, 4, 3, 3] or
// OHWI for NHWC.
std::unique_ptr<const Graph> ConvGraph(const std::string& format) {
  GraphDef def;
  NodeDef* x = def.add_node();
  x->set_name("x");
  x->set_op("Input");
  (*x->mutable_attr())["dtype"] = MakeTypeAttr(DT_FLOAT);
  (*x->mutable_attr())["shape"] = MakeShapeAttr(
      format == "NHWC" ? Shape({1, 8, 8, 4}) : Shape({1, 4, 8, 8}));
  NodeDef* w = def.add_node();
  w->set_name("w");
  w->set_op("Const");
  (*w->mutable_attr())["value"] = MakeTensorAttr(TensorToProto(
      Tensor::FromVector(std::vector<float>(144, 0.5f), Shape({4, 3, 3, 4}))));
  if (format == "NCHW") {
    (*w->mutable_attr())["value"] = MakeTensorAttr(TensorToProto(
        Tensor::FromVector(std::vector<float>(144, 0.5f), Shape({4, 4, 3, 3}))));
  }
  NodeDef* c = def.add_node();
  c->set_name("y");
  c->set_op("Conv2D");
  c->add_input("x");
  c->add_input("w");
  (*c->mutable_attr())["data_format"] = MakeStringAttr(format);
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

// Only nodes that take every core themselves (channels-last convolutions
// on oneDNN's OpenMP team) make the session run nodes one at a time; the
// question is about the nodes placed on the provider, not the model.
TEST(CpuProviderTest, RunsNodesOneAtATimeOnlyForItsChannelsLastConvolutions) {
  std::unique_ptr<const Graph> nhwc = ConvGraph("NHWC");
  std::unique_ptr<const Graph> nchw = ConvGraph("NCHW");
  ASSERT_NE(nhwc, nullptr);
  ASSERT_NE(nchw, nullptr);
  const int conv = nhwc->FindNode("y")->id();
  const int input = nhwc->FindNode("x")->id();
  const CpuProvider automatic;
  EXPECT_EQ(automatic.RunsNodesOneAtATime(*nhwc, {input, conv}),
            cpu::OneDnnConvolutionsBuiltIn());
  EXPECT_FALSE(automatic.RunsNodesOneAtATime(*nhwc, {input}));  // not on it
  EXPECT_FALSE(automatic.RunsNodesOneAtATime(
      *nchw, {nchw->FindNode("y")->id()}));
  const CpuProvider loops({.convolutions = CpuConvPath::kLoops});
  EXPECT_FALSE(loops.RunsNodesOneAtATime(*nhwc, {input, conv}));
}

// From kLeastThreadsForTeamRegions intra-op threads every parallel region is
// on an OpenMP team, so any node on the CPU runs one at a time; below, only
// the channels-last convolutions do.
TEST(CpuProviderTest, RunsEveryNodeOneAtATimeWhereItsRegionsAreOnTeams) {
  std::unique_ptr<const Graph> nchw = ConvGraph("NCHW");
  ASSERT_NE(nchw, nullptr);
  const int input = nchw->FindNode("x")->id();
  const CpuProvider teams({.convolutions = CpuConvPath::kLoops,
                           .intra_op_threads = cpu::kLeastThreadsForTeamRegions});
  EXPECT_EQ(teams.RunsNodesOneAtATime(*nchw, {input}),
            cpu::OmpTeamsBuiltIn());
  EXPECT_FALSE(teams.RunsNodesOneAtATime(*nchw, {}));
  const CpuProvider pool(
      {.convolutions = CpuConvPath::kLoops,
       .intra_op_threads = cpu::kLeastThreadsForTeamRegions - 1});
  EXPECT_FALSE(pool.RunsNodesOneAtATime(*nchw, {input}));
  RuntimeConfig config;
  config.set_intra_op_threads(5);
  EXPECT_EQ(CpuProviderOptionsFromConfig(config).intra_op_threads, 5);
  config.set_intra_op_threads(0);
  EXPECT_GE(CpuProviderOptionsFromConfig(config).intra_op_threads, 1);
}

TEST(CudaProviderTest, PrefersChannelsLastFor16BitsOnCudnn) {
  const CudaProvider cudnn({.use_cudnn = true, .cudnn_usable = true});
  OptimizationTarget t = cudnn.Target();
  EXPECT_EQ(t.provider, "cuda");
  EXPECT_EQ(t.conv_layout_float32, DataFormat::kNchw);
  EXPECT_EQ(t.conv_layout_reduced, DataFormat::kNhwc);
  EXPECT_TRUE(t.grouped_convs_stay_nchw);
  EXPECT_TRUE(t.nhwc_where_fewer_transposes);
  EXPECT_FALSE(t.convs_apply_smooth_activations);  // relu and relu6 only
  // Without cuDNN (off, or not loadable) the direct kernels run: NCHW.
  EXPECT_EQ(CudaProvider({.use_cudnn = false, .cudnn_usable = true}).Target().conv_layout_reduced,
            DataFormat::kNchw);
  EXPECT_EQ(CudaProvider({.use_cudnn = true, .cudnn_usable = false})
                .Target()
                .conv_layout_reduced,
            DataFormat::kNchw);
  EXPECT_FALSE(CudaProvider({.use_cudnn = false, .cudnn_usable = true})
                   .Target()
                   .nhwc_where_fewer_transposes);
  const std::vector<LibraryReport> off =
      CudaProvider({.use_cudnn = false, .cudnn_usable = true}).Libraries();
  ASSERT_EQ(off.size(), 1u);
  EXPECT_FALSE(off[0].available);
  EXPECT_NE(off[0].detail.find("use_cudnn false"), std::string::npos);
}

// `sluice place --devices 2xgpu:...` on any machine plans the GPUs with
// the GPU provider's rule, its libraries assumed; without GPUs the CPU's.
TEST(ProviderSetTest, APlanWithGpusTargetsTheGpuProvider) {
  RuntimeConfig config;
  config.set_precision(PRECISION_BFLOAT16);
  const ProviderSet gpus = ProvidersForPlan(config, /*gpus=*/true);
  ASSERT_NE(gpus.cuda(), nullptr);
  EXPECT_EQ(&gpus.compute(), gpus.cuda());
  EXPECT_EQ(gpus.compute().Target().conv_layout_reduced, DataFormat::kNhwc);
  EXPECT_EQ(gpus.compute().Target().conv_layout_float32, DataFormat::kNchw);
  EXPECT_EQ(gpus.Get(DeviceType::kGpu), gpus.cuda());
  EXPECT_EQ(gpus.Get(DeviceType::kCpu), &gpus.cpu());
  config.set_use_cudnn(false);
  EXPECT_EQ(ProvidersForPlan(config, true).compute().Target().conv_layout_reduced,
            DataFormat::kNchw);
  const ProviderSet cpus = ProvidersForPlan(config, /*gpus=*/false);
  EXPECT_EQ(cpus.cuda(), nullptr);
  EXPECT_EQ(&cpus.compute(), &cpus.cpu());
  EXPECT_EQ(cpus.Get(DeviceType::kGpu), nullptr);
}

// `--device cpu:0` (manual placement, a CPU as the default device) on a
// machine with GPUs: the GPUs stay for the nodes that ask for one, the
// passes follow the CPU's preferences, as on a machine without GPUs.
TEST(ProviderSetTest, ManualPlacementOnTheCpuTargetsTheCpuProvider) {
  RuntimeConfig config;
  config.set_placement_strategy(PLACEMENT_MANUAL);
  config.set_default_device("/cpu:0");
  EXPECT_FALSE(ComputeOnGpus(config));
  const ProviderSet set = ProvidersForPlan(config, /*gpus=*/true);
  ASSERT_NE(set.cuda(), nullptr);
  EXPECT_EQ(&set.compute(), &set.cpu());
  config.set_default_device("gpu:0");
  EXPECT_TRUE(ComputeOnGpus(config));
  const ProviderSet on_gpu = ProvidersForPlan(config, /*gpus=*/true);
  EXPECT_EQ(&on_gpu.compute(), on_gpu.cuda());
  // The default device alone places nothing by hand: the placer may still
  // choose the GPUs.
  config.set_default_device("/cpu:0");
  config.set_placement_strategy(PLACEMENT_AUTO);
  EXPECT_TRUE(ComputeOnGpus(config));
}

TEST(ProviderSetTest, ASessionWithoutGpusHasOnlyTheCpuProvider) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_cpu_convolutions(CPU_CONVOLUTIONS_LOOPS);
  const ProviderSet set = ProvidersForMachine(config);
  EXPECT_EQ(set.cuda(), nullptr);
  EXPECT_EQ(set.cpu().options().convolutions, CpuConvPath::kLoops);
  std::unique_ptr<const Graph> g = ConvGraph("NCHW");
  ASSERT_NE(g, nullptr);
  const Node& conv = *g->FindNode("y");
  EXPECT_TRUE(set.CapabilityQuery()(conv, DeviceType::kCpu).ok());
  absl::Status gpu = set.CapabilityQuery()(conv, DeviceType::kGpu);
  EXPECT_TRUE(absl::IsUnimplemented(gpu)) << gpu;
  EXPECT_NE(gpu.message().find("no gpu provider"), std::string::npos) << gpu;
}

TEST(ProviderSetTest, DevicesPointToTheirProvider) {
  const CpuProvider loops({.convolutions = CpuConvPath::kLoops});
  CpuDevice device(0, 0, 1);
  EXPECT_EQ(&CpuProviderOf(&device), &CpuProvider::Default());
  device.set_provider(&loops);
  EXPECT_EQ(&CpuProviderOf(&device), &loops);
  EXPECT_EQ(&CpuProviderOf(nullptr), &CpuProvider::Default());
}

}  // namespace
}  // namespace sluice::providers_test
