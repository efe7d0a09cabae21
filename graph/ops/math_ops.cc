// Schemas of the elementwise ops, MatMul and the reductions (docs/ops.md:
// Elementwise, Linear algebra, Reductions).
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/elementwise_program.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

absl::Status GeluFn(InferenceContext& c) {
  const AttrValue* approximate = c.attrs().Find("approximate");
  if (approximate == nullptr || approximate->value_case() != AttrValue::kS) {
    return absl::InvalidArgumentError("approximate must be a string");
  }
  const std::string& mode = approximate->s();
  if (mode != "none" && mode != "tanh") {
    return absl::InvalidArgumentError(absl::StrCat(
        "approximate must be \"none\" or \"tanh\", got \"", mode, "\""));
  }
  return UnchangedShapeFn(c);
}

// FusedElementwise: a valid program; the output is the broadcast of all
// inputs (every instruction broadcasts, and every input reaches the result).
absl::Status FusedElementwiseFn(InferenceContext& c) {
  RETURN_IF_ERROR(ParseElementwiseProgram(c.attrs(), c.num_inputs()).status());
  return BroadcastShapeFn(c);
}

absl::Status MatMulFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool ta, c.attrs().GetBool("transpose_a"));
  ASSIGN_OR_RETURN(bool tb, c.attrs().GetBool("transpose_b"));
  ASSIGN_OR_RETURN(Shape out,
                   MatMulShape(c.input_shape(0), c.input_shape(1), ta, tb));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// FusedMatMul: a [..., M, K] x b [K, N] (b [N, K] with transpose_b), then
// args = [bias [N]] or [bias, residual of the output's shape].
absl::Status FusedMatMulFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool tb, c.attrs().GetBool("transpose_b"));
  ASSIGN_OR_RETURN(std::string activation, c.attrs().GetString("activation"));
  if (activation != "none" && activation != "relu" &&
      activation != "gelu_tanh") {
    return absl::InvalidArgumentError(absl::StrCat(
        "activation must be \"none\", \"relu\" or \"gelu_tanh\", got \"",
        activation, "\""));
  }
  const Shape& b = c.input_shape(1);
  if (!b.unknown_rank() && b.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedMatMul's b must be a matrix, got ", b.DebugString()));
  }
  ASSIGN_OR_RETURN(Shape out,
                   MatMulShape(c.input_shape(0), b, /*transpose_a=*/false, tb));
  const int args = c.num_inputs() - 2;
  if (args != 1 && args != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedMatMul takes a bias and at most one residual after a and b, "
        "got ", args, " more inputs"));
  }
  const int64_t n = b.unknown_rank() ? kUnknownDim : b.dim(tb ? 0 : 1);
  if (!c.input_shape(2).IsCompatibleWith(Shape({n}))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bias ", c.input_shape(2).DebugString(), " must have shape [",
        n == kUnknownDim ? std::string("N") : absl::StrCat(n),
        "] (one value per output column)"));
  }
  if (args == 2 && !c.input_shape(3).IsCompatibleWith(out)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "residual ", c.input_shape(3).DebugString(),
        " must have the output's shape ", out.DebugString()));
  }
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// Whether any reduced dimension is known to be 0.
absl::StatusOr<bool> ReducesEmpty(const Shape& in,
                                  const std::vector<int64_t>& axes) {
  if (in.unknown_rank()) return false;
  if (axes.empty()) {
    for (int64_t d : in.dims()) {
      if (d == 0) return true;
    }
    return false;
  }
  ASSIGN_OR_RETURN(std::vector<int> norm, NormalizeAxes(axes, in.rank()));
  for (int a : norm) {
    if (in.dim(a) == 0) return true;
  }
  return false;
}

// kind: 0 sum, 1 mean, 2 max, min or prod (an empty reduction gives the
// identity).
absl::Status ReduceFn(InferenceContext& c, int kind) {
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.attrs().GetIntList("axes"));
  ASSIGN_OR_RETURN(bool keepdims, c.attrs().GetBool("keepdims"));
  const Shape& in = c.input_shape(0);
  ASSIGN_OR_RETURN(Shape out, ReduceShape(in, axes, keepdims));
  ASSIGN_OR_RETURN(bool empty, ReducesEmpty(in, axes));
  if (empty && kind == 1 && !IsFloatingPoint(c.input_dtype(0))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "integer ReduceMean over an empty dimension of ", in.DebugString()));
  }
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

