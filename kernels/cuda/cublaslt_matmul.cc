// FusedMatMul's cuBLASLt call (cublaslt_matmul.h): descriptors and the
// heuristic's algorithms cached per problem in a per-device
// LibraryHandleCache; the device's AlgorithmCache times the algorithms once
// per problem and keeps the fastest.
#include "kernels/cuda/cublaslt_matmul.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "cuda_runtime_api.h"
#include "device/cuda/cublaslt_api.h"
#include "device/fault_injector.h"
#include "kernels/algorithm.h"
#include "kernels/algorithm_cache.h"
#include "kernels/cuda/gpu_algorithm_cache.h"
#include "kernels/cuda/library_handle_cache.h"

namespace sluice::cuda {
namespace {

constexpr char kLtResourceKey[] = "cublaslt_matmul";
constexpr char kLtLibrary[] = "cuBLASLt";  // the AlgorithmCache's library
// The most workspace an algorithm may ask for (PyTorch gives cuBLASLt
// 32 MiB on Hopper); the heuristic only offers algorithms within it.
constexpr uint64_t kLtMaxWorkspaceBytes = uint64_t{32} << 20;
constexpr int kLtMaxAlgorithms = 8;

// The descriptors of one problem, and what was learnt about it.
struct LtEntry {
  explicit LtEntry(const CublasLtApi* api) : api(api) {}
  ~LtEntry() {
    if (desc != nullptr) api->MatmulDescDestroy(desc);
    if (a != nullptr) api->MatrixLayoutDestroy(a);
    if (b != nullptr) api->MatrixLayoutDestroy(b);
    if (c != nullptr) api->MatrixLayoutDestroy(c);
  }
  LtEntry(const LtEntry&) = delete;
  LtEntry& operator=(const LtEntry&) = delete;

