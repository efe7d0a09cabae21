// What onnx.checker checks of a model that the importer would otherwise
// accept and run wrongly: the IR version range, attribute names, types
// and required attributes against each op's schema at the model's opset,
// and single assignment of value names. Every problem is an INVALID_ARGUMENT naming the node, the op
// and the attribute or value; all of a model's problems come in one error.
//
//   absl::Status s = CheckOnnxModel(model, "model.onnx");
//   // "model.onnx: 1 problem that onnx.checker also rejects:
//   //   node 't' (Transpose, opset 17, version 13): attribute 'perm' is
//   //   FLOATS, the schema wants INTS"
//
// The schemas (onnx/op_attr_schemas.inc) are generated from the onnx
// Python package by tests/onnx/gen_op_versions.py. Pure functions of
// constant tables; safe from any thread.
#ifndef SLUICE_ONNX_MODEL_CHECKER_H_
#define SLUICE_ONNX_MODEL_CHECKER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"

namespace sluice {

// The IR versions the importer reads: 3 to the newest the onnx package that
// generated the schemas knows.
int OldestImportedIrVersion();
int NewestKnownIrVersion();

// The opset `model` imports for `domain` ("" and "ai.onnx" are one domain);
// 0 when it imports none.
int ImportedOpset(const onnx::ModelProto& model, absl::string_view domain);

// OK, or INVALID_ARGUMENT listing every problem, prefixed by `model_name`.
// Nodes of domains the schemas do not cover (com.microsoft, ...) and of
// domains the model imports no opset of are left to the importer's support
// check.
absl::Status CheckOnnxModel(const onnx::ModelProto& model,
                            absl::string_view model_name);

}  // namespace sluice

#endif  // SLUICE_ONNX_MODEL_CHECKER_H_
