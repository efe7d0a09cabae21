// libFuzzer target: arbitrary bytes as a serialized ONNX ModelProto through
// ImportOnnxBytes (parse, the onnx.checker-equivalent model check of
// onnx/model_checker.h, per-op import with constant folding) and then
// BuildGraph on the GraphDef it makes, as LoadModel does for an .onnx file.
// No base folder: external data is refused. Any crash, sanitizer report or
// abort is a bug.
//
//   build-asan/tests/fuzz/onnx_fuzz -timeout=2 tests/fuzz/corpus/onnx_fuzz
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "graph/loader.h"
#include "onnx/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sluice::GraphDef> def =
      sluice::ImportOnnxBytes(bytes, /*base_dir=*/"", {}, "fuzz.onnx");
  if (!def.ok()) return 0;
  (void)sluice::BuildGraph(*def, sluice::GraphSource{});
  return 0;
}
