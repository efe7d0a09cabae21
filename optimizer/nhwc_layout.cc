// nhwc_layout: runs a convolutional model channels last (NHWC) between its
// convolutions, as grappler's layout optimizer and onnxruntime's NHWC
// transformer do, when PassOptions.conv_layout asks for it (docs/design.md
// decision 31). cuDNN's tensor-core engines read and write NHWC; given
// NCHW they convert inside every call.
//
// Each rank-4 float Conv2D, FusedConv2D, MaxPool and AvgPool in NCHW whose
// input has a known channel count becomes its data_format "NHWC" form:
// its activation inputs (input, FusedConv2D's side) are read channels
// last, a Const filter is replaced by a Const transposed [O,I,KH,KW] ->
// [O,KH,KW,I] here, once (a computed filter gets a Transpose node). The
// NHWC form of a tensor is made once and shared by every reader: a graph
// input is transposed once. Layout-agnostic readers of NHWC values go
// channels last too instead of taking the value back to NCHW: elementwise
// ops (graph/elementwise_program.h's set, and the one-input activations
// of kLayoutFreeActivations: HardSwish, HardSigmoid...) whose every input is an NHWC
// value of rank 4, a Const (a scalar is kept; a broadcast Const such as
// a bias [1, C, 1, 1] or [C, 1, 1] is made rank 4 and transposed: [1, 1,
// 1, C]) or a computed [N, C, 1, 1] value (a squeeze-and-excitation gate,
// transposed: a copy of N*C values), Concat on the channel axis (axis 3 instead of 1), ReduceMean
// over H and W (over 1, 2 instead; with keepdims false its [N, C] is the
// value itself), GlobalAvgPool (a ReduceMean over 1, 2 keeping dims), and
// a Transpose (the two permutations composed). A model's own
// Transpose(0, 3, 1, 2) of any rank-4 value has that value as its NHWC
// form (ConvNeXt: permute to channels last, LayerNorm and Linear layers,
// permute back, residual Add), so its converted readers need no Transpose.
// Where an NCHW reader, a
// graph output or a fetch by name needs the value, a Transpose(0, 3, 1, 2)
// (a Reshape for a [N, 1, 1, C] value) named as the original node gives
// it, so names keep meaning what the file says; an NHWC node is named
// "<name>/nhwc". Nodes with control edges, and readers the rules above do
// not cover, are left as they are (between transposes).
#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/data_format.h"
#include "graph/elementwise_program.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// An input of a new node: an old tensor, or a new node's name.
using Ref = std::variant<TensorRef, std::string>;

// Dim i of the result is dim perm[i] of the input.
using Perm = std::array<int64_t, 4>;
constexpr Perm kToNhwc = {0, 2, 3, 1};
constexpr Perm kToNchw = {0, 3, 1, 2};

AttrValue PermAttr(const Perm& p) {
  return MakeIntListAttr(std::vector<int64_t>(p.begin(), p.end()));
}

// dst[a][b][c][d] = src[a * st[0] + b * st[1] + c * st[2] + d * st[3]]
// over the output dims `o`, for elements of type T (by size: any dtype).
template <typename T>
void Permute4(const T* src, T* dst, const int64_t o[4], const int64_t st[4]) {
  for (int64_t a = 0; a < o[0]; ++a) {
    for (int64_t b = 0; b < o[1]; ++b) {
      for (int64_t c = 0; c < o[2]; ++c) {
        const T* from = src + a * st[0] + b * st[1] + c * st[2];
        for (int64_t d = 0; d < o[3]; ++d) *dst++ = from[d * st[3]];
      }
    }
  }
}

