// Conformance: every op of docs/ops.md on every device type present, against
// the CPU kernel as the reference. Inputs are random from a fixed seed per
// case; tolerances are per dtype (float32 1e-5 relative, TF32 1e-3, float16
// and bfloat16 1e-2). Without a GPU (or in a CPU-only build) the GPU cases
// skip with the reason. Uses only CUDA-free headers (device/gpu_device.h).
#include <cmath>
#include <cstdint>
#include <map>
#include <ostream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "gmock/gmock.h"
#include "graph/loader.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"

namespace sluice {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::BoolAttr;
using ::sluice::testing::FloatAttr;
using ::sluice::testing::IntAttr;
using ::sluice::testing::IntListAttr;
using ::sluice::testing::MakeTensor;
using ::sluice::testing::RunOp;
using ::sluice::testing::StringAttr;
using ::sluice::testing::ToDoubles;
using ::sluice::testing::TypeAttr;

// --- GPU devices, made once per process -------------------------------------

struct Gpus {
  std::vector<std::unique_ptr<GpuDevice>> plain;  // allow_tf32 false
  std::vector<std::unique_ptr<GpuDevice>> tf32;   // allow_tf32 true
  std::string skip_reason;
};

const Gpus& GetGpus() {
  static const Gpus* gpus = [] {
    auto* g = new Gpus();
#ifndef SLUICE_WITH_CUDA
    g->skip_reason = "this build of sluice has no CUDA support";
    return g;
#else
    DeviceInventory inv = DiscoverDevices();
    if (inv.gpus.empty()) {
      g->skip_reason = absl::StrCat("no GPU: ", inv.no_gpu_reason);
      return g;
    }
    RuntimeConfig config;
    config.set_allow_growth(true);
    const std::vector<GpuDeviceSpec> specs = {{0, int64_t{2} << 30}};
    auto plain = CreateGpuDevicesFromSpecs(config, specs);
    config.set_allow_tf32(true);
    auto tf32 = CreateGpuDevicesFromSpecs(config, specs);
    if (!plain.ok() || !tf32.ok()) {
      g->skip_reason = absl::StrCat(
          "cannot create GPU devices: ",
          (!plain.ok() ? plain.status() : tf32.status()).ToString());
      return g;
    }
    g->plain = *std::move(plain);
    g->tf32 = *std::move(tf32);
    return g;
#endif
  }();
  return *gpus;
}

// --- Running one node on a GPU ----------------------------------------------

absl::StatusOr<std::unique_ptr<const Graph>> OneNodeGraph(
    const std::string& op, const std::vector<Tensor>& inputs,
    const Attrs& attrs) {
  GraphDef def;
  NodeDef node;
  node.set_name("op");
  node.set_op(op);
  for (size_t i = 0; i < inputs.size(); ++i) {
    NodeDef* in = def.add_node();
    in->set_name(absl::StrCat("in", i));
    in->set_op("Input");
    (*in->mutable_attr())["dtype"] = TypeAttr(inputs[i].dtype());
    AttrValue shape;
    *shape.mutable_shape() = ShapeToProto(Shape::UnknownRank());
    (*in->mutable_attr())["shape"] = shape;
    node.add_input(in->name());
  }
  for (const auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  *def.add_node() = node;
  return BuildGraph(def);
}

// Copies inputs in (except host-memory ones), runs the GPU kernel, copies
// the outputs back.
absl::StatusOr<std::vector<Tensor>> RunOnGpu(GpuDevice* gpu,
                                             const std::string& op,
                                             const std::vector<Tensor>& inputs,
                                             const Attrs& attrs) {
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph,
                   OneNodeGraph(op, inputs, attrs));
  const Node* n = graph->FindNode("op");
  ASSIGN_OR_RETURN(const KernelDef* def,
                   KernelRegistry::Global()->Find(*n, DeviceType::kGpu));
  ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel, def->factory(*n));
  std::vector<Tensor> dev_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool host = false;
    for (int h : def->host_memory_inputs) host = host || h == static_cast<int>(i);
    if (host) {
      dev_inputs.push_back(inputs[i]);
    } else {
      ASSIGN_OR_RETURN(Tensor t, gpu->CopyToDevice(inputs[i]));
      dev_inputs.push_back(std::move(t));
    }
  }
  std::vector<Tensor> outputs(n->num_outputs());
  OpKernelContext ctx(n, gpu, dev_inputs, absl::MakeSpan(outputs));
  RETURN_IF_ERROR(kernel->Compute(&ctx));
  std::vector<Tensor> result;
  for (const Tensor& t : outputs) {
    if (!t.valid()) return absl::InternalError("an output was not set");
    ASSIGN_OR_RETURN(Tensor h, gpu->CopyToHost(t));
    result.push_back(std::move(h));
  }
  RETURN_IF_ERROR(gpu->Synchronize());
  return result;
}

