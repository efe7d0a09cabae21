#include "kernels/control_flow_kernels.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/subgraph_kernel.h"

namespace sluice {
namespace {

absl::StatusOr<std::unique_ptr<CompiledSubgraph>> CompileAttr(
    const Node& node, const char* attr, const SubgraphCompiler& compile) {
  const Graph* g = node.subgraph(attr);
  if (g == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no subgraph '", attr, "'"));
  }
  absl::StatusOr<std::unique_ptr<CompiledSubgraph>> c = compile(*g);
  if (!c.ok()) {
    return absl::Status(c.status().code(),
                        absl::StrCat("subgraph '", attr, "': ",
                                     c.status().message()));
  }
  return c;
}

absl::Status NotCompiled() {
  return absl::FailedPreconditionError(
      "the subgraphs were not compiled (the kernel was made outside a plan)");
}

// The value of a one-element bool tensor (see ControlFlowMemory::ReadToHost
// for `device_memory`).
absl::StatusOr<bool> ReadBool(OpKernelContext* ctx,
                              const ControlFlowMemory& memory, const Tensor& t,
                              bool device_memory, absl::string_view what) {
  if (t.dtype() != DT_BOOL || t.NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be one bool, got ", DataTypeName(t.dtype()),
                     t.shape().DebugString()));
  }
  bool value = false;
  RETURN_IF_ERROR(memory.ReadToHost(ctx, t, device_memory, &value, 1));
  return value;
}

// Runs `graph` on `inputs`, under the limits of `ctx`'s step, and checks it
// gave `dtypes.size()` outputs of those dtypes. `what` names the subgraph
// (and iteration) in errors, a cancelled or expired step's included.
absl::StatusOr<std::vector<Tensor>> RunChecked(
    OpKernelContext* ctx, const CompiledSubgraph& graph,
    std::vector<Tensor> inputs, const std::vector<DataType>& dtypes,
    const std::string& what) {
  absl::StatusOr<std::vector<Tensor>> outs =
      graph.Run(std::move(inputs), ctx->step_limits());
  if (!outs.ok()) {
    return absl::Status(outs.status().code(),
                        absl::StrCat(what, ": ", outs.status().message()));
  }
  if (outs->size() != dtypes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " gave ", outs->size(), " outputs, expected ", dtypes.size()));
  }
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (dtypes[i] != DT_INVALID && (*outs)[i].dtype() != dtypes[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " output ", i, " is ", DataTypeName((*outs)[i].dtype()),
          ", expected ", DataTypeName(dtypes[i])));
    }
  }
  return outs;
}

// Element `t` of `x` along `axis`, that axis removed.
absl::StatusOr<Tensor> TakeSlice(OpKernelContext* ctx,
                                 const ControlFlowMemory& memory,
                                 const Tensor& x, int axis, int64_t t) {
  Shape shape;
  int64_t outer = 1, inner = DataTypeSize(x.dtype());
  for (int d = 0; d < x.rank(); ++d) {
    if (d != axis) shape.AddDim(x.dim(d));
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  ASSIGN_OR_RETURN(Tensor s, ctx->allocate_temp(x.dtype(), shape));
  const int64_t len = x.dim(axis);
  if (outer == 0 || inner == 0) return s;
  RETURN_IF_ERROR(memory.Copy2D(
      ctx, s.raw_data(), inner,
      static_cast<const char*>(x.raw_data()) + t * inner, len * inner, inner,
      outer));
  return s;
}

// Output `port`: `parts` (of one shape) stacked along a new axis `axis`.
// With no parts, `each` (the inferred shape of one part; unknown dims as
// 0) gives the shape.
absl::Status StackInto(OpKernelContext* ctx, const ControlFlowMemory& memory,
                       int port, const std::vector<Tensor>& parts,
                       int64_t axis_attr, const Shape& each_inferred) {
  const DataType dtype = ctx->node().output_dtype(port);
  Shape each;
  if (!parts.empty()) {
    each = parts[0].shape();
  } else if (!each_inferred.unknown_rank()) {
    for (int64_t d : each_inferred.dims()) each.AddDim(d < 0 ? 0 : d);
  }
  ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, each.rank() + 1));
  for (size_t t = 0; t < parts.size(); ++t) {
    if (parts[t].shape() != each) {
      return absl::InvalidArgumentError(absl::StrCat(
          "scan output ", port, " is ", each.DebugString(), " at step 0 but ",
          parts[t].shape().DebugString(), " at step ", t,
          "; scan outputs must keep one shape"));
    }
  }
  const int64_t len = static_cast<int64_t>(parts.size());
  Shape shape;
  int64_t outer = 1, inner = DataTypeSize(dtype);
  for (int d = 0; d <= each.rank(); ++d) {
    if (d == axis) shape.AddDim(len);
    if (d == each.rank()) break;
    shape.AddDim(each.dim(d));
    if (d < axis) outer *= each.dim(d);
    if (d >= axis) inner *= each.dim(d);
  }
  ASSIGN_OR_RETURN(Tensor * out, ctx->allocate_output(port, shape));
  if (outer == 0 || inner == 0) return absl::OkStatus();
  char* dst = static_cast<char*>(out->raw_data());
  for (int64_t t = 0; t < len; ++t) {
    RETURN_IF_ERROR(memory.Copy2D(ctx, dst + t * inner, len * inner,
                                  parts[t].raw_data(), inner, inner, outer));
  }
  return absl::OkStatus();
}