void Unary(OpRegistry* r, const std::string& op,
           const std::vector<DataType>& types, const std::string& doc) {
  RegisterOrDie(r, OpDefBuilder(op)
                       .Input("x", "T")
                       .Output("y", "T")
                       .TypeAttr("T", types)
                       .ShapeFn(UnchangedShapeFn)
                       .Doc(doc)
                       .Build());
}

// A float unary op with float attributes (name, default), e.g. Elu's alpha.
void ParamUnary(OpRegistry* r, const std::string& op,
                const std::vector<std::pair<std::string, float>>& attrs,
                const std::string& doc) {
  OpDefBuilder b(op);
  b.Input("x", "T").Output("y", "T").TypeAttr("T", kFloatTypes);
  for (const auto& [name, value] : attrs) {
    b.Attr(name, AttrType::kFloat, MakeFloatAttr(value));
  }
  RegisterOrDie(r, b.ShapeFn(UnchangedShapeFn).Doc(doc).Build());
}

void Binary(OpRegistry* r, const std::string& op,
            const std::vector<DataType>& types, const std::string& out_type,
            const std::string& doc) {
  RegisterOrDie(r, OpDefBuilder(op)
                       .Input("x", "T")
                       .Input("y", "T")
                       .Output("z", out_type)
                       .TypeAttr("T", types)
                       .ShapeFn(BroadcastShapeFn)
                       .Doc(doc + " NumPy broadcasting.")
                       .Build());
}

void Reduce(OpRegistry* r, const std::string& op, int kind,
            const std::string& doc,
            const std::vector<DataType>& types = kNumericTypes) {
  AttrValue empty;
  empty.mutable_list();
  RegisterOrDie(r, OpDefBuilder(op)
                       .Input("input", "T")
                       .Output("output", "T")
                       .TypeAttr("T", types)
                       .Attr("axes", AttrType::kListInt, empty)
                       .Attr("keepdims", AttrType::kBool, MakeBoolAttr(false))
                       .ShapeFn([kind](InferenceContext& c) {
                         return ReduceFn(c, kind);
                       })
                       .Doc(doc + " over axes (all when empty).")
                       .Build());
}

absl::Status ArgReduceFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t axis, c.attrs().GetInt("axis"));
  ASSIGN_OR_RETURN(bool keepdims, c.attrs().GetBool("keepdims"));
  const Shape& in = c.input_shape(0);
  if (!in.unknown_rank()) {
    ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, in.rank()));
    if (in.dim(a) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ArgMax/ArgMin over the empty dimension ", a, " of ",
          in.DebugString()));
    }
  }
  ASSIGN_OR_RETURN(Shape out, ReduceShape(in, {axis}, keepdims));
  c.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

void ArgReduce(OpRegistry* r, const std::string& op, const std::string& doc) {
  RegisterOrDie(r, OpDefBuilder(op)
                       .Input("input", "T")
                       .Output("output", "int64")
                       .TypeAttr("T", kNumericTypes)
                       .Attr("axis", AttrType::kInt, MakeIntAttr(0))
                       .Attr("keepdims", AttrType::kBool, MakeBoolAttr(true))
                       .Attr("select_last_index", AttrType::kBool,
                             MakeBoolAttr(false))
                       .ShapeFn(ArgReduceFn)
                       .Doc(doc)
                       .Build());
}

}  // namespace