// --- Cases ------------------------------------------------------------------

enum class Range { kSigned, kPositive, kAwayFromZero, kSmallInts, kBool };

struct InputSpec {
  InputSpec(DataType dtype, Shape shape, Range range = Range::kSigned)
      : dtype(dtype), shape(std::move(shape)), range(range) {}
  DataType dtype;
  Shape shape;
  Range range;
};

struct Case {
  Case(std::string name, std::string op, std::vector<InputSpec> inputs,
       Attrs attrs = {}, bool tf32 = false, double tol_scale = 1)
      : name(std::move(name)),
        op(std::move(op)),
        inputs(std::move(inputs)),
        attrs(std::move(attrs)),
        tf32(tf32),
        tol_scale(tol_scale) {}
  std::string name;
  std::string op;
  std::vector<InputSpec> inputs;
  Attrs attrs;
  bool tf32;
  double tol_scale;  // multiplies the dtype's tolerance (long sums)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

Tensor RandomTensor(const InputSpec& spec, std::mt19937* rng) {
  const int64_t n = spec.shape.num_elements();
  std::vector<double> v(n);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  for (int64_t i = 0; i < n; ++i) {
    double x = u(*rng);
    switch (spec.range) {
      case Range::kSigned: break;
      case Range::kPositive: x = std::fabs(x) + 0.1; break;
      case Range::kAwayFromZero: x = (x < 0 ? -1 : 1) * (std::fabs(x) + 0.5); break;
      case Range::kSmallInts: x = std::floor(x * 2); break;
      case Range::kBool: x = x > 0 ? 1 : 0; break;
    }
    if (!IsFloatingPoint(spec.dtype)) x = std::floor(x * 3);
    v[i] = x;
  }
  return MakeTensor(spec.dtype, spec.shape, v);
}

double Tolerance(DataType dtype, bool tf32) {
  switch (dtype) {
    case DT_FLOAT: return tf32 ? 1e-3 : 1e-5;
    case DT_DOUBLE: return 1e-12;
    case DT_FLOAT16:
    case DT_BFLOAT16: return 1e-2;
    default: return 0;  // integers and bool: exact
  }
}

std::string DtypeSuffix(DataType t) { return DataTypeName(t); }

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  const std::vector<DataType> floats = {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16};
  const std::map<std::string, Range> unary = {
      {"Neg", Range::kSigned},     {"Abs", Range::kSigned},
      {"Relu", Range::kSigned},    {"Exp", Range::kSigned},
      {"Log", Range::kPositive},   {"Sqrt", Range::kPositive},
      {"Rsqrt", Range::kPositive}, {"Tanh", Range::kSigned},
      {"Sigmoid", Range::kSigned}, {"Erf", Range::kSigned},
      {"Gelu", Range::kSigned}};
  for (const auto& [op, range] : unary) {
    for (DataType t : floats) {
      cases.push_back({op + "_" + DtypeSuffix(t), op, {{t, Shape({3, 37}), range}}});
    }
  }
  cases.push_back({"GeluTanh_float32", "Gelu", {{DT_FLOAT, Shape({64})}},
                   {{"approximate", StringAttr("tanh")}}});
  cases.push_back({"Neg_int32", "Neg", {{DT_INT32, Shape({10})}}});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Maximum",
                         "Minimum", "Equal", "Less", "Greater"}) {
    const std::string name = op;
    const Range ry = name == "Div" ? Range::kAwayFromZero : Range::kSigned;
    const Range rx = name == "Pow" ? Range::kPositive : Range::kSigned;
    for (DataType t : floats) {
      cases.push_back({name + "_broadcast_" + DtypeSuffix(t), op,
                       {{t, Shape({2, 3, 4}), rx}, {t, Shape({3, 1}), ry}}});
    }
    cases.push_back({name + "_same_shape_float32", op,
                     {{DT_FLOAT, Shape({5, 7}), rx}, {DT_FLOAT, Shape({5, 7}), ry}}});
    cases.push_back({name + "_scalar_float32", op,
                     {{DT_FLOAT, Shape({4, 6}), rx}, {DT_FLOAT, Shape(), ry}}});
  }
  cases.push_back({"Add_int32", "Add", {{DT_INT32, Shape({4, 5})}, {DT_INT32, Shape({5})}}});
  cases.push_back({"Less_int64", "Less", {{DT_INT64, Shape({4, 5})}, {DT_INT64, Shape({4, 1})}}});
  const std::vector<std::pair<DataType, DataType>> casts = {
      {DT_FLOAT, DT_FLOAT16}, {DT_FLOAT, DT_BFLOAT16}, {DT_FLOAT16, DT_FLOAT},
      {DT_FLOAT, DT_INT32},   {DT_INT32, DT_FLOAT},    {DT_FLOAT, DT_BOOL},
      {DT_INT64, DT_INT32},   {DT_BOOL, DT_FLOAT}};
  for (auto [src, dst] : casts) {
    cases.push_back({absl::StrCat("Cast_", DataTypeName(src), "_to_", DataTypeName(dst)),
                     "Cast", {{src, Shape({6, 5}), src == DT_BOOL ? Range::kBool : Range::kSigned}},
                     {{"DstT", TypeAttr(dst)}}});
  }
  cases.push_back({"Where_broadcast", "Where",
                   {{DT_BOOL, Shape({2, 1, 4}), Range::kBool},
                    {DT_FLOAT, Shape({2, 3, 4})},
                    {DT_FLOAT, Shape({4})}}});
  for (DataType t : floats) {
    cases.push_back({"MatMul_weights_" + DtypeSuffix(t), "MatMul",
                     {{t, Shape({2, 3, 8, 16})}, {t, Shape({16, 5})}}});
  }
  cases.push_back({"MatMul_batched", "MatMul",
                   {{DT_FLOAT, Shape({3, 8, 16})}, {DT_FLOAT, Shape({3, 16, 4})}}});
  cases.push_back({"MatMul_transposed", "MatMul",
                   {{DT_FLOAT, Shape({2, 16, 8})}, {DT_FLOAT, Shape({2, 5, 16})}},
                   {{"transpose_a", BoolAttr(true)}, {"transpose_b", BoolAttr(true)}}});
  cases.push_back({"MatMul_broadcast_batches", "MatMul",
                   {{DT_FLOAT, Shape({2, 1, 4, 8})}, {DT_FLOAT, Shape({1, 3, 8, 4})}}});
  cases.push_back({"MatMul_tf32", "MatMul",
                   {{DT_FLOAT, Shape({64, 128})}, {DT_FLOAT, Shape({128, 32})}},
                   {}, /*tf32=*/true, /*tol_scale=*/10});
  for (DataType t : floats) {
    cases.push_back({"Softmax_last_" + DtypeSuffix(t), "Softmax",
                     {{t, Shape({4, 5, 300})}}});
    cases.push_back({"LayerNorm_last_" + DtypeSuffix(t), "LayerNorm",
                     {{t, Shape({6, 96})}, {t, Shape({96})}, {t, Shape({96})}}});
  }
  cases.push_back({"Softmax_middle_axis", "Softmax", {{DT_FLOAT, Shape({4, 5, 6})}},
                   {{"axis", IntAttr(1)}}});
  cases.push_back({"LayerNorm_two_axes", "LayerNorm",
                   {{DT_FLOAT, Shape({2, 3, 8})}, {DT_FLOAT, Shape({3, 8})},
                    {DT_FLOAT, Shape({3, 8})}},
                   {{"axis", IntAttr(1)}, {"epsilon", FloatAttr(1e-3f)}}});
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    const std::string name = op;
    cases.push_back({name + "_last", op, {{DT_FLOAT, Shape({7, 300})}},
                     {{"axes", IntListAttr({-1})}}, false, 10});
    cases.push_back({name + "_outer_keepdims", op, {{DT_FLOAT, Shape({4, 5, 6})}},
                     {{"axes", IntListAttr({0, 2})}, {"keepdims", BoolAttr(true)}}});
    cases.push_back({name + "_all", op, {{DT_FLOAT, Shape({3, 4, 5})}}, {}, false, 10});
    cases.push_back({name + "_int32", op, {{DT_INT32, Shape({4, 6})}},
                     {{"axes", IntListAttr({1})}}});
  }
  cases.push_back({"Identity", "Identity", {{DT_FLOAT, Shape({3, 4})}}});
  cases.push_back({"Reshape", "Reshape", {{DT_FLOAT, Shape({3, 4})}},
                   {{"shape", IntListAttr({2, -1})}}});
  cases.push_back({"Squeeze", "Squeeze", {{DT_FLOAT, Shape({3, 1, 4})}}});
  cases.push_back({"Unsqueeze", "Unsqueeze", {{DT_FLOAT, Shape({3, 4})}},
                   {{"axes", IntListAttr({0, 3})}}});
  cases.push_back({"Transpose", "Transpose", {{DT_FLOAT, Shape({2, 3, 4})}},
                   {{"perm", IntListAttr({2, 0, 1})}}});
  cases.push_back({"Transpose_int64_reverse", "Transpose", {{DT_INT64, Shape({2, 3, 4})}}});
  cases.push_back({"Concat", "Concat",
                   {{DT_FLOAT, Shape({2, 3, 4})}, {DT_FLOAT, Shape({2, 1, 4})},
                    {DT_FLOAT, Shape({2, 2, 4})}},
                   {{"axis", IntAttr(1)}}});
  cases.push_back({"Split_equal", "Split", {{DT_FLOAT, Shape({4, 6})}},
                   {{"axis", IntAttr(1)}, {"num_split", IntAttr(3)}}});
  cases.push_back({"Split_sizes", "Split", {{DT_FLOAT, Shape({5, 2})}},
                   {{"axis", IntAttr(0)}, {"num_split", IntAttr(2)},
                    {"sizes", IntListAttr({2, 3})}}});
  cases.push_back({"Slice_negative_step", "Slice", {{DT_FLOAT, Shape({6, 7})}},
                   {{"begin", IntListAttr({-1, 1})}, {"end", IntListAttr({-7, 6})},
                    {"steps", IntListAttr({-2, 2})}}});
  cases.push_back({"Gather_axis1_int64", "Gather",
                   {{DT_FLOAT, Shape({3, 5, 2})}, {DT_INT64, Shape({4}), Range::kSmallInts}},
                   {{"axis", IntAttr(1)}}});
  cases.push_back({"Gather_int32_bool", "Gather",
                   {{DT_BOOL, Shape({5, 3}), Range::kBool}, {DT_INT32, Shape({2, 2}), Range::kSmallInts}}});
  cases.push_back({"Expand", "Expand", {{DT_FLOAT, Shape({3, 1})}},
                   {{"shape", IntListAttr({2, 1, 4})}}});
  cases.push_back({"Conv2D_grouped_padded", "Conv2D",
                   {{DT_FLOAT, Shape({2, 4, 9, 8})}, {DT_FLOAT, Shape({6, 2, 3, 3})}},
                   {{"strides", IntListAttr({2, 1})}, {"pads", IntListAttr({1, 1, 0, 2})},
                    {"dilations", IntListAttr({1, 2})}, {"group", IntAttr(2)}}});
  cases.push_back({"MaxPool", "MaxPool", {{DT_FLOAT, Shape({2, 3, 7, 7})}},
                   {{"kernel_shape", IntListAttr({3, 3})}, {"strides", IntListAttr({2, 2})},
                    {"pads", IntListAttr({1, 1, 1, 1})}}});
  cases.push_back({"AvgPool_include_pad", "AvgPool", {{DT_FLOAT, Shape({2, 3, 6, 6})}},
                   {{"kernel_shape", IntListAttr({3, 3})}, {"pads", IntListAttr({1, 1, 1, 1})},
                    {"count_include_pad", BoolAttr(true)}}});
  cases.push_back({"AvgPool", "AvgPool", {{DT_FLOAT, Shape({1, 2, 5, 5})}},
                   {{"kernel_shape", IntListAttr({2, 2})}, {"pads", IntListAttr({0, 0, 1, 1})}}});
  cases.push_back({"GlobalAvgPool", "GlobalAvgPool", {{DT_FLOAT, Shape({2, 3, 5, 4})}}});
  // Gather indices must be in range: draw them so.
  return cases;
}

