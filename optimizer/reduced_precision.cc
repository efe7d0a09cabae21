// reduced_precision: runs a float32 model in float16 or bfloat16
// (RuntimeConfig.precision), as PyTorch's autocast and onnxruntime's float16
// converter do, but once, on the graph, before placement.
//
// A node runs in the reduced type when its op is on the list below (ops
// whose kernels take float16 and bfloat16 and, where they reduce, accumulate
// in float32: MatMul, Einsum and the convolutions through cuBLAS / cuDNN with
// float32 compute, Softmax, LayerNorm, RMSNorm and the mean and max
// reductions in their float32 registers) and every float32 value it reads and writes is
// bound to one of its type attributes. Those values become the reduced type
// and the attributes say so. Everything else stays float32: ops that lose
// range or precision in 16 bits (Exp, Log, Pow, ReduceSum, ReduceProd,
// CumSum, ...), ops not on the list, and float32 values with a fixed dtype.
// Where a value crosses between the two, a Cast goes in (one per value,
// however many readers); a float32 Const read in the reduced type becomes a
// reduced Const (cast once here, so weights are converted at load, not per
// step; float16 clamps finite values to +-65504, as onnxruntime's converter
// does, so a mask of -3.4e38 stays finite and 0 * mask stays 0). Graph
// outputs stay in the model's dtype: an output the reduced graph computes in
// 16 bits is cast back, and the graph output names the Cast.
//
// Names: a converted node keeps its name and line; the Casts and Consts
// added are named after the value they convert ("fc/w/float16",
// "x/to_float16", "logits/to_float32").
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "graph/elementwise_program.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// Ops that run in the reduced type. Cast is handled apart (it is reduced
// when it makes a float32 value from another dtype).
const absl::flat_hash_set<std::string>& ReducibleOps() {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      // Products: tensor cores, float32 accumulation.
      "MatMul", "Einsum", "Conv2D", "FusedConv2D", "ConvND", "ConvTranspose",
      "FusedMatMul",
      // Elementwise, one rounding each.
      "Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "Neg", "Abs", "Relu",
      "Sqrt", "Rsqrt", "Tanh", "Sigmoid", "Erf", "Gelu", "Elu", "Celu", "Selu",
      "HardSwish", "HardSigmoid", "Softplus", "Softsign", "Mish",
      "ThresholdedRelu", "Where", "Dropout",
      // Computes in float32 registers, one rounding at the end; only
      // without Exp, Log or Pow (FusedProgramKeepsRange).
      "FusedElementwise",
      // Reductions whose kernels accumulate in float32.
      "Softmax", "LayerNorm", "RMSNorm", "FusedAttention", "MaxPool",
      "AvgPool", "GlobalAvgPool", "PoolND",
      "ReduceMean", "ReduceMax", "ReduceMin",
      // Data movement.
      "Identity", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather",
      "Expand", "Squeeze", "Unsqueeze", "Tile", "Pad", "DynamicReshape",
      "DynamicExpand", "DynamicSqueeze", "DynamicUnsqueeze", "DynamicSlice",
      "DynamicSplit"};
  return *ops;
}

// Whether a FusedElementwise node's program holds none of the ops kept in
// float32 for their range (Exp, Log, Pow): only then may its inputs and
// output be 16-bit (it computes in float32 in between).
bool FusedProgramKeepsRange(const Node& n) {
  absl::StatusOr<ElementwiseProgram> p =
      ParseElementwiseProgram(n.attrs(), n.num_inputs());
  if (!p.ok()) return false;
  for (const ElementwiseInstruction& ins : p->instructions) {
    if (NeedsFloat32Range(ins.op)) return false;
  }
  return true;
}

// The ArgDef of each of `n`'s inputs (outputs with `outputs`), in order.
std::vector<const ArgDef*> ArgsOf(const Node& n, bool outputs) {
  std::vector<const ArgDef*> args;
  const std::vector<ArgDef>& defs =
      outputs ? n.op_def().outputs : n.op_def().inputs;
  for (const ArgDef& a : defs) {
    int64_t count = 1;
    if (!a.number_attr.empty()) {
      count = n.attrs().GetInt(a.number_attr).value_or(0);
    } else if (!a.type_list_attr.empty()) {
      return {};  // mixed dtypes (control flow): never reduced
    }
    for (int64_t i = 0; i < count; ++i) args.push_back(&a);
  }
  return args;
}

