// FusedElementwise on the CPU (kernels/cpu/fused_elementwise.h).
#include "kernels/cpu/fused_elementwise.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/elementwise_program.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/fused_elementwise_source.h"
#include "unsupported/Eigen/SpecialFunctions"

namespace sluice::cpu {
namespace {

constexpr int64_t kBlock = kFusedElementwiseBlock;

template <typename C>
using ArrayMap = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;
template <typename C>
using ConstArrayMap = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>>;

// Rough cycles per element of each op, for ParallelFor (as the unfused
// kernels weigh them).
double OpCost(ElementwiseOpcode op) {
  switch (op) {
    case ElementwiseOpcode::kExp:
    case ElementwiseOpcode::kLog:
    case ElementwiseOpcode::kTanh:
    case ElementwiseOpcode::kSigmoid:
    case ElementwiseOpcode::kErf:
    case ElementwiseOpcode::kPow:
      return 20;
    case ElementwiseOpcode::kSqrt:
    case ElementwiseOpcode::kRsqrt:
    case ElementwiseOpcode::kDiv:
      return 10;
    default:
      return 1;
  }
}

// dst[0, n) = op(a[0, n), b[0, n)); dst may alias a or b.
template <typename C>
void Apply(ElementwiseOpcode op, const C* a, const C* b, C* dst, int64_t n) {
  ArrayMap<C> y(dst, n);
  ConstArrayMap<C> x(a, n);
  switch (op) {
    case ElementwiseOpcode::kNeg: y = -x; return;
    case ElementwiseOpcode::kAbs: y = x.abs(); return;
    case ElementwiseOpcode::kRelu: y = x.max(C(0)); return;
    case ElementwiseOpcode::kExp: y = x.exp(); return;
    case ElementwiseOpcode::kLog: y = x.log(); return;
    case ElementwiseOpcode::kSqrt: y = x.sqrt(); return;
    case ElementwiseOpcode::kRsqrt: y = x.rsqrt(); return;
    case ElementwiseOpcode::kTanh: y = x.tanh(); return;
    case ElementwiseOpcode::kSigmoid: y = x.logistic(); return;
    case ElementwiseOpcode::kErf: y = x.erf(); return;
    default: break;
  }
  ConstArrayMap<C> z(b, n);
  switch (op) {
    case ElementwiseOpcode::kAdd: y = x + z; return;
    case ElementwiseOpcode::kSub: y = x - z; return;
    case ElementwiseOpcode::kMul: y = x * z; return;
    case ElementwiseOpcode::kDiv: y = x / z; return;
    case ElementwiseOpcode::kPow:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::pow(a[i], b[i]);
      return;
    // NaN propagates from either side, as the unfused Maximum / Minimum.
    case ElementwiseOpcode::kMaximum:
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = (a[i] >= b[i] || a[i] != a[i]) ? a[i] : b[i];
      }
      return;
    case ElementwiseOpcode::kMinimum:
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = (a[i] <= b[i] || a[i] != a[i]) ? a[i] : b[i];
      }
      return;
    default: return;
  }
}

// dst[0, len) = input i's elements for output elements [start, start+len),
// in C. REQUIRES: w.rank >= 1.
template <typename T, typename C>
void Gather(const FusedElementwiseLayout& w, size_t i, const T* src, int64_t start, int64_t len,
            C* dst) {
  const int m = w.rank;
  const std::array<int64_t, kMaxRank>& st = w.strides[i];
  std::array<int64_t, kMaxRank> idx{};
  int64_t rem = start, off = 0;
  for (int d = m - 1; d >= 0; --d) {
    idx[d] = rem % w.dims[d];
    rem /= w.dims[d];
    off += idx[d] * st[d];
  }
  const int64_t inner = w.dims[m - 1], s = st[m - 1];
  int64_t pos = 0;
  while (pos < len) {
    const int64_t run = std::min(len - pos, inner - idx[m - 1]);
    if (s == 1) {
      for (int64_t j = 0; j < run; ++j) dst[pos + j] = static_cast<C>(src[off + j]);
    } else if (s == 0) {
      std::fill(dst + pos, dst + pos + run, static_cast<C>(src[off]));
    } else {
      for (int64_t j = 0; j < run; ++j) {
        dst[pos + j] = static_cast<C>(src[off + j * s]);
      }
    }
    pos += run;
    off += run * s;
    idx[m - 1] += run;
    if (idx[m - 1] < inner) continue;
    off -= inner * s;
    idx[m - 1] = 0;
    for (int d = m - 2; d >= 0; --d) {
      off += st[d];
      if (++idx[d] < w.dims[d]) break;
      off -= idx[d] * st[d];
      idx[d] = 0;
    }
  }
}