class ConformanceTest : public ::testing::TestWithParam<Case> {};

void ExpectClose(const Tensor& gpu, const Tensor& cpu, double rtol,
                 const std::string& what) {
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  std::vector<double> g = ToDoubles(gpu);
  std::vector<double> c = ToDoubles(cpu);
  int reported = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::isnan(c[i]) && std::isnan(g[i])) continue;
    if (c[i] == g[i]) continue;
    const double diff = std::fabs(g[i] - c[i]);
    if (diff <= rtol * (1.0 + std::fabs(c[i]))) continue;
    ADD_FAILURE() << what << ": element " << i << ": gpu " << g[i] << ", cpu "
                  << c[i] << " (diff " << diff << ", rtol " << rtol << ")";
    if (++reported >= 5) return;
  }
}

void ExpectNormClose(const Tensor& gpu, const Tensor& cpu, double tol,
                     const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  std::vector<double> g = ToDoubles(gpu);
  std::vector<double> c = ToDoubles(cpu);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    ASSERT_FALSE(std::isnan(g[i])) << what << ": NaN at " << i;
    diff += (g[i] - c[i]) * (g[i] - c[i]);
    norm += c[i] * c[i];
  }
  const double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
  EXPECT_LE(rel, tol) << what << ": ||gpu - cpu|| / ||cpu|| = " << rel;
}