// Whether the value an arg carries is float32 through a type attribute
// (so the node can carry it in the reduced type instead).
bool Converts(const ArgDef* arg, DataType dtype) {
  return arg != nullptr && !arg->type_attr.empty() && dtype == DT_FLOAT;
}

bool IsReducible(const Node& n, DataType target) {
  if (n.op() == "Cast") {
    return n.output_dtype(0) == DT_FLOAT && n.input_dtype(0) != DT_FLOAT;
  }
  if (!ReducibleOps().contains(n.op()) || HasSubgraphs(n)) return false;
  if (n.op() == "FusedElementwise" && !FusedProgramKeepsRange(n)) return false;
  const std::vector<const ArgDef*> ins = ArgsOf(n, false);
  const std::vector<const ArgDef*> outs = ArgsOf(n, true);
  if (static_cast<int>(ins.size()) != n.num_inputs() ||
      static_cast<int>(outs.size()) != n.num_outputs()) {
    return false;
  }
  bool any = false;
  for (int p = 0; p < n.num_outputs(); ++p) {
    if (n.output_dtype(p) == DT_FLOAT && !Converts(outs[p], DT_FLOAT)) {
      return false;  // a fixed float32 output
    }
    any = any || Converts(outs[p], n.output_dtype(p));
  }
  if (!any) return false;
  // Every float32 type attribute must allow the reduced type.
  for (const AttrDef& a : n.op_def().attrs) {
    if (a.type != AttrType::kType) continue;
    if (n.attrs().GetType(a.name).value_or(DT_INVALID) != DT_FLOAT) continue;
    if (!a.allowed_types.empty() &&
        std::find(a.allowed_types.begin(), a.allowed_types.end(), target) ==
            a.allowed_types.end()) {
      return false;
    }
  }
  return true;
}

// `value` (float32, on the host) in `target`; float16 clamps finite values
// to its range.
absl::StatusOr<Tensor> ReducedConst(const Tensor& value, DataType target) {
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(target, value.shape()));
  const float* src = value.data<float>();
  const int64_t n = value.NumElements();
  if (target == DT_FLOAT16) {
    constexpr float kMax = 65504.0f;
    half* dst = t.data<half>();
    for (int64_t i = 0; i < n; ++i) {
      float v = src[i];
      if (std::isfinite(v)) v = std::min(kMax, std::max(-kMax, v));
      dst[i] = half(v);
    }
  } else {
    bfloat16* dst = t.data<bfloat16>();
    for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16(src[i]);
  }
  return t;
}

