// The importer's internals shared by the op handlers (onnx/ops_*.cc): the
// ONNX name -> value table, the emitter, attribute getters, and the op table
// that maps each ONNX op to a handler (and an optional up-front check of its
// attributes, so that every unsupported node is reported at once).
//
//   absl::Status ConvertRelu(const onnx::NodeProto& node, ImportContext& ctx) {
//     ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
//     ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Relu", ctx.Hint(node),
//     {x})); return ctx.SetOutput(node, 0, y);
//   }
//
// Internal to onnx/; used by one thread at a time.
#ifndef SLUICE_ONNX_IMPORT_CONTEXT_H_
#define SLUICE_ONNX_IMPORT_CONTEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "onnx/graph_emitter.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"

namespace sluice {

class ImportContext {
 public:
  // All references are borrowed and must outlive the context.
  ImportContext(GraphEmitter* em, const OnnxImportOptions* options, int opset,
                std::string base_dir)
      : em_(em),
        options_(options),
        opset_(opset),
        base_dir_(std::move(base_dir)) {}

  GraphEmitter& em() { return *em_; }
  const OnnxImportOptions& options() const { return *options_; }
  int opset() const { return opset_; }
  const std::string& base_dir() const { return base_dir_; }

  // Input `i` of `node`. NOT_FOUND when the name is not produced by an
  // earlier node; INVALID_ARGUMENT when it is absent (missing or "").
  absl::StatusOr<ValuePtr> Input(const onnx::NodeProto& node, int i);
  // Like Input, but nullptr for an absent optional input.
  absl::StatusOr<ValuePtr> OptionalInput(const onnx::NodeProto& node, int i);
  // Input `i` as a constant, or an error saying sluice needs `what` known at
  // import time (with a hint about input_shapes when dims are unknown).
  absl::StatusOr<Tensor> ConstInput(const onnx::NodeProto& node, int i,
                                    absl::string_view what);
  // Whether input `i` is present and known only at run time (not a
  // constant): the handler then emits the op's runtime-parameter form
  // (docs/ops.md, "Runtime parameters").
  bool IsRuntime(const onnx::NodeProto& node, int i) const;
  // Input `i` as an int64 value for a runtime-parameter input (cast from
  // int32 when needed); an empty int64 vector when the input is absent.
  absl::StatusOr<ValuePtr> ParamInput(const onnx::NodeProto& node, int i);
  // Optional constant integer list input: nullopt when absent.
  absl::StatusOr<std::optional<std::vector<int64_t>>> ConstInts(
      const onnx::NodeProto& node, int i, absl::string_view what);

  // Constants the importer makes itself: em().CreateConstant, which checks
  // options().limits (the emitter's) before allocating.

  // Binds output `i` of `node` (skipped when the model leaves it unnamed).
  absl::Status SetOutput(const onnx::NodeProto& node, int i, ValuePtr value);
  // Binds an ONNX value name directly (graph inputs and initializers).
  void Bind(const std::string& name, ValuePtr value) { values_[name] = value; }
  ValuePtr Find(const std::string& name) const;

  // A name for the node(s) that `node` becomes: its name, else its first
  // output's. `suffix` names helper nodes ("conv1/bias").
  std::string Hint(const onnx::NodeProto& node,
                   absl::string_view suffix = "") const;

  // Conv nodes whose BatchNormalization successor is folded into them:
  // Conv node -> BN node. Set up by the importer.
  absl::flat_hash_map<const onnx::NodeProto*, const onnx::NodeProto*>&
  folded_bn() {
    return folded_bn_;
  }
  // Nodes already handled by another (a folded BatchNormalization).
  absl::flat_hash_set<const onnx::NodeProto*>& skipped() { return skipped_; }

 private:
  GraphEmitter* em_;
  const OnnxImportOptions* options_;
  int opset_;
  std::string base_dir_;
  absl::flat_hash_map<std::string, ValuePtr> values_;
  absl::flat_hash_map<const onnx::NodeProto*, const onnx::NodeProto*>
      folded_bn_;
  absl::flat_hash_set<const onnx::NodeProto*> skipped_;
};

// --- Attributes ------------------------------------------------------------
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node,
                                     absl::string_view name);
int64_t AttrInt(const onnx::NodeProto& node, absl::string_view name,
                int64_t default_value);
float AttrFloat(const onnx::NodeProto& node, absl::string_view name,
                float default_value);
