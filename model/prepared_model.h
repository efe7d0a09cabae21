// A prepared model file: a graph after the optimisation passes, with its
// constants already in the layout the device wants (OHWI filters of a
// channels-last session, BatchNormalization folded, weights converted to a
// reduced precision), written by `sluice convert --optimized` so that a
// session starts from it without running the passes (docs/design.md
// decision 44). The file holds, in order: a fixed prefix (magic
// "SLUICEPM", the format version, the header's size and fingerprint), the
// header (proto/prepared_model.proto: the key, the source, where each
// constant lies), the GraphDef, and the weights at a 4 KiB-aligned offset,
// each constant 64-byte aligned. A reader maps the file once: the graph's
// constants are views of that mapping, not copies.
//
//   ASSIGN_OR_RETURN(PreparedModel m,
//                    ReadPreparedModel("resnet50.sluicemodel", my_key));
//   // m.graph: the optimised graph; m.header: what it was prepared from.
//
// Reading refuses (and says why) a file whose key differs from the
// caller's, one of another format version, and a truncated or corrupt one:
// every byte is checked against the header's fingerprint before the graph
// is built. Stateless functions; thread-safe. A file being read must not
// be rewritten in place (WritePreparedModel writes a new file and renames
// it over the old one).
#ifndef SLUICE_MODEL_PREPARED_MODEL_H_
#define SLUICE_MODEL_PREPARED_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "proto/prepared_model.pb.h"

namespace sluice {

// The format this build writes and reads. A file of any other version is
// refused (the fallback loads its source).
inline constexpr uint32_t kPreparedModelFormatVersion = 1;

// The extension `sluice convert --optimized` asks for.
inline constexpr char kPreparedModelExtension[] = ".sluicemodel";

struct PreparedModel {
  std::unique_ptr<const Graph> graph;
  PreparedModelHeader header;
};

// Whether `path` starts with a prepared model's magic bytes (whatever its
// version or state): false for a missing or short file.
bool IsPreparedModelFile(const std::string& path);

// Writes `graph` (every Const's value made) under `header` (its key,
// source, level, passes and removed nodes; the layout fields are filled
// here) to `path`: to a temporary file beside it, then renamed over it, so
// that a session mapping the old file keeps reading the old bytes.
// Errors: a graph with a Const whose value was not made
// (INVALID_ARGUMENT), an unwritable path (PERMISSION_DENIED / DATA_LOSS).
absl::Status WritePreparedModel(const Graph& graph, PreparedModelHeader header,
                                const std::string& path);

// Reads the prefix and header only (no key, version or body check): where
// a refused file's source is, whatever its format version (the prefix's
// first 32 bytes and the header's source fields keep their places in every
// version). Errors as ReadPreparedModel's, less the key, the version and
// the body.
absl::StatusOr<PreparedModelHeader> ReadPreparedModelHeader(
    const std::string& path);

// Maps the file, checks it and builds its graph. Refusals, each naming the
// path and what differs: FAILED_PRECONDITION for another format version
// or a key part that differs from `key` (each differing part with both
// values), DATA_LOSS for a file shorter or longer than its header says or
// whose header or bytes do not match their fingerprints, INVALID_ARGUMENT
// for a file that is not a prepared model.
absl::StatusOr<PreparedModel> ReadPreparedModel(
    const std::string& path, absl::Span<const PreparedKeyPart> key);

// "" when `file` and `mine` have the same parts with the same values; else
// one clause per difference: "conv_layout: NHWC in the file, NCHW here".
std::string DescribeKeyDifference(absl::Span<const PreparedKeyPart> file,
                                  absl::Span<const PreparedKeyPart> mine);

}  // namespace sluice

#endif  // SLUICE_MODEL_PREPARED_MODEL_H_
