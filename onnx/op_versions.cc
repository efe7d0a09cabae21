// The op histories of the default ONNX domain and ai.onnx.ml, and the
// versions of each op that sluice's import handlers implement
// (onnx/ops_*.cc).
#include "onnx/op_versions.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace {

struct OpHistory {
  const char* op;
  int since[12];  // ascending, then zeros
};

#include "onnx/op_versions_table.inc"

// Why a version is not implemented, where the change is worth naming; other
// versions get "sluice implements versions ...".
struct Handled {
  const char* op;
  std::vector<int> versions;
  const char* missing_before = nullptr;  // what the older versions need
};

// Every op of the import table, with the versions whose semantics its
// handler implements. A version that only adds element types is listed:
// unsupported dtypes are refused by dtype, not by version.
const std::vector<Handled>& HandledTable() {
  static const auto* table = new std::vector<Handled>{
      // Elementwise (ops_elementwise.cc). Version 1 and 6 of the binary ops
      // had the legacy `broadcast`/`axis` attributes; version 1 of the unary
      // ops `consumed_inputs`.
      {"Relu", {6, 13, 14}, "the legacy consumed_inputs attribute"},
      {"Neg", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Abs", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Exp", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Log", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Sqrt", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Tanh", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Sigmoid", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Reciprocal", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Erf", {9, 13}},
      {"Identity", {1, 13, 14, 16, 19, 21, 23, 24, 25}},
      {"Dropout", {7, 10, 12, 13, 22}, "the legacy is_test attribute"},
      {"Add", {7, 13, 14}, "the legacy broadcast and axis attributes"},
      {"Sub", {7, 13, 14}, "the legacy broadcast and axis attributes"},
      {"Mul", {7, 13, 14}, "the legacy broadcast and axis attributes"},
      {"Div", {7, 13, 14}, "the legacy broadcast and axis attributes"},
      {"Pow", {7, 12, 13, 15}, "the legacy broadcast and axis attributes"},
      {"Equal", {7, 11, 13, 19}, "the legacy broadcast and axis attributes"},
      {"Less", {7, 9, 13}, "the legacy broadcast and axis attributes"},
      {"Greater", {7, 9, 13}, "the legacy broadcast and axis attributes"},
      {"Mod", {10, 13, 28}},
      {"LessOrEqual", {12, 16}},
      {"GreaterOrEqual", {12, 16}},
      {"Max", {8, 12, 13}, "inputs of one shape without broadcasting"},
      {"Min", {8, 12, 13}, "inputs of one shape without broadcasting"},
      {"Sum", {8, 13}, "inputs of one shape without broadcasting"},
      {"Not", {1}},
      {"And", {7}, "the legacy broadcast and axis attributes"},
      {"Or", {7}, "the legacy broadcast and axis attributes"},
      {"Xor", {7}, "the legacy broadcast and axis attributes"},
      {"IsNaN", {9, 13, 20}},
      {"Where", {9, 16}},
      {"Cast", {6, 9, 13, 19, 21, 23, 24, 25, 28}, "the `to` attribute as a "
                                                   "string"},
      {"CastLike", {15, 19, 21, 23, 24, 25}},
      {"Clip", {11, 12, 13}, "min and max as attributes"},
      {"LeakyRelu", {6, 16}, "the legacy consumed_inputs attribute"},
      // Shape and structure (ops_shape.cc).
      {"Shape", {1, 13, 15, 19, 21, 23, 24, 25}},
      {"Size", {1, 13, 19, 21, 23, 24, 25}},
      {"Constant", {1, 9, 11, 12, 13, 19, 21, 23, 24, 25}},
      {"ConstantOfShape", {9, 20, 21, 23, 24, 25}},
      {"Range", {11, 27}},
      {"GatherElements", {11, 13}},
      {"ScatterElements", {11, 13, 16, 18}},
      {"ScatterND", {11, 13, 16, 18}},
      {"GatherND", {11, 12, 13}},
      {"Reshape", {5, 13, 14, 19, 21, 23, 24, 25}, "the shape as an attribute"},
      {"Flatten", {1, 9, 11, 13, 21, 23, 24, 25}},
      {"Transpose", {1, 13, 21, 23, 24, 25}},
      {"Squeeze", {1, 11, 13, 21, 23, 24, 25}},
      {"Unsqueeze", {1, 11, 13, 21, 23, 24, 25}},
      {"Concat", {4, 11, 13}, "the default axis 1"},
      {"Split", {2, 11, 13, 18}, "the split sizes as input 1 of version 1"},
      {"Slice", {10, 11, 13}, "starts, ends and axes as attributes"},
      {"Gather", {1, 11, 13}},
      {"Expand", {8, 13}},
      {"Tile", {6, 13}, "the tiles and axis inputs"},
      // Neural-network ops (ops_nn.cc).
      {"MatMul", {1, 9, 13}},
      {"Gemm", {7, 9, 11, 13}, "the legacy broadcast attribute"},
      {"Softmax", {1, 11, 13}},
      {"LogSoftmax", {1, 11, 13}},
      {"LayerNormalization", {17}},
      {"BatchNormalization", {9, 14, 15}, "the legacy spatial attribute"},
      {"Conv", {1, 11, 22}},
      {"MaxPool", {1, 8, 10, 11, 12, 22}},
      {"AveragePool", {7, 10, 11, 19, 22}, "padding counted by default"},
      {"GlobalAveragePool", {1, 22}},
      {"GlobalMaxPool", {1, 22}},
      // Vision ops (ops_vision.cc).
      {"Resize", {11, 13, 18, 19}, "scales as input 1 (version 10)"},
      {"Pad", {2, 11, 13, 18, 19, 21, 23, 24, 25}, "the paddings attribute"},
      {"CenterCropPad", {18}},
      {"GridSample", {16, 20, 22}},
      {"ConvTranspose", {1, 11, 22}},
      {"Col2Im", {18}},
      {"LpPool", {2, 11, 18, 22}, "a float p"},
      {"GlobalLpPool", {2, 22}, "a float p"},
      {"AffineGrid", {20}},
      {"MaxUnpool", {9, 11, 22}},
      {"RoiAlign", {10, 16, 22}},
      {"ReduceMean", {1, 11, 13, 18}},
      {"ReduceSum", {1, 11, 13}},
      {"ReduceMax", {1, 11, 12, 13, 18, 20}},
      {"ReduceMin", {1, 11, 12, 13, 18, 20}},
      {"ReduceProd", {1, 11, 13, 18}},
      {"ReduceSumSquare", {1, 11, 13, 18}},
      {"ReduceL1", {1, 11, 13, 18}},
      {"ReduceL2", {1, 11, 13, 18}},
      {"ReduceLogSum", {1, 11, 13, 18, 28}},
      {"ReduceLogSumExp", {1, 11, 13, 18, 28}},
      // Unary math and activations (ops_math.cc).
      {"Sin", {7, 22}},
      {"Cos", {7, 22}},
      {"Tan", {7, 22}},
      {"Asin", {7, 22}},
      {"Acos", {7, 22}},
      {"Atan", {7, 22}},
      {"Sinh", {9, 22}},
      {"Cosh", {9, 22}},
      {"Asinh", {9, 22}},
      {"Acosh", {9, 22}},
      {"Atanh", {9, 22}},
      {"Floor", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Ceil", {6, 13}, "the legacy consumed_inputs attribute"},
      {"Round", {11, 22}},
      {"Sign", {9, 13}},
      {"Softplus", {1, 22}},
      {"Softsign", {1, 22}},
      {"Mish", {18, 22}},
      {"HardSwish", {14, 22}},
      {"HardSigmoid", {6, 22}, "the legacy consumed_inputs attribute"},
      {"Elu", {6, 22}, "the legacy consumed_inputs attribute"},
      {"Selu", {6, 22}, "the legacy consumed_inputs attribute"},
      {"Celu", {12, 28}},
      {"ThresholdedRelu", {10, 22}},
      {"Gelu", {20}},
      {"IsInf", {10, 20}},
      {"PRelu", {7, 9, 16}, "the legacy consumed_inputs attribute"},
      {"ArgMax", {1, 11, 12, 13}},
      {"ArgMin", {1, 11, 12, 13}},
      {"Trilu", {14}},
      {"CumSum", {11, 14}},
      {"CumProd", {26}},
      {"Hardmax", {13}, "the input seen as 2-D from axis"},
      // Normalisations and compositions (ops_norm.cc).
      {"RMSNormalization", {23}},
      {"LpNormalization", {1, 22}},
      {"InstanceNormalization", {6, 22}, "the legacy consumed_inputs attribute"},
      {"GroupNormalization", {21}, "scale and bias per group"},
      {"Mean", {8, 13}, "inputs of one shape without broadcasting"},
      {"Swish", {24}},
      {"Shrink", {9}},
      {"LRN", {1, 13}},
      {"DeformConv", {19, 22}},
      // The ai.onnx.ml domain (ops_ml.cc), versions of its own opsets.
      {"ai.onnx.ml.Binarizer", {1}},
      {"ai.onnx.ml.Scaler", {1}},
      {"ai.onnx.ml.Normalizer", {1}},
      {"ai.onnx.ml.LinearRegressor", {1}},
      {"ai.onnx.ml.ArrayFeatureExtractor", {1}},
      {"ai.onnx.ml.LinearClassifier", {1}},
      {"ai.onnx.ml.LabelEncoder", {2, 4}, "string classes (version 1)"},
      {"ai.onnx.ml.TreeEnsembleRegressor", {1, 3}},
      {"ai.onnx.ml.TreeEnsembleClassifier", {1, 3}},
      {"ai.onnx.ml.TreeEnsemble", {5}},
      {"DepthToSpace", {1, 11, 13, 28}},
      {"SpaceToDepth", {1, 13, 28}},
      // Control flow (ops_control.cc); Scan 8 had a batch axis and
      // sequence_lens.
      {"If", {1, 11, 13, 16, 19, 21, 23, 24, 25}},
      {"Loop", {1, 11, 13, 16, 19, 21, 23, 24, 25}},
      {"Scan", {9, 11, 16, 19, 21, 23, 24, 25},
       "a batch axis and sequence_lens"},
      // Attention (ops_attention.cc): 24 adds nonpad_kv_seqlen; 25 the
      // sliding windows.
      {"Attention", {23, 24, 25}},
      // Sequence-model ops (ops_seq.cc).
      {"SwiGLU", {28}},
      {"RotaryEmbedding", {23}},
      {"CausalConvWithState", {27}},
      // Integer and quantised linear algebra (ops_qlinear.cc); 21 adds
      // 16-bit scales to QLinearMatMul.
      {"MatMulInteger", {10}},
      {"QLinearMatMul", {10, 21}},
      {"ConvInteger", {10}},
      {"QLinearConv", {10}},
      {"DynamicQuantizeLinear", {11}},
      {"LinearAttention", {27}},
      {"TensorScatter", {24}},
      // 14 adds layout (batch-major).
      {"RNN", {7, 14, 22}},
      {"GRU", {7, 14, 22}},
      {"LSTM", {7, 14, 22}},
      // Signal and detection ops (ops_signal.cc): DFT 20 moves axis to an
      // input.
      {"DFT", {17, 20}},
      {"STFT", {17}},
      {"MelWeightMatrix", {17}},
      {"HannWindow", {17}},
      {"HammingWindow", {17}},
      {"BlackmanWindow", {17}},
      {"NonMaxSuppression", {10, 11}},
      // Losses (ops_loss.cc).
      {"NegativeLogLikelihoodLoss", {12, 13, 22}},
      {"SoftmaxCrossEntropyLoss", {12, 13}},
      // Bit operations (ops_bitwise.cc). BitShift 11 has only the unsigned
      // types; 28 adds the signed ones.
      {"BitShift", {11, 28}},
      {"BitwiseAnd", {18}},
      {"BitwiseOr", {18}},
      {"BitwiseXor", {18}},
      {"BitwiseNot", {18}},
      {"BitCast", {26}},
      // Selection (ops_select.cc). TopK 1 has k as an attribute; 10 an
      // input; 11 adds largest and sorted.
      {"TopK", {1, 10, 11, 24}},
      {"Unique", {11, 28}},
      {"NonZero", {9, 13}},
      {"Compress", {9, 11, 28}},
      {"OneHot", {9, 11, 28}},
      {"EyeLike", {9, 22}},
      {"ReverseSequence", {10, 28}},
      // Linear algebra (ops_linalg.cc).
      {"Einsum", {12, 28}},
      {"Det", {11, 22}},
      {"MeanVarianceNormalization", {9, 13}},
      {"Scatter", {9, 11}},
      // Quantisation (ops_quant.cc); blocked forms refused by the check.
      {"QuantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28}},
      {"DequantizeLinear", {10, 13, 19, 21, 23, 24, 25, 28}},
  };
  return *table;
}

const absl::flat_hash_map<std::string, const OpHistory*>& HistoryByOp() {
  static const auto* map = [] {
    auto* m = new absl::flat_hash_map<std::string, const OpHistory*>;
    for (const OpHistory& h : kOpHistory) (*m)[h.op] = &h;
    return m;
  }();
  return *map;
}

const absl::flat_hash_map<std::string, const Handled*>& HandledByOp() {
  static const auto* map = [] {
    auto* m = new absl::flat_hash_map<std::string, const Handled*>;
    for (const Handled& h : HandledTable()) (*m)[h.op] = &h;
    return m;
  }();
  return *map;
}

}  // namespace

int OldestImportedOpset() { return 1; }
int NewestKnownOpset() { return kNewestKnownOpset; }

int OnnxOpVersion(absl::string_view op, int opset) {
  auto it = HistoryByOp().find(op);
  if (it == HistoryByOp().end()) return 0;
  int version = 0;
  for (int since : it->second->since) {
    if (since != 0 && since <= opset) version = since;
  }
  return version;
}

const std::vector<int>& HandledOpVersions(absl::string_view op) {
  static const auto* none = new std::vector<int>;
  auto it = HandledByOp().find(op);
  return it == HandledByOp().end() ? *none : it->second->versions;
}

std::string UnhandledVersionReason(absl::string_view op, int opset) {
  const int version = OnnxOpVersion(op, opset);
  if (version == 0) {
    return absl::StrCat("op ", op, " does not exist at opset ", opset);
  }
  auto it = HandledByOp().find(op);
  if (it == HandledByOp().end()) return "op not supported";
  const Handled& h = *it->second;
  if (std::find(h.versions.begin(), h.versions.end(), version) !=
      h.versions.end()) {
    return "";
  }
  std::string why = absl::StrCat("op ", op, " at opset ", opset, " (version ",
                                 version, "): ");
  if (h.missing_before != nullptr && !h.versions.empty() &&
      version < h.versions.front()) {
    absl::StrAppend(&why, h.missing_before, " (before version ",
                    h.versions.front(), ") not supported; ");
  }
  absl::StrAppend(&why, "sluice implements versions ",
                  absl::StrJoin(h.versions, ", "));
  return why;
}

}  // namespace sluice