void RegisterMathOps(OpRegistry* r) {
  Unary(r, "Neg", kNumericTypes, "-x.");
  Unary(r, "Abs", kNumericTypes, "|x|.");
  Unary(r, "Relu", kNumericTypes, "max(x, 0).");
  Unary(r, "Exp", kFloatTypes, "e^x.");
  Unary(r, "Log", kFloatTypes, "ln x.");
  Unary(r, "Sqrt", kFloatTypes, "sqrt(x).");
  Unary(r, "Rsqrt", kFloatTypes, "1 / sqrt(x).");
  Unary(r, "Tanh", kFloatTypes, "tanh(x).");
  Unary(r, "Sigmoid", kFloatTypes, "1 / (1 + e^-x).");
  Unary(r, "Erf", kFloatTypes, "The error function.");
  Unary(r, "Sin", kFloatTypes, "sin x.");
  Unary(r, "Cos", kFloatTypes, "cos x.");
  Unary(r, "Tan", kFloatTypes, "tan x.");
  Unary(r, "Asin", kFloatTypes, "arcsin x.");
  Unary(r, "Acos", kFloatTypes, "arccos x.");
  Unary(r, "Atan", kFloatTypes, "arctan x.");
  Unary(r, "Sinh", kFloatTypes, "sinh x.");
  Unary(r, "Cosh", kFloatTypes, "cosh x.");
  Unary(r, "Asinh", kFloatTypes, "arsinh x.");
  Unary(r, "Acosh", kFloatTypes, "arcosh x.");
  Unary(r, "Atanh", kFloatTypes, "artanh x.");
  Unary(r, "Floor", kFloatTypes, "The largest integer <= x.");
  Unary(r, "Ceil", kFloatTypes, "The smallest integer >= x.");
  Unary(r, "Round", kFloatTypes, "The nearest integer, halves to even.");
  Unary(r, "Sign", kNumericTypes, "-1, 0 or 1 as x is negative, 0 or "
        "positive.");
  Unary(r, "Softplus", kFloatTypes, "ln(1 + e^x), without overflow.");
  Unary(r, "Softsign", kFloatTypes, "x / (1 + |x|).");
  Unary(r, "Mish", kFloatTypes, "x tanh(softplus(x)).");
  Unary(r, "HardSwish", kFloatTypes, "x max(0, min(1, x / 6 + 1/2)).");
  ParamUnary(r, "HardSigmoid", {{"alpha", 0.2f}, {"beta", 0.5f}},
             "max(0, min(1, alpha x + beta)).");
  ParamUnary(r, "Elu", {{"alpha", 1.0f}},
             "x for x >= 0, alpha (e^x - 1) below.");
  ParamUnary(r, "Selu", {{"alpha", 1.67326319217681884765625f},
                         {"gamma", 1.05070102214813232421875f}},
             "gamma x for x > 0, gamma alpha (e^x - 1) otherwise.");
  ParamUnary(r, "Celu", {{"alpha", 1.0f}},
             "max(0, x) + min(0, alpha (e^(x / alpha) - 1)).");
  ParamUnary(r, "ThresholdedRelu", {{"alpha", 1.0f}},
             "x for x > alpha, 0 otherwise.");
  RegisterOrDie(r, OpDefBuilder("Gelu")
                       .Input("x", "T")
                       .Output("y", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("approximate", AttrType::kString,
                             MakeStringAttr("none"))
                       .ShapeFn(GeluFn)
                       .Doc("GELU: exact erf form (\"none\") or the tanh "
                            "approximation (\"tanh\").")
                       .Build());

  RegisterOrDie(
      r, OpDefBuilder("FusedElementwise")
             .InputList("inputs", "T", "N")
             .Output("y", "T")
             .TypeAttr("T", kFloatTypes)
             .Attr("N", AttrType::kInt)
             .Attr("ops", AttrType::kListString)
             .Attr("operands", AttrType::kListInt)
             .ShapeFn(FusedElementwiseFn)
             .Doc("A chain of elementwise ops as one kernel (made by the "
                  "optimizer's elementwise_fusion): instruction i applies "
                  "ops[i] (Neg, Abs, Relu, Exp, Log, Sqrt, Rsqrt, Tanh, "
                  "Sigmoid, Erf, Add, Sub, Mul, Div, Pow, Maximum, Minimum) "
                  "to operands[2i] and operands[2i+1] (k < N: input k; "
                  "otherwise the result of instruction k - N; -1: none), "
                  "inputs broadcast to the output, the broadcast of all "
                  "inputs; y is the last result. 16-bit types compute in "
                  "float32.")
             .Build());
  Binary(r, "Add", kNumericTypes, "T", "x + y.");
  Binary(r, "Sub", kNumericTypes, "T", "x - y.");
  Binary(r, "Mul", kNumericTypes, "T", "x * y.");
  Binary(r, "Div", kNumericTypes, "T",
         "x / y; integers truncate toward zero and y = 0 is an error.");
  Binary(r, "Pow", kNumericTypes, "T", "x ^ y.");
  Binary(r, "Mod", kNumericTypes, "T",
         "Floor modulo: the remainder has y's sign (Python's %); integer "
         "y = 0 is an error.");
  Binary(r, "FMod", kNumericTypes, "T",
         "Truncated modulo: the remainder has x's sign (C's fmod); integer "
         "y = 0 is an error.");
  Binary(r, "Maximum", kNumericTypes, "T", "max(x, y).");
  Binary(r, "Minimum", kNumericTypes, "T", "min(x, y).");
  Binary(r, "Equal", kAllTypes, "bool", "x == y.");
  Binary(r, "Less", kNumericTypes, "bool", "x < y.");
  Binary(r, "Greater", kNumericTypes, "bool", "x > y.");
  RegisterOrDie(r, OpDefBuilder("Where")
                       .Input("condition", "bool")
                       .Input("x", "T")
                       .Input("y", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .ShapeFn(BroadcastShapeFn)
                       .Doc("condition ? x : y, all three broadcast.")
                       .Build());

  RegisterOrDie(r, OpDefBuilder("MatMul")
                       .Input("a", "T")
                       .Input("b", "T")
                       .Output("product", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("transpose_a", AttrType::kBool, MakeBoolAttr(false))
                       .Attr("transpose_b", AttrType::kBool, MakeBoolAttr(false))
                       .ShapeFn(MatMulFn)
                       .Doc("Batched matrix product over the last two dims; "
                            "batch dims broadcast.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("FusedMatMul")
                       .Input("a", "T")
                       .Input("b", "T")
                       .InputList("args", "T", "num_args")
                       .Output("product", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("num_args", AttrType::kInt)
                       .Attr("transpose_b", AttrType::kBool, MakeBoolAttr(false))
                       .Attr("activation", AttrType::kString,
                             MakeStringAttr("none"))
                       .ShapeFn(FusedMatMulFn)
                       .Doc("activation(a x b + bias[n] (+ residual)): a "
                            "[..., M, K], b the matrix [K, N] ([N, K] with "
                            "transpose_b); args are the bias [N] and "
                            "optionally a residual of the output's shape; "
                            "activation \"none\", \"relu\" or \"gelu_tanh\" "
                            "(Gelu's tanh approximation), applied last. The "
                            "optimizer's matmul_bias_fusion makes it.")
                       .Build());

  Reduce(r, "ReduceSum", 0, "Sum");
  Reduce(r, "ReduceMean", 1, "Mean");
  std::vector<DataType> with_bool = kNumericTypes;
  with_bool.push_back(DT_BOOL);
  Reduce(r, "ReduceMax", 2, "Maximum (-inf or the lowest value when empty; "
         "any for bool)", with_bool);
  Reduce(r, "ReduceMin", 2, "Minimum (+inf or the highest value when empty; "
         "all for bool)", with_bool);
  Reduce(r, "ReduceProd", 2, "Product");
  RegisterOrDie(r, OpDefBuilder("CumSum")
                       .Input("x", "T")
                       .Input("axis", "Tidx")
                       .Output("y", "T")
                       .TypeAttr("T", kNumericTypes)
                       .TypeAttr("Tidx", kIndexTypes)
                       .Attr("exclusive", AttrType::kBool, MakeBoolAttr(false))
                       .Attr("reverse", AttrType::kBool, MakeBoolAttr(false))
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("Running sums of x along the axis given by the "
                            "scalar input (exclusive: without the element "
                            "itself; reverse: from the end).")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("CumProd")
                       .Input("x", "T")
                       .Input("axis", "Tidx")
                       .Output("y", "T")
                       .TypeAttr("T", kNumericTypes)
                       .TypeAttr("Tidx", kIndexTypes)
                       .Attr("exclusive", AttrType::kBool, MakeBoolAttr(false))
                       .Attr("reverse", AttrType::kBool, MakeBoolAttr(false))
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("Running products of x along the axis given by "
                            "the scalar input (exclusive: without the element "
                            "itself; reverse: from the end).")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Dropout")
                       .Input("x", "T")
                       .Input("ratio", "R")
                       .Input("training_mode", "bool")
                       .Output("y", "T")
                       .Output("mask", "bool")
                       .TypeAttr("T", kAllTypes)
                       .TypeAttr("R", kFloatTypes)
                       .ShapeFn([](InferenceContext& c) {
                         c.set_output_shape(0, c.input_shape(0));
                         c.set_output_shape(1, c.input_shape(0));
                         return absl::OkStatus();
                       })
                       .Doc("Inference dropout: y = x and a mask of all "
                            "true. The scalar inputs ratio and training_mode "
                            "are checked at run time: training mode with a "
                            "nonzero ratio is an error.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Trilu")
                       .Input("x", "T")
                       .Input("k", "int64")
                       .Output("y", "T")
                       .TypeAttr("T", kAllTypes)
                       .Attr("upper", AttrType::kBool, MakeBoolAttr(true))
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("x with the elements below (upper) or above "
                            "(lower) diagonal k of each innermost matrix "
                            "zeroed; k is a scalar input.")
                       .Build());
  ArgReduce(r, "ArgMax",
            "The int64 index of the largest element along axis (the first "
            "on ties; the last with select_last_index).");
  ArgReduce(r, "ArgMin",
            "The int64 index of the smallest element along axis (the first "
            "on ties; the last with select_last_index).");
}

}  // namespace sluice