std::vector<DataType> OutputDtypes(const Node& node, int first) {
  std::vector<DataType> out;
  for (int i = first; i < node.num_outputs(); ++i) {
    out.push_back(node.output_dtype(i));
  }
  return out;
}

class IfKernel final : public SubgraphKernel {
 public:
  IfKernel(const Node& node, const ControlFlowMemory* memory)
      : SubgraphKernel(node), memory_(*memory) {}

  absl::Status CompileSubgraphs(const SubgraphCompiler& compile) override {
    ASSIGN_OR_RETURN(then_, CompileAttr(node(), "then_branch", compile));
    ASSIGN_OR_RETURN(else_, CompileAttr(node(), "else_branch", compile));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    if (then_ == nullptr || else_ == nullptr) return NotCompiled();
    ASSIGN_OR_RETURN(bool cond, ReadBool(ctx, memory_, ctx->input(0),
                                         /*device_memory=*/false, "cond"));
    std::vector<Tensor> inputs;
    for (int i = 1; i < ctx->num_inputs(); ++i) {
      inputs.push_back(ctx->input(i));
    }
    ASSIGN_OR_RETURN(
        std::vector<Tensor> outs,
        RunChecked(ctx, cond ? *then_ : *else_, std::move(inputs),
                   OutputDtypes(node(), 0),
                   cond ? "then_branch" : "else_branch"));
    for (size_t i = 0; i < outs.size(); ++i) {
      ctx->set_output(static_cast<int>(i), std::move(outs[i]));
    }
    return absl::OkStatus();
  }

 private:
  const ControlFlowMemory& memory_;
  std::unique_ptr<CompiledSubgraph> then_, else_;
};

