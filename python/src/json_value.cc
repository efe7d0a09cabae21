// JSON values as Python objects (json_value.h).
#include "python/src/json_value.h"

#include <string>

namespace nb = nanobind;

namespace sluice::python {

nb::object JsonToPython(const nlohmann::json& value) {
  using Type = nlohmann::json::value_t;
  switch (value.type()) {
    case Type::object: {
      nb::dict out;
      for (const auto& [key, item] : value.items()) {
        out[nb::str(key.c_str(), key.size())] = JsonToPython(item);
      }
      return nb::object(out);
    }
    case Type::array: {
      nb::list out;
      for (const nlohmann::json& item : value) out.append(JsonToPython(item));
      return nb::object(out);
    }
    case Type::string: {
      const std::string& s = value.get_ref<const std::string&>();
      // Bytes that are not UTF-8 (a model's names) are replaced, as the
      // CLI's JSON does.
      return nb::steal(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()),
                                            "replace"));
    }
    case Type::boolean:
      return nb::bool_(value.get<bool>());
    case Type::number_integer:
      return nb::int_(value.get<int64_t>());
    case Type::number_unsigned:
      return nb::steal(PyLong_FromUnsignedLongLong(value.get<uint64_t>()));
    case Type::number_float:
      return nb::float_(value.get<double>());
    case Type::null:
    case Type::discarded:
    case Type::binary:
      break;
  }
  return nb::none();
}

}  // namespace sluice::python
