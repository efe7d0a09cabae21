// ResNet-50's batch-1 convolutions with windows larger than 1x1 on the
// CPU, on conv.cc's loops against oneDNN's primitive cut into channel
// slices and bands of rows (onednn_conv.h, PlanConvSlicing), through the
// session API, so that the cut can be judged at many threads (issue 13:
// the 16-thread host; a 2-core VM can only check that 1 and 2 threads did
// not get slower).
//
//   build/bench/conv_slicing_bench --benchmark_counters_tabular=true
//       --benchmark_filter='threads:16$'   (one command line)
//
// BM_Conv/shape:<s>/onednn:<0|1>/threads:<t>: shape 0 is the stem (7x7
// stride 2, 3 -> 64 channels, 224x224), 1-4 the 3x3s of stages 1-4 (64
// channels at 56x56, 128 at 28x28, 256 at 14x14, 512 at 7x7), 5 stage 2's
// strided 3x3 (128 channels, 56x56 -> 28x28). The filter is a Const, so
// oneDNN reorders it once, as in a model. `channel_parts` x `row_bands`
// is PlanConvSlicing's cut for the shape at that thread count (with
// AVX-512's blocks of 16 channels; oneDNN runs only); `GFLOP/s` counts 2
// per multiply-add.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "core/tensor_proto.h"
#include "executor/session.h"
#include "graph/attr_map.h"
#include "graph/loader.h"
#include "kernels/cpu/onednn_conv.h"

namespace sluice {
namespace {

struct ConvShape {
  int64_t c, h, o, k, stride;
};

constexpr ConvShape kShapes[] = {
    {3, 224, 64, 7, 2},  {64, 56, 64, 3, 1},  {128, 28, 128, 3, 1},
    {256, 14, 256, 3, 1}, {512, 7, 512, 3, 1}, {128, 56, 128, 3, 2},
};

GraphDef ConvGraph(const ConvShape& s) {
  GraphDef def;
  NodeDef* x = def.add_node();
  x->set_name("x");
  x->set_op("Input");
  (*x->mutable_attr())["dtype"] = MakeTypeAttr(DT_FLOAT);
  (*x->mutable_attr())["shape"] = MakeShapeAttr(Shape({1, s.c, s.h, s.h}));
  def.mutable_signature()->add_inputs()->set_name("x");
  absl::StatusOr<Tensor> f =
      Tensor::Create(DT_FLOAT, Shape({s.o, s.c, s.k, s.k}));
  float* p = f->data<float>();
  for (int64_t i = 0; i < f->NumElements(); ++i) {
    p[i] = static_cast<float>((i * 29) % 97) / 500.0f - 0.1f;
  }
  NodeDef* w = def.add_node();
  w->set_name("f");
  w->set_op("Const");
  (*w->mutable_attr())["value"] = MakeTensorAttr(TensorToProto(*f));
  NodeDef* conv = def.add_node();
  conv->set_name("conv");
  conv->set_op("Conv2D");
  conv->add_input("x");
  conv->add_input("f");
  const int64_t pad = s.k / 2;
  (*conv->mutable_attr())["strides"] = MakeIntListAttr({s.stride, s.stride});
  (*conv->mutable_attr())["pads"] = MakeIntListAttr({pad, pad, pad, pad});
  (*conv->mutable_attr())["dilations"] = MakeIntListAttr({1, 1});
  (*conv->mutable_attr())["group"] = MakeIntAttr(1);
  TensorInfo* out = def.mutable_signature()->add_outputs();
  out->set_name("y");
  out->set_tensor("conv");
  return def;
}

void BM_Conv(benchmark::State& state) {
  const ConvShape& s = kShapes[state.range(0)];
  const bool onednn = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(ConvGraph(s));
  if (!g.ok()) {
    state.SkipWithError(std::string(g.status().message()).c_str());
    return;
  }
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_inter_op_threads(1);
  config.set_intra_op_threads(threads);
  config.set_cpu_convolutions(onednn ? CPU_CONVOLUTIONS_ONEDNN
                                      : CPU_CONVOLUTIONS_LOOPS);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(g), config);
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  absl::StatusOr<Tensor> x = Tensor::Create(DT_FLOAT, Shape({1, s.c, s.h, s.h}));
  float* p = x->data<float>();
  for (int64_t i = 0; i < x->NumElements(); ++i) {
    p[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  }
  const Feeds feeds = {{"x", *x}};
  const int64_t before = cpu::OneDnnConvRuns();
  if (!(*session)->Run(feeds).ok()) {
    state.SkipWithError("first run failed");
    return;
  }
  if (onednn && cpu::OneDnnConvRuns() == before) {
    state.SkipWithError("oneDNN did not run (not built in, or declined)");
    return;
  }
  for (auto _ : state) {
    auto out = (*session)->Run(feeds);
    benchmark::DoNotOptimize(out);
  }
  const int64_t oh = (s.h + 2 * (s.k / 2) - s.k) / s.stride + 1;
  const int64_t macs = s.o * oh * oh * s.c * s.k * s.k;
  const cpu::ConvSlicing cut = cpu::PlanConvSlicing(
      (s.o + 15) / 16, oh, macs, 1, threads, cpu::kMinConvSliceMacs);
  state.counters["channel_parts"] = static_cast<double>(cut.channel_parts);
  state.counters["row_bands"] = static_cast<double>(cut.row_parts);
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(macs) * state.iterations() / 1e9,
      benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Conv)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5}, {0, 1}, {1, 2, 4, 8, 16}})
    ->ArgNames({"shape", "onednn", "threads"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
