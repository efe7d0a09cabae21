// Models whose shapes depend on their data (issue 31): testdata/
// tiny_detector.onnx (tests/onnx/make_data_dependent.py) runs NonZero,
// TopK with a computed k, NonMaxSuppression, Range with computed bounds,
// Unique, Compress, RoiAlign, a Loop whose trip count is computed and a
// Flatten of dims unknown at import, through one session at three inputs
// (one where every data-dependent size is zero), against onnxruntime; and
// the ONNX ops that needed known shapes to import (Flatten,
// InstanceNormalization, GroupNormalization) read them at run time.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "executor/session.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "model/model_loader.h"
#include "sluice/npy.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/test_data.h"
#include "testing/gpu_required.h"

namespace sluice::onnx_test::data_dependent_test {
namespace {

std::string Data(const std::string& file) {
  return TestDataPath("tests/onnx/testdata/" + file);
}

void ExpectClose(const Tensor& got, const Tensor& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  for (int64_t i = 0; i < got.NumElements(); ++i) {
    if (want.dtype() == DT_FLOAT) {
      ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], tol)
          << what << " element " << i;
    } else {
      ASSERT_EQ(got.data<int64_t>()[i], want.data<int64_t>()[i])
          << what << " element " << i;
    }
  }
}

const char* const kDetectorOutputs[] = {
    "det_boxes", "det_labels", "det_scores", "rank",  "classes",
    "counts",    "strong",     "pooled",     "areas", "flat"};

// Runs the detector on input `tag` ("a", "b", "c") and checks every output
// against onnxruntime's; the number of detections goes to *detections.
void ExpectDetectorStep(Session& session, const std::string& tag,
                        int64_t* detections) {
  SCOPED_TRACE(tag);
  absl::StatusOr<Tensor> feat = ReadNpy(Data("tiny_detector.in.feat.npy"));
  ASSERT_TRUE(feat.ok()) << feat.status();
  absl::StatusOr<Tensor> x = ReadNpy(Data("tiny_detector." + tag + ".in.x.npy"));
  ASSERT_TRUE(x.ok()) << x.status();
  std::vector<std::string> fetches(std::begin(kDetectorOutputs),
                                   std::end(kDetectorOutputs));
  absl::StatusOr<std::vector<Tensor>> out =
      session.Run({{"x", *x}, {"feat", *feat}}, fetches);
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < fetches.size(); ++i) {
    absl::StatusOr<Tensor> want =
        ReadNpy(Data("tiny_detector." + tag + ".out." + fetches[i] + ".npy"));
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectClose((*out)[i], *want, 1e-5, fetches[i]);
  }
  *detections = (*out)[0].shape().dim(0);
}

TEST(DataDependentShapesTest, TinyDetectorMatchesOnnxruntimeThroughOneSession) {
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::CreateFromFile(Data("tiny_detector.onnx"));
  ASSERT_TRUE(session.ok()) << session.status();
  // Load-time inference could not know the number of detections.
  for (const GraphOutput& out : (*session)->graph().outputs()) {
    if (out.name == "det_scores") {
      EXPECT_FALSE(out.shape.IsFullyDefined()) << out.shape.DebugString();
    }
  }
  std::vector<int64_t> detections;
  for (const std::string tag : {"a", "b", "c", "a"}) {
    detections.push_back(-1);
    ASSERT_NO_FATAL_FAILURE(ExpectDetectorStep(**session, tag, &detections.back()));
  }
  // Different inputs gave different numbers of detections, none at all
  // for the third, through the same plan cache.
  EXPECT_NE(detections[0], detections[1]);
  EXPECT_EQ(detections[2], 0);
}

