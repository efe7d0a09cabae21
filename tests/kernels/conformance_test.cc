// Conformance: every op of docs/ops.md on every device type present, against
// the CPU kernel as the reference. Inputs are random from a fixed seed per
// case; tolerances are per dtype (float32 1e-5 relative, TF32 1e-3, float16
// and bfloat16 1e-2). Without a GPU (or in a CPU-only build) the GPU cases
// skip with the reason. Uses only CUDA-free headers (device/gpu_device.h).
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
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
#include "core/tensor_proto.h"
#include "graph/attr_map.h"
#include "graph/loader.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"
#include "testing/compare.h"
#include "testing/gpu_required.h"
#include "test_data.h"

namespace sluice::conformance_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::BoolAttr;
using ::sluice::testing::FloatAttr;
using ::sluice::testing::IntAttr;
using ::sluice::testing::IntListAttr;
using ::sluice::testing::MakeTensor;
using ::sluice::testing::RunOp;
using ::sluice::testing::RunOpOnGpu;
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

// --- Cases ------------------------------------------------------------------

// Random values from [-2, 2], then: kUnit scaled into [-0.9, 0.9]
// (Asin's domain), kAboveOne |x| + 1 (Acosh's), kHalves multiples of 0.5
// (Round's ties), kWide times 100 (Cast's saturation). Integer dtypes take
// floor(3 x).
enum class Range {
  kSigned, kPositive, kAwayFromZero, kSmallInts, kBool, kUnit, kAboveOne,
  kHalves, kWide
};

struct InputSpec {
  InputSpec(DataType dtype, Shape shape, Range range = Range::kSigned)
      : dtype(dtype), shape(std::move(shape)), range(range) {}
  // Fixed values (indices, axes, diagonals) instead of random ones.
  InputSpec(DataType dtype, Shape shape, std::vector<double> values)
      : dtype(dtype), shape(std::move(shape)), values(std::move(values)) {}
  DataType dtype;
  Shape shape;
  Range range = Range::kSigned;
  std::vector<double> values;
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
  if (!spec.values.empty()) return MakeTensor(spec.dtype, spec.shape, spec.values);
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
      case Range::kUnit: x *= 0.45; break;
      case Range::kAboveOne: x = std::fabs(x) + 1; break;
      case Range::kHalves: x = std::floor(x * 4) / 2; break;
      case Range::kWide: x *= 100; break;
    }
    if (!IsFloatingPoint(spec.dtype)) x = std::floor(x * 3);
    if (spec.dtype == DT_INT8 || spec.dtype == DT_UINT8) {  // wrap into range
      x = std::fmod(x, 256.0);
      if (x < 0) x += 256;
      if (spec.dtype == DT_INT8 && x >= 128) x -= 256;
    }
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

// The unary math functions and activations (ONNX conformance, issue 12).
void AddMathCases(std::vector<Case>* cases) {
  const std::vector<DataType> floats = {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16};
  const std::map<std::string, Range> math = {
      {"Sin", Range::kSigned},      {"Cos", Range::kSigned},
      {"Tan", Range::kUnit},        {"Asin", Range::kUnit},
      {"Acos", Range::kUnit},       {"Atan", Range::kSigned},
      {"Sinh", Range::kSigned},     {"Cosh", Range::kSigned},
      {"Asinh", Range::kSigned},    {"Acosh", Range::kAboveOne},
      {"Atanh", Range::kUnit},      {"Floor", Range::kSigned},
      {"Ceil", Range::kSigned},     {"Round", Range::kHalves},
      {"Sign", Range::kSigned},     {"Softplus", Range::kSigned},
      {"Softsign", Range::kSigned}, {"Mish", Range::kSigned},
      {"HardSwish", Range::kSigned}};
  for (const auto& [op, range] : math) {
    for (DataType t : floats) {
      cases->push_back({op + "_" + DtypeSuffix(t), op, {{t, Shape({3, 37}), range}}});
    }
  }
  for (const char* op : {"Sin", "Acosh", "Softplus", "Round"}) {
    const std::string name = op;
    const Range range = name == "Acosh"   ? Range::kAboveOne
                        : name == "Round" ? Range::kHalves
                                          : Range::kSigned;
    cases->push_back({name + "_float64", op, {{DT_DOUBLE, Shape({50}), range}}});
  }
  cases->push_back({"Sign_int32", "Sign", {{DT_INT32, Shape({20})}}});
  cases->push_back({"Sign_int64", "Sign", {{DT_INT64, Shape({20})}}});
  // The activations with attributes: defaults, then other values.
  for (const char* op : {"HardSigmoid", "Elu", "Selu", "Celu", "ThresholdedRelu"}) {
    const std::string name = op;
    for (DataType t : floats) {
      cases->push_back({name + "_" + DtypeSuffix(t), op, {{t, Shape({3, 37})}}});
    }
  }
  cases->push_back({"HardSigmoid_attrs", "HardSigmoid", {{DT_FLOAT, Shape({64})}},
                    {{"alpha", FloatAttr(0.5f)}, {"beta", FloatAttr(0.25f)}}});
  cases->push_back({"Elu_alpha_float64", "Elu", {{DT_DOUBLE, Shape({64})}},
                    {{"alpha", FloatAttr(0.5f)}}});
  cases->push_back({"Selu_attrs", "Selu", {{DT_FLOAT, Shape({64})}},
                    {{"alpha", FloatAttr(2.0f)}, {"gamma", FloatAttr(3.0f)}}});
  cases->push_back({"Celu_alpha", "Celu", {{DT_FLOAT, Shape({64})}},
                    {{"alpha", FloatAttr(2.0f)}}});
  cases->push_back({"ThresholdedRelu_alpha", "ThresholdedRelu",
                    {{DT_FLOAT, Shape({64})}}, {{"alpha", FloatAttr(0.3f)}}});
}

// Mod and FMod, the binary ops on int8 and uint8, integer Div and Pow, and
// Casts to and from the 8-bit integers.
void AddIntegerCases(std::vector<Case>* cases) {
  for (const char* op : {"Mod", "FMod"}) {
    const std::string name = op;
    for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16, DT_DOUBLE}) {
      cases->push_back({name + "_broadcast_" + DtypeSuffix(t), op,
                        {{t, Shape({2, 3, 4})}, {t, Shape({3, 1}), Range::kAwayFromZero}}});
    }
    for (DataType t : {DT_INT8, DT_INT32, DT_INT64}) {
      cases->push_back({name + "_" + DtypeSuffix(t), op,
                        {{t, Shape({4, 5})}, {t, Shape({5}), Range::kAwayFromZero}}});
    }
    cases->push_back({name + "_uint8", op,
                      {{DT_UINT8, Shape({4, 5}), Range::kPositive},
                       {DT_UINT8, Shape({4, 1}), Range::kAboveOne}}});
  }
  for (DataType t : {DT_INT8, DT_INT32, DT_INT64}) {
    cases->push_back({"Div_" + DtypeSuffix(t), "Div",
                      {{t, Shape({4, 5})}, {t, Shape({4, 1}), Range::kAwayFromZero}}});
    cases->push_back({"Pow_" + DtypeSuffix(t), "Pow",
                      {{t, Shape({4, 5})}, {t, Shape({5}), Range::kPositive}}});
  }
  for (const char* op : {"Add", "Sub", "Mul", "Maximum", "Minimum", "Equal",
                         "Less", "Greater"}) {
    const std::string name = op;
    cases->push_back({name + "_int8", op,
                      {{DT_INT8, Shape({3, 4}), Range::kWide}, {DT_INT8, Shape({4})}}});
    cases->push_back({name + "_uint8", op,
                      {{DT_UINT8, Shape({3, 4}), Range::kPositive},
                       {DT_UINT8, Shape({3, 1}), Range::kPositive}}});
  }
  cases->push_back({"Div_uint8", "Div",
                    {{DT_UINT8, Shape({3, 4}), Range::kPositive},
                     {DT_UINT8, Shape({3, 4}), Range::kAboveOne}}});
  cases->push_back({"Pow_uint8", "Pow",
                    {{DT_UINT8, Shape({3, 4}), Range::kPositive},
                     {DT_UINT8, Shape({3, 4}), Range::kPositive}}});
  const std::vector<std::pair<DataType, DataType>> casts = {
      {DT_FLOAT, DT_INT8},  {DT_FLOAT, DT_UINT8}, {DT_DOUBLE, DT_INT32},
      {DT_FLOAT16, DT_INT64}, {DT_INT8, DT_FLOAT}, {DT_UINT8, DT_INT32},
      {DT_INT32, DT_INT8}};
  for (auto [src, dst] : casts) {
    const bool is_float = IsFloatingPoint(src);
    cases->push_back({absl::StrCat("Cast_", DataTypeName(src), "_to_", DataTypeName(dst)),
                      "Cast",
                      {{src, Shape({6, 5}),
                        is_float || src == DT_INT32 ? Range::kWide : Range::kPositive}},
                      {{"DstT", TypeAttr(dst)}}});
  }
}

// ArgMax/ArgMin, CumSum, Trilu and the element and N-d gathers and
// scatters; axes, diagonals and indices are fixed inputs.
void AddIndexCases(std::vector<Case>* cases) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    const std::string name = op;
    cases->push_back({name + "_axis1", op, {{DT_FLOAT, Shape({3, 5, 4})}},
                      {{"axis", IntAttr(1)}, {"keepdims", BoolAttr(false)}}});
    cases->push_back({name + "_last_float16", op, {{DT_FLOAT16, Shape({4, 9})}},
                      {{"axis", IntAttr(-1)}}});
    // Small integers tie: first or last index.
    for (bool last : {false, true}) {
      cases->push_back({name + (last ? "_ties_last_int32" : "_ties_first_int64"), op,
                        {{last ? DT_INT32 : DT_INT64, Shape({6, 7}), Range::kSmallInts}},
                        {{"axis", IntAttr(0)}, {"select_last_index", BoolAttr(last)}}});
    }
  }
  const std::vector<double> axis1 = {1};
  for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_INT32, DT_INT64}) {
    cases->push_back({"CumSum_axis1_" + DtypeSuffix(t), "CumSum",
                      {{t, Shape({3, 6, 4})}, {DT_INT64, Shape(), axis1}}});
  }
  cases->push_back({"CumSum_exclusive_reverse", "CumSum",
                    {{DT_DOUBLE, Shape({5, 7})}, {DT_INT32, Shape({1}), std::vector<double>{-1}}},
                    {{"exclusive", BoolAttr(true)}, {"reverse", BoolAttr(true)}}});
  cases->push_back({"Trilu_upper", "Trilu",
                    {{DT_FLOAT, Shape({2, 4, 5})}, {DT_INT64, Shape(), std::vector<double>{0}}}});
  cases->push_back({"Trilu_lower_k1_float16", "Trilu",
                    {{DT_FLOAT16, Shape({5, 3})}, {DT_INT64, Shape(), std::vector<double>{1}}},
                    {{"upper", BoolAttr(false)}}});
  cases->push_back({"Trilu_lower_negative_k_int64", "Trilu",
                    {{DT_INT64, Shape({3, 6, 6})}, {DT_INT64, Shape(), std::vector<double>{-2}}},
                    {{"upper", BoolAttr(false)}}});
  cases->push_back({"Trilu_upper_bool", "Trilu",
                    {{DT_BOOL, Shape({4, 4}), Range::kBool}, {DT_INT64, Shape(), std::vector<double>{2}}}});
  // data [3, 4]; indices [2, 4] along axis 0 (negatives and repeats).
  const std::vector<double> rows = {0, 2, -1, 1, 0, 1, 2, -3};
  cases->push_back({"GatherElements_axis0", "GatherElements",
                    {{DT_FLOAT, Shape({3, 4})}, {DT_INT64, Shape({2, 4}), rows}}});
  cases->push_back({"GatherElements_axis1_int32_bool", "GatherElements",
                    {{DT_BOOL, Shape({3, 3}), Range::kBool},
                     {DT_INT32, Shape({3, 2}), std::vector<double>{2, 0, -1, 1, 0, 0}}},
                    {{"axis", IntAttr(1)}}});
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    cases->push_back({std::string("ScatterElements_") + reduction, "ScatterElements",
                      {{DT_FLOAT, Shape({3, 4})}, {DT_INT64, Shape({2, 4}), rows},
                       {DT_FLOAT, Shape({2, 4})}},
                      {{"reduction", StringAttr(reduction)}}});
  }
  cases->push_back({"ScatterElements_add_int32_axis1", "ScatterElements",
                    {{DT_INT32, Shape({2, 3})},
                     {DT_INT32, Shape({2, 3}), std::vector<double>{0, 0, 2, -1, 1, 1}},
                     {DT_INT32, Shape({2, 3})}},
                    {{"axis", IntAttr(1)}, {"reduction", StringAttr("add")}}});
  // data [2, 3, 4]: tuples of 2 pick rows; batch_dims 1: tuples of 1 per batch.
  cases->push_back({"GatherND_pairs", "GatherND",
                    {{DT_FLOAT, Shape({2, 3, 4})},
                     {DT_INT64, Shape({3, 2}), std::vector<double>{1, 2, 0, -1, 1, 0}}}});
  cases->push_back({"GatherND_batch_dims1_int64", "GatherND",
                    {{DT_INT64, Shape({2, 3, 4})},
                     {DT_INT64, Shape({2, 2, 1}), std::vector<double>{2, 0, -1, 1}}},
                    {{"batch_dims", IntAttr(1)}}});
  const std::vector<double> slots = {1, 3, -3};  // -3 is 1 again
  for (const char* reduction : {"none", "add", "mul"}) {
    cases->push_back({std::string("ScatterND_") + reduction, "ScatterND",
                      {{DT_FLOAT, Shape({4, 3})}, {DT_INT64, Shape({3, 1}), slots},
                       {DT_FLOAT, Shape({3, 3})}},
                      {{"reduction", StringAttr(reduction)}}});
  }
  cases->push_back({"ScatterND_max_float16", "ScatterND",
                    {{DT_FLOAT16, Shape({4, 3})}, {DT_INT64, Shape({3, 1}), slots},
                     {DT_FLOAT16, Shape({3, 3})}},
                    {{"reduction", StringAttr("max")}}});
  cases->push_back({"ScatterND_elements_bool", "ScatterND",
                    {{DT_BOOL, Shape({2, 2}), Range::kBool},
                     {DT_INT64, Shape({2, 2}), std::vector<double>{0, 1, 1, 0}},
                     {DT_BOOL, Shape({2}), Range::kBool}}});
}