  const CublasLtApi* const api;
  cublasLtMatmulDesc_t desc = nullptr;
  // cuBLASLt's A is w, B is x; C and D share c's layout.
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algorithms;  // best first
  std::string unsupported;
};

// A device's settings of its cache.
struct CublasLtOptions {
  bool disabled = false;  // DisableCublasLtMatmulForTesting
};

using CublasLtState =
    LibraryHandleCache<CublasLtApi, cublasLtHandle_t, LtEntry, CublasLtOptions>;

absl::StatusOr<CublasLtState*> LtStateFor(GpuDevice* gpu) {
  ASSIGN_OR_RETURN(const CublasLtApi* api, LoadCublasLt());
  return CublasLtState::For(
      gpu, kLtResourceKey, api, [&](cublasLtHandle_t* handle) {
        return CublasLtStatus(api->Create(handle),
                              absl::StrCat(gpu->name(), ": cublasLtCreate"));
      });
}

struct LtTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

absl::StatusOr<LtTypes> TypesFor(DataType dtype, bool allow_tf32) {
  switch (dtype) {
    case DT_FLOAT:
      return LtTypes{CUDA_R_32F, allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F};
    case DT_FLOAT16: return LtTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DT_BFLOAT16: return LtTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default:
      return absl::UnimplementedError(absl::StrCat(
          "cuBLASLt FusedMatMul takes float32, float16 or bfloat16, not ",
          DataTypeName(dtype)));
  }
}

cublasLtEpilogue_t EpilogueFor(MatMulActivation a) {
  switch (a) {
    case MatMulActivation::kRelu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case MatMulActivation::kGeluTanh: return CUBLASLT_EPILOGUE_GELU_BIAS;
    default: return CUBLASLT_EPILOGUE_BIAS;
  }
}

const char* ActivationName(MatMulActivation a) {
  switch (a) {
    case MatMulActivation::kRelu: return "relu";
    case MatMulActivation::kGeluTanh: return "gelu_tanh";
    default: return "none";
  }
}

// The largest power of two, at most 256, that divides the address: what
// the heuristic may assume of an operand (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT
// _*_BYTES; its default assumes 256).
uint32_t AlignmentOf(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && v % align != 0) align /= 2;
  return align;
}

struct Alignments {
  uint32_t a, b, c, d;
};

std::string CacheKey(const CublasLtMatmulProblem& p, const LtTypes& t,
                     const Alignments& al) {
  return absl::StrCat(DataTypeName(p.dtype), " compute ",
                      static_cast<int>(t.compute), " [", p.rows, ", ", p.k,
                      "] x ", p.transpose_b ? "[n, k] " : "[k, n] ", "n=", p.n,
                      " bias+", ActivationName(p.activation),
                      p.residual ? " +residual" : "", " align ", al.a, "/",
                      al.b, "/", al.c, "/", al.d);
}

template <typename V>
absl::Status SetDesc(const CublasLtApi& api, cublasLtMatmulDesc_t desc,
                     cublasLtMatmulDescAttributes_t attr, const V& value,
                     const char* what) {
  return CublasLtStatus(api.MatmulDescSetAttribute(desc, attr, &value, sizeof(value)),
                        what);
}

// Makes e's descriptors and asks the heuristic for its algorithms.
absl::Status Prepare(const CublasLtState& st, const CublasLtMatmulProblem& p,
                     const LtTypes& t, const Alignments& al, const void* bias,
                     LtEntry* e) {
  const CublasLtApi& api = *st.api();
  RETURN_IF_ERROR(CublasLtStatus(
      api.MatmulDescCreate(&e->desc, t.compute, CUDA_R_32F),
      "cublasLtMatmulDescCreate"));
  const cublasOperation_t op_a = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = CUBLAS_OP_N;
  RETURN_IF_ERROR(SetDesc(api, e->desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a,
                          "CUBLASLT_MATMUL_DESC_TRANSA"));
  RETURN_IF_ERROR(SetDesc(api, e->desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b,
                          "CUBLASLT_MATMUL_DESC_TRANSB"));
  RETURN_IF_ERROR(SetDesc(api, e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                          EpilogueFor(p.activation),
                          "CUBLASLT_MATMUL_DESC_EPILOGUE"));
  RETURN_IF_ERROR(SetDesc(api, e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                          bias, "CUBLASLT_MATMUL_DESC_BIAS_POINTER"));
  const uint64_t n = static_cast<uint64_t>(p.n);
  const uint64_t k = static_cast<uint64_t>(p.k);
  const uint64_t rows = static_cast<uint64_t>(p.rows);
  // Column-major: A = w^T is n x k (stored as k x n, transposed, when w is
  // [n, k]); B = x^T is k x rows; C = D = y^T is n x rows.
  RETURN_IF_ERROR(CublasLtStatus(
      p.transpose_b
          ? api.MatrixLayoutCreate(&e->a, t.data, k, n, static_cast<int64_t>(k))
          : api.MatrixLayoutCreate(&e->a, t.data, n, k, static_cast<int64_t>(n)),
      "cublasLtMatrixLayoutCreate (w)"));
  RETURN_IF_ERROR(CublasLtStatus(
      api.MatrixLayoutCreate(&e->b, t.data, k, rows, static_cast<int64_t>(k)),
      "cublasLtMatrixLayoutCreate (x)"));
  RETURN_IF_ERROR(CublasLtStatus(
      api.MatrixLayoutCreate(&e->c, t.data, n, rows, static_cast<int64_t>(n)),
      "cublasLtMatrixLayoutCreate (y)"));

  cublasLtMatmulPreference_t pref = nullptr;
  RETURN_IF_ERROR(CublasLtStatus(api.MatmulPreferenceCreate(&pref),
                                 "cublasLtMatmulPreferenceCreate"));
  absl::Status s;
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto value) {
    if (!s.ok()) return;
    s = CublasLtStatus(
        api.MatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)),
        "cublasLtMatmulPreferenceSetAttribute");
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, kLtMaxWorkspaceBytes);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al.a);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al.b);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al.c);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al.d);
  if (s.ok()) {
    cublasLtMatmulHeuristicResult_t results[kLtMaxAlgorithms] = {};
    int returned = 0;
    s = CublasLtStatus(
        api.MatmulAlgoGetHeuristic(st.handle(), e->desc, e->a, e->b, e->c, e->c,
                                   pref, kLtMaxAlgorithms, results, &returned),
        "cublasLtMatmulAlgoGetHeuristic");
    for (int i = 0; s.ok() && i < returned; ++i) {
      if (results[i].state == CUBLAS_STATUS_SUCCESS) {
        e->algorithms.push_back(results[i]);
      }
    }
  }
  api.MatmulPreferenceDestroy(pref);
  return s;
}

// One call of RunCublasLtMatmul, as its algorithms see it.
struct LtCall {
  const CublasLtState* st;
  const LtEntry* e;
  const void* x;
  const void* w;
  const void* c;  // the residual, or y (beta 0)
  void* y;
  float beta;
  cudaStream_t stream;
};

// The heuristic's algorithm `index` of the problem.
class LtAlgorithm final : public Algorithm<LtCall> {
 public:
  explicit LtAlgorithm(int index) : index_(index) {}
  std::string Name(const LtCall&) const override {
    return absl::StrCat("heuristic #", index_);
  }
  absl::Status CanImplement(const LtCall&) const override { return absl::OkStatus(); }
  int64_t WorkspaceBytes(const LtCall& call) const override {
    return static_cast<int64_t>(call.e->algorithms[index_].workspaceSize);
  }
  // UNIMPLEMENTED (a refusal) where cuBLASLt refuses it at run time.
  absl::Status Run(const LtCall& call, void* workspace) const override {
    const float alpha = 1.0f;
    const LtEntry& e = *call.e;
    const cublasLtMatmulHeuristicResult_t& algo = e.algorithms[index_];
    RETURN_IF_ERROR(InjectedFault(FaultKind::kLibrary, "cublasLtMatmul"));
    return CublasLtStatus(
        call.st->api()->Matmul(call.st->handle(), e.desc, &alpha, call.w, e.a, call.x,
                               e.b, &call.beta, call.c, e.c, call.y, e.c, &algo.algo,
                               workspace, algo.workspaceSize, call.stream),
        "cublasLtMatmul");
  }

