// Reading an ONNX model file whose weights are inline (TensorProto.raw_data)
// without copying them through the parsed protobuf: the file's structure is
// read and parsed, while the raw_data of the main graph's initializers
// (kMinLeftInFileBytes and up) is skipped and left in the file, where
// TensorFromOnnx reads it straight into the tensor's own memory. A weight
// is then read once, from the page cache into its tensor, instead of into
// a protobuf string first and copied from there (issue 29).
//
//   ASSIGN_OR_RETURN(ModelLeavingWeightsInFile m,
//                    ReadModelLeavingWeightsInFile(path));
//   const RawDataInFile* w = m.weights.Find(i);   // initializer i's bytes
//   TensorFromOnnx(m.model->graph().initializer(i), base_dir, w);
//
// The file stays open (and its weights readable, whatever happens to the
// path) while the result lives. Not thread-safe.
#ifndef SLUICE_ONNX_INLINE_WEIGHTS_H_
#define SLUICE_ONNX_INLINE_WEIGHTS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_tensor.h"
#include "onnx/onnx_pb.h"

namespace sluice {

// raw_data below this many bytes stays in the parsed model: a read call
// per small tensor would cost more than the copy it saves.
inline constexpr int64_t kMinLeftInFileBytes = 4096;

// Where the main graph's initializers' raw_data lies in the open file, by
// initializer index. Owns the file descriptor.
class WeightsInFile {
 public:
  WeightsInFile() = default;
  explicit WeightsInFile(int fd) : fd_(fd) {}
  ~WeightsInFile();
  WeightsInFile(WeightsInFile&& other) noexcept;
  WeightsInFile& operator=(WeightsInFile&& other) noexcept;
  WeightsInFile(const WeightsInFile&) = delete;
  WeightsInFile& operator=(const WeightsInFile&) = delete;

  // Initializer `index`'s bytes, or null where they are in the model.
  const RawDataInFile* Find(int index) const;
  void Set(int index, int64_t offset, int64_t length);
  void Erase(int index) { ranges_.erase(index); }
  size_t size() const { return ranges_.size(); }

 private:
  int fd_ = -1;
  absl::flat_hash_map<int, RawDataInFile> ranges_;
};

struct ModelLeavingWeightsInFile {
  std::unique_ptr<onnx::ModelProto> model;  // without the skipped raw_data
  WeightsInFile weights;
};

// Reads the regular file `fd` of `size` bytes (which the result then owns,
// also on error) as an ONNX ModelProto, leaving large initializer raw_data
// in the file. INVALID_ARGUMENT when the bytes are not a protobuf message
// this reader follows (a wire type it does not know, a length past the
// end, nested messages that do not parse); a caller then parses the file
// the ordinary way for that parser's own diagnosis.
absl::StatusOr<ModelLeavingWeightsInFile> ReadModelLeavingWeightsInFile(
    int fd, int64_t size);

}  // namespace sluice

#endif  // SLUICE_ONNX_INLINE_WEIGHTS_H_