// Fill, Size, Shape, Tile, Range and the Dynamic* ops whose parameters are
// runtime int64 inputs (read in host memory): fixed parameters, random data.
void AddDynamicGpuCases(std::vector<Case>* cases) {
  using V = std::vector<double>;
  auto fill_value = [](const Tensor& v) { return MakeTensorAttr(TensorToProto(v)); };
  cases->push_back({"Fill_float", "Fill", {{DT_INT64, Shape({3}), V{2, 3, 4}}},
                    {{"dtype", TypeAttr(DT_FLOAT)},
                     {"value", fill_value(MakeTensor(DT_FLOAT, Shape({1}), V{-1.25}))}}});
  cases->push_back({"Fill_int64_large", "Fill", {{DT_INT64, Shape({2}), V{70, 9}}},
                    {{"dtype", TypeAttr(DT_INT64)},
                     {"value", fill_value(MakeTensor(DT_INT64, Shape({1}), V{1099511627779}))}}});
  cases->push_back({"Fill_bool_empty", "Fill", {{DT_INT64, Shape({2}), V{3, 0}}},
                    {{"dtype", TypeAttr(DT_BOOL)},
                     {"value", fill_value(MakeTensor(DT_BOOL, Shape({1}), V{1}))}}});
  cases->push_back({"Size_float16", "Size", {{DT_FLOAT16, Shape({3, 5, 2})}}});
  cases->push_back({"Size_empty_bool", "Size", {{DT_BOOL, Shape({4, 0}), Range::kBool}}});
  cases->push_back({"Shape_int32_middle", "Shape", {{DT_INT32, Shape({2, 3, 4, 5})}},
                    {{"start", IntAttr(1)}, {"end", IntAttr(-1)}}});
  cases->push_back({"Tile_float", "Tile",
                    {{DT_FLOAT, Shape({2, 3})}, {DT_INT64, Shape({2}), V{3, 2}}}});
  cases->push_back({"Tile_bool_3d", "Tile",
                    {{DT_BOOL, Shape({3, 1, 2}), Range::kBool},
                     {DT_INT64, Shape({3}), V{1, 4, 2}}}});
  cases->push_back({"Tile_int64_zero_repeat", "Tile",
                    {{DT_INT64, Shape({2, 2})}, {DT_INT64, Shape({2}), V{0, 3}}}});
  cases->push_back({"DynamicExpand", "DynamicExpand",
                    {{DT_FLOAT, Shape({3, 1})}, {DT_INT64, Shape({3}), V{2, 1, 4}}}});
  cases->push_back({"DynamicExpand_bfloat16", "DynamicExpand",
                    {{DT_BFLOAT16, Shape({1, 4})}, {DT_INT64, Shape({2}), V{3, 1}}}});
  cases->push_back({"DynamicReduceSum", "DynamicReduceSum",
                    {{DT_FLOAT, Shape({4, 5, 6})}, {DT_INT64, Shape({2}), V{0, 2}}}});
  cases->push_back({"DynamicReduceSum_int32_all", "DynamicReduceSum",
                    {{DT_INT32, Shape({3, 4})}, {DT_INT64, Shape({0}), V{}}},
                    {{"keepdims", BoolAttr(false)}}});
  cases->push_back({"DynamicReduceMean_last", "DynamicReduceMean",
                    {{DT_FLOAT, Shape({3, 8})}, {DT_INT64, Shape({1}), V{-1}}},
                    {{"keepdims", BoolAttr(false)}}});
  cases->push_back({"DynamicReduceMax_int32", "DynamicReduceMax",
                    {{DT_INT32, Shape({5, 4})}, {DT_INT64, Shape({1}), V{0}}}});
  cases->push_back({"DynamicReduceMax_float16", "DynamicReduceMax",
                    {{DT_FLOAT16, Shape({2, 3, 4})}, {DT_INT64, Shape({2}), V{1, 2}}}});
  cases->push_back({"DynamicReshape", "DynamicReshape",
                    {{DT_FLOAT, Shape({2, 3, 4})}, {DT_INT64, Shape({3}), V{4, 0, -1}}}});
  cases->push_back({"DynamicSlice_negative_step", "DynamicSlice",
                    {{DT_FLOAT, Shape({6, 7})}, {DT_INT64, Shape({2}), V{-1, 1}},
                     {DT_INT64, Shape({2}), V{-7, 6}}, {DT_INT64, Shape({2}), V{0, 1}},
                     {DT_INT64, Shape({2}), V{-2, 2}}}});
  cases->push_back({"DynamicSlice_one_axis_int8", "DynamicSlice",
                    {{DT_INT8, Shape({4, 5, 3})}, {DT_INT64, Shape({1}), V{1}},
                     {DT_INT64, Shape({1}), V{4}}, {DT_INT64, Shape({1}), V{1}},
                     {DT_INT64, Shape({1}), V{1}}}});
  cases->push_back({"DynamicSqueeze", "DynamicSqueeze",
                    {{DT_FLOAT, Shape({3, 1, 4, 1})}, {DT_INT64, Shape({1}), V{1}}}});
  cases->push_back({"DynamicUnsqueeze", "DynamicUnsqueeze",
                    {{DT_FLOAT, Shape({3, 4})}, {DT_INT64, Shape({2}), V{0, 3}}}});
  cases->push_back({"Range_float", "Range",
                    {{DT_FLOAT, Shape(), V{0.5}}, {DT_FLOAT, Shape(), V{7.25}},
                     {DT_FLOAT, Shape(), V{0.75}}}});
  cases->push_back({"Range_int64_negative_delta", "Range",
                    {{DT_INT64, Shape(), V{10}}, {DT_INT64, Shape(), V{-3}},
                     {DT_INT64, Shape(), V{-4}}}});
}