// The same detector on a GPU (manual placement there): NonZero and
// NonMaxSuppression run their GPU kernels, which size their outputs from a
// count read back from the GPU, and every output still matches
// onnxruntime's at each input, twice (a later step of the same plan).
TEST(DataDependentShapesTest, TinyDetectorRunsNonZeroAndNmsOnTheGpu) {
  const std::string no_gpu = ::sluice::testing::NoUsableGpuReason();
  if (!no_gpu.empty()) SLUICE_GPU_UNAVAILABLE(no_gpu);
  RuntimeConfig config;
  config.set_default_device("gpu:0");
  config.set_placement_strategy(PLACEMENT_MANUAL);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::CreateFromFile(Data("tiny_detector.onnx"), config);
  ASSERT_TRUE(session.ok()) << session.status();
  int on_gpu = 0;
  for (const Node& n : (*session)->graph().nodes()) {
    if (n.op() != "NonZero" && n.op() != "NonMaxSuppression") continue;
    const Device* d = (*session)->assignment()[n.id()];
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->type(), DeviceType::kGpu) << n.name() << " (" << n.op() << ")";
    ++on_gpu;
  }
  EXPECT_GE(on_gpu, 2);
  for (const std::string tag : {"a", "b", "c", "a"}) {
    for (int step = 0; step < 2; ++step) {
      int64_t detections = -1;
      ASSERT_NO_FATAL_FAILURE(ExpectDetectorStep(**session, tag, &detections));
    }
  }
}

// x of element type float with every dim symbolic, into `op` -> y.
onnx::ModelProto SymbolicModel(int opset, int rank, const std::string& op,
                               std::vector<std::string> extra_inputs = {}) {
  onnx::ModelProto model = NewModel(opset);
  onnx::GraphProto* g = model.mutable_graph();
  onnx::ValueInfoProto* v = g->add_input();
  v->set_name("x");
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < rank; ++i) {
    tt->mutable_shape()->add_dim()->set_dim_param("d" + std::to_string(i));
  }
  std::vector<std::string> inputs = {"x"};
  inputs.insert(inputs.end(), extra_inputs.begin(), extra_inputs.end());
  AddNode(g, op, inputs, {"y"}, "node");
  AddOutput(g, "y");
  return model;
}

void AddAttrInt(onnx::ModelProto* m, const std::string& name, int64_t v) {
  onnx::AttributeProto* a =
      m->mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void AddInitializer(onnx::ModelProto* m, const std::string& name,
                    const std::vector<float>& values) {
  onnx::TensorProto* t = m->mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (float f : values) t->add_float_data(f);
}

absl::StatusOr<Tensor> RunImported(const onnx::ModelProto& model,
                                   const Tensor& x) {
  absl::StatusOr<GraphDef> def = Import(model);
  if (!def.ok()) return def.status();
  absl::StatusOr<std::unique_ptr<const Graph>> graph = BuildGraph(*def);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(graph));
  if (!session.ok()) return session.status();
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run({{"x", x}}, {"y"});
  if (!out.ok()) return out.status();
  return (*out)[0];
}

Tensor Iota(const Shape& shape, float scale = 1.0f) {
  Tensor t = *Tensor::Zeros(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.data<float>()[i] = scale * static_cast<float>((i * 7) % 11) - 3.0f;
  }
  return t;
}

TEST(DataDependentShapesTest, FlattenOfUnknownDimsReadsThemAtRunTime) {
  for (int64_t axis : {0, 1, 2, -1}) {
    SCOPED_TRACE(axis);
    onnx::ModelProto model = SymbolicModel(17, 3, "Flatten");
    AddAttrInt(&model, "axis", axis);
    const int64_t a = axis < 0 ? axis + 3 : axis;
    for (const Shape& shape : {Shape({2, 3, 4}), Shape({0, 3, 5})}) {
      Tensor x = Iota(shape);
      absl::StatusOr<Tensor> y = RunImported(model, x);
      ASSERT_TRUE(y.ok()) << y.status();
      int64_t outer = 1;
      for (int i = 0; i < a; ++i) outer *= shape.dim(i);
      int64_t inner = 1;
      for (int i = static_cast<int>(a); i < 3; ++i) inner *= shape.dim(i);
      EXPECT_EQ(y->shape(), Shape({outer, inner})) << shape.DebugString();
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        ASSERT_EQ(y->data<float>()[i], x.data<float>()[i]);
      }
    }
  }
}

