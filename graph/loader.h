// Loading model files: binary (.pb) and text (.pbtxt) GraphDefs, with
// external weights resolved relative to the model file. ONNX (.onnx) is
// handled by a separate importer when it exists.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<const Graph> g, LoadGraph(path));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_GRAPH_LOADER_H_
#define SLUICE_GRAPH_LOADER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/external_data.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace sluice {

// Where a GraphDef came from: used to resolve external weights and to name
// lines in errors.
struct GraphSource {
  std::string path;      // the model file, for messages ("" if in memory)
  std::string base_dir;  // folder for external weights ("" = none allowed)
  // Node name -> 1-based line in a text file.
  absl::flat_hash_map<std::string, int> node_lines;
  // The same by position in GraphDef.node (empty when unknown); preferred
  // over node_lines, which cannot tell two nodes of one name apart.
  std::vector<int> node_lines_by_index;
  // How Const values in external data are loaded: by default large ones are
  // mapped from the weights file, which must then not be rewritten in place
  // while the graph lives; kRead copies them (core/external_data.h).
  ExternalDataMode external_data = ExternalDataMode::kMap;
};

// What BuildGraph makes of Const values.
enum class ConstValues {
  // Every value is made: what running or optimising the graph needs.
  kMake,
  // A splat (core/tensor_proto.h: one listed value filling the tensor) is
  // checked as fully as when made (SplatValue) but not made: its
  // Node::const_value() is nullptr, and the node's output dtype and shape
  // describe it. A shape function that reads its value (a Reshape's shape, a
  // Gather's indices) gets it made, so inference and its errors are those
  // of kMake. For what only describes a graph (ValidateGraphDef, `sluice
  // inspect`, `sluice convert`): a few bytes of file asking for 1 GiB of
  // zeros then cost no 1 GiB.
  kDescribeSplats,
};

struct LoadedGraphDef {
  GraphDef def;
  GraphSource source;
};

// Reads a .pb or .pbtxt file (by extension; other extensions try binary then
// text); external weights are read later, by BuildGraph. Errors: missing or
// unreadable file (NOT_FOUND / PERMISSION_DENIED), malformed content
// (INVALID_ARGUMENT with the line for text files).
absl::StatusOr<LoadedGraphDef> LoadGraphDef(const std::string& path);

// OK when every string field of `def` (names, inputs, attribute strings) is
// UTF-8, which protobuf needs to write a .pb that reads back; otherwise
// INVALID_ARGUMENT naming the first field and its (escaped) value, prefixed
// with `path`. LoadGraphDef and LoadModel check this.
absl::Status CheckGraphDefUtf8(const GraphDef& def, const std::string& path);

// Builds and validates a graph. On failure the status is INVALID_ARGUMENT and
// its message lists every error found, one per line; each names the node, its
// op and, when known, the line. A graph built with
// ConstValues::kDescribeSplats can be inspected, not run.
absl::StatusOr<std::unique_ptr<const Graph>> BuildGraph(
    const GraphDef& def, const GraphSource& source = {},
    ConstValues const_values = ConstValues::kMake);

// Like BuildGraph, returning every error separately (empty on success).
// Splats are checked, not made (ConstValues::kDescribeSplats).
std::vector<absl::Status> ValidateGraphDef(const GraphDef& def,
                                           const GraphSource& source = {});

// LoadGraphDef then BuildGraph. Large external weights are mapped from their
// file (ExternalDataMode::kMap); to copy them instead, call LoadGraphDef, set
// source.external_data to kRead, then BuildGraph.
absl::StatusOr<std::unique_ptr<const Graph>> LoadGraph(const std::string& path);

// Writes a GraphDef as .pb or .pbtxt, chosen by extension.
absl::Status SaveGraphDef(const GraphDef& def, const std::string& path);

}  // namespace sluice

#endif  // SLUICE_GRAPH_LOADER_H_