// The GPU kernels of the reductions, selection and misc family: ReduceMin,
// ReduceProd (and their Dynamic forms), the identities of empty reductions,
// CumProd, DynamicSplit, TopK, OneHot, EyeLike, Compress, ReverseSequence,
// TensorScatter, Dropout, Window, DFT, STFT, MelWeightMatrix and Einsum;
// parameters such as axes, k and indices are fixed inputs.
void AddReduceSelectMiscGpuCases(std::vector<Case>* cases) {
  for (const char* op : {"ReduceMin", "ReduceProd"}) {
    const std::string name = op;
    const bool prod = name == "ReduceProd";
    // Products of up to 20 values from [0.1, 2.1] stay in range.
    const Range r = prod ? Range::kPositive : Range::kSigned;
    cases->push_back({name + "_last", op, {{DT_FLOAT, Shape({7, prod ? 20 : 300}), r}},
                      {{"axes", IntListAttr({-1})}}, false, 10});
    cases->push_back({name + "_outer_keepdims", op, {{DT_FLOAT, Shape({4, 5, 3}), r}},
                      {{"axes", IntListAttr({0, 2})}, {"keepdims", BoolAttr(true)}}});
    cases->push_back({name + "_all_double", op, {{DT_DOUBLE, Shape({2, 3, 4}), r}}, {}});
    for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
      cases->push_back({name + "_middle_" + DtypeSuffix(t), op, {{t, Shape({3, 4, 5}), r}},
                        {{"axes", IntListAttr({1})}}});
    }
    for (DataType t : {DT_INT32, DT_INT64, DT_INT8, DT_UINT8}) {
      cases->push_back({name + "_" + DtypeSuffix(t), op, {{t, Shape({4, 6})}},
                        {{"axes", IntListAttr({1})}}});
    }
    cases->push_back({name + "_empty_axis", op, {{DT_FLOAT, Shape({3, 0, 2})}},
                      {{"axes", IntListAttr({1})}}});
    cases->push_back({"Dynamic" + name, "Dynamic" + name,
                      {{DT_FLOAT, Shape({4, 5, 3}), r},
                       {DT_INT64, Shape({2}), std::vector<double>{-1, 1}}},
                      {{"keepdims", BoolAttr(true)}}});
  }
  for (const char* op : {"ReduceMin", "ReduceMax"}) {
    const std::string name = op;
    cases->push_back({name + "_bool", op, {{DT_BOOL, Shape({5, 6}), Range::kBool}},
                      {{"axes", IntListAttr({0})}}});
    for (DataType t : {DT_INT32, DT_INT8, DT_BOOL}) {  // lowest / highest value
      cases->push_back({name + "_empty_" + DtypeSuffix(t), op,
                        {{t, Shape({2, 0}), t == DT_BOOL ? Range::kBool : Range::kSigned}},
                        {{"axes", IntListAttr({1})}}});
    }
  }
  cases->push_back({"ReduceMax_int8", "ReduceMax", {{DT_INT8, Shape({4, 6})}},
                    {{"axes", IntListAttr({0})}}});
  cases->push_back({"ReduceMax_uint8", "ReduceMax", {{DT_UINT8, Shape({4, 6})}}});
  const std::vector<double> axis1 = {1};
  for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16, DT_INT32, DT_INT64}) {
    cases->push_back({"CumProd_axis1_" + DtypeSuffix(t), "CumProd",
                      {{t, Shape({3, 6, 4})}, {DT_INT64, Shape(), axis1}}});
  }
  cases->push_back({"CumProd_exclusive_reverse", "CumProd",
                    {{DT_DOUBLE, Shape({5, 7})}, {DT_INT32, Shape({1}), std::vector<double>{-1}}},
                    {{"exclusive", BoolAttr(true)}, {"reverse", BoolAttr(true)}}});
  cases->push_back({"CumProd_exclusive_axis0_int32", "CumProd",
                    {{DT_INT32, Shape({9, 3})}, {DT_INT32, Shape(), std::vector<double>{0}}},
                    {{"exclusive", BoolAttr(true)}}});
  cases->push_back({"DynamicSplit_axis1", "DynamicSplit",
                    {{DT_FLOAT, Shape({5, 6})}, {DT_INT64, Shape({3}), std::vector<double>{1, 3, 2}}},
                    {{"axis", IntAttr(1)}, {"num_split", IntAttr(3)}}});
  cases->push_back({"DynamicSplit_empty_part_bool", "DynamicSplit",
                    {{DT_BOOL, Shape({4, 3}), Range::kBool},
                     {DT_INT64, Shape({2}), std::vector<double>{0, 4}}},
                    {{"axis", IntAttr(0)}, {"num_split", IntAttr(2)}}});
  // TopK: k a fixed input; small integers tie (lower index first).
  cases->push_back({"TopK_largest_last", "TopK",
                    {{DT_FLOAT, Shape({4, 9})}, {DT_INT64, Shape({1}), std::vector<double>{3}}}});
  cases->push_back({"TopK_smallest_axis0_float16", "TopK",
                    {{DT_FLOAT16, Shape({7, 3, 2})}, {DT_INT64, Shape(), std::vector<double>{7}}},
                    {{"axis", IntAttr(0)}, {"largest", BoolAttr(false)}}});
  for (DataType t : {DT_INT32, DT_INT64, DT_INT8, DT_UINT8}) {
    cases->push_back({"TopK_ties_" + DtypeSuffix(t), "TopK",
                      {{t, Shape({3, 12}), Range::kSmallInts},
                       {DT_INT64, Shape({1}), std::vector<double>{5}}},
                      {{"axis", IntAttr(1)}, {"largest", BoolAttr(t != DT_INT64)}}});
  }
  cases->push_back({"TopK_k0_double", "TopK",
                    {{DT_DOUBLE, Shape({2, 5})}, {DT_INT64, Shape({1}), std::vector<double>{0}}}});
  // OneHot: negative and out-of-range indices; depth and values host inputs.
  const std::vector<double> hot = {0, 2, -1, 4, 7, -6, 1, 3};
  cases->push_back({"OneHot_last_int64", "OneHot",
                    {{DT_INT64, Shape({2, 4}), hot}, {DT_INT64, Shape(), std::vector<double>{5}},
                     {DT_FLOAT, Shape({2}), std::vector<double>{-1, 3}}}});
  cases->push_back({"OneHot_axis0_float_indices_int32_values", "OneHot",
                    {{DT_FLOAT, Shape({8}), std::vector<double>{0.5, 2.9, -1.2, 4, 7, -5, 1, -0.7}},
                     {DT_FLOAT, Shape({1}), std::vector<double>{5}},
                     {DT_INT32, Shape({2}), std::vector<double>{0, 9}}},
                    {{"axis", IntAttr(0)}}});
  cases->push_back({"OneHot_middle_int32_bool", "OneHot",
                    {{DT_INT32, Shape({4, 2}), hot}, {DT_INT32, Shape(), std::vector<double>{6}},
                     {DT_BOOL, Shape({2}), std::vector<double>{0, 1}}},
                    {{"axis", IntAttr(-2)}}});
  for (auto [t, k] : std::vector<std::pair<DataType, int64_t>>{
           {DT_FLOAT, 0}, {DT_INT32, 2}, {DT_BOOL, -1}, {DT_FLOAT16, -4}}) {
    cases->push_back({absl::StrCat("EyeLike_k", k < 0 ? "minus" : "", k < 0 ? -k : k, "_",
                                   DtypeSuffix(t)), "EyeLike",
                      {{DT_FLOAT, Shape({4, 6})}},
                      {{"DstT", TypeAttr(t)}, {"k", IntAttr(k)}}});
  }
  // NonZero: output sizes from the data (selected on the GPU, the count
  // read back); -0.0 is zero and NaN is not; many CUB tiles in the large one.
  cases->push_back({"NonZero_float_signed_zero_nan", "NonZero",
                    {{DT_FLOAT, Shape({2, 4}),
                      std::vector<double>{0, -0.0, 1.5, std::nan(""), -2, 0, 0, 3}}}});
  for (DataType t : {DT_INT32, DT_INT8, DT_UINT8, DT_FLOAT16, DT_BFLOAT16, DT_DOUBLE,
                     DT_INT64}) {
    const bool is_unsigned = t == DT_UINT8;  // 0 to 6
    cases->push_back({"NonZero_rank3_" + DtypeSuffix(t), "NonZero",
                      {{t, Shape({3, 5, 4}), is_unsigned ? Range::kPositive : Range::kSmallInts}}});
  }
  cases->push_back({"NonZero_bool_rank1", "NonZero", {{DT_BOOL, Shape({37}), Range::kBool}}});
  cases->push_back({"NonZero_large_int32", "NonZero",
                    {{DT_INT32, Shape({64, 257}), Range::kSmallInts}}});
  cases->push_back({"NonZero_scalar", "NonZero", {{DT_FLOAT, Shape(), std::vector<double>{3}}}});
  cases->push_back({"NonZero_empty", "NonZero", {{DT_FLOAT, Shape({2, 0})}}});
  cases->push_back({"NonZero_none", "NonZero",
                    {{DT_INT64, Shape({3, 2}), std::vector<double>(6, 0)}}});
  // Unique: every output (y, first occurrences, each element's group,
  // counts), ascending and by first occurrence; -0.0 equals 0.0, NaNs are
  // one group after every number; a rank-1 input along its axis too.
  const std::vector<double> uniq = {2, -0.0, std::nan(""), 0, -1, 2, std::nan(""), 7, -1, 0};
  cases->push_back({"Unique_float_zeros_nans", "Unique", {{DT_FLOAT, Shape({2, 5}), uniq}}});
  cases->push_back({"Unique_unsorted_float", "Unique", {{DT_FLOAT, Shape({10}), uniq}},
                    {{"sorted", BoolAttr(false)}}});
  for (DataType t : {DT_INT32, DT_INT64, DT_INT8, DT_FLOAT16, DT_BFLOAT16, DT_DOUBLE}) {
    cases->push_back({"Unique_" + DtypeSuffix(t), "Unique",
                      {{t, Shape({4, 33}), Range::kSmallInts}}});
    cases->push_back({"Unique_unsorted_" + DtypeSuffix(t), "Unique",
                      {{t, Shape({3, 7, 5}), Range::kSmallInts}},
                      {{"sorted", BoolAttr(false)}}});
  }
  cases->push_back({"Unique_uint8", "Unique", {{DT_UINT8, Shape({50}), Range::kPositive}}});
  cases->push_back({"Unique_bool", "Unique", {{DT_BOOL, Shape({3, 4}), Range::kBool}}});
  cases->push_back({"Unique_axis0_rank1", "Unique", {{DT_INT32, Shape({40}), Range::kSmallInts}},
                    {{"flatten", BoolAttr(false)}, {"axis", IntAttr(0)}}});
  cases->push_back({"Unique_large_int64", "Unique", {{DT_INT64, Shape({5000}), Range::kWide}}});
  cases->push_back({"Unique_empty", "Unique", {{DT_FLOAT, Shape({0, 3})}}});
  // NonMaxSuppression: boxes [B, N, 4], scores [B, C, N]; the count and the
  // thresholds are host inputs (an empty one takes its default). Over 64
  // candidates a segment crosses the GPU kernel's tiles; kHalves scores tie.
  auto nms = [&](std::string name, int64_t b, int64_t c, int64_t n, Range scores,
                 std::vector<double> max_out, std::vector<double> iou,
                 std::vector<double> threshold, int64_t center) {
    cases->push_back({"NonMaxSuppression_" + name, "NonMaxSuppression",
                      {{DT_FLOAT, Shape({b, n, 4}), center ? Range::kPositive : Range::kSigned},
                       {DT_FLOAT, Shape({b, c, n}), scores},
                       {DT_INT64, Shape({static_cast<int64_t>(max_out.size())}), max_out},
                       {DT_FLOAT, Shape({static_cast<int64_t>(iou.size())}), iou},
                       {DT_FLOAT, Shape({static_cast<int64_t>(threshold.size())}), threshold}},
                      {{"center_point_box", IntAttr(center)}}});
  };
  nms("corners", 2, 3, 50, Range::kSigned, {10}, {0.3}, {0.0}, 0);
  nms("center_two_tiles", 1, 2, 150, Range::kSigned, {1000}, {0.5}, {}, 1);
  nms("tied_scores", 2, 2, 90, Range::kHalves, {1000}, {0.1}, {-1.5}, 0);
  nms("many_boxes", 1, 1, 700, Range::kSigned, {1000}, {0.6}, {-1}, 0);
  // The count reached in the second tile (64 kept of the first, then 6).
  nms("max_in_second_tile", 1, 2, 150, Range::kSigned, {70}, {0.95}, {}, 0);
  nms("defaults_keep_none", 1, 2, 20, Range::kSigned, {}, {}, {}, 0);
  // NaN scores are never kept; -0.0 ties with 0.0 (index order); a box with
  // a NaN corner goes where std::min / std::max put it on both devices.
  const double nan = std::nan("");
  cases->push_back({"NonMaxSuppression_nan_and_signed_zero", "NonMaxSuppression",
                    {{DT_FLOAT, Shape({1, 8, 4}),
                      std::vector<double>{0, 0, 1, 1,    0, 0, 1, 1.1,  nan, 0, 1, 1,
                                          0.5, 0.5, 2, 2, 0, nan, 1, 1,  3, 3, 4, 4,
                                          0.1, 0, 1, 1,  3, 3, 4.2, 4}},
                     {DT_FLOAT, Shape({1, 1, 8}),
                      std::vector<double>{0.5, -0.0, nan, 0.0, 0.9, 0.5, nan, 0.1}},
                     {DT_INT64, Shape({1}), std::vector<double>{100}},
                     {DT_FLOAT, Shape({1}), std::vector<double>{0.3}},
                     {DT_FLOAT, Shape({0}), std::vector<double>{}}},
                    {{"center_point_box", IntAttr(0)}}});
  nms("none_above_threshold", 1, 2, 20, Range::kSigned, {5}, {0.5}, {3}, 0);
  const std::vector<double> cond = {1, 1, 0, 1, 0, 0, 1};
  cases->push_back({"Compress_axis1", "Compress",
                    {{DT_FLOAT, Shape({3, 7, 2})}, {DT_BOOL, Shape({7}), cond}},
                    {{"flatten", BoolAttr(false)}, {"axis", IntAttr(1)}}});
  cases->push_back({"Compress_flatten_short_condition_int64", "Compress",
                    {{DT_INT64, Shape({3, 4})}, {DT_BOOL, Shape({7}), cond}}});
  cases->push_back({"Compress_none_kept_bool", "Compress",
                    {{DT_BOOL, Shape({2, 3}), Range::kBool},
                     {DT_BOOL, Shape({2}), std::vector<double>{0, 0}}},
                    {{"flatten", BoolAttr(false)}}});
  cases->push_back({"ReverseSequence_time_major", "ReverseSequence",
                    {{DT_FLOAT, Shape({5, 4, 3})},
                     {DT_INT64, Shape({4}), std::vector<double>{5, 0, 1, 3}}}});
  cases->push_back({"ReverseSequence_batch_major_int8", "ReverseSequence",
                    {{DT_INT8, Shape({3, 6})},
                     {DT_INT64, Shape({3}), std::vector<double>{2, 6, 4}}},
                    {{"batch_axis", IntAttr(0)}, {"time_axis", IntAttr(1)}}});
  const struct { const char* window; DataType t; bool periodic; int64_t size; } windows[] = {
      {"hann", DT_FLOAT, true, 10},      {"hamming", DT_DOUBLE, false, 9},
      {"blackman", DT_FLOAT16, true, 16}, {"hann", DT_BFLOAT16, false, 1}};
  for (const auto& w : windows) {
    cases->push_back({absl::StrCat("Window_", w.window, "_", DtypeSuffix(w.t),
                                   w.periodic ? "_periodic" : "_symmetric"),
                      "Window", {{DT_INT64, Shape(), std::vector<double>{double(w.size)}}},
                      {{"T", TypeAttr(w.t)}, {"window", StringAttr(w.window)},
                       {"periodic", BoolAttr(w.periodic)}}});
  }
  // DFT: dft_length (0: the input's length) and axis are fixed inputs.
  const struct {
    const char* name; DataType t; Shape x; int64_t n, axis; bool inverse, onesided;
  } dfts[] = {
      {"real_axis1", DT_FLOAT, Shape({2, 8, 1}), 8, 1, false, false},
      {"complex_inverse_double", DT_DOUBLE, Shape({3, 6, 2}), 0, -2, true, false},
      {"onesided_padded", DT_FLOAT, Shape({2, 5, 1}), 8, 1, false, true},
      {"irfft", DT_FLOAT, Shape({2, 5, 2}), 0, 1, true, true},
      {"irfft_odd_truncated", DT_FLOAT, Shape({4, 2}), 5, 0, true, true},
      {"axis0_inner_float16", DT_FLOAT16, Shape({6, 3, 2}), 4, 0, false, false},
  };
  for (const auto& d : dfts) {
    cases->push_back({absl::StrCat("DFT_", d.name), "DFT",
                      {{d.t, d.x}, {DT_INT64, Shape(), std::vector<double>{double(d.n)}},
                       {DT_INT64, Shape(), std::vector<double>{double(d.axis)}}},
                      {{"inverse", BoolAttr(d.inverse)}, {"onesided", BoolAttr(d.onesided)}},
                      false, 10});
  }
  cases->push_back({"STFT_window_onesided", "STFT",
                    {{DT_FLOAT, Shape({2, 16, 1})}, {DT_INT64, Shape(), std::vector<double>{4}},
                     {DT_FLOAT, Shape({8}), Range::kPositive},
                     {DT_INT64, Shape(), std::vector<double>{8}}},
                    {}, false, 10});
  cases->push_back({"STFT_complex_no_window_double", "STFT",
                    {{DT_DOUBLE, Shape({1, 10, 2})}, {DT_INT64, Shape(), std::vector<double>{3}},
                     {DT_DOUBLE, Shape({0})},
                     {DT_INT64, Shape(), std::vector<double>{4}}},
                    {{"onesided", BoolAttr(false)}}, false, 10});
  // Einsum: contractions, transposes, diagonals, broadcast ellipses.
  const struct { const char* name; const char* eq; DataType t; std::vector<Shape> shapes; } einsums[] = {
      {"matmul", "ij,jk->ik", DT_FLOAT, {Shape({3, 5}), Shape({5, 4})}},
      {"batched_double", "bij,bjk->bik", DT_DOUBLE, {Shape({2, 3, 4}), Shape({2, 4, 2})}},
      {"transpose_implicit", "ji", DT_FLOAT16, {Shape({3, 4})}},
      {"diagonal", "ii->i", DT_FLOAT, {Shape({4, 4})}},
      {"trace_int32", "ii", DT_INT32, {Shape({5, 5})}},
      {"sum_all", "ijk->", DT_FLOAT, {Shape({3, 4, 5})}},
      {"ellipsis_broadcast", "...ij,...jk->...ik", DT_FLOAT,
       {Shape({2, 1, 3, 4}), Shape({5, 4, 2})}},
      {"outer_int8", "i,j->ij", DT_INT8, {Shape({4}), Shape({6})}},
      {"chain_int64", "ij,jk,kl->il", DT_INT64, {Shape({2, 3}), Shape({3, 4}), Shape({4, 2})}},
      {"bilinear_bfloat16", "bn,anm,bm->ba", DT_BFLOAT16,
       {Shape({2, 3}), Shape({4, 3, 5}), Shape({2, 5})}},
  };
  for (const auto& e : einsums) {
    std::vector<InputSpec> inputs;
    for (const Shape& shape : e.shapes) inputs.push_back({e.t, shape});
    cases->push_back({absl::StrCat("Einsum_", e.name), "Einsum", inputs,
                      {{"equation", StringAttr(e.eq)},
                       {"N", IntAttr(static_cast<int64_t>(e.shapes.size()))}},
                      false, 10});
  }
  for (DataType t : {DT_FLOAT, DT_INT32, DT_DOUBLE}) {
    cases->push_back({"MelWeightMatrix_" + DtypeSuffix(t), "MelWeightMatrix",
                      {{DT_INT64, Shape(), std::vector<double>{8}},
                       {DT_INT64, Shape(), std::vector<double>{16}},
                       {DT_INT64, Shape(), std::vector<double>{8192}},
                       {DT_FLOAT, Shape(), std::vector<double>{0}},
                       {DT_FLOAT, Shape(), std::vector<double>{4096}}},
                      {{"T", TypeAttr(t)}}});
  }
  // 130 filters: two launches of kMelChunk and 2 (MelEdges).
  cases->push_back({"MelWeightMatrix_two_chunks", "MelWeightMatrix",
                    {{DT_INT64, Shape(), std::vector<double>{130}},
                     {DT_INT64, Shape(), std::vector<double>{2048}},
                     {DT_INT64, Shape(), std::vector<double>{16000}},
                     {DT_FLOAT, Shape(), std::vector<double>{20}},
                     {DT_FLOAT, Shape(), std::vector<double>{7600}}},
                    {{"T", TypeAttr(DT_FLOAT)}}});
  // TensorScatter: write_indices a fixed input; circular writes wrap.
  cases->push_back({"TensorScatter_linear", "TensorScatter",
                    {{DT_FLOAT, Shape({2, 6, 3})}, {DT_FLOAT, Shape({2, 2, 3})},
                     {DT_INT64, Shape({2}), std::vector<double>{1, 4}}}});
  cases->push_back({"TensorScatter_circular_int32", "TensorScatter",
                    {{DT_INT32, Shape({2, 2, 5, 4})}, {DT_INT32, Shape({2, 2, 3, 4})},
                     {DT_INT64, Shape({2}), std::vector<double>{3, -1}}},
                    {{"mode", StringAttr("circular")}, {"axis", IntAttr(2)}}});
  cases->push_back({"TensorScatter_full_length_float16", "TensorScatter",
                    {{DT_FLOAT16, Shape({1, 4, 2})}, {DT_FLOAT16, Shape({1, 4, 2})},
                     {DT_INT64, Shape({1}), std::vector<double>{2}}},
                    {{"mode", StringAttr("circular")}, {"axis", IntAttr(1)}}});
  for (bool training : {false, true}) {  // training with ratio 0 is identity
    cases->push_back({training ? "Dropout_training_ratio0" : "Dropout_inference", "Dropout",
                      {{DT_FLOAT, Shape({3, 5})},
                       {DT_FLOAT, Shape(), std::vector<double>{training ? 0.0 : 0.5}},
                       {DT_BOOL, Shape(), std::vector<double>{training ? 1.0 : 0.0}}}});
  }
}

