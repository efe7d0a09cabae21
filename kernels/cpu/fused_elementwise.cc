// FusedElementwise on the CPU (kernels/cpu/fused_elementwise.h).
#include "kernels/cpu/fused_elementwise.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
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

// Elements per block for a layout: whole rows of the merged inner
// dimension where they fit in about a block (so an input that broadcasts
// along the row, a per-channel scale, is one value per block and its runs
// are never cut), else kBlock.
int64_t BlockLength(const FusedElementwiseLayout& l) {
  if (l.rank == 0) return kBlock;
  const int64_t inner = l.dims[l.rank - 1];
  if (inner >= kBlock / 4 && inner <= 2 * kBlock) return inner;
  if (inner < kBlock / 4) return inner * (kBlock / inner);
  return kBlock;
}

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

// One side of an op on a block of n elements: n elements at p; (splat)
// one element at p standing for all of them; or (row > 0) rows of `row`
// elements, each the `row` elements at p.
template <typename C>
struct Operand {
  const C* p = nullptr;
  bool splat = false;
  int64_t row = 0;
};

// A value within a block of n elements: period 0, n elements at p; period
// 1, one element at p standing for all of them (a scalar input, a broadcast
// input constant over the block, or a result of such values only); period
// P, the block is rows of P elements and every row is the P elements at p
// (a bias broadcast over the rows of a block), or a result of such values.
template <typename C>
struct Value {
  const C* p = nullptr;
  int64_t period = 0;
};

// dst[0, n) = f(a, b) elementwise, with each side a vector, a splat or a
// row, so the compiler vectorises each form (dst may alias a vector side;
// a row side is never dst).
template <typename C, typename F>
void BinaryLoop(F f, Operand<C> a, Operand<C> b, C* dst, int64_t n) {
  if (a.row > 0 || b.row > 0) {
    const int64_t row = std::max(a.row, b.row);
    for (int64_t r = 0; r < n; r += row) {
      const C* x = a.row > 0 ? a.p : a.p + r;
      const C* y = b.row > 0 ? b.p : b.p + r;
      C* d = dst + r;
      for (int64_t j = 0; j < row; ++j) d[j] = f(x[j], y[j]);
    }
  } else if (!a.splat && !b.splat) {
    for (int64_t i = 0; i < n; ++i) dst[i] = f(a.p[i], b.p[i]);
  } else if (!a.splat) {
    const C y = b.p[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = f(a.p[i], y);
  } else {
    const C x = a.p[0];
    for (int64_t i = 0; i < n; ++i) dst[i] = f(x, b.p[i]);
  }
}

// dst[0, n) = op(a, b) (b unused for unary ops). REQUIRES: a unary op's
// operand is a vector; a binary op's operands are not both splats or
// both rows.
template <typename C>
void Apply(ElementwiseOpcode op, Operand<C> a, Operand<C> b, C* dst,
           int64_t n) {
  if (!IsBinary(op)) {
    ArrayMap<C> y(dst, n);
    ConstArrayMap<C> x(a.p, n);
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
      default: return;
    }
  }
  switch (op) {
    case ElementwiseOpcode::kAdd:
      return BinaryLoop([](C x, C y) { return x + y; }, a, b, dst, n);
    case ElementwiseOpcode::kSub:
      return BinaryLoop([](C x, C y) { return x - y; }, a, b, dst, n);
    case ElementwiseOpcode::kMul:
      return BinaryLoop([](C x, C y) { return x * y; }, a, b, dst, n);
    case ElementwiseOpcode::kDiv:
      return BinaryLoop([](C x, C y) { return x / y; }, a, b, dst, n);
    case ElementwiseOpcode::kPow:
      return BinaryLoop([](C x, C y) { return std::pow(x, y); }, a, b, dst,
                        n);
    // NaN propagates from either side, as the unfused Maximum / Minimum.
    case ElementwiseOpcode::kMaximum:
      return BinaryLoop(
          [](C x, C y) { return (x >= y || x != x) ? x : y; }, a, b, dst, n);
    case ElementwiseOpcode::kMinimum:
      return BinaryLoop(
          [](C x, C y) { return (x <= y || x != x) ? x : y; }, a, b, dst, n);
    default: return;
  }
}