TEST_P(ConformanceTest, GpuMatchesCpu) {
  const Case& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name) & 0xffff));
  std::vector<Tensor> inputs;
  for (const InputSpec& spec : c.inputs) inputs.push_back(RandomTensor(spec, &rng));
  if (c.op == "Gather") {  // indices within [-n, n)
    const int64_t n = inputs[0].dim(c.attrs.count("axis") ? 1 : 0);
    std::vector<double> idx = ToDoubles(inputs[1]);
    for (double& v : idx) v = std::fmod(std::fabs(v), static_cast<double>(n)) * (v < 0 ? -1 : 1);
    inputs[1] = MakeTensor(inputs[1].dtype(), inputs[1].shape(), idx);
  }
  Attrs attrs = c.attrs;
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp(
      c.op, inputs, attrs,
      {.num_outputs = c.op == "Split" ? static_cast<int>(attrs["num_split"].i()) : 1});
  if (absl::IsNotFound(cpu.status())) {
    // No CPU kernel for this 16-bit dtype: the reference runs in float32 on
    // the same (already rounded) values and is rounded back.
    std::vector<Tensor> wide;
    for (const Tensor& t : inputs) {
      const bool narrow = t.dtype() == DT_FLOAT16 || t.dtype() == DT_BFLOAT16;
      wide.push_back(narrow ? MakeTensor(DT_FLOAT, t.shape(), ToDoubles(t)) : t);
    }
    cpu = RunOp(c.op, wide, attrs);
    if (cpu.ok()) {
      for (Tensor& t : *cpu) {
        t = MakeTensor(c.inputs[0].dtype, t.shape(), ToDoubles(t));
      }
    }
  }
  ASSERT_TRUE(cpu.ok()) << "CPU reference failed: " << cpu.status();

  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) GTEST_SKIP() << gpus.skip_reason;
  GpuDevice* gpu = c.tf32 ? gpus.tf32[0].get() : gpus.plain[0].get();
  absl::StatusOr<std::vector<Tensor>> out = RunOnGpu(gpu, c.op, inputs, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), cpu->size());
  const DataType in_dtype = c.inputs.empty() ? DT_FLOAT : c.inputs[0].dtype;
  for (size_t i = 0; i < out->size(); ++i) {
    if (c.tf32) {
      // TF32 rounds operands to 10 mantissa bits: single elements of a long
      // dot product can cancel to near zero, so the whole result is judged
      // by ||gpu - cpu|| / ||cpu|| (METHOD.md: near 3e-4 for TF32).
      ExpectNormClose((*out)[i], (*cpu)[i], 2e-3,
                      absl::StrCat(c.name, " output ", i));
      continue;
    }
    double rtol = std::max(Tolerance((*cpu)[i].dtype(), c.tf32),
                           Tolerance(in_dtype, c.tf32));
    ExpectClose((*out)[i], (*cpu)[i], rtol * c.tol_scale,
                absl::StrCat(c.name, " output ", i));
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, ConformanceTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(ConformanceCoverageTest, EveryOpHasAGpuKernelInCudaBuilds) {
#ifndef SLUICE_WITH_CUDA
  GTEST_SKIP() << "this build of sluice has no CUDA support";
#else
  // Ops with only a CPU kernel so far (ONNX conformance, issue 12, adds
  // their GPU kernels later); the placer puts them on the CPU. The list may
  // only shrink: an op on it that gains a GPU kernel fails here.
  const std::set<std::string> cpu_only = {
      "Acos", "Acosh", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh",
      "Ceil", "Celu", "Cos", "Cosh", "CumSum", "Elu", "FMod", "Floor",
      "GatherElements", "GatherND", "HardSigmoid", "HardSwish", "Mish", "Mod",
      "Round", "ScatterElements", "ScatterND", "Selu", "Sign", "Sin", "Sinh",
      "Softplus", "Softsign", "Tan", "ThresholdedRelu", "Trilu"};
  std::set<std::string> tested;
  for (const Case& c : AllCases()) tested.insert(c.op);
  for (const std::string& op : OpRegistry::Global()->OpNames()) {
    bool gpu = false;
    for (const KernelDef* def : KernelRegistry::Global()->KernelsFor(op)) {
      gpu = gpu || def->device == DeviceType::kGpu;
    }
    if (cpu_only.count(op)) {
      EXPECT_FALSE(gpu) << op << " has a GPU kernel: take it off cpu_only";
      continue;
    }
    EXPECT_TRUE(gpu) << "no GPU kernel registered for " << op;
    if (op != "Const" && op != "Input") {
      EXPECT_TRUE(tested.count(op)) << "no conformance case for " << op;
    }
  }
#endif
}

TEST(GpuKernelErrorTest, GatherReportsAnOutOfRangeIndex) {
  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) GTEST_SKIP() << gpus.skip_reason;
  Tensor params = MakeTensor(DT_FLOAT, Shape({4, 2}), std::vector<double>(8, 1.0));
  Tensor indices = MakeTensor(DT_INT64, Shape({3}), {0, 7, 1});
  absl::StatusOr<std::vector<Tensor>> out =
      RunOnGpu(gpus.plain[0].get(), "Gather", {params, indices}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("index 7"));
}