// Recurrent (RNN, GRU, LSTM): both directions, ragged sequence lengths (a
// zero-length entry included), clipping, peepholes, GRU's two reset forms.
void AddRecurrentGpuCases(std::vector<Case>* cases) {
  const int64_t s = 5, b = 3, in = 4, h = 6;
  struct Variant {
    const char* name;
    const char* cell;
    int64_t gates;
    const char* direction;
    Attrs extra;
  };
  const std::vector<Variant> variants = {
      {"rnn_forward", "rnn", 1, "forward", {}},
      {"rnn_reverse_relu", "rnn", 1, "reverse",
       {{"activations", StringAttr("Relu")}}},
      {"gru_bidirectional", "gru", 3, "bidirectional", {}},
      {"gru_linear_before_reset_clip", "gru", 3, "forward",
       {{"linear_before_reset", BoolAttr(true)}, {"clip", FloatAttr(0.5f)}}},
      {"lstm_bidirectional", "lstm", 4, "bidirectional", {}},
      {"lstm_input_forget_hardsigmoid", "lstm", 4, "reverse",
       {{"input_forget", BoolAttr(true)},
        {"activations", StringAttr("HardSigmoid,Tanh,Softsign")}}},
  };
  for (const Variant& v : variants) {
    for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16}) {
      if (t != DT_FLOAT && std::string(v.name) != "lstm_bidirectional") continue;
      const int64_t d = std::string(v.direction) == "bidirectional" ? 2 : 1;
      const int64_t gh = v.gates * h;
      Attrs attrs = v.extra;
      attrs["cell"] = StringAttr(v.cell);
      attrs["direction"] = StringAttr(v.direction);
      cases->push_back({absl::StrCat("Recurrent_", v.name, "_", DtypeSuffix(t)),
                        "Recurrent",
                        {{t, Shape({s, b, in})},
                         {t, Shape({d, gh, in})},
                         {t, Shape({d, gh, h})},
                         {t, Shape({d, 2 * gh})},
                         {DT_INT32, Shape({b}), std::vector<double>{5, 3, 0}},
                         {t, Shape({d, b, h})},
                         {t, Shape({d, b, h})},
                         {t, Shape({d, 3 * h})}},
                        attrs});
    }
  }
}

// LinearAttention: the four update rules, grouped query heads, decay per
// head and per key channel, beta shared and per head.
void AddLinearAttentionGpuCases(std::vector<Case>* cases) {
  const int64_t b = 2, t = 5, hq = 4, hkv = 2, dk = 3, dv = 4;
  struct Variant {
    const char* rule;
    int64_t decay_width;  // per kv head
    int64_t beta_width;
    DataType dtype;
  };
  const std::vector<Variant> variants = {
      {"linear", 1, 1, DT_FLOAT},       {"gated", 1, 1, DT_FLOAT},
      {"gated", dk, 1, DT_FLOAT16},     {"delta", 1, hkv, DT_FLOAT},
      {"gated_delta", dk, 1, DT_DOUBLE}, {"gated_delta", 1, hkv, DT_BFLOAT16}};
  for (const Variant& v : variants) {
    const DataType ty = v.dtype;
    cases->push_back(
        {absl::StrCat("LinearAttention_", v.rule, "_decay", v.decay_width,
                      "_beta", v.beta_width, "_", DtypeSuffix(ty)),
         "LinearAttention",
         {{ty, Shape({b, t, hq * dk})},
          {ty, Shape({b, t, hkv * dk})},
          {ty, Shape({b, t, hkv * dv})},
          {ty, Shape({b, hkv, dk, dv})},
          {ty, Shape({b, t, hkv * v.decay_width})},
          {ty, Shape({b, t, v.beta_width})}},
         {{"T", TypeAttr(ty)},
          {"q_num_heads", IntAttr(hq)},
          {"kv_num_heads", IntAttr(hkv)},
          {"update_rule", StringAttr(v.rule)}},
         // The state is float32 on both devices (as in ONNX's reference),
         // summed in another order: float64 outputs get float32's
         // tolerance.
         false, ty == DT_DOUBLE ? 1e7 : 10});
  }
}