class LoopKernel final : public SubgraphKernel {
 public:
  struct Attrs {
    int64_t num_captures = 0;
    bool has_cond = true;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.num_captures, node.attrs().GetInt("num_captures"));
    ASSIGN_OR_RETURN(a.has_cond, node.attrs().GetBool("has_cond"));
    return a;
  }
  LoopKernel(const Node& node, Attrs attrs, const ControlFlowMemory* memory)
      : SubgraphKernel(node), attrs_(attrs), memory_(*memory) {}

  absl::Status CompileSubgraphs(const SubgraphCompiler& compile) override {
    ASSIGN_OR_RETURN(body_, CompileAttr(node(), "body", compile));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    if (body_ == nullptr) return NotCompiled();
    const int n = ctx->num_inputs() - 2 - static_cast<int>(attrs_.num_captures);
    const int scans = ctx->num_outputs() - n;
    const Tensor& m = ctx->input(0);
    if (m.dtype() != DT_INT64 || m.NumElements() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_trip_count must be one int64, got ", DataTypeName(m.dtype()),
          m.shape().DebugString()));
    }
    int64_t trips = 0;
    RETURN_IF_ERROR(memory_.ReadToHost(ctx, m, /*device_memory=*/false,
                                       &trips, sizeof(trips)));
    bool cond = true;
    if (attrs_.has_cond) {
      ASSIGN_OR_RETURN(cond, ReadBool(ctx, memory_, ctx->input(1),
                                      /*device_memory=*/false, "cond"));
    }
    std::vector<Tensor> carried;
    for (int k = 0; k < n; ++k) carried.push_back(ctx->input(2 + k));
    std::vector<DataType> dtypes = {DT_BOOL};
    for (DataType t : OutputDtypes(node(), 0)) dtypes.push_back(t);
    std::vector<std::vector<Tensor>> scanned(scans);
    for (int64_t i = 0; i < trips && cond; ++i) {
      std::vector<Tensor> feeds;
      ASSIGN_OR_RETURN(Tensor iteration,
                       memory_.FromHost(ctx, Tensor::Scalar<int64_t>(i)));
      ASSIGN_OR_RETURN(Tensor cond_in,
                       memory_.FromHost(ctx, Tensor::Scalar<bool>(cond)));
      feeds.push_back(std::move(iteration));
      feeds.push_back(std::move(cond_in));
      for (Tensor& t : carried) feeds.push_back(std::move(t));
      for (int j = 2 + n; j < ctx->num_inputs(); ++j) {
        feeds.push_back(ctx->input(j));
      }
      ASSIGN_OR_RETURN(std::vector<Tensor> outs,
                       RunChecked(ctx, *body_, std::move(feeds), dtypes,
                                  absl::StrCat("body, iteration ", i)));
      if (attrs_.has_cond) {
        ASSIGN_OR_RETURN(cond, ReadBool(ctx, memory_, outs[0],
                                        /*device_memory=*/true,
                                        "the body's cond output"));
      }
      carried.assign(outs.begin() + 1, outs.begin() + 1 + n);
      for (int s = 0; s < scans; ++s) {
        scanned[s].push_back(std::move(outs[1 + n + s]));
      }
    }
    for (int k = 0; k < n; ++k) ctx->set_output(k, std::move(carried[k]));
    for (int s = 0; s < scans; ++s) {
      const Shape& stacked = node().output_shape(n + s);
      Shape each = Shape::UnknownRank();
      if (!stacked.unknown_rank() && stacked.rank() > 0) {
        each = Shape(absl::MakeConstSpan(stacked.dims()).subspan(1));
      }
      RETURN_IF_ERROR(StackInto(ctx, memory_, n + s, scanned[s], 0, each));
    }
    return absl::OkStatus();
  }

 private:
  const Attrs attrs_;
  const ControlFlowMemory& memory_;
  std::unique_ptr<CompiledSubgraph> body_;
};

class ScanKernel final : public SubgraphKernel {
 public:
  struct Attrs {
    int64_t num_scan_inputs = 0;
    int64_t num_captures = 0;
    std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    const AttrMap& at = node.attrs();
    ASSIGN_OR_RETURN(a.num_scan_inputs, at.GetInt("num_scan_inputs"));
    ASSIGN_OR_RETURN(a.num_captures, at.GetInt("num_captures"));
    const int64_t n = node.num_inputs() - a.num_scan_inputs - a.num_captures;
    const int64_t scans = node.num_outputs() - n;
    ASSIGN_OR_RETURN(a.in_axes, PerValue(at, "scan_input_axes",
                                         a.num_scan_inputs, false));
    ASSIGN_OR_RETURN(a.in_reverse, PerValue(at, "scan_input_directions",
                                            a.num_scan_inputs, true));
    ASSIGN_OR_RETURN(a.out_axes, PerValue(at, "scan_output_axes", scans,
                                          false));
    ASSIGN_OR_RETURN(a.out_reverse, PerValue(at, "scan_output_directions",
                                             scans, true));
    return a;
  }
  ScanKernel(const Node& node, Attrs attrs, const ControlFlowMemory* memory)
      : SubgraphKernel(node), attrs_(std::move(attrs)), memory_(*memory) {}

