// ReadNpz: the arrays of a NumPy .npz archive (np.savez: a ZIP file of
// .npy members, stored uncompressed) as named host tensors, so that one
// file can carry several inputs (`sluice run --input FILE.npz`).
//
//   ASSIGN_OR_RETURN(std::vector<NamedTensor> arrays, ReadNpz("inputs.npz"));
//   for (const auto& [name, t] : arrays) ...  // "x" for member "x.npy"
//
// Stateless; thread-safe.
#ifndef SLUICE_CORE_NPZ_H_
#define SLUICE_CORE_NPZ_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice {

using NamedTensor = std::pair<std::string, Tensor>;

// Every member of the archive, in the archive's order, named without its
// ".npy". Members compressed with deflate (np.savez_compressed) are
// UNIMPLEMENTED, saying to use np.savez; a file that is not a ZIP archive,
// a member that is not .npy, or sizes that overrun the file are
// INVALID_ARGUMENT naming `name` and the member.
absl::StatusOr<std::vector<NamedTensor>> ParseNpz(absl::string_view bytes,
                                                  absl::string_view name);
// ParseNpz of the file at `path`; NOT_FOUND when it cannot be read.
absl::StatusOr<std::vector<NamedTensor>> ReadNpz(const std::string& path);

}  // namespace sluice

#endif  // SLUICE_CORE_NPZ_H_
