// OpRegistry: every op sluice knows, by name. The global registry holds the
// built-in op set (graph/ops/), registered on first use.
//
//   const OpDef* def = OpRegistry::Global()->Find("MatMul");
//   if (def == nullptr) { ... unknown op ... }
//
// Registration happens once, before Global() returns; lookups are
// thread-safe.
#ifndef SLUICE_GRAPH_OP_REGISTRY_H_
#define SLUICE_GRAPH_OP_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "graph/op_def.h"

namespace sluice {

class OpRegistry {
 public:
  // The registry with all built-in ops. Never null.
  static const OpRegistry* Global();

  // Error when an op of that name exists already.
  absl::Status Register(OpDef def);
  const OpDef* Find(std::string_view name) const;  // nullptr when unknown
  std::vector<std::string> OpNames() const;        // sorted

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

// Registers a built-in op; aborts on a schema error (a programmer error).
void RegisterOrDie(OpRegistry* registry, OpDef def);

// Built-in op families (graph/ops/*.cc); Global() calls each once.
void RegisterArrayOps(OpRegistry* registry);   // Const, Input, Identity, Cast,
                                               // shapes, Concat, Gather, ...
void RegisterMathOps(OpRegistry* registry);    // unary, binary, MatMul, reduce
void RegisterDynamicOps(OpRegistry* registry);  // ops/dynamic_ops.cc: Shape,
                                                // Dynamic*, Range, Fill, Tile
void RegisterBitOps(OpRegistry* registry);     // ops/bit_ops.cc: BitShift,
                                               // Bitwise*, BitCast
void RegisterSelectOps(OpRegistry* registry);  // ops/select_ops.cc: TopK,
                                               // Unique, NonZero, OneHot...
void RegisterLinalgOps(OpRegistry* registry);  // ops/linalg_ops.cc: Einsum,
                                               // Det
void RegisterControlFlowOps(OpRegistry* registry);  // ops/control_flow_ops.cc:
                                                    // If, Loop, Scan
void RegisterNnOps(OpRegistry* registry);      // Softmax, LayerNorm,
                                               // RMSNorm, Conv2D, pools
void RegisterSeqOps(OpRegistry* registry);     // ops/seq_ops.cc:
                                               // LinearAttention, DFT, ...
void RegisterCudaKernelOps(OpRegistry* registry);  // ops/cuda_kernel_ops.cc:
                                                   // CudaKernel (NVRTC)
void RegisterVisionOps(OpRegistry* registry);  // ops/vision_ops.cc: Resize,
                                               // Pad, GridSample, ConvND, ...
void RegisterMlOps(OpRegistry* registry);      // ops/ml_ops.cc: TreeEnsemble

}  // namespace sluice

#endif  // SLUICE_GRAPH_OP_REGISTRY_H_