 private:
  const int index_;
};

}  // namespace

absl::Status DisableCublasLtMatmulForTesting(GpuDevice* gpu, bool disabled) {
  ASSIGN_OR_RETURN(CublasLtState * st, LtStateFor(gpu));
  absl::MutexLock lock(&st->mu());
  st->options().disabled = disabled;
  return absl::OkStatus();
}

absl::StatusOr<bool> RunCublasLtMatmul(OpKernelContext* ctx, GpuDevice* gpu,
                                       const CublasLtMatmulProblem& p,
                                       const void* x, const void* w,
                                       const void* bias, const void* residual,
                                       void* y, std::string* why_not) {
  auto refuse = [&](std::string why) -> bool {
    if (why_not != nullptr) *why_not = std::move(why);
    return false;
  };
  absl::StatusOr<LtTypes> types = TypesFor(p.dtype, gpu->allow_tf32());
  if (!types.ok()) return refuse(std::string(types.status().message()));
  if (p.k == 0 || p.rows == 0 || p.n == 0) {
    return refuse("an empty product (cuBLASLt takes no zero dimension)");
  }
  if ((residual != nullptr) != p.residual) {
    return absl::InternalError(
        "RunCublasLtMatmul: the residual pointer and problem disagree");
  }
  absl::StatusOr<const CublasLtApi*> api = LoadCublasLt();
  if (!api.ok()) return refuse(std::string(api.status().message()));
  absl::StatusOr<CublasLtState*> state = LtStateFor(gpu);
  if (!state.ok()) return refuse(std::string(state.status().message()));
  CublasLtState* st = *state;
  const Alignments al{AlignmentOf(w), AlignmentOf(x),
                      AlignmentOf(residual != nullptr ? residual : y),
                      AlignmentOf(y)};
  const std::string key = CacheKey(p, *types, al);

  absl::MutexLock lock(&st->mu());
  if (st->options().disabled) return refuse("disabled for testing");
  std::unique_ptr<LtEntry>& slot = st->cache()[key];
  if (slot == nullptr) {
    auto e = std::make_unique<LtEntry>(*api);
    // A problem cuBLASLt refuses (NOT_SUPPORTED, no algorithm) runs on the
    // fallback from now on; the GPU tests check that cuBLASLt did run
    // where it should.
    absl::Status s = Prepare(*st, p, *types, al, bias, e.get());
    if (!s.ok()) {
      e->unsupported = std::string(s.message());
    } else if (e->algorithms.empty()) {
      e->unsupported = absl::StrCat("cuBLASLt offers no algorithm for ", key);
    }
    slot = std::move(e);
  }
  LtEntry* e = slot.get();
  if (!e->unsupported.empty()) return refuse(e->unsupported);
  RETURN_IF_ERROR(SetDesc(**api, e->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                          bias, "CUBLASLT_MATMUL_DESC_BIAS_POINTER"));
  const LtCall call{st, e, x, w, residual != nullptr ? residual : y, y,
                    residual != nullptr ? 1.0f : 0.0f,
                    static_cast<cudaStream_t>(gpu->compute_stream())};
  std::vector<LtAlgorithm> algorithms;
  for (size_t i = 0; i < e->algorithms.size(); ++i) {
    algorithms.emplace_back(static_cast<int>(i));
  }
  std::vector<const Algorithm<LtCall>*> list;
  for (const LtAlgorithm& a : algorithms) list.push_back(&a);
  ASSIGN_OR_RETURN(AlgorithmCache * cache, GpuAlgorithmCache(gpu));
  GpuAlgorithmDevice device(ctx, gpu);
  AlgorithmCache::Options options;
  options.library = kLtLibrary;
  options.max_workspace_bytes = static_cast<int64_t>(kLtMaxWorkspaceBytes);
  ASSIGN_OR_RETURN(AlgorithmCache::Ran ran,
                   cache->Run<LtCall>(key, list, call, options, &device));
  if (ran.index < 0) return refuse(ran.why_not);
  return true;
}

std::vector<CublasLtMatmulCacheEntry> CublasLtMatmulCache(GpuDevice* gpu) {
  std::vector<CublasLtMatmulCacheEntry> out;
  if (!LoadCublasLt().ok()) return out;
  absl::StatusOr<CublasLtState*> st = LtStateFor(gpu);
  if (!st.ok()) return out;
  absl::StatusOr<AlgorithmCache*> cache = GpuAlgorithmCache(gpu);
  if (!cache.ok()) return out;
  absl::MutexLock lock(&(*st)->mu());
  for (const auto& [key, e] : (*st)->cache()) {
    const AlgorithmCache::Entry timed = (*cache)->Find(kLtLibrary, key);
    CublasLtMatmulCacheEntry c;
    c.key = key;
    c.algorithms = static_cast<int>(e->algorithms.size());
    c.unsupported = e->unsupported;
    c.runs = timed.runs;
    c.last_workspace_bytes = timed.last_workspace_bytes;
    c.timed = timed.timed;
    c.timings = timed.timings;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace sluice::cuda
