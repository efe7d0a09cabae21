// CostModel: FLOPs and bytes per node from the op and the inferred shapes.
#include "placer/cost_model.h"

#include <algorithm>
#include <string>

#include "core/dtype.h"

namespace sluice {
namespace {

// Arithmetic per output element for elementwise ops; transcendental
// functions cost several operations.
double ElementwiseFlops(const std::string& op) {
  static const auto* const kTranscendental = new std::vector<std::string>{
      "Exp", "Log", "Sqrt", "Rsqrt", "Tanh", "Sigmoid", "Erf", "Gelu", "Pow"};
  for (const std::string& t : *kTranscendental) {
    if (op == t) return 8;
  }
  return 1;
}

// Ops whose output is a view of their input: no kernel work.
bool IsView(const std::string& op) {
  return op == "Identity" || op == "Reshape" || op == "Squeeze" ||
         op == "Unsqueeze";
}

// Ops that only move data: bytes, no arithmetic.
bool IsDataMovement(const std::string& op) {
  return op == "Transpose" || op == "Concat" || op == "Split" ||
         op == "Slice" || op == "Gather" || op == "Expand" || op == "Cast";
}

int64_t InputElements(const Graph& g, const Node& n, int i, int64_t batch) {
  const TensorRef& in = n.input(i);
  return EstimatedElements(g.node(in.node).output_shape(in.port), batch);
}

int64_t KnownDim(const Shape& s, int i, int64_t batch) {
  if (s.unknown_rank() || i < 0 || i >= s.rank()) return 1;
  return s.dim(i) < 0 ? batch : s.dim(i);
}

double MatMulFlops(const Graph& g, const Node& n, int64_t out, int64_t batch) {
  if (n.num_inputs() < 1) return 0;
  const TensorRef& a = n.input(0);
  const Shape& sa = g.node(a.node).output_shape(a.port);
  bool ta = false;
  if (const AttrValue* v = n.attrs().Find("transpose_a")) ta = v->b();
  int64_t k = 1;
  if (!sa.unknown_rank() && sa.rank() >= 2) {
    k = KnownDim(sa, ta ? sa.rank() - 2 : sa.rank() - 1, batch);
  }
  return 2.0 * static_cast<double>(out) * static_cast<double>(k);
}

double ConvFlops(const Graph& g, const Node& n, int64_t out, int64_t batch) {
  if (n.num_inputs() < 2) return 0;
  const TensorRef& f = n.input(1);
  const Shape& sf = g.node(f.node).output_shape(f.port);
  double per_output = 1;
  for (int i = 1; i < 4; ++i) {
    per_output *= static_cast<double>(KnownDim(sf, i, batch));
  }
  return 2.0 * static_cast<double>(out) * per_output;
}

double PoolFlops(const Node& n, int64_t out) {
  double window = 1;
  if (const AttrValue* v = n.attrs().Find("kernel_shape")) {
    for (int64_t k : v->list().i()) window *= static_cast<double>(k);
  }
  return static_cast<double>(out) * window;
}

double NodeFlops(const Graph& g, const Node& n, int64_t out_elems,
                 int64_t in_elems, int64_t batch) {
  const std::string& op = n.op();
  const double out = static_cast<double>(out_elems);
  if (op == "MatMul" || op == "FusedMatMul") {
    return MatMulFlops(g, n, out_elems, batch);
  }
  if (op == "Conv2D" || op == "FusedConv2D") {
    return ConvFlops(g, n, out_elems, batch);
  }
  if (op == "MaxPool" || op == "AvgPool") return PoolFlops(n, out_elems);
  if (op == "GlobalAvgPool" || op == "ReduceSum" || op == "ReduceMean" ||
      op == "ReduceMax") {
    return static_cast<double>(in_elems);
  }
  if (op == "Softmax") return 5 * out;
  if (op == "LayerNorm") return 8 * out;
  if (op == "RMSNorm") return 5 * out;
  if (op == "FusedAttention") {
    // out is [B, H, Sq, Dv] or, BSHD, [B, Sq, H*Dv]; k is [B, H, Sk, D] or
    // [B, Sk, C] with head_dim D (design decision 29).
    const TensorRef& k = n.input(1);
    const Shape& sk = g.node(k.node).output_shape(k.port);
    const Shape& so = n.output_shape(0);
    const bool k_bshd = n.attrs().GetString("k_layout").value_or("BHSD") == "BSHD";
    const bool out_bshd = n.attrs().GetString("out_layout").value_or("BHSD") == "BSHD";
    const double keys = static_cast<double>(KnownDim(sk, k_bshd ? 1 : 2, batch));
    const double d = k_bshd ? static_cast<double>(n.attrs().GetInt("head_dim").value_or(1))
                            : static_cast<double>(KnownDim(sk, 3, batch));
    const double dv = static_cast<double>(std::max<int64_t>(
        out_bshd ? n.attrs().GetInt("v_head_dim").value_or(1) : KnownDim(so, 3, batch), 1));
    return out / dv * keys * (2 * (d + dv) + 5);
  }
  if (IsView(op) || IsDataMovement(op)) return 0;
  return ElementwiseFlops(op) * out;
}

}  // namespace

int64_t EstimatedElements(const Shape& shape, int64_t batch) {
  if (shape.unknown_rank()) return 1;
  int64_t n = 1;
  for (int64_t d : shape.dims()) {
    int64_t v = d < 0 ? batch : d;
    if (v == 0) return 0;
    if (n > kMaxElements / v) return kMaxElements;
    n *= v;
  }
  return n;
}

CostModel::CostModel(const Graph& graph, const CostModelOptions& options) {
  const int n = graph.num_nodes();
  const int64_t batch = std::max<int64_t>(1, options.batch);
  flops_.assign(n, 0);
  bytes_.assign(n, 0);
  runs_.assign(n, 1);
  half_.assign(n, 0);
  weights_.assign(n, 0);
  output_offset_.resize(n + 1);
  for (int id = 0; id < n; ++id) {
    output_offset_[id + 1] = output_offset_[id] + graph.node(id).num_outputs();
  }
  output_bytes_.assign(output_offset_[n], 0);
  for (int id = 0; id < n; ++id) {
    const Node& node = graph.node(id);
    int64_t out_elems = 0;
    double out_bytes = 0;
    for (int p = 0; p < node.num_outputs(); ++p) {
      int64_t e = EstimatedElements(node.output_shape(p), batch);
      int64_t b = e * static_cast<int64_t>(DataTypeSize(node.output_dtype(p)));
      output_bytes_[output_offset_[id] + p] = b;
      out_elems += e;
      out_bytes += static_cast<double>(b);
    }
    const std::string& op = node.op();
    if (op == "Const" || op == "Input") {
      runs_[id] = 0;
      if (op == "Const") {
        const Tensor* v = node.const_value();
        weights_[id] = v != nullptr ? static_cast<int64_t>(v->bytes())
                                    : static_cast<int64_t>(out_bytes);
        total_weights_ += weights_[id];
      }
      continue;
    }
    int64_t in_elems = 0;
    double in_bytes = 0;
    for (int i = 0; i < node.num_inputs(); ++i) {
      const TensorRef& r = node.input(i);
      in_elems += InputElements(graph, node, i, batch);
      in_bytes += static_cast<double>(
          output_bytes_[output_offset_[r.node] + r.port]);
    }
    flops_[id] = NodeFlops(graph, node, out_elems, in_elems, batch);
    bytes_[id] = IsView(op) ? 0 : in_bytes + out_bytes;
    if (node.num_outputs() > 0 &&
        (op == "MatMul" || op == "FusedMatMul" || op == "Conv2D" ||
         op == "FusedConv2D")) {
      DataType t = node.output_dtype(0);
      half_[id] = t == DT_FLOAT16 || t == DT_BFLOAT16;
    }
  }
}

}  // namespace sluice
