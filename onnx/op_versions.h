// Which version of an ONNX op a model uses, and which versions sluice's
// importer implements. Ops of ai.onnx.ml are named "ai.onnx.ml.Op" (the
// importer's OnnxOpKey) and versioned by the model's opset of that domain.
// A model's opset (of the op's domain) selects, for
// each op, the newest version of that op's schema not newer than the opset
// (ONNX's since_version rule); the importer accepts the node when its
// handler implements that version, whatever the model's opset, and otherwise
// reports "op X at opset N: <what is missing>".
//
//   int v = OnnxOpVersion("ReduceMean", 21);         // 18
//   std::string why = UnhandledVersionReason("Clip", 6);
//   // "op Clip at opset 6 (version 6): min and max as attributes ..."
//
// The op histories come from the onnx Python package
// (op_versions_table.inc, made by tests/onnx/gen_op_versions.py). Pure
// functions of constant tables; safe from any thread.
#ifndef SLUICE_ONNX_OP_VERSIONS_H_
#define SLUICE_ONNX_OP_VERSIONS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace sluice {

// The oldest and newest opsets of the default domain the importer reads.
int OldestImportedOpset();
int NewestKnownOpset();

// The version (since_version) of `op` in a model of `opset`; 0 when the op
// does not exist at that opset or is not an ONNX op.
int OnnxOpVersion(absl::string_view op, int opset);

// The versions of `op` whose semantics the importer's handler implements;
// empty when the op has no handler.
const std::vector<int>& HandledOpVersions(absl::string_view op);

// "" when the handler of `op` implements its version at `opset`; else why
// not, naming the op, the opset and what is missing.
// REQUIRES: `op` has a handler.
std::string UnhandledVersionReason(absl::string_view op, int opset);

}  // namespace sluice

#endif  // SLUICE_ONNX_OP_VERSIONS_H_
