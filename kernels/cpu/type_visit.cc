// The dtype lists of type_visit.h's visitors.
#include "kernels/cpu/type_visit.h"

namespace sluice::cpu {
namespace {

template <typename Visit>
std::vector<DataType> Accepted(Visit visit) {
  std::vector<DataType> types;
  for (DataType d : AllDataTypes()) {
    if (visit(d, [](auto) { return absl::OkStatus(); }).ok()) {
      types.push_back(d);
    }
  }
  return types;
}

}  // namespace

const std::vector<DataType>& StdIntegerTypes() {
  static const auto* types = new std::vector<DataType>(
      Accepted([](DataType d, auto f) { return VisitStdInteger(d, f); }));
  return *types;
}

const std::vector<DataType>& OrderedTypes() {
  static const auto* types = new std::vector<DataType>(
      Accepted([](DataType d, auto f) { return VisitOrdered(d, f); }));
  return *types;
}

}  // namespace sluice::cpu