  absl::Status CompileSubgraphs(const SubgraphCompiler& compile) override {
    ASSIGN_OR_RETURN(body_, CompileAttr(node(), "body", compile));
    return absl::OkStatus();
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    if (body_ == nullptr) return NotCompiled();
    const int m = static_cast<int>(attrs_.num_scan_inputs);
    const int n = ctx->num_inputs() - m - static_cast<int>(attrs_.num_captures);
    const int scans = ctx->num_outputs() - n;
    std::vector<int> axes(m);
    int64_t length = -1;
    for (int j = 0; j < m; ++j) {
      const Tensor& x = ctx->input(n + j);
      ASSIGN_OR_RETURN(axes[j], NormalizeAxis(attrs_.in_axes[j], x.rank()));
      if (length >= 0 && x.dim(axes[j]) != length) {
        return absl::InvalidArgumentError(absl::StrCat(
            "scan input ", j, " has ", x.dim(axes[j]), " steps along axis ",
            axes[j], ", scan input 0 has ", length));
      }
      length = x.dim(axes[j]);
    }
    std::vector<Tensor> states;
    for (int k = 0; k < n; ++k) states.push_back(ctx->input(k));
    const std::vector<DataType> dtypes = OutputDtypes(node(), 0);
    std::vector<std::vector<Tensor>> scanned(scans);
    for (int64_t t = 0; t < length; ++t) {
      std::vector<Tensor> feeds = std::move(states);
      for (int j = 0; j < m; ++j) {
        int64_t at = attrs_.in_reverse[j] ? length - 1 - t : t;
        ASSIGN_OR_RETURN(Tensor slice,
                         TakeSlice(ctx, memory_, ctx->input(n + j), axes[j],
                                   at));
        feeds.push_back(std::move(slice));
      }
      for (int j = n + m; j < ctx->num_inputs(); ++j) {
        feeds.push_back(ctx->input(j));
      }
      ASSIGN_OR_RETURN(std::vector<Tensor> outs,
                       RunChecked(ctx, *body_, std::move(feeds), dtypes,
                                  absl::StrCat("body, step ", t)));
      states.assign(outs.begin(), outs.begin() + n);
      for (int s = 0; s < scans; ++s) {
        scanned[s].push_back(std::move(outs[n + s]));
      }
    }
    for (int k = 0; k < n; ++k) ctx->set_output(k, std::move(states[k]));
    for (int s = 0; s < scans; ++s) {
      if (attrs_.out_reverse[s]) {
        std::reverse(scanned[s].begin(), scanned[s].end());
      }
      RETURN_IF_ERROR(StackInto(ctx, memory_, n + s, scanned[s],
                                attrs_.out_axes[s], BodyOutputShape(n + s)));
    }
    return absl::OkStatus();
  }

 private:
  // A per-value list attribute: `count` entries (all 0 when empty);
  // directions must be 0 or 1.
  static absl::StatusOr<std::vector<int64_t>> PerValue(const AttrMap& at,
                                                       const char* name,
                                                       int64_t count,
                                                       bool direction) {
    ASSIGN_OR_RETURN(std::vector<int64_t> v, at.GetIntList(name));
    if (v.empty() && count > 0) v.assign(count, 0);
    if (static_cast<int64_t>(v.size()) != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " has ", v.size(), " entries, expected ", count));
    }
    for (int64_t x : v) {
      if (direction && x != 0 && x != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, " entries must be 0 or 1, got ", x));
      }
    }
    return v;
  }

  // The shape of one step of scan output `port`, from the body's signature.
  Shape BodyOutputShape(int port) const {
    const Graph* body = node().subgraph("body");
    if (body == nullptr) return Shape::UnknownRank();
    return body->outputs()[port].shape;
  }

  const Attrs attrs_;
  const ControlFlowMemory& memory_;
  std::unique_ptr<CompiledSubgraph> body_;
};

// MakeKernel with the memory passed on.
template <typename K>
KernelFactory Factory(const ControlFlowMemory* memory) {
  return [memory](const Node& node) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    if constexpr (requires { K::ParseAttrs(node); }) {
      ASSIGN_OR_RETURN(typename K::Attrs attrs, K::ParseAttrs(node));
      return std::unique_ptr<OpKernel>(new K(node, std::move(attrs), memory));
    } else {
      return std::unique_ptr<OpKernel>(new K(node, memory));
    }
  };
}

}  // namespace

KernelFactory IfKernelFactory(const ControlFlowMemory* memory) {
  return Factory<IfKernel>(memory);
}
KernelFactory LoopKernelFactory(const ControlFlowMemory* memory) {
  return Factory<LoopKernel>(memory);
}
KernelFactory ScanKernelFactory(const ControlFlowMemory* memory) {
  return Factory<ScanKernel>(memory);
}

std::vector<const Graph*> Subgraphs(const Node& node) {
  std::vector<const Graph*> out;
  for (const char* attr : {"then_branch", "else_branch", "body"}) {
    if (const Graph* g = node.subgraph(attr)) out.push_back(g);
  }
  return out;
}

}  // namespace sluice
