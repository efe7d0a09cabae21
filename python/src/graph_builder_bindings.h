// The engine of sluice.GraphBuilder (python/sluice/graph_builder.py): a
// GraphDef grown one node at a time from Python values, each node checked by
// sluice's own graph builder (graph/builder.h) as it is added, and the
// whole graph again (BuildGraph, as a model file is loaded) before it is
// serialized.
//
//   g = _sluice._GraphDef()
//   outs = g.add_node("y", "Relu", ["x"], {}, "")   # [(dtype, dims, rank)]
//   data = g.serialize(False)                         # a binary GraphDef
//
// Attribute values are converted by the op's schema (OpRegistry): an int
// where the op wants a float becomes a float, a dtype name where it wants a
// type becomes a DataType; a value the schema does not fit keeps its natural
// kind, so the builder reports the mismatch naming the node.
//
// Not thread-safe: one builder belongs to one thread at a time (the GIL is
// held throughout; nothing here releases it).
#ifndef SLUICE_PYTHON_SRC_GRAPH_BUILDER_BINDINGS_H_
#define SLUICE_PYTHON_SRC_GRAPH_BUILDER_BINDINGS_H_

#include "nanobind/nanobind.h"

namespace sluice::python {

// Binds `_GraphDef` and `_TensorValue` on the extension module.
void BindGraphBuilder(nanobind::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_GRAPH_BUILDER_BINDINGS_H_
