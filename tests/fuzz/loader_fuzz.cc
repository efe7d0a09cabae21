// libFuzzer target: arbitrary bytes through the binary and text GraphDef
// parsers and then BuildGraph. Any crash, sanitizer report or abort is a bug:
// no file may take the process down.
//
//   SLUICE_FUZZ_SECONDS=0 scripts/sanitize.sh   # builds build-asan/
//   build-asan/tests/fuzz/loader_fuzz -timeout=2 -max_total_time=60 \
//     tests/fuzz/corpus/loader_fuzz
#include <cstddef>
#include <cstdint>
#include <string>

#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"

namespace {

// Text parse errors are expected; keep them off stderr.
class SilentCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber,
                const std::string&) override {}
};

// Splats (one value filling a tensor) are legal up to 1 GiB, and filling
// that much is slow under the sanitizers: skip those inputs rather than time
// out on them.
bool HasLargeSplat(const sluice::GraphDef& def) {
  for (const sluice::NodeDef& node : def.node()) {
    for (const auto& [name, value] : node.attr()) {
      if (!value.has_tensor()) continue;
      absl::StatusOr<sluice::Shape> shape =
          sluice::ShapeFromProto(value.tensor().shape());
      if (!shape.ok() || !shape->IsFullyDefined()) continue;
      absl::StatusOr<int64_t> n = shape->NumElements();
      if (n.ok() && *n > (int64_t{1} << 20)) return true;
    }
  }
  return false;
}

void BuildBoth(const sluice::GraphDef& def) {
  if (HasLargeSplat(def)) return;
  sluice::GraphSource source;  // no base_dir: external data is refused
  (void)sluice::ValidateGraphDef(def, source);
  (void)sluice::BuildGraph(def, source);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // protobuf logs each invalid UTF-8 string it parses; that is expected
  // here and only slows the fuzzer down.
  static google::protobuf::LogSilencer* quiet = new google::protobuf::LogSilencer;
  (void)quiet;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  sluice::GraphDef binary;
  if (binary.ParseFromString(bytes)) BuildBoth(binary);

  sluice::GraphDef text;
  google::protobuf::TextFormat::Parser parser;
  SilentCollector errors;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(bytes, &text)) BuildBoth(text);
  return 0;
}