// A rank-4 host tensor's value permuted (any dtype, by element size): one
// typed copy per element, so that a filter (OIHW -> OHWI) is permuted at
// about memory speed rather than a memcpy call per element.
// Where the permutation moves only axes of size 1 (a 1 x 1 filter's OIHW ->
// OHWI), the bytes are already in the new order: the result is the same
// buffer under the new shape, no copy and no new memory.
absl::StatusOr<Tensor> PermuteValue(const Tensor& t, const Perm& perm) {
  const Shape& s = t.shape();
  const Shape o({s.dim(perm[0]), s.dim(perm[1]), s.dim(perm[2]), s.dim(perm[3])});
  int last = -1;  // the input axis of the last output axis above size 1
  bool in_order = true;
  for (int a : perm) {
    if (s.dim(a) == 1) continue;
    in_order = in_order && a > last;
    last = a;
  }
  if (in_order) return t.Reshaped(o);
  ASSIGN_OR_RETURN(Tensor out, Tensor::Create(t.dtype(), o));
  int64_t stride[4];
  stride[3] = 1;
  for (int d = 2; d >= 0; --d) stride[d] = stride[d + 1] * s.dim(d + 1);
  const int64_t dims[4] = {o.dim(0), o.dim(1), o.dim(2), o.dim(3)};
  const int64_t st[4] = {stride[perm[0]], stride[perm[1]], stride[perm[2]],
                         stride[perm[3]]};
  const void* src = t.raw_data();
  void* dst = out.raw_data();
  switch (DataTypeSize(t.dtype())) {
    case 1:
      Permute4(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst),
               dims, st);
      break;
    case 2:
      Permute4(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst),
               dims, st);
      break;
    case 4:
      Permute4(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst),
               dims, st);
      break;
    case 8:
      Permute4(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst),
               dims, st);
      break;
    case 16: {
      struct Bytes16 {
        uint64_t lo, hi;
      };
      Permute4(static_cast<const Bytes16*>(src), static_cast<Bytes16*>(dst),
               dims, st);
      break;
    }
    default:
      return absl::UnimplementedError(absl::StrCat(
          "cannot permute a constant of ", DataTypeName(t.dtype())));
  }
  return out;
}

bool IsRank4(const Shape& s) { return !s.unknown_rank() && s.rank() == 4; }

// The Transposes something reads: a consumer or a graph output (the dead
// ones dead_nodes drops later are not counted).
int LiveTransposes(const Graph& g) {
  int k = 0;
  for (const Node& n : g.nodes()) {
    if (n.op() != "Transpose") continue;
    bool read = !g.consumers(n.id(), 0).empty();
    for (const GraphOutput& o : g.outputs()) read = read || o.tensor.node == n.id();
    k += read;
  }
  return k;
}

// One-input ops outside elementwise programs that map each element on its
// own, whatever the layout (their attributes are scalars): MobileNetV3's
// HardSwish and HardSigmoid would otherwise sit between two Transposes.
constexpr std::array<std::string_view, 10> kLayoutFreeActivations = {
    "HardSwish", "HardSigmoid", "Elu",  "Selu", "Celu",
    "Softplus",  "Softsign",    "Mish", "Gelu", "ThresholdedRelu"};

bool IsLayoutFreeActivation(const Node& n) {
  return n.num_inputs() == 1 &&
         std::find(kLayoutFreeActivations.begin(),
                   kLayoutFreeActivations.end(),
                   n.op()) != kLayoutFreeActivations.end();
}

class Rewrite {
 public:
  Rewrite(const Graph& g, GraphRewriter* rw, std::vector<std::string>* changes)
      : g_(g), rw_(*rw), changes_(*changes) {}

  absl::Status Run() {
    for (int id : g_.topological_order()) {
      const Node& n = g_.node(id);
      if (!n.control_inputs().empty() || !g_.control_consumers(id).empty() ||
          n.num_outputs() != 1) {
        continue;
      }
      RETURN_IF_ERROR(Visit(n));
    }
    return Finish();
  }

 private:
  absl::Status Visit(const Node& n) {
    const std::string& op = n.op();
    if (op == "Conv2D" || op == "FusedConv2D" || op == "MaxPool" ||
        op == "AvgPool") {
      return WindowOp(n);
    }
    if (ElementwiseOpcodeOf(op).has_value() || IsLayoutFreeActivation(n)) {
      return Elementwise(n);
    }
    if (op == "Concat") return Concat(n);
    if (op == "ReduceMean" || op == "GlobalAvgPool") return Mean(n);
    if (op == "Transpose") return TransposeOf(n);
    return absl::OkStatus();
  }