class FusedElementwiseKernel final : public OpKernel {
 public:
  struct Attrs {
    ElementwiseProgram program;
    // Scratch slot of each instruction's result (reused once a value is
    // dead), and how many slots the results need.
    std::vector<int> slot;
    int num_slots = 0;
  };

  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.program,
                     ParseElementwiseProgram(node.attrs(), node.num_inputs()));
    const std::vector<ElementwiseInstruction>& ins = a.program.instructions;
    const int n_in = a.program.num_inputs;
    const int n = static_cast<int>(ins.size());
    std::vector<int> last_use(n, n);  // the last result stays live
    for (int i = 0; i < n; ++i) {
      for (int k : {ins[i].a, ins[i].b}) {
        if (k >= n_in) last_use[k - n_in] = i;
      }
    }
    std::vector<int> free_slots;
    a.slot.assign(n, -1);
    for (int i = 0; i < n; ++i) {
      // Operands that die here free their slots first: the op can write
      // in place.
      for (int k : {ins[i].a, ins[i].b}) {
        if (k >= n_in && last_use[k - n_in] == i &&
            std::find(free_slots.begin(), free_slots.end(),
                      a.slot[k - n_in]) == free_slots.end()) {
          free_slots.push_back(a.slot[k - n_in]);
        }
      }
      if (free_slots.empty()) {
        a.slot[i] = a.num_slots++;
      } else {
        a.slot[i] = free_slots.back();
        free_slots.pop_back();
      }
    }
    return a;
  }

  FusedElementwiseKernel(const Node& node, Attrs attrs)
      : OpKernel(node), a_(std::move(attrs)) {
    for (const ElementwiseInstruction& ins : a_.program.instructions) {
      cost_ += OpCost(ins.op);
    }
  }

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const DataType dtype = node().output_dtype(0);
    const int n_in = ctx->num_inputs();
    if (n_in != a_.program.num_inputs) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedElementwise got ", n_in, " inputs; its program reads ",
          a_.program.num_inputs));
    }
    std::vector<const Shape*> shapes;
    Shape out_shape = ctx->input(0).shape();
    for (int i = 0; i < n_in; ++i) {
      RETURN_IF_ERROR(
          CheckDtype(ctx->input(i), dtype, absl::StrCat("input ", i)));
      shapes.push_back(&ctx->input(i).shape());
      ASSIGN_OR_RETURN(out_shape,
                       BroadcastShapes({&out_shape, &ctx->input(i).shape()}));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, out_shape));
    const int64_t n = out_shape.num_elements();
    if (n == 0) return absl::OkStatus();
    const FusedElementwiseLayout layout =
        LayoutFusedElementwise(out_shape, shapes);
    return VisitFloat(dtype, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      std::vector<const T*> in;
      for (int i = 0; i < n_in; ++i) in.push_back(ctx->input(i).data<T>());
      T* out = y->data<T>();
      const int64_t blocks = (n + kBlock - 1) / kBlock;
      ParallelFor(*ctx, blocks, cost_ * kBlock, [&](int64_t b, int64_t e) {
        RunRange<T, C>(layout, in, out, b, e);
      });
      return absl::OkStatus();
    });
  }

 private:
  // Output blocks [begin, end).
  template <typename T, typename C>
  void RunRange(const FusedElementwiseLayout& layout,
                const std::vector<const T*>& in, T* out, int64_t begin,
                int64_t end) const {
    const int64_t n = layout.num_elements;
    constexpr bool kSameType = std::is_same_v<T, C>;
    const int n_in = a_.program.num_inputs;
    const std::vector<ElementwiseInstruction>& ins = a_.program.instructions;
    // Inputs' slots first, then the results'.
    std::vector<C> scratch((n_in + a_.num_slots) * kBlock);
    std::vector<const C*> value(n_in + ins.size());
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t start = blk * kBlock;
      const int64_t len = std::min(kBlock, n - start);
      for (int i = 0; i < n_in; ++i) {
        C* buf = scratch.data() + i * kBlock;
        if constexpr (kSameType) {
          if (layout.access[i] == FusedInputAccess::kFlat) {
            value[i] = in[i] + start;
            continue;
          }
        }
        if (layout.access[i] == FusedInputAccess::kScalar) {
          std::fill(buf, buf + len, static_cast<C>(in[i][0]));
        } else if (layout.access[i] == FusedInputAccess::kFlat) {
          for (int64_t j = 0; j < len; ++j) {
            buf[j] = static_cast<C>(in[i][start + j]);
          }
        } else {
          Gather<T, C>(layout, i, in[i], start, len, buf);
        }
        value[i] = buf;
      }
      for (size_t k = 0; k < ins.size(); ++k) {
        C* dst = scratch.data() + (n_in + a_.slot[k]) * kBlock;
        if constexpr (kSameType) {
          if (k + 1 == ins.size()) dst = out + start;
        }
        Apply<C>(ins[k].op, value[ins[k].a],
                 ins[k].b >= 0 ? value[ins[k].b] : nullptr, dst, len);
        value[n_in + k] = dst;
      }
      if constexpr (!kSameType) {
        const C* result = value.back();
        for (int64_t j = 0; j < len; ++j) {
          out[start + j] = static_cast<T>(result[j]);
        }
      }
    }
  }

  const Attrs a_;
  double cost_ = 1;
};

}  // namespace

void RegisterFusedElementwiseKernels(KernelRegistry* r) {
  r->Register(CpuKernel("FusedElementwise", {{"T", CpuFloatTypes()}},
                        MakeKernel<FusedElementwiseKernel>));
}

}  // namespace sluice::cpu