// Where a strided input is read: the merged index of the next output
// element and that element's offset in the input. Made once per range of
// blocks (the divisions), then advanced block by block.
struct Cursor {
  int64_t idx[kMaxRank];  // only [0, rank) is used
  int64_t off = 0;
};

Cursor MakeCursor(const FusedElementwiseLayout& w, size_t i, int64_t start) {
  Cursor c;
  int64_t rem = start;
  for (int d = w.rank - 1; d >= 0; --d) {
    c.idx[d] = rem % w.dims[d];
    rem /= w.dims[d];
    c.off += c.idx[d] * w.strides[i][d];
  }
  return c;
}

// Moves cursor c (at the start of a row) on by `rows` rows of the merged
// inner dimension. REQUIRES: w.rank >= 2, and the rows stay within one run
// of dimension rank - 2 or end at its end.
void AdvanceRows(const FusedElementwiseLayout& w, size_t i, int64_t rows,
                 Cursor* c) {
  const int m = w.rank;
  const std::array<int64_t, kMaxRank>& st = w.strides[i];
  c->idx[m - 2] += rows;
  c->off += rows * st[m - 2];
  for (int d = m - 2; d > 0 && c->idx[d] >= w.dims[d]; --d) {
    c->off -= c->idx[d] * st[d];
    c->idx[d] = 0;
    ++c->idx[d - 1];
    c->off += st[d - 1];
  }
}