  // The NHWC form of rank-4 tensor `ref`, made before node `before` the
  // first time it is asked for: a Const's value transposed, otherwise a
  // Transpose node.
  absl::StatusOr<Ref> Nhwc(TensorRef ref, int before) {
    auto it = nhwc_.find(ref);
    if (it != nhwc_.end()) return it->second;
    const Node& p = g_.node(ref.node);
    const std::string base =
        ref.port == 0 ? p.name() : absl::StrCat(p.name(), "_", ref.port);
    const Tensor* value = ConstValueOf(g_, ref);
    NewNode node;
    if (value != nullptr && value->on_host()) {
      ASSIGN_OR_RETURN(Tensor t, PermuteValue(*value, kToNhwc));
      node = ConstNode(rw_.UniqueName(base + "/nhwc"), std::move(t),
                       p.requested_device(), p.source_line());
      changes_.push_back(absl::StrCat("transposed Const '", p.name(),
                                      "' to channels last, once"));
    } else {
      node.name = rw_.UniqueName(base + "/to_nhwc");
      node.op = "Transpose";
      node.attrs["perm"] = PermAttr(kToNhwc);
      node.inputs.push_back(ref);
      node.device = g_.node(before).requested_device();
      node.source_line = g_.node(before).source_line();
      changes_.push_back(absl::StrCat("'", node.name, "': '", base,
                                      "' to channels last"));
    }
    const std::string name = node.name;
    rw_.Add(before, std::move(node));
    nhwc_[ref] = name;
    return Ref(name);
  }

  bool HasNhwc(TensorRef ref) const { return nhwc_.contains(ref); }

  // Puts the NHWC node `node` (made from old node `n`) before it and
  // records it as n's value channels last; `one_by_one` says that value is
  // [N, 1, 1, C] (a Reshape gives the NCHW one).
  void Convert(const Node& n, NewNode node, bool one_by_one = false) {
    node.name = rw_.UniqueName(n.name() + "/nhwc");
    node.device = n.requested_device();
    node.source_line = n.source_line();
    changes_.push_back(absl::StrCat(n.op(), " '", n.name(), "' runs channels last as '",
                                    node.name, "'"));
    nhwc_[{n.id(), 0}] = node.name;
    converted_[n.id()] = one_by_one;
    rw_.Add(n.id(), std::move(node));
  }

  absl::Status WindowOp(const Node& n) {
    ASSIGN_OR_RETURN(DataFormat format, GetDataFormat(n.attrs()));
    if (format != DataFormat::kNchw || !IsFloatType(n.output_dtype(0))) {
      return absl::OkStatus();
    }
    const Shape& x = n.input_shape(0);
    if (!IsRank4(x) || x.dim(1) == kUnknownDim || !IsRank4(n.output_shape(0))) {
      return absl::OkStatus();
    }
    const bool conv = n.op() != "MaxPool" && n.op() != "AvgPool";
    if (conv && !IsRank4(n.input_shape(1))) return absl::OkStatus();
    NewNode node;
    node.op = n.op();
    for (const auto& [k, v] : n.attrs().values()) node.attrs[k] = v;
    node.attrs["data_format"] = MakeStringAttr("NHWC");
    for (int i = 0; i < n.num_inputs(); ++i) {
      // Input, filter, side (FusedConv2D's input 3): channels last; the
      // filter's [O,I,KH,KW] -> [O,KH,KW,I] is the same permutation. The
      // bias (input 2) stays.
      if (i == 2) {
        node.inputs.push_back(n.input(i));
        continue;
      }
      ASSIGN_OR_RETURN(Ref r, Nhwc(n.input(i), n.id()));
      node.inputs.push_back(r);
    }
    Convert(n, std::move(node));
    return absl::OkStatus();
  }

  // Whether `ref` is a rank-4 value of one position per channel ([N, C,
  // 1, 1]: a squeeze-and-excitation gate), which costs next to nothing to
  // transpose.
  bool IsPerChannelValue(TensorRef ref) const {
    const Shape& s = g_.node(ref.node).output_shape(ref.port);
    return IsRank4(s) && s.dim(2) == 1 && s.dim(3) == 1;
  }

