// Converting between TensorProto (the file form of a tensor) and Tensor.
//
//   ASSIGN_OR_RETURN(Tensor t, TensorFromProto(proto, /*base_dir=*/"models"));
//   TensorProto p = TensorToProto(t);
//   if (IsSplat(proto)) ASSIGN_OR_RETURN(Tensor one, SplatValue(proto));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_CORE_TENSOR_PROTO_H_
#define SLUICE_CORE_TENSOR_PROTO_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/external_data.h"
#include "core/tensor.h"
#include "proto/types.pb.h"

namespace sluice {

// Checks the proto (valid dtype, fully defined shape within limits, exactly
// one data source whose length equals elements x dtype size, or a splat) and
// builds a host tensor. External data comes from base_dir/path
// (ReadExternalTensor in core/external_data.h, which says what `mode` does:
// by default large ranges are mapped, not copied); a path that is absolute or
// leaves base_dir with ".." is an error, as is an empty base_dir. No
// allocation is made before the sizes are checked.
absl::StatusOr<Tensor> TensorFromProto(
    const TensorProto& proto, const std::string& base_dir = "",
    ExternalDataMode mode = ExternalDataMode::kMap);

// Whether `proto` is a splat: one value in a typed list (float_val, int_val,
// double_val) that fills a tensor of more than one element. Looks at the
// proto's form only; TensorFromProto or SplatValue says whether it is valid.
bool IsSplat(const TensorProto& proto);

// A splat's one value, as a scalar tensor of the proto's dtype, after every
// check TensorFromProto makes on the proto (dtype, shape, the list it uses,
// the splat size limit, the value against the dtype), without making the
// tensor it fills: what describing a splat costs, whatever its size.
// INVALID_ARGUMENT when the proto is invalid or not a splat.
absl::StatusOr<Tensor> SplatValue(const TensorProto& proto);

// Raw `content` form. REQUIRES: t is a valid host tensor.
TensorProto TensorToProto(const Tensor& t);

// Frees the proto's inline data (content and the typed lists), keeping its
// dtype, shape and external range: what a Const node keeps of its value once
// the value is a Tensor (graph/builder.h), so that the bytes are held once.
// Such a proto describes the tensor but no longer decodes to it.
void ClearTensorData(TensorProto* proto);

// A TensorProto of t's dtype and shape with no data: ClearTensorData of
// TensorToProto(t), without copying the bytes.
TensorProto TensorDescriptionProto(const Tensor& t);

}  // namespace sluice

#endif  // SLUICE_CORE_TENSOR_PROTO_H_