TEST(GpuDeviceTest, CopiesRoundTripThroughStagingInSeveralChunks) {
  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) GTEST_SKIP() << gpus.skip_reason;
  GpuDevice* gpu = gpus.plain[0].get();
  const int64_t n = (int64_t{80} << 20) / 4 + 7;  // > 2 staging chunks
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % 1000);
  Tensor host = MakeTensor(DT_FLOAT, Shape({n}), v);
  absl::StatusOr<Tensor> dev = gpu->CopyToDevice(host);
  ASSERT_TRUE(dev.ok()) << dev.status();
  absl::StatusOr<Tensor> back = gpu->CopyToHost(*dev);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(TensorsEqual(host, *back));
  AllocatorStats stats = gpu->allocator_stats();
  EXPECT_GE(stats.bytes_in_use, static_cast<int64_t>(host.bytes()));
  EXPECT_LE(stats.bytes_reserved, stats.limit);
}

TEST(GpuDeviceTest, OutOfMemoryIsAnErrorAndTheDeviceStaysUsable) {
  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) GTEST_SKIP() << gpus.skip_reason;
  GpuDevice* gpu = gpus.plain[0].get();
  absl::StatusOr<Tensor> big =
      Tensor::Create(DT_FLOAT, Shape({int64_t{1} << 30}), gpu->allocator());
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), ::testing::HasSubstr("/gpu:0"));
  absl::StatusOr<Tensor> small =
      Tensor::Create(DT_FLOAT, Shape({1024}), gpu->allocator());
  EXPECT_TRUE(small.ok()) << small.status();
}