  // An elementwise op all of whose inputs are NHWC values, Consts or
  // [N, C, 1, 1] values (transposed here), at least one an NHWC value.
  absl::Status Elementwise(const Node& n) {
    if (!IsRank4(n.output_shape(0))) return absl::OkStatus();
    bool any = false;
    for (const TensorRef& in : n.inputs()) {
      if (HasNhwc(in)) {
        if (!IsRank4(g_.node(in.node).output_shape(in.port))) return absl::OkStatus();
        any = true;
        continue;
      }
      const Tensor* v = ConstValueOf(g_, in);
      if (v == nullptr && IsPerChannelValue(in)) continue;
      if (v == nullptr || !v->on_host() || v->rank() > 4) return absl::OkStatus();
    }
    if (!any) return absl::OkStatus();
    NewNode node;
    node.op = n.op();
    for (const auto& [k, v] : n.attrs().values()) node.attrs[k] = v;
    for (const TensorRef& in : n.inputs()) {
      if (HasNhwc(in)) {
        node.inputs.push_back(nhwc_[in]);
        continue;
      }
      const Tensor* v = ConstValueOf(g_, in);
      if (v == nullptr) {  // [N, C, 1, 1]
        ASSIGN_OR_RETURN(Ref r, Nhwc(in, n.id()));
        node.inputs.push_back(r);
        continue;
      }
      if (v->NumElements() == 1) {  // broadcasts alike in either layout
        node.inputs.push_back(in);
        continue;
      }
      // Rank 4 by leading 1s (as broadcasting aligns it), then permuted.
      if (v->rank() < 4) {
        std::vector<int64_t> dims(4 - v->rank(), 1);
        for (int64_t d : v->shape().dims()) dims.push_back(d);
        const Tensor four = v->Reshaped(Shape(dims));
        const Node& c = g_.node(in.node);
        auto it = broadcast_consts_.find(in);
        if (it == broadcast_consts_.end()) {
          ASSIGN_OR_RETURN(Tensor t, PermuteValue(four, kToNhwc));
          const std::string name = rw_.UniqueName(c.name() + "/nhwc");
          rw_.Add(n.id(), ConstNode(name, std::move(t), c.requested_device(),
                                    c.source_line()));
          changes_.push_back(absl::StrCat("transposed Const '", c.name(),
                                          "' to channels last, once"));
          it = broadcast_consts_.emplace(in, name).first;
        }
        node.inputs.push_back(it->second);
        continue;
      }
      ASSIGN_OR_RETURN(Ref r, Nhwc(in, n.id()));
      node.inputs.push_back(r);
    }
    Convert(n, std::move(node));
    return absl::OkStatus();
  }

  absl::Status Concat(const Node& n) {
    if (!IsRank4(n.output_shape(0)) || n.num_inputs() == 0) return absl::OkStatus();
    absl::StatusOr<int64_t> axis = n.attrs().GetInt("axis");
    if (!axis.ok() || (*axis != 1 && *axis != -3)) return absl::OkStatus();
    for (const TensorRef& in : n.inputs()) {
      if (!HasNhwc(in)) return absl::OkStatus();
    }
    NewNode node;
    node.op = "Concat";
    for (const auto& [k, v] : n.attrs().values()) node.attrs[k] = v;
    node.attrs["axis"] = MakeIntAttr(3);
    for (const TensorRef& in : n.inputs()) node.inputs.push_back(nhwc_[in]);
    Convert(n, std::move(node));
    return absl::OkStatus();
  }

  // GlobalAvgPool, or ReduceMean over exactly H and W.
  absl::Status Mean(const Node& n) {
    const TensorRef in = n.input(0);
    if (!HasNhwc(in) || !IsRank4(n.input_shape(0))) return absl::OkStatus();
    bool keepdims = true;
    if (n.op() == "ReduceMean") {
      ASSIGN_OR_RETURN(std::vector<int64_t> axes, n.attrs().GetIntList("axes"));
      ASSIGN_OR_RETURN(keepdims, n.attrs().GetBool("keepdims"));
      std::set<int64_t> a;
      for (int64_t x : axes) a.insert(x < 0 ? x + 4 : x);
      if (a != std::set<int64_t>{2, 3}) return absl::OkStatus();
    }
    NewNode node;
    node.op = "ReduceMean";
    node.attrs["axes"] = MakeIntListAttr({1, 2});
    node.attrs["keepdims"] = MakeBoolAttr(keepdims);
    node.inputs.push_back(nhwc_[in]);
    if (!keepdims) {
      // [N, C] either way: the node itself, under its own name.
      node.name = n.name();
      node.device = n.requested_device();
      node.source_line = n.source_line();
      changes_.push_back(absl::StrCat(n.op(), " '", n.name(),
                                      "' reduces its input channels last"));
      rw_.Replace(n.id(), std::move(node));
      replaced_.insert(n.id());
      return absl::OkStatus();
    }
    Convert(n, std::move(node), /*one_by_one=*/true);
    return absl::OkStatus();
  }

