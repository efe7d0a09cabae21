// RuntimeConfig <-> Python values through the descriptors (config_bindings.h).
#include "python/src/config_bindings.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "executor/config_fields.h"
#include "executor/runtime_config.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"
#include "python/src/status_error.h"
#include "sluice/config.h"

namespace nb = nanobind;
namespace pb = google::protobuf;

namespace sluice::python {
namespace {

[[noreturn]] void Invalid(const std::string& path, const std::string& why) {
  throw StatusError(absl::InvalidArgumentError(absl::StrCat(path, ": ", why)));
}

std::string Repr(nb::handle value) { return nb::cast<std::string>(nb::repr(value)); }

int64_t ToInteger(nb::handle value, const std::string& path, int64_t lo,
                  int64_t hi) {
  if (nb::isinstance<nb::bool_>(value) || !nb::isinstance<nb::int_>(value)) {
    Invalid(path, absl::StrCat("expected an integer, got ", Repr(value)));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0 || v < lo || v > hi) {
    Invalid(path, absl::StrCat(Repr(value), " is not an integer from ", lo,
                               " to ", hi));
  }
  return v;
}

void SetMessage(pb::Message* message, nb::handle value, const std::string& path);

// A MemoryLimit from bytes (int), a fraction (float) or text ("4GiB").
bool SetMemoryLimit(pb::Message* message, nb::handle value,
                    const std::string& path) {
  if (message->GetDescriptor() != MemoryLimit::descriptor()) return false;
  auto* limit = static_cast<MemoryLimit*>(message);
  if (nb::isinstance<nb::bool_>(value)) {
    Invalid(path, absl::StrCat(Repr(value), " is not a memory limit"));
  }
  if (nb::isinstance<nb::int_>(value)) {
    limit->set_bytes(ToInteger(value, path, std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max()));
  } else if (nb::isinstance<nb::float_>(value)) {
    limit->set_fraction(nb::cast<double>(value));
  } else if (nb::isinstance<nb::str>(value)) {
    absl::StatusOr<MemoryLimit> parsed = ParseMemoryLimit(nb::cast<std::string>(value));
    if (!parsed.ok()) Invalid(path, std::string(parsed.status().message()));
    *limit = *parsed;
  } else if (nb::isinstance<nb::dict>(value)) {
    return false;  // {"bytes": n} or {"fraction": f}: as any message
  } else {
    Invalid(path, absl::StrCat(Repr(value), " is not bytes (int), a fraction "
                               "(float) or a string such as '4GiB'"));
  }
  return true;
}

// One value of `field` (element `index` appended when repeated) from Python.
void SetValue(pb::Message* message, const pb::FieldDescriptor* field,
              nb::handle value, const std::string& path) {
  const pb::Reflection& r = *message->GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: {
      pb::Message* sub = repeated ? r.AddMessage(message, field)
                                  : r.MutableMessage(message, field);
      SetMessage(sub, value, path);
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      int number = 0;
      if (nb::isinstance<nb::str>(value)) {
        absl::StatusOr<int> n =
            ParseEnumValue(*field->enum_type(), nb::cast<std::string>(value));
        if (!n.ok()) Invalid(path, std::string(n.status().message()));
        number = *n;
      } else {
        number = static_cast<int>(ToInteger(value, path, INT32_MIN, INT32_MAX));
        if (field->enum_type()->FindValueByNumber(number) == nullptr) {
          absl::StatusOr<int> n = ParseEnumValue(*field->enum_type(), Repr(value));
          Invalid(path, std::string(n.status().message()));
        }
      }
      repeated ? r.AddEnumValue(message, field, number)
               : r.SetEnumValue(message, field, number);
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      if (!nb::isinstance<nb::bool_>(value)) {
        Invalid(path, absl::StrCat("expected True or False, got ", Repr(value)));
      }
      const bool b = nb::cast<bool>(value);
      repeated ? r.AddBool(message, field, b) : r.SetBool(message, field, b);
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      const auto v = static_cast<int32_t>(ToInteger(value, path, INT32_MIN, INT32_MAX));
      repeated ? r.AddInt32(message, field, v) : r.SetInt32(message, field, v);
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      const int64_t v = ToInteger(value, path, std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max());
      repeated ? r.AddInt64(message, field, v) : r.SetInt64(message, field, v);
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      const auto v = static_cast<uint32_t>(ToInteger(value, path, 0, UINT32_MAX));
      repeated ? r.AddUInt32(message, field, v) : r.SetUInt32(message, field, v);
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      const auto v = static_cast<uint64_t>(
          ToInteger(value, path, 0, std::numeric_limits<int64_t>::max()));
      repeated ? r.AddUInt64(message, field, v) : r.SetUInt64(message, field, v);
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      if (nb::isinstance<nb::bool_>(value) ||
          !(nb::isinstance<nb::float_>(value) || nb::isinstance<nb::int_>(value))) {
        Invalid(path, absl::StrCat("expected a number, got ", Repr(value)));
      }
      const double v = nb::cast<double>(value);
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
        repeated ? r.AddDouble(message, field, v) : r.SetDouble(message, field, v);
      } else {
        const auto f = static_cast<float>(v);
        repeated ? r.AddFloat(message, field, f) : r.SetFloat(message, field, f);
      }
      return;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      if (!nb::isinstance<nb::str>(value)) {
        Invalid(path, absl::StrCat("expected a string, got ", Repr(value)));
      }
      const std::string s = nb::cast<std::string>(value);
      repeated ? r.AddString(message, field, s) : r.SetString(message, field, s);
      return;
    }
  }
}

