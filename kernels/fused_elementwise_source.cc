// FusedElementwiseLayout and the generated CUDA source
// (kernels/fused_elementwise_source.h).
#include "kernels/fused_elementwise_source.h"

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// The 16-bit and 32/64-bit storage types: T in memory, C in registers,
// with ld (T -> C) and st (C -> T).
constexpr char kFloatTypedefs[] = R"cuda(typedef float T;
typedef float C;
__device__ __forceinline__ C ld(T x) { return x; }
__device__ __forceinline__ T st(C x) { return x; }
)cuda";

constexpr char kDoubleTypes[] = R"cuda(typedef double T;
typedef double C;
__device__ __forceinline__ C ld(T x) { return x; }
__device__ __forceinline__ T st(C x) { return x; }
)cuda";

constexpr char kHalfTypes[] = R"cuda(typedef unsigned short T;
typedef float C;
__device__ __forceinline__ C ld(T x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
  return f;
}
__device__ __forceinline__ T st(C x) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}
)cuda";

// bfloat16: the high half of a float; rounding to nearest even, NaN kept
// quiet (as the host's bfloat16).
constexpr char kBFloat16Types[] = R"cuda(typedef unsigned short T;
typedef float C;
__device__ __forceinline__ C ld(T x) {
  return __uint_as_float(((unsigned int)x) << 16);
}
__device__ __forceinline__ T st(C x) {
  unsigned int u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (T)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (T)(u >> 16);
}
)cuda";

std::string Operand(int k, int num_inputs) {
  return k < num_inputs ? absl::StrCat("x", k)
                        : absl::StrCat("t", k - num_inputs);
}

// The C++ expression of one instruction; `f` is the float functions'
// suffix ("f" for float, "" for double).
std::string Expression(const ElementwiseInstruction& ins, int num_inputs,
                       const std::string& f) {
  const std::string a = Operand(ins.a, num_inputs);
  const std::string b = ins.b >= 0 ? Operand(ins.b, num_inputs) : "";
  auto call = [&](const char* fn, const std::string& args) {
    return absl::StrCat(fn, f, "(", args, ")");
  };
  switch (ins.op) {
    case ElementwiseOpcode::kNeg: return absl::StrCat("-", a);
    case ElementwiseOpcode::kAbs: return call("fabs", a);
    case ElementwiseOpcode::kRelu:
      return absl::StrCat(a, " > (C)0 ? ", a, " : (C)0");
    case ElementwiseOpcode::kExp: return call("exp", a);
    case ElementwiseOpcode::kLog: return call("log", a);
    case ElementwiseOpcode::kSqrt: return call("sqrt", a);
    case ElementwiseOpcode::kRsqrt: return call("rsqrt", a);
    case ElementwiseOpcode::kTanh: return call("tanh", a);
    case ElementwiseOpcode::kSigmoid:
      return absl::StrCat("(C)1 / ((C)1 + ", call("exp", "-" + a), ")");
    case ElementwiseOpcode::kErf: return call("erf", a);
    case ElementwiseOpcode::kAdd: return absl::StrCat(a, " + ", b);
    case ElementwiseOpcode::kSub: return absl::StrCat(a, " - ", b);
    case ElementwiseOpcode::kMul: return absl::StrCat(a, " * ", b);
    case ElementwiseOpcode::kDiv: return absl::StrCat(a, " / ", b);
    case ElementwiseOpcode::kPow: return call("pow", absl::StrCat(a, ", ", b));
    // NaN propagates from either side, as on the CPU.
    case ElementwiseOpcode::kMaximum:
      return absl::StrCat("(", a, " >= ", b, " || ", a, " != ", a, ") ? ", a,
                          " : ", b);
    case ElementwiseOpcode::kMinimum:
      return absl::StrCat("(", a, " <= ", b, " || ", a, " != ", a, ") ? ", a,
                          " : ", b);
  }
  return "0";
}

}  // namespace

std::string FusedElementwiseLayout::ClassKey() const {
  std::string key = absl::StrCat("r", rank, "_");
  for (FusedInputAccess a : access) {
    key += a == FusedInputAccess::kFlat     ? 'f'
           : a == FusedInputAccess::kScalar ? 's'
                                            : 'x';
  }
  absl::StrAppend(&key, wide_index() ? "_i64" : "_i32");
  return key;
}

FusedElementwiseLayout LayoutFusedElementwise(
    const Shape& out, const std::vector<const Shape*>& inputs) {
  const int r = out.rank();
  const size_t k = inputs.size();
  FusedElementwiseLayout l;
  l.num_elements = out.num_elements();
  std::vector<std::array<int64_t, kMaxRank>> full(k);
  for (size_t i = 0; i < k; ++i) {
    int64_t s = 1;
    for (int d = r - 1; d >= 0; --d) {
      const int id = d - (r - inputs[i]->rank());
      const int64_t size = id >= 0 ? inputs[i]->dim(id) : 1;
      full[i][d] = (size == 1 && out.dim(d) != 1) ? 0 : s;
      s *= size;
    }
    const int64_t elements = inputs[i]->num_elements();
    l.access.push_back(elements == l.num_elements ? FusedInputAccess::kFlat
                       : elements == 1            ? FusedInputAccess::kScalar
                                                  : FusedInputAccess::kStrided);
  }
  // Merge dims (dropping size-1 ones) where every input's strides chain.
  l.strides.resize(k);
  for (int d = 0; d < r; ++d) {
    if (out.dim(d) == 1) continue;
    bool merge = l.rank > 0;
    for (size_t i = 0; i < k && merge; ++i) {
      merge = l.strides[i][l.rank - 1] == full[i][d] * out.dim(d);
    }
    if (merge) {
      l.dims[l.rank - 1] *= out.dim(d);
      for (size_t i = 0; i < k; ++i) l.strides[i][l.rank - 1] = full[i][d];
    } else {
      l.dims[l.rank] = out.dim(d);
      for (size_t i = 0; i < k; ++i) l.strides[i][l.rank] = full[i][d];
      ++l.rank;
    }
  }
  return l;
}