  // A Transpose of an NHWC value: one Transpose with the permutations
  // composed (redundant_nodes drops it when that is the identity).
  absl::Status TransposeOf(const Node& n) {
    const TensorRef in = n.input(0);
    if (!IsRank4(n.input_shape(0))) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::vector<int64_t> perm, n.attrs().GetIntList("perm"));
    if (perm.empty()) perm = {3, 2, 1, 0};
    if (perm.size() != 4) return absl::OkStatus();
    if (!HasNhwc(in)) {
      // The model's own move to NCHW (ConvNeXt's permute back after its
      // channels-last LayerNorm and Linear layers): its input is the
      // result's NHWC form, so readers converted here read that and the
      // residual Add behind it stays channels last.
      for (int i = 0; i < 4; ++i) {
        if ((perm[i] < 0 ? perm[i] + 4 : perm[i]) != kToNchw[i]) {
          return absl::OkStatus();
        }
      }
      nhwc_[{n.id(), 0}] = Ref(in);
      return absl::OkStatus();
    }
    std::vector<int64_t> composed(4);
    for (int i = 0; i < 4; ++i) {
      const int64_t p = perm[i] < 0 ? perm[i] + 4 : perm[i];
      if (p < 0 || p > 3) return absl::OkStatus();
      composed[i] = kToNchw[p];
    }
    NewNode node;
    node.name = n.name();
    node.op = "Transpose";
    for (const auto& [k, v] : n.attrs().values()) node.attrs[k] = v;
    node.attrs["perm"] = MakeIntListAttr(composed);
    node.inputs.push_back(nhwc_[in]);
    node.device = n.requested_device();
    node.source_line = n.source_line();
    changes_.push_back(absl::StrCat("Transpose '", n.name(),
                                    "' reads the channels-last value"));
    rw_.Replace(n.id(), std::move(node));
    replaced_.insert(n.id());
    return absl::OkStatus();
  }

  // Each converted node: an NCHW value under its name where something
  // still reads it, else nothing.
  absl::Status Finish() {
    absl::flat_hash_set<int> needed;
    for (const GraphOutput& out : g_.outputs()) {
      if (converted_.contains(out.tensor.node)) needed.insert(out.tensor.node);
    }
    for (const auto& [id, one_by_one] : converted_) {
      for (const Consumer& c : g_.consumers(id, 0)) {
        if (!converted_.contains(c.node) && !replaced_.contains(c.node)) {
          needed.insert(id);
        }
      }
    }
    for (const auto& [id, one_by_one] : converted_) {
      const Node& n = g_.node(id);
      if (!needed.contains(id)) {
        rw_.Remove(id);
        continue;
      }
      NewNode back;
      back.name = n.name();
      back.device = n.requested_device();
      back.source_line = n.source_line();
      back.inputs.push_back(nhwc_[{id, 0}]);
      const Shape& s = n.output_shape(0);
      if (one_by_one && s.dim(1) != kUnknownDim) {
        // [N, 1, 1, C] and [N, C, 1, 1] are the same bytes.
        back.op = "Reshape";
        back.attrs["shape"] = MakeIntListAttr(
            {s.dim(0) == kUnknownDim ? -1 : s.dim(0), s.dim(1), 1, 1});
      } else {
        back.op = "Transpose";
        back.attrs["perm"] = PermAttr(kToNchw);
      }
      changes_.push_back(absl::StrCat("'", n.name(), "' back to NCHW (",
                                      back.op, ") for its NCHW readers"));
      rw_.Replace(id, std::move(back));
    }
    return absl::OkStatus();
  }

  const Graph& g_;
  GraphRewriter& rw_;
  std::vector<std::string>& changes_;
  // The NHWC form of old NCHW tensors: new nodes' names, or an old tensor
  // that already is it (a model's Transpose(0, 3, 1, 2) input).
  absl::flat_hash_map<TensorRef, Ref> nhwc_;
  // Consts of rank < 4 read by converted elementwise ops, made rank 4 and
  // channels last.
  absl::flat_hash_map<TensorRef, std::string> broadcast_consts_;
  // Old nodes whose value is now made channels last, and whether it is
  // [N, 1, 1, C]. Ordered, for a stable change list.
  std::map<int, bool> converted_;
  // Old nodes replaced by nodes that read NHWC values.
  absl::flat_hash_set<int> replaced_;
};