// Resize, Pad, PoolND, MaxPoolWithIndices, GridSample, ConvND,
// ConvTranspose, Col2Im, AffineGrid, MaxUnpool and RoiAlign: their modes, coordinate transforms and
// paddings, and the dtypes the CPU registers.
// Resize's roi, scales and sizes, Pad's pads, value and axes, Col2Im's shapes,
// AffineGrid's size, MaxUnpool's indices and output_shape and RoiAlign's
// batch_indices are fixed host inputs (empty when absent).
void AddVisionGpuCases(std::vector<Case>* cases) {
  using V = std::vector<double>;
  const InputSpec no_roi(DT_FLOAT, Shape({0}), Range::kSigned);
  const InputSpec no_scales(DT_FLOAT, Shape({0}), Range::kSigned);
  const InputSpec no_sizes(DT_INT64, Shape({0}), Range::kSigned);
  auto scales = [](V v) { return InputSpec(DT_FLOAT, Shape({static_cast<int64_t>(v.size())}), v); };
  auto sizes = [](V v) { return InputSpec(DT_INT64, Shape({static_cast<int64_t>(v.size())}), v); };
  struct ResizeCase {
    std::string name;
    DataType dtype;
    const char* mode;
    const char* transform;
    InputSpec roi, scales, sizes;
    Attrs extra;
  };
  const std::vector<ResizeCase> resize = {
      {"nearest_up", DT_FLOAT, "nearest", "half_pixel", no_roi, scales({1, 1, 2, 3}), no_sizes, {}},
      {"nearest_ceil_asymmetric_int32", DT_INT32, "nearest", "asymmetric", no_roi,
       scales({1, 1, 1.5, 0.6}), no_sizes, {{"nearest_mode", StringAttr("ceil")}}},
      {"nearest_prefer_ceil_int64", DT_INT64, "nearest", "align_corners", no_roi, no_scales,
       sizes({1, 2, 7, 3}), {{"nearest_mode", StringAttr("round_prefer_ceil")}}},
      {"nearest_floor_pytorch_bfloat16", DT_BFLOAT16, "nearest", "pytorch_half_pixel", no_roi,
       scales({1, 1, 2.5, 1}), no_sizes, {{"nearest_mode", StringAttr("floor")}}},
      {"linear_align_corners_float16", DT_FLOAT16, "linear", "align_corners", no_roi,
       no_scales, sizes({1, 2, 5, 7}), {}},
      {"linear_half_pixel_symmetric_axes", DT_FLOAT, "linear", "half_pixel_symmetric", no_roi,
       no_scales, sizes({6, 2}),
       {{"axes", IntListAttr({3, 2})}, {"keep_aspect_ratio_policy", StringAttr("not_larger")}}},
      {"linear_antialias_float64", DT_DOUBLE, "linear", "half_pixel", no_roi,
       scales({1, 1, 0.6, 0.3}), no_sizes, {{"antialias", BoolAttr(true)}}},
      {"cubic_antialias", DT_FLOAT, "cubic", "half_pixel", no_roi, scales({1, 1, 0.5, 0.7}),
       no_sizes, {{"antialias", BoolAttr(true)}}},
      {"cubic_exclude_outside_asymmetric", DT_FLOAT, "cubic", "asymmetric", no_roi,
       scales({1, 1, 1.7, 2}), no_sizes,
       {{"exclude_outside", BoolAttr(true)}, {"cubic_coeff_a", FloatAttr(-0.5f)}}},
      {"cubic_pytorch_int64", DT_INT64, "cubic", "pytorch_half_pixel", no_roi,
       scales({1, 1, 2, 0.5}), no_sizes, {}},
      {"linear_tf_crop_and_resize", DT_FLOAT, "linear", "tf_crop_and_resize",
       InputSpec(DT_FLOAT, Shape({4}), V{0.1, 0.6, 1.2, 0.9}), no_scales, sizes({4, 5}),
       {{"axes", IntListAttr({2, 3})}, {"extrapolation_value", FloatAttr(7.5f)}}},
  };
  for (const ResizeCase& r : resize) {
    Attrs attrs = r.extra;
    attrs["mode"] = StringAttr(r.mode);
    attrs["coordinate_transformation_mode"] = StringAttr(r.transform);
    cases->push_back({"Resize_" + r.name, "Resize",
                      {{r.dtype, Shape({1, 2, 4, 5})}, r.roi, r.scales, r.sizes}, attrs});
  }
  // Pad: x [2, 3, 4]; pads [begins..., ends...] (negative ones crop).
  const InputSpec no_axes(DT_INT64, Shape({0}), Range::kSigned);
  auto pads = [](V v) { return InputSpec(DT_INT64, Shape({static_cast<int64_t>(v.size())}), v); };
  cases->push_back({"Pad_constant_value", "Pad",
                    {{DT_FLOAT, Shape({2, 3, 4})}, pads({1, 0, 2, 0, 2, -1}),
                     {DT_FLOAT, Shape(), V{1.5}}, no_axes}});
  cases->push_back({"Pad_constant_no_value_float64", "Pad",
                    {{DT_DOUBLE, Shape({2, 3, 4})}, pads({0, 1, 1, 3}),
                     {DT_DOUBLE, Shape({0})}, {DT_INT64, Shape({2}), V{1, -1}}}});
  struct PadCase {
    const char* mode;
    DataType dtype;
  };
  for (PadCase m : {PadCase{"reflect", DT_FLOAT16}, PadCase{"reflect", DT_INT32},
                    PadCase{"edge", DT_BFLOAT16}, PadCase{"edge", DT_INT8},
                    PadCase{"wrap", DT_INT64}, PadCase{"wrap", DT_UINT8},
                    PadCase{"edge", DT_BOOL}}) {
    const Range range = m.dtype == DT_BOOL ? Range::kBool
                        : m.dtype == DT_UINT8 ? Range::kPositive
                                              : Range::kSigned;
    cases->push_back({absl::StrCat("Pad_", m.mode, "_", DtypeSuffix(m.dtype)), "Pad",
                      {{m.dtype, Shape({2, 3, 4}), range}, pads({0, 2, 3, 1, -1, 5}),
                       {m.dtype, Shape({0})}, no_axes},
                      {{"mode", StringAttr(m.mode)}}});
  }
  // PoolND over 1, 2 and 3 spatial dims.
  auto pool = [](const char* mode, std::vector<int64_t> k, std::vector<int64_t> s,
                 std::vector<int64_t> p, std::vector<int64_t> d, bool ceil) {
    return Attrs{{"mode", StringAttr(mode)}, {"kernel_shape", IntListAttr(k)},
                 {"strides", IntListAttr(s)}, {"pads", IntListAttr(p)},
                 {"dilations", IntListAttr(d)}, {"ceil_mode", BoolAttr(ceil)}};
  };
  cases->push_back({"PoolND_max_dilated_ceil", "PoolND", {{DT_FLOAT, Shape({2, 3, 7, 8})}},
                    pool("max", {2, 3}, {2, 2}, {1, 0, 1, 1}, {2, 1}, true)});
  for (DataType t : {DT_INT8, DT_UINT8, DT_INT32, DT_INT64, DT_BFLOAT16}) {
    cases->push_back({"PoolND_max_" + DtypeSuffix(t), "PoolND",
                      {{t, Shape({1, 2, 6, 5}), t == DT_UINT8 ? Range::kPositive : Range::kWide}},
                      pool("max", {3, 2}, {1, 2}, {1, 1, 1, 0}, {1, 1}, false)});
  }
  Attrs avg3 = pool("avg", {2, 3, 2}, {2, 1, 2}, {1, 1, 0, 0, 1, 1}, {1, 1, 1}, true);
  avg3["count_include_pad"] = BoolAttr(true);
  cases->push_back({"PoolND_avg_3d_include_pad_float16", "PoolND",
                    {{DT_FLOAT16, Shape({1, 2, 5, 4, 5})}}, avg3});
  cases->push_back({"PoolND_avg_1d_float64", "PoolND", {{DT_DOUBLE, Shape({2, 3, 9})}},
                    pool("avg", {3}, {2}, {2, 1}, {1}, false)});
  cases->push_back({"PoolND_avg_int32", "PoolND", {{DT_INT32, Shape({1, 2, 6, 6})}, },
                    pool("avg", {2, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false)});
  cases->push_back({"PoolND_lp2", "PoolND", {{DT_FLOAT, Shape({1, 3, 6, 6})}},
                    pool("lp", {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false)});
  Attrs lp3 = pool("lp", {2, 2}, {2, 1}, {0, 0, 0, 0}, {1, 2}, false);
  lp3["p"] = IntAttr(3);
  cases->push_back({"PoolND_lp3_float64", "PoolND", {{DT_DOUBLE, Shape({1, 2, 5, 6})}}, lp3});
  for (int order : {0, 1}) {
    Attrs a = pool("max", {2, 3}, {2, 1}, {1, 1, 0, 1}, {1, 1}, true);
    a.erase("mode");
    a["storage_order"] = IntAttr(order);
    cases->push_back({absl::StrCat("MaxPoolWithIndices_order", order), "MaxPoolWithIndices",
                      {{DT_FLOAT, Shape({2, 2, 5, 6})}}, a});
  }
  // GridSample: grid values in [-2, 2] reach outside the input.
  struct GridCase {
    const char* mode;
    const char* padding;
    bool align;
    DataType dtype;
    bool three_d;
  };
  for (GridCase g : {GridCase{"linear", "zeros", false, DT_FLOAT, false},
                     GridCase{"nearest", "border", true, DT_FLOAT16, false},
                     GridCase{"cubic", "reflection", false, DT_DOUBLE, false},
                     GridCase{"cubic", "border", true, DT_FLOAT, false},
                     GridCase{"nearest", "reflection", false, DT_FLOAT, true},
                     GridCase{"linear", "reflection", true, DT_BFLOAT16, true},
                     GridCase{"linear", "border", false, DT_FLOAT, true}}) {
    const Shape x = g.three_d ? Shape({2, 2, 3, 4, 5}) : Shape({2, 3, 4, 5});
    const Shape grid = g.three_d ? Shape({2, 2, 3, 2, 3}) : Shape({2, 3, 6, 2});
    cases->push_back({absl::StrCat("GridSample_", g.mode, "_", g.padding, g.align ? "_align" : "",
                                   g.three_d ? "_3d_" : "_", DtypeSuffix(g.dtype)),
                      "GridSample", {{g.dtype, x}, {g.dtype, grid}},
                      {{"mode", StringAttr(g.mode)}, {"padding_mode", StringAttr(g.padding)},
                       {"align_corners", BoolAttr(g.align)}}});
  }
  // ConvND, ConvTranspose and Col2Im (float32 only, as on the CPU); long
  // float sums in another order than the CPU's GEMM.
  auto window = [](std::vector<int64_t> s, std::vector<int64_t> p, std::vector<int64_t> d) {
    return Attrs{{"strides", IntListAttr(s)}, {"pads", IntListAttr(p)},
                 {"dilations", IntListAttr(d)}};
  };
  Attrs conv2 = window({2, 1}, {1, 0, 1, 1}, {1, 2});
  conv2["group"] = IntAttr(2);
  cases->push_back({"ConvND_2d_group2", "ConvND",
                    {{DT_FLOAT, Shape({2, 4, 6, 7})}, {DT_FLOAT, Shape({6, 2, 3, 2})}},
                    conv2, false, 10});
  cases->push_back({"ConvND_3d", "ConvND",
                    {{DT_FLOAT, Shape({1, 2, 4, 5, 4})}, {DT_FLOAT, Shape({3, 2, 2, 3, 2})}},
                    window({1, 1, 1}, {0, 1, 0, 0, 1, 1}, {1, 1, 1}), false, 10});
  cases->push_back({"ConvND_1d_strided_dilated", "ConvND",
                    {{DT_FLOAT, Shape({2, 3, 10})}, {DT_FLOAT, Shape({4, 3, 3})}},
                    window({3}, {2, 1}, {2}), false, 10});
  Attrs ct2 = window({2, 3}, {1, 0, 0, 1}, {1, 1});
  ct2["group"] = IntAttr(2);
  ct2["output_padding"] = IntListAttr({1, 0});
  cases->push_back({"ConvTranspose_2d_group2", "ConvTranspose",
                    {{DT_FLOAT, Shape({2, 4, 3, 4})}, {DT_FLOAT, Shape({4, 3, 3, 3})}},
                    ct2, false, 10});
  Attrs ct1 = window({2}, {-1, 1}, {2});
  ct1["output_padding"] = IntListAttr({1});
  cases->push_back({"ConvTranspose_1d_negative_pad", "ConvTranspose",
                    {{DT_FLOAT, Shape({1, 2, 5})}, {DT_FLOAT, Shape({2, 3, 4})}}, ct1, false, 10});
  cases->push_back({"Col2Im_defaults", "Col2Im",
                    {{DT_FLOAT, Shape({1, 12, 16})}, {DT_INT64, Shape({2}), V{5, 6}},
                     {DT_INT64, Shape({2}), V{2, 3}}}});
  cases->push_back({"Col2Im_strided_padded_dilated", "Col2Im",
                    {{DT_FLOAT, Shape({2, 12, 12})}, {DT_INT64, Shape({2}), V{5, 5}},
                     {DT_INT64, Shape({2}), V{2, 2}}},
                    window({2, 1}, {1, 0, 1, 1}, {1, 2})});
  // AffineGrid: theta [N, r, r + 1], size [N, C, D1..] a host input.
  struct AffineCase {
    DataType dtype;
    bool align;
    V size;
  };
  for (const AffineCase& a : {AffineCase{DT_FLOAT, false, V{2, 3, 4, 5}},
                              AffineCase{DT_FLOAT16, true, V{1, 1, 3, 1}},
                              AffineCase{DT_DOUBLE, true, V{2, 1, 3, 4, 2}},
                              AffineCase{DT_BFLOAT16, false, V{1, 2, 2, 3, 4}}}) {
    const int64_t r = static_cast<int64_t>(a.size.size()) - 2;
    cases->push_back({absl::StrCat("AffineGrid_", r, "d", a.align ? "_align_" : "_",
                                   DtypeSuffix(a.dtype)),
                      "AffineGrid",
                      {{a.dtype, Shape({static_cast<int64_t>(a.size[0]), r, r + 1})},
                       {DT_INT64, Shape({r + 2}), a.size}},
                      {{"align_corners", BoolAttr(a.align)}}});
  }
  // MaxUnpool: flat output indices (5 twice: the later input wins).
  const Attrs unpool = {{"kernel_shape", IntListAttr({2, 2})},
                        {"strides", IntListAttr({2, 2})},
                        {"pads", IntListAttr({0, 0, 0, 0})}};
  cases->push_back({"MaxUnpool_repeated_index", "MaxUnpool",
                    {{DT_FLOAT, Shape({1, 2, 2, 2})},
                     {DT_INT64, Shape({1, 2, 2, 2}), V{0, 5, 10, 15, 16, 5, 31, 20}},
                     {DT_INT64, Shape({0})}},
                    unpool});
  cases->push_back({"MaxUnpool_output_shape_int32", "MaxUnpool",
                    {{DT_INT32, Shape({1, 1, 2, 2})},
                     {DT_INT64, Shape({1, 1, 2, 2}), V{14, 0, 7, 3}},
                     {DT_INT64, Shape({4}), V{1, 1, 3, 5}}},
                    unpool});
  // RoiAlign: rois [x1, y1, x2, y2] in input pixels, some past the edges.
  const InputSpec batch(DT_INT64, Shape({3}), V{0, 1, 1});
  const V rois = {0.5, 1.0, 6.0, 5.0, -1.0, 0.0, 7.5, 6.5, 2.0, 2.0, 3.0, 2.5};
  cases->push_back({"RoiAlign_avg_half_pixel", "RoiAlign",
                    {{DT_FLOAT, Shape({2, 3, 6, 8})}, {DT_FLOAT, Shape({3, 4}), rois}, batch},
                    {{"output_height", IntAttr(3)}, {"output_width", IntAttr(2)},
                     {"sampling_ratio", IntAttr(2)}}});
  cases->push_back({"RoiAlign_max_adaptive_float64", "RoiAlign",
                    {{DT_DOUBLE, Shape({2, 3, 6, 8})}, {DT_DOUBLE, Shape({3, 4}), rois}, batch},
                    {{"mode", StringAttr("max")},
                     {"coordinate_transformation_mode", StringAttr("output_half_pixel")},
                     {"output_height", IntAttr(2)}, {"output_width", IntAttr(3)},
                     {"sampling_ratio", IntAttr(0)}, {"spatial_scale", FloatAttr(0.5f)}}});
  cases->push_back({"RoiAlign_avg_adaptive_float16", "RoiAlign",
                    {{DT_FLOAT16, Shape({2, 2, 6, 8})}, {DT_FLOAT16, Shape({3, 4}), rois}, batch},
                    {{"output_height", IntAttr(2)}, {"output_width", IntAttr(2)},
                     {"sampling_ratio", IntAttr(0)}}});
}


// Elementwise dtypes on the GPU: Cast between the dtypes the CPU Cast takes
// (int16 to uint64, the float8 types, float4, int4 / uint4 / int2 / uint2),
// saturate on and off and E8M0's round_mode; the binary ops on int16,
// uint16, uint32 and uint64; and the bitwise ops (BitShift, BitwiseAnd /
// Or / Xor / Not, BitCast). Fixed inputs hold the edges: ties, values beyond
// each format's range, infinities, NaN, shifts of the type's width or more.
void AddElementwiseDtypesGpuCases(std::vector<Case>* cases) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // 30 values: zeros, ties of the float8 grids, subnormals, the formats'
  // maxima and beyond, infinities and NaN.
  const std::vector<double> edges = {
      0.0,    -0.0,   0.3,     -1.75,  3.0,     6.5,    17.0,    -100.0,
      239.0,  241.0,  300.0,   448.0,  464.0,   480.0,  -1000.0, 57344.0,
      61440.0, 1e6,   -1e9,    1e-3,   0.00390625, -0.0009765625, 2e-9,
      3e38,   inf,    -inf,    nan,    5.0,     -7.5,   70000.0};
  const std::vector<DataType> small_floats = {
      DT_FLOAT8_E4M3FN, DT_FLOAT8_E4M3FNUZ, DT_FLOAT8_E5M2,
      DT_FLOAT8_E5M2FNUZ, DT_FLOAT8_E8M0, DT_FLOAT4_E2M1};
  const std::vector<DataType> sub_byte_ints = {DT_INT4, DT_UINT4, DT_INT2,
                                               DT_UINT2};
  auto cast = [&](DataType src, DataType dst, InputSpec in, Attrs extra = {},
                  const std::string& tag = "") {
    Attrs attrs = {{"SrcT", TypeAttr(src)}, {"DstT", TypeAttr(dst)}};
    for (const auto& [k, v] : extra) attrs[k] = v;
    cases->push_back({absl::StrCat("Cast_", DataTypeName(src), "_to_",
                                   DataTypeName(dst), tag),
                      "Cast", {std::move(in)}, attrs});
  };
  const Shape edge_shape({static_cast<int64_t>(edges.size())});
  for (DataType f : small_floats) {
    for (DataType src : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16}) {
      cast(src, f, {src, edge_shape, edges});
    }
    cast(DT_FLOAT, f, {DT_FLOAT, edge_shape, edges},
         {{"saturate", BoolAttr(false)}}, "_no_saturate");
    cast(DT_FLOAT, f, {DT_FLOAT, Shape({6, 5}), Range::kWide}, {}, "_random");
    cast(DT_INT32, f, {DT_INT32, Shape({6, 5}), Range::kWide});
    cast(DT_UINT8, f, {DT_UINT8, Shape({6, 5}), Range::kPositive});
    for (DataType dst : {DT_FLOAT, DT_BFLOAT16, DT_INT32, DT_UINT8, DT_BOOL}) {
      cast(f, dst, {f, edge_shape, edges});
    }
  }
  for (const char* mode : {"up", "down", "nearest"}) {
    for (bool saturate : {true, false}) {
      cast(DT_FLOAT, DT_FLOAT8_E8M0, {DT_FLOAT, edge_shape, edges},
           {{"round_mode", StringAttr(mode)}, {"saturate", BoolAttr(saturate)}},
           absl::StrCat("_", mode, saturate ? "" : "_no_saturate"));
    }
  }
  cast(DT_FLOAT8_E4M3FN, DT_FLOAT8_E5M2, {DT_FLOAT8_E4M3FN, edge_shape, edges});
  cast(DT_FLOAT8_E5M2, DT_FLOAT8_E4M3FNUZ, {DT_FLOAT8_E5M2, edge_shape, edges},
       {{"saturate", BoolAttr(false)}}, "_no_saturate");
  cast(DT_FLOAT8_E8M0, DT_FLOAT4_E2M1, {DT_FLOAT8_E8M0, edge_shape, edges});
  cast(DT_FLOAT4_E2M1, DT_INT4, {DT_FLOAT4_E2M1, edge_shape, edges});
  for (DataType t : sub_byte_ints) {
    cast(DT_FLOAT, t, {DT_FLOAT, edge_shape, edges});
    cast(DT_DOUBLE, t, {DT_DOUBLE, Shape({6, 5}), Range::kWide});
    cast(DT_INT32, t, {DT_INT32, Shape({6, 5}), Range::kWide});
    cast(DT_UINT64, t, {DT_UINT64, Shape({6, 5}), Range::kPositive});
    for (DataType dst : {DT_FLOAT, DT_FLOAT16, DT_INT64, DT_UINT8, DT_BOOL,
                         DT_FLOAT8_E4M3FN}) {
      cast(t, dst, {t, Shape({6, 5}), Range::kWide});
    }
  }
  cast(DT_INT4, DT_UINT2, {DT_INT4, Shape({6, 5}), Range::kWide});
  // The wider integers: saturating from floats, wrapping between integers.
  const std::vector<double> big_unsigned = {0, 1, 255, 65535, 65536, 4294967295.0,
                                            4294967296.0, 9.3e18, 1.8e19, 12345};
  const Shape big_shape({static_cast<int64_t>(big_unsigned.size())});
  for (DataType t : {DT_INT16, DT_UINT16, DT_UINT32, DT_UINT64}) {
    const bool is_signed = t == DT_INT16;
    for (DataType src : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16}) {
      cast(src, t, {src, edge_shape, edges});
    }
    const Range r = is_signed ? Range::kWide : Range::kPositive;
    for (DataType dst : {DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_INT8, DT_INT64,
                         DT_UINT8, DT_BOOL}) {
      cast(t, dst, {t, Shape({6, 5}), r});
    }
    cast(DT_INT64, t, {DT_INT64, Shape({6, 5}), Range::kWide});
  }
  for (DataType dst : {DT_FLOAT, DT_DOUBLE, DT_INT16, DT_FLOAT8_E5M2}) {
    cast(DT_UINT64, dst, {DT_UINT64, big_shape, big_unsigned}, {}, "_big");
  }
  cast(DT_UINT32, DT_INT32,
       {DT_UINT32, Shape({7}),
        std::vector<double>{0, 1, 2147483647.0, 2147483648.0, 4294967295.0,
                            65536, 3}},
       {}, "_big");
  cast(DT_DOUBLE, DT_UINT64, {DT_DOUBLE, big_shape, big_unsigned}, {}, "_big");

  // Binary ops on the integer dtypes the GPU did not have.
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "FMod", "Pow",
                         "Maximum", "Minimum", "Equal", "Less", "Greater"}) {
    const std::string name = op;
    const bool divides = name == "Div" || name == "Mod" || name == "FMod";
    const bool pow = name == "Pow";
    cases->push_back({name + "_int16", op,
                      {{DT_INT16, Shape({3, 4}), pow ? Range::kPositive : Range::kWide},
                       {DT_INT16, Shape({4}),
                        divides ? Range::kAwayFromZero
                                : pow ? Range::kPositive : Range::kSigned}}});
    for (DataType t : {DT_UINT16, DT_UINT32, DT_UINT64}) {
      cases->push_back({name + "_" + DtypeSuffix(t), op,
                        {{t, Shape({3, 4}), Range::kPositive},
                         {t, Shape({3, 1}),
                          divides ? Range::kAboveOne : Range::kPositive}}});
    }
  }
  // uint64 beyond int64's range: division, comparisons, extremes.
  const std::vector<double> big_divisors = {1, 3, 9.3e18, 1.8e19, 7, 2,
                                            1.8e19, 4294967296.0, 5, 9.3e18};
  for (const char* op : {"Div", "Mod", "Maximum", "Minimum", "Less",
                         "Greater", "Equal", "Sub"}) {
    cases->push_back({absl::StrCat(op, "_uint64_beyond_int64"), op,
                      {{DT_UINT64, big_shape, big_unsigned},
                       {DT_UINT64, big_shape, big_divisors}}});
  }

  // Bitwise ops on every integer dtype.
  const std::vector<DataType> ints = {DT_INT8,   DT_INT16,  DT_INT32,
                                      DT_INT64,  DT_UINT8,  DT_UINT16,
                                      DT_UINT32, DT_UINT64};
  for (DataType t : ints) {
    const bool is_signed =
        t == DT_INT8 || t == DT_INT16 || t == DT_INT32 || t == DT_INT64;
    const Range r = is_signed ? Range::kWide : Range::kPositive;
    const std::string suffix = DtypeSuffix(t);
    for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
      cases->push_back({absl::StrCat(op, "_", suffix), op,
                        {{t, Shape({2, 3, 4}), r}, {t, Shape({3, 1}), r}}});
    }
    cases->push_back({"BitwiseNot_" + suffix, "BitwiseNot",
                      {{t, Shape({4, 5}), r}}});
    // Amounts up to and beyond the width; negative ones for signed types.
    std::vector<double> amounts = {0, 1, 3, 7, 8, 9, 15, 16, 31, 32, 63, 64, 100, 2};
    if (is_signed) amounts.insert(amounts.end(), {-1, -8});
    const Shape amount_shape({static_cast<int64_t>(amounts.size())});
    for (const char* dir : {"LEFT", "RIGHT"}) {
      cases->push_back({absl::StrCat("BitShift_", dir, "_", suffix), "BitShift",
                        {{t, Shape({3, amount_shape.dim(0)}), r},
                         {t, amount_shape, amounts}},
                        {{"direction", StringAttr(dir)}}});
    }
  }
  cases->push_back({"BitShift_RIGHT_int8_scalar", "BitShift",
                    {{DT_INT8, Shape({2, 5}), Range::kWide},
                     {DT_INT8, Shape(), std::vector<double>{2}}},
                    {{"direction", StringAttr("RIGHT")}}});
  const std::vector<std::pair<DataType, DataType>> bitcasts = {
      {DT_FLOAT, DT_INT32},   {DT_INT32, DT_FLOAT},    {DT_DOUBLE, DT_INT64},
      {DT_UINT64, DT_DOUBLE}, {DT_INT8, DT_UINT8},     {DT_UINT8, DT_BOOL},
      {DT_INT8, DT_BOOL},     {DT_BOOL, DT_UINT8},     {DT_UINT16, DT_INT16},
      {DT_FLOAT16, DT_BFLOAT16}, {DT_UINT32, DT_INT32},
      {DT_FLOAT8_E4M3FN, DT_UINT8}, {DT_UINT8, DT_FLOAT8_E5M2}};
  for (auto [src, dst] : bitcasts) {
    const bool is_unsigned = src == DT_UINT8 || src == DT_UINT16 ||
                             src == DT_UINT32 || src == DT_UINT64;
    cases->push_back(
        {absl::StrCat("BitCast_", DataTypeName(src), "_to_", DataTypeName(dst)),
         "BitCast",
         {{src, Shape({4, 5}),
           src == DT_BOOL ? Range::kBool
                          : is_unsigned ? Range::kPositive : Range::kWide}},
         {{"SrcT", TypeAttr(src)}, {"DstT", TypeAttr(dst)}}});
  }
}


