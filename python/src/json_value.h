// A JSON value (nlohmann::json, as the library's reports build them:
// reports/) as Python objects: an object as a dict, an array as a list,
// numbers, strings, booleans and null as int, float, str, bool and None.
// The tree is converted as it is, with no text in between.
//
//   nb::object devices = JsonToPython(DeviceReportJson(report));
//
// Needs the GIL.
#ifndef SLUICE_PYTHON_SRC_JSON_VALUE_H_
#define SLUICE_PYTHON_SRC_JSON_VALUE_H_

#include "nanobind/nanobind.h"
#include "nlohmann/json.hpp"

namespace sluice::python {

nanobind::object JsonToPython(const nlohmann::json& value);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_JSON_VALUE_H_