// The reference: (x - mean) / sqrt(var + eps) over each [n, c] plane (or
// group of channels), then * scale[c] + bias[c], in double.
std::vector<double> NormReference(const Tensor& x, int64_t groups,
                                  const std::vector<float>& scale,
                                  const std::vector<float>& bias, double eps) {
  const int64_t n = x.shape().dim(0), c = x.shape().dim(1);
  const int64_t plane = x.NumElements() / (n * c);
  const int64_t per_group = c / groups * plane;
  std::vector<double> y(x.NumElements());
  const float* xs = x.data<float>();
  for (int64_t g = 0; g < n * groups; ++g) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < per_group; ++i) mean += xs[g * per_group + i];
    mean /= per_group;
    for (int64_t i = 0; i < per_group; ++i) {
      const double d = xs[g * per_group + i] - mean;
      var += d * d;
    }
    var /= per_group;
    for (int64_t i = 0; i < per_group; ++i) {
      const int64_t at = g * per_group + i;
      const int64_t ch = (at / plane) % c;
      y[at] = (xs[at] - mean) / std::sqrt(var + eps) * scale[ch] + bias[ch];
    }
  }
  return y;
}

TEST(DataDependentShapesTest, InstanceNormalizationOfUnknownDimsRuns) {
  onnx::ModelProto model =
      SymbolicModel(17, 4, "InstanceNormalization", {"scale", "bias"});
  const std::vector<float> scale = {0.5f, -2.0f, 1.5f};
  const std::vector<float> bias = {0.25f, 1.0f, -0.5f};
  AddInitializer(&model, "scale", scale);
  AddInitializer(&model, "bias", bias);
  for (const Shape& shape : {Shape({2, 3, 4, 5}), Shape({1, 3, 7, 2})}) {
    Tensor x = Iota(shape, 0.7f);
    absl::StatusOr<Tensor> y = RunImported(model, x);
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->shape(), shape);
    std::vector<double> want = NormReference(x, 3, scale, bias, 1e-5);
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      ASSERT_NEAR(y->data<float>()[i], want[i], 1e-4) << i;
    }
  }
}

TEST(DataDependentShapesTest, GroupNormalizationOfUnknownDimsRuns) {
  onnx::ModelProto model =
      SymbolicModel(21, 3, "GroupNormalization", {"scale", "bias"});
  // The channels must be known (num_groups divides them): give dim 1.
  model.mutable_graph()->mutable_input(0)->mutable_type()
      ->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->set_dim_value(4);
  AddAttrInt(&model, "num_groups", 2);
  const std::vector<float> scale = {1.0f, 2.0f, -1.0f, 0.5f};
  const std::vector<float> bias = {0.0f, 0.5f, 1.0f, -1.0f};
  AddInitializer(&model, "scale", scale);
  AddInitializer(&model, "bias", bias);
  for (const Shape& shape : {Shape({2, 4, 6}), Shape({3, 4, 1})}) {
    Tensor x = Iota(shape, 0.3f);
    absl::StatusOr<Tensor> y = RunImported(model, x);
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ(y->shape(), shape);
    std::vector<double> want = NormReference(x, 2, scale, bias, 1e-5);
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      ASSERT_NEAR(y->data<float>()[i], want[i], 1e-4) << i;
    }
  }
}

TEST(DataDependentShapesTest, AnErrorTheModelSurelyHasIsReportedAtLoad) {
  // Rank 2 is known: InstanceNormalization needs rank >= 3, whatever the
  // dims turn out to be.
  onnx::ModelProto model =
      SymbolicModel(17, 2, "InstanceNormalization", {"scale", "bias"});
  AddInitializer(&model, "scale", {1.0f});
  AddInitializer(&model, "bias", {0.0f});
  absl::StatusOr<GraphDef> def = Import(model);
  ASSERT_FALSE(def.ok());
  EXPECT_NE(def.status().message().find("'node'"), std::string::npos)
      << def.status();
  EXPECT_NE(def.status().message().find("rank >= 3"), std::string::npos)
      << def.status();
}

}  // namespace
}  // namespace sluice::onnx_test::data_dependent_test
