// Schemas of the bit-level ops (docs/ops.md, "Bit operations"): BitShift,
// BitwiseAnd/Or/Xor/Not on the integer dtypes, and BitCast, which
// reinterprets the bytes of one dtype as another of the same width.
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// The dtypes whose C++ type is a standard integer (int8 to int64, uint8 to
// uint64), in enum order; follows the dtype list.
std::vector<DataType> IntegerTypes() {
  std::vector<DataType> types;
  for (DataType t : AllDataTypes()) {
    bool integer = false;
    SLUICE_SWITCH_DTYPE(t, {
      (integer = (std::is_integral_v<T> && !std::is_same_v<T, bool>));
    }, {});
    if (integer) types.push_back(t);
  }
  return types;
}

absl::Status BitShiftFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::string direction, c.attrs().GetString("direction"));
  if (direction != "LEFT" && direction != "RIGHT") {
    return absl::InvalidArgumentError(absl::StrCat(
        "direction must be \"LEFT\" or \"RIGHT\", got \"", direction, "\""));
  }
  return BroadcastShapeFn(c);
}

absl::Status BitCastFn(InferenceContext& c) {
  const DataType src = c.input_dtype(0);
  const DataType dst = c.output_dtype(0);
  if (DataTypeSize(src) != DataTypeSize(dst)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BitCast needs dtypes of one width: ", DataTypeName(src), " has ",
        DataTypeSize(src) * 8, " bits, ", DataTypeName(dst), " ",
        DataTypeSize(dst) * 8));
  }
  return UnchangedShapeFn(c);
}

void BitwiseBinary(OpRegistry* r, const std::string& op,
                   const std::string& what) {
  RegisterOrDie(r, OpDefBuilder(op)
                       .Input("x", "T")
                       .Input("y", "T")
                       .Output("z", "T")
                       .TypeAttr("T", IntegerTypes())
                       .ShapeFn(BroadcastShapeFn)
                       .Doc("Elementwise bitwise " + what +
                            " of integers, NumPy broadcasting.")
                       .Build());
}

}  // namespace

void RegisterBitOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("BitShift")
             .Input("x", "T")
             .Input("y", "T")
             .Output("z", "T")
             .TypeAttr("T", IntegerTypes())
             .Attr("direction", AttrType::kString)
             .ShapeFn(BitShiftFn)
             .Doc("x shifted LEFT or RIGHT by y bits, NumPy broadcasting. "
                  "Right shifts of signed x are arithmetic. A shift of the "
                  "type's width or more, or a negative one, gives 0 (right "
                  "shift of a negative x: -1).")
             .Build());
  BitwiseBinary(r, "BitwiseAnd", "and");
  BitwiseBinary(r, "BitwiseOr", "or");
  BitwiseBinary(r, "BitwiseXor", "xor");
  RegisterOrDie(r, OpDefBuilder("BitwiseNot")
                       .Input("x", "T")
                       .Output("y", "T")
                       .TypeAttr("T", IntegerTypes())
                       .ShapeFn(UnchangedShapeFn)
                       .Doc("Elementwise bitwise complement of integers.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("BitCast")
                       .Input("x", "SrcT")
                       .Output("y", "DstT")
                       .TypeAttr("SrcT", kAllTypes)
                       .TypeAttr("DstT", kAllTypes)
                       .ShapeFn(BitCastFn)
                       .Doc("The bytes of x read as DstT, of the same width "
                            "(little endian); to bool, a nonzero byte is "
                            "true.")
                       .Build());
}

}  // namespace sluice