TEST(GpuDeviceTest, LogicalGpusSplitOnePhysicalGpu) {
  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) GTEST_SKIP() << gpus.skip_reason;
  RuntimeConfig config;
  GpuConfig* g = config.add_gpu();
  g->set_index(0);
  g->add_logical_devices()->mutable_memory_limit()->set_bytes(int64_t{256} << 20);
  g->add_logical_devices()->mutable_memory_limit()->set_bytes(int64_t{128} << 20);
  config.add_visible_gpus(0);
  config.set_allow_growth(false);  // each reserves its whole limit at once
  absl::StatusOr<std::vector<std::unique_ptr<GpuDevice>>> devices =
      CreateGpuDevices(config);
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0]->name(), "/gpu:0");
  EXPECT_EQ((*devices)[1]->name(), "/gpu:1");
  EXPECT_EQ((*devices)[1]->memory_limit(), int64_t{128} << 20);
  // Growth off: each reserved its whole limit.
  EXPECT_EQ((*devices)[0]->allocator_stats().bytes_reserved, int64_t{256} << 20);
  // A copy between the two logical GPUs.
  Tensor host = MakeTensor(DT_FLOAT, Shape({1000}), std::vector<double>(1000, 3.0));
  absl::StatusOr<Tensor> a = (*devices)[0]->CopyToDevice(host);
  ASSERT_TRUE(a.ok());
  absl::StatusOr<Tensor> b =
      Tensor::Create(DT_FLOAT, host.shape(), (*devices)[1]->allocator());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*devices)[0]->CopyDeviceToDevice(*a, (*devices)[1].get(), &*b).ok());
  absl::StatusOr<Tensor> back = (*devices)[1]->CopyToHost(*b);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(TensorsEqual(host, *back));
}

}  // namespace
}  // namespace sluice