// Sets `field` of `message` from a Python value (None clears it).
void SetField(pb::Message* message, const pb::FieldDescriptor* field,
              nb::handle value, const std::string& path) {
  const pb::Reflection& r = *message->GetReflection();
  r.ClearField(message, field);
  if (value.is_none()) return;
  if (!field->is_repeated()) {
    SetValue(message, field, value, path);
    return;
  }
  if (nb::isinstance<nb::str>(value) || nb::isinstance<nb::dict>(value) ||
      !(nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value))) {
    Invalid(path, absl::StrCat("holds several values: give a list, got ",
                               Repr(value)));
  }
  int i = 0;
  for (nb::handle item : value) {
    SetValue(message, field, item, absl::StrCat(path, "[", i++, "]"));
  }
}

void SetMessage(pb::Message* message, nb::handle value, const std::string& path) {
  if (SetMemoryLimit(message, value, path)) return;
  if (!nb::isinstance<nb::dict>(value)) {
    Invalid(path, absl::StrCat("expected a dict of ",
                               message->GetDescriptor()->name(), " fields, got ",
                               Repr(value)));
  }
  message->Clear();
  for (auto [key, item] : nb::cast<nb::dict>(value)) {
    const std::string name = nb::cast<std::string>(nb::str(key));
    const pb::FieldDescriptor* field =
        message->GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) {
      throw StatusError(absl::InvalidArgumentError(absl::StrCat(
          path, ": ", message->GetDescriptor()->name(), " has no field '",
          name, "'")));
    }
    SetField(message, field, item, absl::StrCat(path, ".", name));
  }
}

nb::object GetMessage(const pb::Message& message);