// Input i's next `len` elements (from cursor c, which moves past them), in
// C: into dst[0, len), or, when the input is constant over them (it
// broadcasts along the whole run), into dst[0] alone, returning true.
// REQUIRES: w.rank >= 1.
template <typename T, typename C>
bool Gather(const FusedElementwiseLayout& w, size_t i, const T* src,
            int64_t len, Cursor* c, C* dst) {
  const int m = w.rank;
  const std::array<int64_t, kMaxRank>& st = w.strides[i];
  const int64_t inner = w.dims[m - 1], s = st[m - 1];
  int64_t* idx = c->idx;
  int64_t off = c->off;
  const bool splat = s == 0 && len <= inner - idx[m - 1];
  if (splat) dst[0] = static_cast<C>(src[off]);
  int64_t pos = 0;
  while (pos < len) {
    const int64_t run = std::min(len - pos, inner - idx[m - 1]);
    if (splat) {
      // Nothing to copy.
    } else if (s == 1) {
      if constexpr (std::is_same_v<T, C>) {
        std::memcpy(dst + pos, src + off, run * sizeof(C));
      } else {
        for (int64_t j = 0; j < run; ++j) {
          dst[pos + j] = static_cast<C>(src[off + j]);
        }
      }
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
  c->off = off;
  return splat;
}

// A program that is a chain on one input of the output's shape: each op
// takes the previous result and, if binary, an input that is a scalar or
// one value per element of the merged inner dimension, the same for every
// row (a per-channel scale or shift, channels last): batch norm and ReLU
// before each of DenseNet's convolutions. Such a program runs op by op over
// chunks of a row, in place in the output, each op one vector loop.
struct ChainStep {
  ElementwiseOpcode op = ElementwiseOpcode::kNeg;
  int other = -1;          // the input beside the previous result; -1: none
  bool other_scalar = false;
  bool prev_first = true;  // the previous result is the op's left side
};

// The chain's first `affine` steps are y = alpha * x + beta per element
// of the row (Mul, Add and Sub on either side, Neg, Div by a row): they
// run as one pass with alpha and beta made once a call, with the step
// after them too when it is Relu (`relu`), then the other steps one by one.
struct RowChain {
  int flat = -1;  // the input the chain starts from
  std::vector<ChainStep> steps;
  int affine = 0;
  bool relu = false;
};

bool IsAffineStep(const ChainStep& s) {
  switch (s.op) {
    case ElementwiseOpcode::kMul:
    case ElementwiseOpcode::kAdd:
    case ElementwiseOpcode::kSub:
    case ElementwiseOpcode::kNeg:
      return true;
    case ElementwiseOpcode::kDiv:
      return s.prev_first;
    default:
      return false;
  }
}

// alpha[0, inner), beta[0, inner) of the chain's affine steps.
template <typename C>
void MakeAffine(const RowChain& chain, const std::vector<const C*>& in,
                int64_t inner, C* alpha, C* beta) {
  std::fill(alpha, alpha + inner, C(1));
  std::fill(beta, beta + inner, C(0));
  for (int k = 0; k < chain.affine; ++k) {
    const ChainStep& s = chain.steps[k];
    const C* r = s.other >= 0 ? in[s.other] : nullptr;
    for (int64_t j = 0; j < inner; ++j) {
      const C v = r == nullptr ? C(0) : r[s.other_scalar ? 0 : j];
      switch (s.op) {
        case ElementwiseOpcode::kMul: alpha[j] *= v; beta[j] *= v; break;
        case ElementwiseOpcode::kAdd: beta[j] += v; break;
        case ElementwiseOpcode::kSub:
          if (s.prev_first) {
            beta[j] -= v;
          } else {
            alpha[j] = -alpha[j];
            beta[j] = v - beta[j];
          }
          break;
        case ElementwiseOpcode::kNeg: alpha[j] = -alpha[j]; beta[j] = -beta[j]; break;
        case ElementwiseOpcode::kDiv: alpha[j] /= v; beta[j] /= v; break;
        default: break;
      }
    }
  }
}

// Rows narrower than this run the general way (a chunk would be mostly
// loop overhead).
constexpr int64_t kMinChainRow = 16;
// Elements of a row run op by op: a chunk stays in L1 across the ops.
constexpr int64_t kChainChunk = 1024;

bool MakeRowChain(const ElementwiseProgram& program,
                  const FusedElementwiseLayout& l, RowChain* chain) {
  const int m = l.rank;
  if (m < 1 || l.dims[m - 1] < kMinChainRow) return false;
  const int n_in = program.num_inputs;
  auto per_row = [&](int i) {
    if (l.access[i] == FusedInputAccess::kScalar) return true;
    if (l.access[i] != FusedInputAccess::kStrided || l.strides[i][m - 1] != 1) {
      return false;
    }
    for (int d = 0; d < m - 1; ++d) {
      if (l.strides[i][d] != 0) return false;
    }
    return true;
  };
  int prev = -1;
  for (size_t k = 0; k < program.instructions.size(); ++k) {
    const ElementwiseInstruction& ins = program.instructions[k];
    if (k == 0) {
      // The chain's start: the flat side of the first op.
      for (int side : {ins.a, ins.b}) {
        if (side >= 0 && side < n_in && l.access[side] == FusedInputAccess::kFlat) {
          prev = side;
          break;
        }
      }
      if (prev < 0) return false;
      chain->flat = prev;
    }
    ChainStep step;
    step.op = ins.op;
    if (ins.a == prev) {
      step.other = ins.b;
    } else if (ins.b == prev) {
      step.other = ins.a;
      step.prev_first = false;
    } else {
      return false;
    }
    if (IsBinary(ins.op) != (step.other >= 0)) return false;
    if (step.other >= 0) {
      if (step.other >= n_in || step.other == chain->flat || !per_row(step.other)) {
        return false;
      }
      step.other_scalar = l.access[step.other] == FusedInputAccess::kScalar;
    }
    chain->steps.push_back(step);
    prev = n_in + static_cast<int>(k);
  }
  if (chain->steps.empty()) return false;
  while (chain->affine < static_cast<int>(chain->steps.size()) &&
         IsAffineStep(chain->steps[chain->affine])) {
    ++chain->affine;
  }
  chain->relu = chain->affine > 0 &&
                chain->affine < static_cast<int>(chain->steps.size()) &&
                chain->steps[chain->affine].op == ElementwiseOpcode::kRelu;
  return true;
}

// The chain over output items [begin, end): item i is chunk i % chunks of
// row i / chunks.
// alpha and beta: MakeAffine's, where chain.affine > 0.
template <typename C>
void RunRowChain(const RowChain& chain, const FusedElementwiseLayout& l,
                 const std::vector<const C*>& in, const C* alpha,
                 const C* beta, C* out, int64_t begin, int64_t end) {
  const int64_t inner = l.dims[l.rank - 1];
  const int64_t chunks = (inner + kChainChunk - 1) / kChainChunk;
  const int first = chain.affine + (chain.relu ? 1 : 0);
  for (int64_t item = begin; item < end; ++item) {
    const int64_t j0 = item % chunks * kChainChunk;
    const int64_t at = item / chunks * inner + j0;
    const int64_t n = std::min(kChainChunk, inner - j0);
    C* dst = out + at;
    Operand<C> prev{in[chain.flat] + at};
    if (chain.affine > 0) {
      const C* x = prev.p;
      const C* a = alpha + j0;
      const C* b = beta + j0;
      if (chain.relu) {
        for (int64_t j = 0; j < n; ++j) dst[j] = std::max(a[j] * x[j] + b[j], C(0));
      } else {
        for (int64_t j = 0; j < n; ++j) dst[j] = a[j] * x[j] + b[j];
      }
      prev = {dst};
    }
    for (size_t k = first; k < chain.steps.size(); ++k) {
      const ChainStep& step = chain.steps[k];
      if (step.other < 0) {
        Apply<C>(step.op, prev, {}, dst, n);
      } else {
        Operand<C> other{in[step.other] + (step.other_scalar ? 0 : j0),
                         step.other_scalar};
        if (step.prev_first) {
          Apply<C>(step.op, prev, other, dst, n);
        } else {
          Apply<C>(step.op, other, prev, dst, n);
        }
      }
      prev = {dst};
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
      // A result never shares its operands' slots: an op on a row operand
      // reads that row for every row it writes.
      if (free_slots.empty()) {
        a.slot[i] = a.num_slots++;
      } else {
        a.slot[i] = free_slots.back();
        free_slots.pop_back();
      }
      // Operands that die here free their slots for later results.
      for (int k : {ins[i].a, ins[i].b}) {
        if (k >= n_in && last_use[k - n_in] == i &&
            std::find(free_slots.begin(), free_slots.end(),
                      a.slot[k - n_in]) == free_slots.end()) {
          free_slots.push_back(a.slot[k - n_in]);
        }
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
      if constexpr (std::is_same_v<T, C>) {
        RowChain chain;
        if (MakeRowChain(a_.program, layout, &chain)) {
          const int64_t inner = layout.dims[layout.rank - 1];
          const int64_t chunks = (inner + kChainChunk - 1) / kChainChunk;
          std::vector<C> affine;
          const C* alpha = nullptr;
          const C* beta = nullptr;
          if (chain.affine > 0) {
            affine.resize(2 * inner);
            MakeAffine<C>(chain, in, inner, affine.data(), affine.data() + inner);
            alpha = affine.data();
            beta = affine.data() + inner;
          }
          ParallelFor(*ctx, n / inner * chunks,
                      cost_ * std::min(inner, kChainChunk),
                      [&](int64_t b, int64_t e) {
                        RunRowChain<C>(chain, layout, in, alpha, beta, out, b, e);
                      });
          return absl::OkStatus();
        }
      }
      const int64_t block = BlockLength(layout);
      const int64_t blocks = (n + block - 1) / block;
      ParallelFor(*ctx, blocks, cost_ * block, [&](int64_t b, int64_t e) {
        RunRange<T, C>(layout, block, in, out, b, e);
      });
      return absl::OkStatus();
    });
  }

 private:
  // Output blocks [begin, end).
  template <typename T, typename C>
  void RunRange(const FusedElementwiseLayout& layout, int64_t block,
                const std::vector<const T*>& in, T* out, int64_t begin,
                int64_t end) const {
    const int64_t n = layout.num_elements;
    constexpr bool kSameType = std::is_same_v<T, C>;
    const int n_in = a_.program.num_inputs;
    const std::vector<ElementwiseInstruction>& ins = a_.program.instructions;
    // Inputs' slots first, then the results'.
    // Uninitialised: every element is written before it is read, and a
    // range may be a block or two (zeroing would cost as much).
    std::unique_ptr<C[]> scratch_buffer(new C[(n_in + a_.num_slots) * block]);
    C* const scratch = scratch_buffer.get();
    std::vector<Value<C>> value(n_in + ins.size());
    std::vector<Cursor> cursor(n_in);
    // Inputs read as rows (Value period inner): a bias over the rows.
    const int m = layout.rank;
    const int64_t inner = m > 0 ? layout.dims[m - 1] : 1;
    std::vector<bool> rowwise(n_in, false);
    for (int i = 0; i < n_in; ++i) {
      if (layout.access[i] != FusedInputAccess::kStrided) continue;
      cursor[i] = MakeCursor(layout, i, begin * block);
      const std::array<int64_t, kMaxRank>& st = layout.strides[i];
      rowwise[i] = m >= 2 && st[m - 1] == 1 && st[m - 2] == 0 &&
                   block % inner == 0 &&
                   layout.dims[m - 2] % (block / inner) == 0;
    }
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t start = blk * block;
      const int64_t len = std::min(block, n - start);
      for (int i = 0; i < n_in; ++i) {
        C* buf = scratch + i * block;
        int64_t period = 0;
        if (layout.access[i] == FusedInputAccess::kFlat) {
          if constexpr (kSameType) {
            value[i] = {in[i] + start, 0};
            continue;
          }
          for (int64_t j = 0; j < len; ++j) {
            buf[j] = static_cast<C>(in[i][start + j]);
          }
        } else if (layout.access[i] == FusedInputAccess::kScalar) {
          buf[0] = static_cast<C>(in[i][0]);
          period = 1;
        } else if (rowwise[i]) {
          const T* row = in[i] + cursor[i].off;
          AdvanceRows(layout, i, len / inner, &cursor[i]);
          if constexpr (kSameType) {
            value[i] = {row, inner};
            continue;
          }
          for (int64_t j = 0; j < inner; ++j) buf[j] = static_cast<C>(row[j]);
          period = inner;
        } else {
          period = Gather<T, C>(layout, i, in[i], len, &cursor[i], buf) ? 1 : 0;
        }
        value[i] = {buf, period};
      }
      for (size_t k = 0; k < ins.size(); ++k) {
        const Value<C> x = value[ins[k].a];
        const Value<C> y = ins[k].b >= 0 ? value[ins[k].b] : x;
        C* dst = scratch + (n_in + a_.slot[k]) * block;
        const bool last = k + 1 == ins.size();
        if constexpr (kSameType) {
          if (last) dst = out + start;
        }
        value[n_in + k] = Evaluate<C>(ins[k].op, x, y, dst, len, last);
      }
      const C* result = value.back().p;
      if constexpr (kSameType) {
        if (result != out + start) std::copy(result, result + len, out + start);
      } else {
        for (int64_t j = 0; j < len; ++j) {
          out[start + j] = static_cast<T>(result[j]);
        }
      }
    }
  }

  // One instruction on a block of len elements into dst (room for len).
  // The result keeps the coarsest period its operands allow (a splat of
  // splats, rows of rows and splats), computed on one element or one row;
  // `full` asks for all len elements in dst (the last instruction).
  template <typename C>
  static Value<C> Evaluate(ElementwiseOpcode op, Value<C> x, Value<C> y,
                           C* dst, int64_t len, bool full) {
    const int64_t period =
        x.period == 0 || y.period == 0 ? 0 : std::max(x.period, y.period);
    if (period > 0) {
      // A packet's worth of room for a splat: Eigen's loop is for arrays.
      alignas(64) C one[64 / sizeof(C)];
      C* to = period == 1 ? one : dst;
      Apply<C>(op, {x.p, x.period == 1 && period > 1},
               {y.p, y.period == 1 && period > 1}, to, period);
      if (!full) {
        if (period == 1) dst[0] = one[0];
        return {dst, period};
      }
      if (period == 1) {
        std::fill(dst, dst + len, one[0]);
      } else {
        for (int64_t r = period; r < len; r += period) {
          std::copy(dst, dst + period, dst + r);
        }
      }
      return {dst, 0};
    }
    // Full result: rows where a side is a row, else one loop.
    const int64_t row = std::max(x.period, y.period);
    if (row <= 1) {
      Apply<C>(op, {x.p, x.period == 1}, {y.p, y.period == 1}, dst, len);
      return {dst, 0};
    }
    // Binary (a unary op's operands have one period): one side full, the
    // other rows.
    Apply<C>(op, {x.p, false, x.period}, {y.p, false, y.period}, dst, len);
    return {dst, 0};
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