std::string AttrString(const onnx::NodeProto& node, absl::string_view name,
                       const std::string& default_value);
// nullopt when absent.
std::optional<std::vector<int64_t>> AttrInts(const onnx::NodeProto& node,
                                             absl::string_view name);

// --- The op table ----------------------------------------------------------
using ConvertFn = absl::Status (*)(const onnx::NodeProto& node,
                                   ImportContext& ctx);
// Returns why the node cannot be imported ("" when it can), from its
// attributes and opset alone.
using CheckFn = std::string (*)(const onnx::NodeProto& node, int opset);

struct OnnxOpSpec {
  ConvertFn convert = nullptr;
  CheckFn check = nullptr;  // optional
};
using OnnxOpTable = absl::flat_hash_map<std::string, OnnxOpSpec>;

// The ONNX ops the importer maps, by OnnxOpKey.
const OnnxOpTable& GetOnnxOpTable();
// A node's key in the op table and the op histories (onnx/op_versions.h):
// its op_type in the default domain, "domain.op_type" in another
// ("ai.onnx.ml.Binarizer").
std::string OnnxOpKey(const onnx::NodeProto& node);
// Whether the op table has ops of `domain` (not the default one).
bool OnnxDomainHasOps(absl::string_view domain);
// Each family adds its ops (onnx/ops_*.cc).
void AddElementwiseOps(OnnxOpTable* table);
void AddShapeOps(OnnxOpTable* table);
void AddNnOps(OnnxOpTable* table);
void AddMathOps(OnnxOpTable* table);  // ops_math.cc
void AddNormOps(OnnxOpTable* table);  // ops_norm.cc
void AddAttentionOps(OnnxOpTable* table);  // ops_attention.cc
void AddLossOps(OnnxOpTable* table);  // ops_loss.cc
void AddQuantOps(OnnxOpTable* table);  // ops_quant.cc
void AddIndexOps(OnnxOpTable* table);  // ops_index.cc, after AddShapeOps
void AddVisionOps(OnnxOpTable* table);  // ops_vision.cc, after AddNnOps
void AddSeqOps(OnnxOpTable* table);  // ops_seq.cc
void AddQLinearOps(OnnxOpTable* table);  // ops_qlinear.cc
void AddSignalOps(OnnxOpTable* table);  // ops_signal.cc
void AddControlFlowOps(OnnxOpTable* table);  // ops_control.cc: If, Loop, Scan

// Converts the nodes of `graph` in order with the op table: the importer's
// main loop, which ops_control.cc runs on subgraphs too. REQUIRES: every
// node passed the importer's up-front check (which covers subgraphs).
absl::Status ConvertNodes(const onnx::GraphProto& graph, ImportContext& ctx);
void AddBitwiseOps(OnnxOpTable* table);  // ops_bitwise.cc
void AddSelectOps(OnnxOpTable* table);  // ops_select.cc
void AddLinalgOps(OnnxOpTable* table);  // ops_linalg.cc
void AddMlOps(OnnxOpTable* table);  // ops_ml.cc: the ai.onnx.ml domain
void AddMlTreeOps(OnnxOpTable* table);  // ops_ml_trees.cc: its tree ensembles

// Helpers shared by the handlers.
// Emits x reshaped to `shape` (folded when x is a constant).
absl::StatusOr<ValuePtr> EmitReshape(ImportContext& ctx, absl::string_view hint,
                                     ValuePtr x,
                                     const std::vector<int64_t>& shape);
// Emits a Cast of x to `dtype`, or returns x when it has that dtype.
absl::StatusOr<ValuePtr> EmitCastTo(ImportContext& ctx, absl::string_view hint,
                                    ValuePtr x, DataType dtype);
// "node 'name' (Op)": how errors name an ONNX node.
std::string NodeLabel(const onnx::NodeProto& node);
// INVALID_ARGUMENT "node 'name' (Op): <message>".
absl::Status Bad(const onnx::NodeProto& node, absl::string_view message);
// Whether the node has input i and it is not left out ("").
bool HasInput(const onnx::NodeProto& node, int i);
// Emits a scalar constant of `dtype` holding v.
ValuePtr Scalar(ImportContext& ctx, DataType dtype, double v,
                absl::string_view hint);

}  // namespace sluice

#endif  // SLUICE_ONNX_IMPORT_CONTEXT_H_