class ReducedPrecisionPass final : public Pass {
 public:
  std::string_view name() const override { return "reduced_precision"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions& options) const override {
    PassOutput out;
    const DataType target = options.reduced_precision;
    if (target != DT_FLOAT16 && target != DT_BFLOAT16) return out;
    const std::string tname = DataTypeName(target);
    std::vector<char> reduced(g.num_nodes(), 0);
    int count = 0;
    for (const Node& n : g.nodes()) {
      reduced[n.id()] = IsReducible(n, target);
      count += reduced[n.id()];
    }
    if (count == 0) return out;
    // Whether `ref` is carried in the reduced type.
    auto converted = [&](TensorRef ref) {
      if (!reduced[ref.node]) return false;
      const Node& p = g.node(ref.node);
      return Converts(ArgsOf(p, true)[ref.port], p.output_dtype(ref.port));
    };
    GraphRewriter rw(g);
    absl::flat_hash_map<TensorRef, std::string> down, up;
    int casts = 0, consts = 0;
    // The reduced version of float32 value `ref`, made before node `before`.
    auto reduced_of = [&](TensorRef ref, int before) -> absl::StatusOr<std::string> {
      if (auto it = down.find(ref); it != down.end()) return it->second;
      const Node& p = g.node(ref.node);
      const Tensor* value = ConstValueOf(g, ref);
      std::string name;
      if (value != nullptr && value->on_host() && value->dtype() == DT_FLOAT) {
        name = rw.UniqueName(absl::StrCat(p.name(), "/", tname));
        ASSIGN_OR_RETURN(Tensor v, ReducedConst(*value, target));
        rw.Add(ref.node, ConstNode(name, std::move(v), p.requested_device(),
                                   p.source_line()));
        ++consts;
      } else {
        name = rw.UniqueName(absl::StrCat(
            p.name(), ref.port == 0 ? "" : absl::StrCat("_", ref.port),
            "/to_", tname));
        NewNode cast;
        cast.name = name;
        cast.op = "Cast";
        cast.attrs["SrcT"] = MakeTypeAttr(DT_FLOAT);
        cast.attrs["DstT"] = MakeTypeAttr(target);
        cast.inputs.push_back(ref);
        cast.device = g.node(before).requested_device();
        cast.source_line = p.source_line();
        rw.Add(before, std::move(cast));
        ++casts;
      }
      down[ref] = name;
      return name;
    };
    // The float32 version of reduced value `ref`.
    auto float_of = [&](TensorRef ref, int before) {
      if (auto it = up.find(ref); it != up.end()) return it->second;
      const Node& p = g.node(ref.node);
      NewNode cast;
      cast.name = rw.UniqueName(absl::StrCat(
          p.name(), ref.port == 0 ? "" : absl::StrCat("_", ref.port),
          "/to_float32"));
      cast.op = "Cast";
      cast.attrs["SrcT"] = MakeTypeAttr(target);
      cast.attrs["DstT"] = MakeTypeAttr(DT_FLOAT);
      cast.inputs.push_back(ref);
      cast.device = p.requested_device();
      cast.source_line = p.source_line();
      std::string name = cast.name;
      rw.Add(before, std::move(cast));
      ++casts;
      up[ref] = name;
      return name;
    };
    for (int id : g.topological_order()) {
      const Node& n = g.node(id);
      const bool r = reduced[id];
      const std::vector<const ArgDef*> ins = ArgsOf(n, false);
      bool touched = r;
      NewNode copy;
      for (int i = 0; i < n.num_inputs(); ++i) {
        const TensorRef in = n.input(i);
        const bool wants_reduced =
            r && i < static_cast<int>(ins.size()) &&
            Converts(ins[i], n.input_dtype(i));
        if (wants_reduced && !converted(in)) {
          ASSIGN_OR_RETURN(std::string name, reduced_of(in, id));
          copy.inputs.push_back(name);
        } else if (!wants_reduced && converted(in)) {
          copy.inputs.push_back(float_of(in, id));
          touched = true;
        } else {
          copy.inputs.push_back(in);
        }
      }
      if (!touched) continue;
      copy.name = n.name();
      copy.op = n.op();
      copy.device = n.requested_device();
      copy.source_line = n.source_line();
      for (const auto& [k, v] : g.def().node(id).attr()) copy.attrs[k] = v;
      if (r) {
        for (const AttrDef& a : n.op_def().attrs) {
          if (a.type == AttrType::kType &&
              n.attrs().GetType(a.name).value_or(DT_INVALID) == DT_FLOAT) {
            copy.attrs[a.name] = MakeTypeAttr(target);
          }
        }
      }
      rw.Replace(id, std::move(copy));
    }
    for (int k = 0; k < static_cast<int>(g.outputs().size()); ++k) {
      const TensorRef ref = g.outputs()[k].tensor;
      if (!converted(ref)) continue;
      rw.SetGraphOutput(k, float_of(ref, ref.node));
    }
    out.changes.push_back(absl::StrCat(
        count, " of ", g.num_nodes(), " nodes run in ", tname, "; ", consts,
        " float32 constants converted, ", casts, " casts added"));
    for (const Node& n : g.nodes()) {
      if (!reduced[n.id()]) continue;
      out.changes.push_back(absl::StrCat("'", n.name(), "' (", n.op(), ") in ",
                                         tname));
    }
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeReducedPrecisionPass() {
  return std::make_unique<ReducedPrecisionPass>();
}

}  // namespace sluice
