// External data: a tensor whose bytes are a range of a weights file beside
// the model (TensorProto.external). The file's path, the range and the file's
// size are checked before any memory is taken; then the range is either
// mapped (large, aligned ranges, by default) or read into host memory.
//
//   ASSIGN_OR_RETURN(Tensor w,
//                    ReadExternalTensor(proto.external(), "models", DT_FLOAT,
//                                       Shape({8192, 8192})));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_CORE_EXTERNAL_DATA_H_
#define SLUICE_CORE_EXTERNAL_DATA_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "proto/types.pb.h"

namespace sluice {

// How the bytes of external data become a tensor's memory.
enum class ExternalDataMode {
  // Ranges of at least kMinMappedExternalBytes at a 64-byte aligned offset
  // are mapped copy-on-write (MAP_PRIVATE) and their page tables filled at
  // load, so that the tensor shares the page cache: no copy, no fresh pages
  // to zero. Smaller or unaligned ranges, and any range the kernel refuses
  // to map, are read as in kRead. The tensor then reflects the file as it
  // is while it lives: truncating or rewriting the weights file in place
  // while a graph loaded from it is alive changes its weights, and a read
  // past the new end kills the process with SIGBUS. Replace weights files
  // by writing a new file and renaming it over the old one (the mapping
  // keeps the old file), or use kRead.
  kMap,
  // Always read into freshly allocated host memory (CpuAllocator): the
  // tensor is a snapshot of the file at load time.
  kRead,
};

// Ranges below this are always read: mapping costs a kernel mapping
// (vm.max_map_count bounds them) and rounds the range out to whole pages.
inline constexpr int64_t kMinMappedExternalBytes = int64_t{1} << 20;

// Pieces that kRead reads with one pread each.
inline constexpr int64_t kExternalReadChunkBytes = int64_t{16} << 20;

// Checks `ext` and returns a host tensor of `dtype` and `shape` holding the
// range's bytes. The file is base_dir/ext.path(); a path that is absolute or
// leaves base_dir with "..", or an empty base_dir, is INVALID_ARGUMENT, as is
// a negative offset or length or a length other than the tensor's size. A
// missing file is NOT_FOUND, an unreadable one PERMISSION_DENIED, a range
// past the end of the file OUT_OF_RANGE, and a file that ends early while
// being read DATA_LOSS; each message names the path. No allocation or
// mapping is made before these checks.
// REQUIRES: dtype is valid and shape fully defined within Shape's limits.
absl::StatusOr<Tensor> ReadExternalTensor(
    const ExternalData& ext, const std::string& base_dir, DataType dtype,
    const Shape& shape, ExternalDataMode mode = ExternalDataMode::kMap);

// Whether `t`'s bytes are a mapping of a weights file (kMap) rather than
// memory of its own.
bool IsMappedExternalData(const Tensor& t);

}  // namespace sluice

#endif  // SLUICE_CORE_EXTERNAL_DATA_H_