// NHWC (data_format) convolutions and pools as the nhwc_layout pass makes
// them: the GPU's NHWC paths (cuDNN's NHWC descriptors, graph plans and
// 1x1 GEMM; the direct kernels where cuDNN does not run) against the CPU,
// which runs its NCHW kernels between permutations. Filters are
// [O, KH, KW, C/group].
void AddNhwcCases(std::vector<Case>* cases) {
  for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) {
    const std::string n = DataTypeName(t);
    const AttrValue nhwc = StringAttr("NHWC");
    cases->push_back({"Conv2D_nhwc_grouped_strided_dilated_b3_" + n, "Conv2D",
                      {{t, Shape({3, 9, 8, 4})}, {t, Shape({6, 3, 3, 2})}},
                      {{"strides", IntListAttr({2, 1})}, {"pads", IntListAttr({1, 2, 1, 2})},
                       {"dilations", IntListAttr({1, 2})}, {"group", IntAttr(2)},
                       {"data_format", nhwc}}});
    cases->push_back({"Conv2D_nhwc_asymmetric_pads_b1_" + n, "Conv2D",
                      {{t, Shape({1, 9, 8, 4})}, {t, Shape({6, 3, 3, 2})}},
                      {{"strides", IntListAttr({2, 1})}, {"pads", IntListAttr({1, 1, 0, 2})},
                       {"group", IntAttr(2)}, {"data_format", nhwc}}});
    cases->push_back({"Conv2D_nhwc_depthwise_b1_" + n, "Conv2D",
                      {{t, Shape({1, 10, 10, 16})}, {t, Shape({16, 3, 3, 1})}},
                      {{"pads", IntListAttr({1, 1, 1, 1})}, {"group", IntAttr(16)},
                       {"data_format", nhwc}}});
    cases->push_back({"Conv2D_nhwc_1x1_b3_" + n, "Conv2D",
                      {{t, Shape({3, 5, 6, 8})}, {t, Shape({12, 1, 1, 8})}},
                      {{"data_format", nhwc}}});
    cases->push_back({"FusedConv2D_nhwc_1x1_bias_relu_b1_" + n, "FusedConv2D",
                      {{t, Shape({1, 6, 6, 16})}, {t, Shape({8, 1, 1, 16})}, {t, Shape({8})}},
                      {{"activation", StringAttr("relu")}, {"data_format", nhwc}}});
    cases->push_back({"FusedConv2D_nhwc_residual_relu_b3_" + n, "FusedConv2D",
                      {{t, Shape({3, 7, 7, 3})}, {t, Shape({5, 3, 3, 3})}, {t, Shape({5})},
                       {t, Shape({3, 7, 7, 5})}},
                      {{"pads", IntListAttr({1, 1, 1, 1})}, {"activation", StringAttr("relu")},
                       {"data_format", nhwc}}});
    cases->push_back({"FusedConv2D_nhwc_residual_relu6_b3_" + n, "FusedConv2D",
                      {{t, Shape({3, 7, 7, 16})}, {t, Shape({8, 3, 3, 16})}, {t, Shape({8})},
                       {t, Shape({3, 7, 7, 8})}},
                      {{"pads", IntListAttr({1, 1, 1, 1})}, {"activation", StringAttr("relu6")},
                       {"data_format", nhwc}}});
    cases->push_back({"FusedConv2D_nhwc_strided_bias_b1_" + n, "FusedConv2D",
                      {{t, Shape({1, 9, 9, 8})}, {t, Shape({16, 3, 3, 8})}, {t, Shape({16})}},
                      {{"strides", IntListAttr({2, 2})}, {"pads", IntListAttr({1, 1, 1, 1})},
                       {"data_format", nhwc}}});
    cases->push_back({"FusedConv2D_nhwc_grouped_dilated_relu_b3_" + n, "FusedConv2D",
                      {{t, Shape({3, 11, 9, 8})}, {t, Shape({12, 3, 3, 2})}, {t, Shape({12})}},
                      {{"strides", IntListAttr({1, 2})}, {"pads", IntListAttr({2, 2, 2, 2})},
                       {"dilations", IntListAttr({2, 2})}, {"group", IntAttr(4)},
                       {"activation", StringAttr("relu")}, {"data_format", nhwc}}});
    cases->push_back({"MaxPool_nhwc_b3_" + n, "MaxPool", {{t, Shape({3, 7, 7, 5})}},
                      {{"kernel_shape", IntListAttr({3, 3})}, {"strides", IntListAttr({2, 2})},
                       {"pads", IntListAttr({1, 1, 1, 1})}, {"data_format", nhwc}}});
    cases->push_back({"AvgPool_nhwc_include_pad_b1_" + n, "AvgPool", {{t, Shape({1, 6, 6, 3})}},
                      {{"kernel_shape", IntListAttr({3, 3})}, {"pads", IntListAttr({1, 1, 1, 1})},
                       {"count_include_pad", BoolAttr(true)}, {"data_format", nhwc}}});
    cases->push_back({"AvgPool_nhwc_b3_" + n, "AvgPool", {{t, Shape({3, 5, 5, 2})}},
                      {{"kernel_shape", IntListAttr({2, 2})}, {"pads", IntListAttr({0, 0, 1, 1})},
                       {"data_format", nhwc}}});
  }
}

// FusedMatMul (made by the optimizer's matmul_bias_fusion): the GPU's one
// cuBLASLt call with its epilogue (kernels/cuda/cublaslt_matmul.h) against
// the CPU's Gemm with a per-tile epilogue, for every epilogue (bias, bias +
// Relu, bias + tanh Gelu, each with and without the residual) and dtype,
// batched x, a transposed weight (ONNX Gemm), TF32, and k = 0 (cuBLASLt
// refuses it; the cuBLAS fallback runs).
void AddFusedMatMulCases(std::vector<Case>* cases) {
  for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) {
    for (const char* act : {"none", "relu", "gelu_tanh"}) {
      for (bool residual : {false, true}) {
        std::vector<InputSpec> in = {
            {t, Shape({2, 8, 32})}, {t, Shape({32, 24})}, {t, Shape({24})}};
        if (residual) in.push_back({t, Shape({2, 8, 24})});
        cases->push_back({absl::StrCat("FusedMatMul_bias_", act,
                                       residual ? "_residual_" : "_",
                                       DtypeSuffix(t)),
                          "FusedMatMul", std::move(in),
                          {{"activation", StringAttr(act)},
                           {"num_args", IntAttr(residual ? 2 : 1)}}});
      }
    }
    cases->push_back({"FusedMatMul_transposed_gelu_residual_" + DtypeSuffix(t),
                      "FusedMatMul",
                      {{t, Shape({6, 40})}, {t, Shape({20, 40})},
                       {t, Shape({20})}, {t, Shape({6, 20})}},
                      {{"transpose_b", BoolAttr(true)},
                       {"activation", StringAttr("gelu_tanh")},
                       {"num_args", IntAttr(2)}}});
  }
  cases->push_back({"FusedMatMul_tf32_relu", "FusedMatMul",
                    {{DT_FLOAT, Shape({64, 128})}, {DT_FLOAT, Shape({128, 32})},
                     {DT_FLOAT, Shape({32})}},
                    {{"activation", StringAttr("relu")}, {"num_args", IntAttr(1)}},
                    /*tf32=*/true, /*tol_scale=*/10});
  cases->push_back({"FusedMatMul_empty_k_relu_residual", "FusedMatMul",
                    {{DT_FLOAT, Shape({3, 0})}, {DT_FLOAT, Shape({0, 5})},
                     {DT_FLOAT, Shape({5})}, {DT_FLOAT, Shape({3, 5})}},
                    {{"activation", StringAttr("relu")}, {"num_args", IntAttr(2)}}});
}