// One value of `field` (element `index` when repeated) as Python.
nb::object GetValue(const pb::Message& message, const pb::FieldDescriptor* field,
                    int index) {
  const pb::Reflection& r = *message.GetReflection();
  const bool rep = field->is_repeated();
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      return GetMessage(rep ? r.GetRepeatedMessage(message, field, index)
                            : r.GetMessage(message, field));
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return nb::str(ShortEnumName(*(rep ? r.GetRepeatedEnum(message, field, index)
                                         : r.GetEnum(message, field)))
                         .c_str());
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return nb::bool_(rep ? r.GetRepeatedBool(message, field, index)
                           : r.GetBool(message, field));
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return nb::int_(rep ? r.GetRepeatedInt32(message, field, index)
                          : r.GetInt32(message, field));
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return nb::int_(rep ? r.GetRepeatedInt64(message, field, index)
                          : r.GetInt64(message, field));
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return nb::int_(rep ? r.GetRepeatedUInt32(message, field, index)
                          : r.GetUInt32(message, field));
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return nb::int_(rep ? r.GetRepeatedUInt64(message, field, index)
                          : r.GetUInt64(message, field));
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return nb::float_(rep ? r.GetRepeatedDouble(message, field, index)
                            : r.GetDouble(message, field));
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      return nb::float_(rep ? r.GetRepeatedFloat(message, field, index)
                            : r.GetFloat(message, field));
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return nb::str((rep ? r.GetRepeatedString(message, field, index)
                          : r.GetString(message, field))
                         .c_str());
  }
  return nb::none();
}

// A field as Python: None when unset and the field has presence (an
// optional scalar, a message), a list when repeated.
nb::object GetField(const pb::Message& message, const pb::FieldDescriptor* field) {
  const pb::Reflection& r = *message.GetReflection();
  if (field->is_repeated()) {
    nb::list out;
    for (int i = 0; i < r.FieldSize(message, field); ++i) {
      out.append(GetValue(message, field, i));
    }
    return nb::object(out);
  }
  if (field->has_presence() && !r.HasField(message, field)) return nb::none();
  return GetValue(message, field, -1);
}

// A message as a dict of its set fields; a MemoryLimit as its bytes (int)
// or fraction (float), None when unset.
nb::object GetMessage(const pb::Message& message) {
  if (message.GetDescriptor() == MemoryLimit::descriptor()) {
    const auto& limit = static_cast<const MemoryLimit&>(message);
    if (limit.has_bytes()) return nb::int_(limit.bytes());
    if (limit.has_fraction()) return nb::float_(limit.fraction());
    return nb::none();
  }
  nb::dict out;
  std::vector<const pb::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    out[field->name().c_str()] = GetField(message, field);
  }
  return nb::object(out);
}

// The field at `path` and the message that holds it (made on the way when
// `mutable_message`).
struct Located {
  const pb::FieldDescriptor* field;
  pb::Message* holder;
};
Located Locate(pb::Message* root, const std::string& path) {
  const pb::FieldDescriptor* field =
      ValueOrThrow(FindFieldByPath(*root->GetDescriptor(), path));
  pb::Message* holder = root;
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const pb::FieldDescriptor* sub =
        holder->GetDescriptor()->FindFieldByName(parts[i]);
    holder = holder->GetReflection()->MutableMessage(holder, sub);
  }
  return {field, holder};
}

// The path of the field called `name`: a field of RuntimeConfig, else the
// one field of that name inside a singular message field
// ("max_folded_bytes" -> "resource_limits.max_folded_bytes"); "" for none
// (or more than one).
std::string Resolve(const std::string& name) {
  const pb::Descriptor& type = *RuntimeConfig::descriptor();
  if (type.FindFieldByName(name) != nullptr) return name;
  std::string found;
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor* f = type.field(i);
    if (f->is_repeated() || f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE ||
        f->message_type() == MemoryLimit::descriptor()) {
      continue;
    }
    if (f->message_type()->FindFieldByName(name) != nullptr) {
      if (!found.empty()) return "";
      found = absl::StrCat(f->name(), ".", name);
    }
  }
  return found;
}