FusedElementwiseArgs MakeFusedElementwiseArgs(
    const FusedElementwiseLayout& layout) {
  FusedElementwiseArgs args;
  args.n = layout.num_elements;
  for (int d = 0; d < layout.rank && d < kFusedElementwiseMaxGpuRank; ++d) {
    args.dims[d] = layout.dims[d];
    for (size_t i = 0; i < layout.strides.size(); ++i) {
      args.strides[i][d] = layout.strides[i][d];
    }
  }
  return args;
}

absl::StatusOr<std::string> FusedElementwiseSource(
    const ElementwiseProgram& program, DataType dtype,
    const FusedElementwiseLayout& layout) {
  std::string src = absl::StrCat("// FusedElementwise: ",
                                 program.DebugString(), "\n// ",
                                 DataTypeName(dtype), ", ", layout.ClassKey(),
                                 "\n");
  std::string f = "f";
  switch (dtype) {
    case DT_FLOAT: src += kFloatTypedefs; break;
    case DT_DOUBLE: src += kDoubleTypes; f = ""; break;
    case DT_FLOAT16: src += kHalfTypes; break;
    case DT_BFLOAT16: src += kBFloat16Types; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("FusedElementwise has no GPU kernel for ",
                       DataTypeName(dtype)));
  }
  if (layout.rank > kFusedElementwiseMaxGpuRank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FusedElementwise on the GPU indexes at most ",
        kFusedElementwiseMaxGpuRank, " merged dimensions; this has ",
        layout.rank));
  }
  const int n_in = program.num_inputs;
  absl::StrAppend(&src, "struct Args {\n  long long n;\n  long long dims[",
                  kFusedElementwiseMaxGpuRank, "];\n  long long strides[",
                  kMaxElementwiseInputs, "][", kFusedElementwiseMaxGpuRank,
                  "];\n};\n");
  absl::StrAppend(&src, "extern \"C\" __global__ void ",
                  kFusedElementwiseKernelName, "(");
  for (int i = 0; i < n_in; ++i) {
    absl::StrAppend(&src, "const T* __restrict__ in", i, ", ");
  }
  absl::StrAppend(&src, "T* __restrict__ out, Args a) {\n");
  absl::StrAppend(&src, "  typedef ",
                  layout.wide_index() ? "long long" : "unsigned int",
                  " I;\n  const I n = (I)a.n;\n"
                  "  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; "
                  "i < n; i += (I)gridDim.x * blockDim.x) {\n");
  bool any_strided = false;
  for (FusedInputAccess acc : layout.access) {
    any_strided = any_strided || acc == FusedInputAccess::kStrided;
  }
  if (any_strided) {
    absl::StrAppend(&src, "    I rem = i;\n");
    for (int i = 0; i < n_in; ++i) {
      if (layout.access[i] == FusedInputAccess::kStrided) {
        absl::StrAppend(&src, "    I o", i, " = 0;\n");
      }
    }
    for (int d = layout.rank - 1; d >= 0; --d) {
      if (d > 0) {
        absl::StrAppend(&src, "    { const I c = rem % (I)a.dims[", d,
                        "]; rem /= (I)a.dims[", d, "];\n");
      } else {
        absl::StrAppend(&src, "    { const I c = rem;\n");
      }
      for (int i = 0; i < n_in; ++i) {
        if (layout.access[i] != FusedInputAccess::kStrided) continue;
        absl::StrAppend(&src, "      o", i, " += c * (I)a.strides[", i, "][",
                        d, "];\n");
      }
      absl::StrAppend(&src, "    }\n");
    }
  }
  for (int i = 0; i < n_in; ++i) {
    const char* index = layout.access[i] == FusedInputAccess::kFlat ? "i"
                        : layout.access[i] == FusedInputAccess::kScalar
                            ? "0"
                            : nullptr;
    absl::StrAppend(&src, "    const C x", i, " = ld(in", i, "[",
                    index != nullptr ? std::string(index) : absl::StrCat("o", i),
                    "]);\n");
  }
  for (size_t k = 0; k < program.instructions.size(); ++k) {
    absl::StrAppend(&src, "    const C t", k, " = ",
                    Expression(program.instructions[k], n_in, f), ";\n");
  }
  absl::StrAppend(&src, "    out[i] = st(t", program.instructions.size() - 1,
                  ");\n  }\n}\n");
  return src;
}

}  // namespace sluice