// FusedElementwise (made by the optimizer's elementwise_fusion): the GPU's
// NVRTC-generated kernel against the CPU's blockwise one, per float dtype
// and broadcast class (flat, scalar, strided inputs; 32-bit indexing).
void AddFusedElementwiseCases(std::vector<Case>* cases) {
  struct Input {
    std::vector<int64_t> dims;
    Range range;
    std::vector<double> values;  // fixed values; empty: random
  };
  struct Program {
    std::string name;
    std::vector<std::string> ops;
    std::vector<int64_t> operands;
    std::vector<Input> inputs;
  };
  const Range kS = Range::kSigned, kP = Range::kPositive;
  const std::vector<Program> programs = {
      // ReLU6 as exported: Minimum(Maximum(x, 0), 6) with scalar bounds
      // (1.5 here, so that random values clip).
      {"relu6", {"Maximum", "Minimum"}, {0, 1, 3, 2},
       {{{2, 8, 9, 9}, kS, {}}, {{}, kS, {0}}, {{}, kS, {1.5}}}},
      // Pre-activation BatchNorm: Relu(x * scale[C,1,1] + shift[C,1,1]).
      {"batchnorm_relu", {"Mul", "Add", "Relu"}, {0, 1, 3, 2, 4, -1},
       {{{2, 16, 7, 7}, kS, {}}, {{16, 1, 1}, kS, {}}, {{16, 1, 1}, kS, {}}}},
      // (x + bias) * scale + mask[B,1,1,S], rank 4.
      {"bias_scale_mask", {"Add", "Mul", "Add"}, {0, 1, 4, 2, 5, 3},
       {{{2, 4, 5, 33}, kS, {}},
        {{33}, kS, {}},
        {{}, kS, {}},
        {{2, 1, 1, 33}, kS, {}}}},
      // Row operands on the CPU: bias [64] and mask [B,1,1,64] over
      // blocks of whole rows; Tanh(bias) + mask stays a row there.
      {"row_operands", {"Tanh", "Add", "Mul", "Sub"}, {1, -1, 3, 2, 0, 4, 5, 1},
       {{{2, 4, 8, 64}, kS, {}}, {{64}, kS, {}}, {{2, 1, 1, 64}, kS, {}}}},
      // The transcendental ops in a chain, on positive values.
      {"unary_chain",
       {"Sqrt", "Log", "Neg", "Exp", "Tanh", "Sigmoid", "Erf", "Rsqrt",
        "Abs", "Relu"},
       {0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1, 8, -1, 9, -1},
       {{{3, 300}, kP, {}}}},
      // Every binary op, both inputs broadcasting ([4,1,5] with [1,3,1]).
      {"binary_ops",
       {"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum"},
       {0, 1, 0, 1, 2, 3, 4, 1, 1, 0, 6, 5, 7, 2},
       {{{4, 1, 5}, kP, {}}, {{1, 3, 1}, kP, {}}}},
  };
  for (const Program& p : programs) {
    for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16, DT_DOUBLE}) {
      std::vector<InputSpec> inputs;
      for (const Input& in : p.inputs) {
        if (in.values.empty()) {
          inputs.emplace_back(t, Shape(in.dims), in.range);
        } else {
          inputs.emplace_back(t, Shape(in.dims), in.values);
        }
      }
      Attrs attrs = {{"T", TypeAttr(t)},
                     {"N", IntAttr(static_cast<int64_t>(inputs.size()))},
                     {"ops", MakeStringListAttr(p.ops)},
                     {"operands", IntListAttr(p.operands)}};
      cases->push_back({"FusedElementwise_" + p.name + "_" + DtypeSuffix(t),
                        "FusedElementwise", std::move(inputs),
                        std::move(attrs)});
    }
  }
}

// FusedAttention (the flash-attention kernel and, past head dim 128, the
// row kernel) against the CPU kernel: masks broadcast by strides, causal,
// Sq != Sk, lengths that are not multiples of the 64-row tiles, head dims
// 32 to 160, one and many (batch, head) pairs, the workloads' sizes.
void AddFusedAttentionCases(std::vector<Case>* cases) {
  struct Size {
    const char* name;
    int64_t b, h, sq, sk, d;
    int mask;  // 0 none, 1 [B,1,1,Sk], 2 [B,H,Sq,Sk], 3 [Sq,Sk]
    bool causal;
  };
  const Size sizes[] = {
      {"d32_one_head", 1, 1, 17, 17, 32, 0, false},
      {"d64_bert_mask", 2, 3, 70, 70, 64, 1, false},
      {"d64_causal", 2, 2, 100, 100, 64, 0, true},
      {"d80_cross", 1, 3, 33, 129, 80, 2, false},
      {"d128_causal_sq_lt_sk", 1, 2, 65, 130, 128, 3, true},
      {"d160_row_kernel", 1, 2, 9, 20, 160, 1, true},
      {"bert_base", 8, 12, 128, 128, 64, 1, false},
      {"gpt2", 1, 12, 128, 128, 64, 0, true},
  };
  for (const Size& z : sizes) {
    for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) {
      const std::string name = z.name;
      // Full sizes: float32, and GPT-2's in bfloat16 (the tensor-core kernel
      // over two key tiles with the causal limit).
      if (name == "bert_base" && t != DT_FLOAT) continue;
      if (name == "gpt2" && t == DT_FLOAT16) continue;
      std::vector<InputSpec> in = {{t, Shape({z.b, z.h, z.sq, z.d})},
                                   {t, Shape({z.b, z.h, z.sk, z.d})},
                                   {t, Shape({z.b, z.h, z.sk, z.d})}};
      if (z.mask == 1) in.push_back({t, Shape({z.b, 1, 1, z.sk}), Range::kWide});
      if (z.mask == 2) in.push_back({t, Shape({z.b, z.h, z.sq, z.sk})});
      if (z.mask == 3) in.push_back({t, Shape({z.sq, z.sk})});
      const float scale = 1.f / std::sqrt(static_cast<float>(z.d));
      cases->push_back({"FusedAttention_" + name + "_" + DtypeSuffix(t),
                        "FusedAttention", std::move(in),
                        {{"scale", FloatAttr(scale)}, {"causal", BoolAttr(z.causal)}},
                        false, t == DT_FLOAT ? 10.0 : 1.0});
    }
  }
  // -inf in the mask; row 1 has no key left and gives zeros.
  const double inf = std::numeric_limits<double>::infinity();
  for (DataType t : {DT_FLOAT, DT_FLOAT16}) {
    cases->push_back({"FusedAttention_inf_mask_" + DtypeSuffix(t), "FusedAttention",
                      {{t, Shape({1, 2, 3, 8})},
                       {t, Shape({1, 2, 4, 8})},
                       {t, Shape({1, 2, 4, 8})},
                       {t, Shape({1, 1, 3, 4}),
                        std::vector<double>{0, -inf, 0.5, -inf, -inf, -inf, -inf, -inf,
                                            -inf, -inf, -inf, 1}}}});
  }
}

// FusedAttention's BSHD layouts (design decision 29) against the CPU
// kernel: q, k, v token-major [B, S, H*D] and the output [B, Sq, H*Dv]
// ("bshd"); q, k and v column ranges of packed [B, S, H*(2D+Dv)]
// projections ("packed"); q token-major at a column offset that breaks the
// 16-byte alignment (the scalar loads), k BHSD, v token-major, the output
// BHSD, Sq != Sk ("mixed"). Head dims 64 and 128 (the tiled kernels:
// float32 on CUDA cores, float16 and bfloat16 on tensor cores from compute
// capability 8.0) and 160 (the row kernel), with a padding mask or causal.
void AddFusedAttentionLayoutCases(std::vector<Case>* cases) {
  for (const char* layout : {"bshd", "packed", "mixed"}) {
    for (int64_t d : {64, 128, 160}) {
      for (bool causal : {false, true}) {
        for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) {
          const std::string l = layout;
          const int64_t b = 2, h = 3, sq = l == "mixed" ? 33 : 70,
                        sk = l == "mixed" ? 129 : 70;
          Attrs attrs = {{"scale", FloatAttr(1.f / std::sqrt(static_cast<float>(d)))},
                         {"causal", BoolAttr(causal)},
                         {"num_heads", IntAttr(h)},
                         {"head_dim", IntAttr(d)},
                         {"v_head_dim", IntAttr(d)}};
          std::vector<InputSpec> in;
          if (l == "bshd") {
            in = {{t, Shape({b, sq, h * d})}, {t, Shape({b, sk, h * d})},
                  {t, Shape({b, sk, h * d})}};
            for (const char* a : {"q_layout", "k_layout", "v_layout", "out_layout"}) {
              attrs[a] = StringAttr("BSHD");
            }
          } else if (l == "packed") {
            const Shape packed({b, sq, 3 * h * d});
            in = {{t, packed}, {t, packed}, {t, packed}};
            for (const char* a : {"q_layout", "k_layout", "v_layout", "out_layout"}) {
              attrs[a] = StringAttr("BSHD");
            }
            attrs["k_offset"] = IntAttr(h * d);
            attrs["v_offset"] = IntAttr(2 * h * d);
          } else {
            in = {{t, Shape({b, sq, h * d + 6})}, {t, Shape({b, h, sk, d})},
                  {t, Shape({1, sk, h * d + 4})}};
            attrs["q_layout"] = StringAttr("BSHD");
            attrs["v_layout"] = StringAttr("BSHD");
            attrs["q_offset"] = IntAttr(2);
            attrs["v_offset"] = IntAttr(4);
          }
          if (!causal) in.push_back({t, Shape({b, 1, 1, sk}), Range::kWide});
          cases->push_back({absl::StrCat("FusedAttention_layout_", l, "_d", d,
                                         causal ? "_causal_" : "_mask_",
                                         DtypeSuffix(t)),
                            "FusedAttention", std::move(in), std::move(attrs),
                            false, t == DT_FLOAT ? 10.0 : 1.0});
        }
      }
    }
  }
}

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
    // Each of the GPU's paths: a warp per row (768, and 1000, not a
    // multiple of 32, in rows that do not fill the last block), a block of
    // 256 per row (3000), and the loop for rows past 8192 elements.
    for (int64_t cols : {768, 1000, 3000, 9000}) {
      cases.push_back({"LayerNorm_cols" + std::to_string(cols) + "_" + DtypeSuffix(t),
                       "LayerNorm",
                       {{t, Shape({cols > 4096 ? 3 : 7, cols})}, {t, Shape({cols})},
                        {t, Shape({cols})}}});
    }
  }
  // RMSNorm (LLaMA's norm), each of the GPU's paths as for LayerNorm: a
  // warp per row (96; 1000, not a multiple of 32, in 5 rows that do not
  // fill the last block of 4), a block of 256 per row (4096, the hidden
  // size of 7B models), and the loop for rows past 8192 elements (9000).
  for (DataType t : floats) {
    for (int64_t cols : {96, 1000, 4096, 9000}) {
      cases.push_back({absl::StrCat("RMSNorm_last_", cols, "_", DtypeSuffix(t)),
                       "RMSNorm", {{t, Shape({5, cols})}, {t, Shape({cols})}},
                       {{"epsilon", FloatAttr(1e-6f)}}});
    }
  }
  cases.push_back({"RMSNorm_two_axes", "RMSNorm",
                   {{DT_FLOAT, Shape({2, 3, 37})}, {DT_FLOAT, Shape({3, 37})}},
                   {{"axis", IntAttr(1)}, {"epsilon", FloatAttr(1e-3f)}}});
  cases.push_back({"RMSNorm_float64", "RMSNorm",
                   {{DT_DOUBLE, Shape({3, 33})}, {DT_DOUBLE, Shape({33})}}});
  AddFusedAttentionCases(&cases);
  AddFusedAttentionLayoutCases(&cases);
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
  // Rows contiguous in both: the GPU moves 16 (float32 rows of 12: 8) bytes
  // at a time; the last splits rows that 16 bytes do not divide.
  for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) {
    cases.push_back({"Transpose_heads_" + DtypeSuffix(t), "Transpose",
                     {{t, Shape({2, 5, 3, 16})}}, {{"perm", IntListAttr({0, 2, 1, 3})}}});
  }
  cases.push_back({"Transpose_heads_rows_of_12", "Transpose", {{DT_FLOAT, Shape({2, 5, 3, 12})}},
                   {{"perm", IntListAttr({0, 2, 1, 3})}}});
  cases.push_back({"Split_packed_qkv_float16", "Split", {{DT_FLOAT16, Shape({2, 7, 48})}},
                   {{"axis", IntAttr(2)}, {"num_split", IntAttr(3)}}});
  cases.push_back({"Split_odd_columns_float16", "Split", {{DT_FLOAT16, Shape({3, 7, 15})}},
                   {{"axis", IntAttr(2)}, {"num_split", IntAttr(3)}}});
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
  cases.push_back({"FusedConv2D_grouped_bias_relu", "FusedConv2D",
                   {{DT_FLOAT, Shape({2, 4, 9, 8})}, {DT_FLOAT, Shape({6, 2, 3, 3})},
                    {DT_FLOAT, Shape({6})}},
                   {{"strides", IntListAttr({2, 1})}, {"pads", IntListAttr({1, 1, 0, 2})},
                    {"dilations", IntListAttr({1, 2})}, {"group", IntAttr(2)},
                    {"activation", StringAttr("relu")}}});
  cases.push_back({"FusedConv2D_residual_relu", "FusedConv2D",
                   {{DT_FLOAT, Shape({2, 3, 7, 7})}, {DT_FLOAT, Shape({5, 3, 3, 3})},
                    {DT_FLOAT, Shape({5})}, {DT_FLOAT, Shape({2, 5, 7, 7})}},
                   {{"pads", IntListAttr({1, 1, 1, 1})}, {"activation", StringAttr("relu")}}});
  // ReLU6 (Clip(0, 6) fused): 16 channels of 3x3 make outputs past 6.
  cases.push_back({"FusedConv2D_bias_relu6", "FusedConv2D",
                   {{DT_FLOAT, Shape({2, 16, 7, 7})}, {DT_FLOAT, Shape({8, 16, 3, 3})},
                    {DT_FLOAT, Shape({8})}},
                   {{"pads", IntListAttr({1, 1, 1, 1})}, {"activation", StringAttr("relu6")}}});
  cases.push_back({"FusedConv2D_depthwise_residual_relu6", "FusedConv2D",
                   {{DT_FLOAT, Shape({1, 16, 9, 9})}, {DT_FLOAT, Shape({16, 1, 3, 3})},
                    {DT_FLOAT, Shape({16})}, {DT_FLOAT, Shape({1, 16, 9, 9})}},
                   {{"pads", IntListAttr({1, 1, 1, 1})}, {"group", IntAttr(16)},
                    {"activation", StringAttr("relu6")}}});
  cases.push_back({"FusedConv2D_1x1_bias", "FusedConv2D",
                   {{DT_FLOAT, Shape({1, 8, 6, 6})}, {DT_FLOAT, Shape({4, 8, 1, 1})},
                    {DT_FLOAT, Shape({4})}}});
  cases.push_back({"MaxPool", "MaxPool", {{DT_FLOAT, Shape({2, 3, 7, 7})}},
                   {{"kernel_shape", IntListAttr({3, 3})}, {"strides", IntListAttr({2, 2})},
                    {"pads", IntListAttr({1, 1, 1, 1})}}});
  cases.push_back({"AvgPool_include_pad", "AvgPool", {{DT_FLOAT, Shape({2, 3, 6, 6})}},
                   {{"kernel_shape", IntListAttr({3, 3})}, {"pads", IntListAttr({1, 1, 1, 1})},
                    {"count_include_pad", BoolAttr(true)}}});
  cases.push_back({"AvgPool", "AvgPool", {{DT_FLOAT, Shape({1, 2, 5, 5})}},
                   {{"kernel_shape", IntListAttr({2, 2})}, {"pads", IntListAttr({0, 0, 1, 1})}}});
  cases.push_back({"GlobalAvgPool", "GlobalAvgPool", {{DT_FLOAT, Shape({2, 3, 5, 4})}}});
  // 16-bit nodes as RuntimeConfig.precision makes them (the CPU reference
  // runs them through its float32 kernels: kernels/cpu/float32_fallback.h).
  for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
    const std::string n = DataTypeName(t);
    cases.push_back({"MaxPool_" + n, "MaxPool", {{t, Shape({2, 3, 7, 7})}},
                     {{"kernel_shape", IntListAttr({3, 3})}, {"strides", IntListAttr({2, 2})},
                      {"pads", IntListAttr({1, 1, 1, 1})}}});
    cases.push_back({"AvgPool_include_pad_" + n, "AvgPool", {{t, Shape({2, 3, 6, 6})}},
                     {{"kernel_shape", IntListAttr({3, 3})}, {"pads", IntListAttr({1, 1, 1, 1})},
                      {"count_include_pad", BoolAttr(true)}}});
    cases.push_back({"GlobalAvgPool_" + n, "GlobalAvgPool", {{t, Shape({2, 3, 5, 4})}}});
    cases.push_back({"Conv2D_" + n, "Conv2D",
                     {{t, Shape({2, 4, 6, 6})}, {t, Shape({6, 2, 3, 3})}},
                     {{"pads", IntListAttr({1, 1, 1, 1})}, {"group", IntAttr(2)}}});
    cases.push_back({"FusedConv2D_residual_relu_" + n, "FusedConv2D",
                     {{t, Shape({2, 3, 7, 7})}, {t, Shape({5, 3, 3, 3})},
                      {t, Shape({5})}, {t, Shape({2, 5, 7, 7})}},
                     {{"pads", IntListAttr({1, 1, 1, 1})}, {"activation", StringAttr("relu")}}});
    cases.push_back({"FusedConv2D_bias_relu6_" + n, "FusedConv2D",
                     {{t, Shape({2, 16, 7, 7})}, {t, Shape({8, 16, 3, 3})}, {t, Shape({8})}},
                     {{"pads", IntListAttr({1, 1, 1, 1})}, {"activation", StringAttr("relu6")}}});
  }
  AddMathCases(&cases);
  AddIntegerCases(&cases);
  AddIndexCases(&cases);
  AddRecurrentGpuCases(&cases);
  AddLinearAttentionGpuCases(&cases);
  AddReduceSelectMiscGpuCases(&cases);
  AddDynamicGpuCases(&cases);
  AddVisionGpuCases(&cases);
  AddElementwiseDtypesGpuCases(&cases);
  AddFusedElementwiseCases(&cases);
  AddFusedMatMulCases(&cases);
  AddNhwcCases(&cases);
  // Gather indices must be in range: draw them so.
  return cases;
}