// (path, kind, values) for every field of RuntimeConfig and of its singular
// messages: kind "bool", "int", "float", "str", "enum", "message",
// "memory_limit", with "[]" appended when repeated; values: an enum's short
// names.
nb::list Fields() {
  nb::list out;
  auto add = [&](const pb::FieldDescriptor* f, const std::string& path) {
    std::string kind;
    nb::list values;
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_BOOL: kind = "bool"; break;
      case pb::FieldDescriptor::CPPTYPE_ENUM:
        kind = "enum";
        for (const std::string& n : ShortEnumNames(*f->enum_type())) {
          values.append(nb::str(n.c_str()));
        }
        break;
      case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      case pb::FieldDescriptor::CPPTYPE_FLOAT: kind = "float"; break;
      case pb::FieldDescriptor::CPPTYPE_STRING: kind = "str"; break;
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        kind = f->message_type() == MemoryLimit::descriptor() ? "memory_limit"
                                                               : "message";
        break;
      default: kind = "int"; break;
    }
    if (f->is_repeated()) kind += "[]";
    out.append(nb::make_tuple(path, kind, values));
  };
  const pb::Descriptor& type = *RuntimeConfig::descriptor();
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor* f = type.field(i);
    add(f, f->name());
    if (!f->is_repeated() && f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE &&
        f->message_type() != MemoryLimit::descriptor()) {
      for (int j = 0; j < f->message_type()->field_count(); ++j) {
        const pb::FieldDescriptor* sub = f->message_type()->field(j);
        add(sub, absl::StrCat(f->name(), ".", sub->name()));
      }
    }
  }
  return out;
}

}  // namespace

void BindConfig(nb::module_& m) {
  nb::class_<PyConfig>(m, "_Config")
      .def(nb::init<>())
      .def_static(
          "from_text",
          [](const std::string& text, const std::string& source) {
            return PyConfig{ValueOrThrow(ParseRuntimeConfig(text, source))};
          },
          nb::arg("text"), nb::arg("source") = "<config>",
          "ParseRuntimeConfig: a config file's text (short enum names too).")
      .def_static(
          "load",
          [](const std::string& path) {
            return PyConfig{ValueOrThrow(LoadRuntimeConfig(path))};
          },
          nb::arg("path"), "LoadRuntimeConfig: a config file.")
      .def("to_text", [](const PyConfig& c) { return ConfigText(c.message); },
           "ConfigText: one line per set field, as a config file holds it.")
      .def(
          "set",
          [](PyConfig& c, const std::string& path, nb::handle value) {
            RuntimeConfig candidate = c.message;
            Located at = Locate(&candidate, path);
            SetField(at.holder, at.field, value, path);
            c.message = std::move(candidate);
          },
          nb::arg("path"), nb::arg("value").none(),
          "Sets the field at `path` from a Python value (None clears it).")
      .def(
          "get",
          [](PyConfig& c, const std::string& path) {
            RuntimeConfig copy = c.message;  // Locate makes messages on the way
            Located at = Locate(&copy, path);
            return GetField(*at.holder, at.field);
          },
          nb::arg("path"), "The field at `path` as Python (None: unset).")
      .def("set_fields",
           [](const PyConfig& c) {
             nb::list names;
             std::vector<const pb::FieldDescriptor*> fields;
             c.message.GetReflection()->ListFields(c.message, &fields);
             for (const pb::FieldDescriptor* f : fields) {
               names.append(nb::str(f->name().c_str()));
             }
             return names;
           },
           "The names of the fields this config sets, in field order.")
      .def_static("resolve", &Resolve, nb::arg("name"),
                  "The path of the field called `name` (\"\": none).")
      .def_static("fields", &Fields,
                  "(path, kind, enum short names) of every field.")
      .def("validate",
           [](const PyConfig& c) { ThrowIfError(ValidateRuntimeConfig(c.message)); },
           "ValidateRuntimeConfig: INVALID_ARGUMENT naming the field.")
      .def(
          "merged",
          [](const PyConfig& base, const PyConfig& overlay) {
            return PyConfig{MergeRuntimeConfig(base.message, overlay.message)};
          },
          nb::arg("overlay"), "MergeRuntimeConfig(self, overlay).")
      .def("copy", [](const PyConfig& c) { return PyConfig{c.message}; })
      .def("__eq__", [](const PyConfig& a, const PyConfig& b) {
        return a.message.SerializeAsString() == b.message.SerializeAsString();
      });
}

}  // namespace sluice::python