class NhwcLayoutPass final : public Pass {
 public:
  std::string_view name() const override { return "nhwc_layout"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions& options) const override {
    PassOutput out;
    // With NCHW asked for (AUTO's choice), channels last is only tried:
    // kept where it leaves fewer Transposes than the model has.
    const bool trial = options.conv_layout != DataFormat::kNhwc &&
                       options.nhwc_where_fewer_transposes;
    if (options.conv_layout != DataFormat::kNhwc && !trial) return out;
    // Nothing to do without a convolution or pooling to convert.
    bool any = false;
    for (const Node& n : g.nodes()) {
      if (n.op() == "Conv2D" || n.op() == "FusedConv2D" || n.op() == "MaxPool" ||
          n.op() == "AvgPool") {
        any = true;
      }
      // AUTO's choice for cuDNN stays NCHW for a model with grouped
      // convolutions (MobileNetV2 in bfloat16 ran 1.7x slower channels
      // last on the H200, its depthwise convolutions most of it; ResNet-50
      // and DenseNet-121, ungrouped, 1.3-1.5x and 1.25x faster).
      // CONV_LAYOUT_NHWC, and AUTO's choice for the CPU, still convert it.
      if (options.keep_grouped_convs_nchw &&
          (n.op() == "Conv2D" || n.op() == "FusedConv2D") &&
          n.attrs().GetInt("group").value_or(1) > 1) {
        out.changes.push_back(absl::StrCat(
            "kept NCHW (conv_layout auto): '", n.name(), "' is a grouped ",
            "convolution (group ", n.attrs().GetInt("group").value_or(1),
            "), slower channels last"));
        return out;
      }
    }
    if (!any) return out;
    // A model with no Transpose of its own has none for channels last to
    // cancel: the trial could only add some.
    const int transposes = trial ? LiveTransposes(g) : 0;
    if (trial && transposes == 0) {
      out.changes.push_back(
          "kept NCHW (conv_layout auto): the model has no Transposes for channels "
          "last to cancel");
      return out;
    }
    GraphRewriter rw(g);
    Rewrite rewrite(g, &rw, &out.changes);
    RETURN_IF_ERROR(rewrite.Run());
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    if (trial) return KeepIfFewerTransposes(transposes, std::move(out), options);
    return out;
  }

 private:
  // The trial's verdict: `converted` (the rewrite of a graph with `before`
  // live Transposes) when it has fewer once redundant_nodes has composed its
  // Transposes with the model's (as the pipeline runs it next), else no
  // change.
  static absl::StatusOr<PassOutput> KeepIfFewerTransposes(int before,
                                                          PassOutput converted,
                                                          const PassOptions& options) {
    ASSIGN_OR_RETURN(PassOutput composed,
                     MakeRedundantNodePass()->Run(*converted.graph, options));
    const int after =
        LiveTransposes(composed.graph != nullptr ? *composed.graph : *converted.graph);
    if (after >= before) {
      PassOutput kept;
      kept.changes.push_back(absl::StrCat(
          "kept NCHW (conv_layout auto): channels last would leave ", after,
          " Transposes, the model has ", before));
      return kept;
    }
    converted.changes.insert(
        converted.changes.begin(),
        absl::StrCat("channels last (conv_layout auto): ", before,
                     " Transposes in the model, ", after, " channels last"));
    return converted;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeNhwcLayoutPass() {
  return std::make_unique<NhwcLayoutPass>();
}

}  // namespace sluice