class ConformanceTest : public ::testing::TestWithParam<Case> {};

// Through the tests' one comparator (testing/compare.h): integer and bool
// outputs exactly, NaN only against NaN, infinities by sign (the float8
// no-saturate Cast cases make them), finite values within
// rtol * (1 + |cpu|).
void ExpectClose(const Tensor& gpu, const Tensor& cpu, double rtol,
                 const std::string& what) {
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  EXPECT_EQ(::sluice::testing::CompareValues(
                ToDoubles(gpu), ToDoubles(cpu), cpu.dtype(),
                ::sluice::testing::RelativeAndAbsolute(rtol)),
            "")
      << what << " (gpu against cpu)";
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
  // Every output of the op (Split and DynamicSplit: num_split of them).
  const OpDef* op_def = OpRegistry::Global()->Find(c.op);
  int num_outputs = op_def ? static_cast<int>(op_def->outputs.size()) : 1;
  if (c.op == "Split" || c.op == "DynamicSplit") {
    num_outputs = static_cast<int>(attrs["num_split"].i());
  }
  absl::StatusOr<std::vector<Tensor>> cpu =
      RunOp(c.op, inputs, attrs, {.num_outputs = num_outputs});
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
  if (gpus.plain.empty()) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  GpuDevice* gpu = c.tf32 ? gpus.tf32[0].get() : gpus.plain[0].get();
  absl::StatusOr<std::vector<Tensor>> out = RunOpOnGpu(gpu, c.op, inputs, attrs);
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

// GPU kernels checked by other tests instead of random cases here, each
// with the test file that checks it on /gpu:0 against a reference. If, Loop
// and Scan: tests/executor/control_flow_test.cc runs them on /gpu:0 against
// the CPU (and so does the node suite). CudaKernel runs a user's source and
// has no CPU reference: tests/kernels/cuda_kernel_test.cc checks it against
// values computed on the host. ExemptionsAreCurrent keeps this list honest.
const std::map<std::string, std::string>& CheckedElsewhere() {
  static const auto* m = new std::map<std::string, std::string>{
      {"If", "tests/executor/control_flow_test.cc"},
      {"Loop", "tests/executor/control_flow_test.cc"},
      {"Scan", "tests/executor/control_flow_test.cc"},
      {"CudaKernel", "tests/kernels/cuda_kernel_test.cc"}};
  return *m;
}

TEST(ConformanceCoverageTest, EveryOpHasAGpuKernelInCudaBuilds) {
#ifndef SLUICE_WITH_CUDA
  GTEST_SKIP() << "this build of sluice has no CUDA support";
#else
  // Ops with only a CPU kernel so far (ONNX conformance, issue 12, adds
  // their GPU kernels later); the placer puts them on the CPU. The list may
  // only shrink: an op on it that gains a GPU kernel fails here.
  const std::set<std::string> cpu_only = {
      "DeformConv", "Det", "LRN", "TreeEnsemble"};
  std::set<std::string> tested;
  for (const auto& [op, file] : CheckedElsewhere()) tested.insert(op);
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

// Every exemption is an op that exists, has no case here (else it is
// checked here: drop it from the list), and whose named test file exists
// and uses it by name.
TEST(ConformanceCoverageTest, ExemptionsAreCurrent) {
  std::set<std::string> here;
  for (const Case& c : AllCases()) here.insert(c.op);
  for (const auto& [op, file] : CheckedElsewhere()) {
    EXPECT_NE(OpRegistry::Global()->Find(op), nullptr)
        << op << " is no op: drop it from CheckedElsewhere";
    EXPECT_EQ(here.count(op), 0u)
        << op << " has conformance cases now: drop it from CheckedElsewhere";
    std::ifstream in(TestDataPath(file));
    ASSERT_TRUE(in) << op << "'s test " << file << " does not exist";
    const std::string text((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(absl::StrCat("\"", op, "\"")), std::string::npos)
        << file << " no longer uses " << op << ": it does not check it";
  }
}

TEST(GpuKernelErrorTest, GatherReportsAnOutOfRangeIndex) {
  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  Tensor params = MakeTensor(DT_FLOAT, Shape({4, 2}), std::vector<double>(8, 1.0));
  Tensor indices = MakeTensor(DT_INT64, Shape({3}), {0, 7, 1});
  absl::StatusOr<std::vector<Tensor>> out =
      RunOpOnGpu(gpus.plain[0].get(), "Gather", {params, indices}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("index 7"));
}

// The GPU kernel fails as the CPU kernel does: same code, same message.
void ExpectCpuError(const std::string& op, const std::vector<Tensor>& inputs,
                    const Attrs& attrs, const std::string& substring) {
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp(op, inputs, attrs);
  ASSERT_FALSE(cpu.ok()) << op << " succeeded on the CPU";
  EXPECT_THAT(cpu.status().message(), ::testing::HasSubstr(substring));
  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  absl::StatusOr<std::vector<Tensor>> gpu =
      RunOpOnGpu(gpus.plain[0].get(), op, inputs, attrs);
  ASSERT_FALSE(gpu.ok()) << op << " succeeded on the GPU";
  EXPECT_EQ(gpu.status().code(), cpu.status().code());
  EXPECT_EQ(gpu.status().message(), cpu.status().message());
}

TEST(GpuKernelErrorTest, IntegerDivReportsAZeroDivisorAsTheCpuDoes) {
  ExpectCpuError("Div",
                 {MakeTensor(DT_INT32, Shape({3}), {4, 5, 6}),
                  MakeTensor(DT_INT32, Shape({3}), {1, 0, 0})},
                 {}, "divisor element 1 is 0");
}

TEST(GpuKernelErrorTest, IntegerModReportsAZeroDivisorAsTheCpuDoes) {
  ExpectCpuError("Mod",
                 {MakeTensor(DT_UINT8, Shape({2, 2}), {4, 5, 6, 7}),
                  MakeTensor(DT_UINT8, Shape({2}), {3, 0})},
                 {}, "divisor element 1 is 0");
}

TEST(GpuKernelErrorTest, IntegerPowReportsANegativeExponentAsTheCpuDoes) {
  ExpectCpuError("Pow",
                 {MakeTensor(DT_INT64, Shape({3}), {2, 3, 4}),
                  MakeTensor(DT_INT64, Shape({3}), {2, -3, -1})},
                 {}, "negative exponent -3 (element 1)");
}

TEST(GpuKernelErrorTest, Int16PowReportsANegativeExponentAsTheCpuDoes) {
  ExpectCpuError("Pow",
                 {MakeTensor(DT_INT16, Shape({3}), {2, 3, 4}),
                  MakeTensor(DT_INT16, Shape({3}), {2, 1, -2})},
                 {}, "negative exponent -2 (element 2)");
}

TEST(GpuKernelErrorTest, Uint64DivReportsAZeroDivisorAsTheCpuDoes) {
  ExpectCpuError("Div",
                 {MakeTensor(DT_UINT64, Shape({3}), {4, 5, 6}),
                  MakeTensor(DT_UINT64, Shape({3}), {1, 0, 2})},
                 {}, "divisor element 1 is 0");
}

TEST(GpuKernelErrorTest, GatherElementsReportsAnOutOfRangeIndexAsTheCpuDoes) {
  ExpectCpuError("GatherElements",
                 {MakeTensor(DT_FLOAT, Shape({2, 2}), {1, 2, 3, 4}),
                  MakeTensor(DT_INT64, Shape({2, 2}), {0, 1, 5, 0})},
                 {}, "index 5 is out of range for axis 0 of size 2");
}

TEST(GpuKernelErrorTest, ScatterNDReportsAnOutOfRangeIndexAsTheCpuDoes) {
  ExpectCpuError("ScatterND",
                 {MakeTensor(DT_FLOAT, Shape({4, 3}), std::vector<double>(12, 1.0)),
                  MakeTensor(DT_INT64, Shape({2, 1}), {1, -7}),
                  MakeTensor(DT_FLOAT, Shape({2, 3}), std::vector<double>(6, 2.0))},
                 {}, "index -7 is out of range for axis 0 of size 4");
}

TEST(GpuKernelErrorTest, ArgMaxOverAnEmptyAxisFailsAsTheCpuDoes) {
  ExpectCpuError("ArgMax", {MakeTensor(DT_FLOAT, Shape({2, 0}), {})},
                 {{"axis", IntAttr(1)}}, "empty dimension");
}

TEST(GpuDeviceTest, CopiesRoundTripThroughStagingInSeveralChunks) {
  const Gpus& gpus = GetGpus();
  if (gpus.plain.empty()) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
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
  if (gpus.plain.empty()) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
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
  if (gpus.plain.empty()) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
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
}  // namespace sluice::conformance_test
