// Config fields by name through the descriptors (see config_fields.h).
#include "executor/config_fields.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"

namespace sluice {
namespace {

namespace pb = google::protobuf;
using Token = pb::io::Tokenizer::Token;

// Text-proto nesting deeper than this is left for the text parser (which
// has its own limit) to judge.
constexpr int kMaxDepth = 64;

// The prefix every value of `type` shares, cut after its last '_'.
absl::string_view SharedPrefix(const pb::EnumDescriptor& type) {
  if (type.value_count() < 2) return "";
  absl::string_view prefix = type.value(0)->name();
  for (int i = 1; i < type.value_count(); ++i) {
    const std::string& name = type.value(i)->name();
    size_t n = 0;
    while (n < prefix.size() && n < name.size() && prefix[n] == name[n]) ++n;
    prefix = prefix.substr(0, n);
  }
  const size_t underscore = prefix.rfind('_');
  if (underscore == absl::string_view::npos) return "";
  return prefix.substr(0, underscore + 1);
}

// "A, B or C".
std::string JoinOr(const std::vector<std::string>& names) {
  if (names.size() < 2) return absl::StrJoin(names, "");
  return absl::StrCat(
      absl::StrJoin(names.begin(), names.end() - 1, ", "), " or ",
      names.back());
}

std::string AcceptedNames(const pb::EnumDescriptor& type) {
  std::vector<std::string> full;
  for (int i = 0; i < type.value_count(); ++i) {
    full.push_back(type.value(i)->name());
  }
  std::vector<std::string> short_names = ShortEnumNames(type);
  if (short_names == full) return absl::StrCat("use ", JoinOr(full));
  return absl::StrCat("use ", JoinOr(short_names), " (or the full names ",
                      absl::StrJoin(full, ", "), ")");
}

// Reports nothing: the text parser reports the same problems, with the
// positions the user needs.
class IgnoreErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int, pb::io::ColumnNumber, const std::string&) override {}
};

// One enum value to rewrite: where the token was and the full name.
struct Replacement {
  int line;
  int column;
  int length;
  std::string name;
};

// Follows a text proto of a known message type token by token, noting enum
// values to rewrite; stops (leaving the rest to the text parser) where the
// text is not what it expects.
class EnumNameFinder {
 public:
  EnumNameFinder(absl::string_view text, absl::string_view source)
      : input_(text.data(), static_cast<int>(text.size())),
        tokenizer_(&input_, &errors_),
        source_(source) {
    // As google::protobuf::TextFormat's parser sets it up.
    tokenizer_.set_allow_f_after_float(true);
    tokenizer_.set_comment_style(pb::io::Tokenizer::SH_COMMENT_STYLE);
    tokenizer_.set_require_space_after_number(false);
    tokenizer_.set_allow_multiline_strings(true);
  }

  absl::Status Run(const pb::Descriptor& type) {
    tokenizer_.Next();
    Message(&type, "", 0);
    return status_;
  }
  const std::vector<Replacement>& replacements() const {
    return replacements_;
  }

 private:
  const Token& Current() { return tokenizer_.current(); }
  bool At(absl::string_view symbol) {
    return Current().type == pb::io::Tokenizer::TYPE_SYMBOL && Current().text == symbol;
  }

  // Fields up to `close` ("" at the top: the end of the text). false: stop.
  bool Message(const pb::Descriptor* type, absl::string_view close,
               int depth) {
    if (depth > kMaxDepth) return false;
    while (true) {
      if (Current().type == pb::io::Tokenizer::TYPE_END) return close.empty();
      if (!close.empty() && At(close)) {
        tokenizer_.Next();
        return true;
      }
      // Anything but a field name ("[extension]", junk) is left to the
      // text parser.
      if (Current().type != pb::io::Tokenizer::TYPE_IDENTIFIER) return false;
      const pb::FieldDescriptor* field =
          type == nullptr ? nullptr : type->FindFieldByName(Current().text);
      tokenizer_.Next();
      if (At(":")) tokenizer_.Next();
      if (At("[")) {
        tokenizer_.Next();
        if (At("]")) {
          tokenizer_.Next();
        } else {
          while (true) {
            if (!Value(field, depth)) return false;
            if (At(",")) {
              tokenizer_.Next();
              continue;
            }
            if (!At("]")) return false;
            tokenizer_.Next();
            break;
          }
        }
      } else if (!Value(field, depth)) {
        return false;
      }
      if (At(",") || At(";")) tokenizer_.Next();
    }
  }

  // One value of `field` (null: a field the type does not have).
  bool Value(const pb::FieldDescriptor* field, int depth) {
    if (At("{") || At("<")) {
      const std::string close = At("{") ? "}" : ">";
      tokenizer_.Next();
      const pb::Descriptor* type =
          field != nullptr &&
                  field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE
              ? field->message_type()
              : nullptr;
      return Message(type, close, depth + 1);
    }
    if (field != nullptr &&
        field->cpp_type() == pb::FieldDescriptor::CPPTYPE_ENUM &&
        Current().type == pb::io::Tokenizer::TYPE_IDENTIFIER) {
      if (!EnumValue(*field)) return false;
      tokenizer_.Next();
      return true;
    }
    if (At("-")) tokenizer_.Next();
    switch (Current().type) {
      case pb::io::Tokenizer::TYPE_END:
      case pb::io::Tokenizer::TYPE_SYMBOL:
        return false;
      case pb::io::Tokenizer::TYPE_STRING:
        while (Current().type == pb::io::Tokenizer::TYPE_STRING) tokenizer_.Next();
        return true;
      default:
        tokenizer_.Next();
        return true;
    }
  }

  // The identifier at the current token as a value of `field`'s enum.
  bool EnumValue(const pb::FieldDescriptor& field) {
    const Token& token = Current();
    const pb::EnumDescriptor& type = *field.enum_type();
    if (type.FindValueByName(token.text) != nullptr) return true;
    absl::StatusOr<int> number = ParseEnumValue(type, token.text);
    if (!number.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat(source_, ":", token.line + 1, ":", token.column + 1,
                       ": ", field.name(), ": ", number.status().message()));
      return false;
    }
    replacements_.push_back(
        {token.line, token.column, static_cast<int>(token.text.size()),
         type.FindValueByNumber(*number)->name()});
    return true;
  }

  pb::io::ArrayInputStream input_;
  IgnoreErrors errors_;
  pb::io::Tokenizer tokenizer_;
  std::string source_;
  std::vector<Replacement> replacements_;
  absl::Status status_;
};

// The byte offset of (line, column) in `text`, counting columns as the
// tokenizer does (a tab advances to the next multiple of 8).
size_t ByteOffset(absl::string_view text, const std::vector<size_t>& lines,
                  int line, int column) {
  size_t offset = lines[line];
  int col = 0;
  while (col < column && offset < text.size()) {
    col = text[offset] == '\t' ? col + 8 - col % 8 : col + 1;
    ++offset;
  }
  return offset;
}

absl::Status CheckEnums(const pb::Message& message, const std::string& prefix) {
  const pb::Reflection& reflection = *message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const std::string path = absl::StrCat(prefix, field->name());
    const int count = field->is_repeated() ? reflection.FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const std::string at =
          field->is_repeated() ? absl::StrCat(path, "[", i, "]") : path;
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_ENUM) {
        const int value =
            field->is_repeated()
                ? reflection.GetRepeatedEnumValue(message, field, i)
                : reflection.GetEnumValue(message, field);
        if (field->enum_type()->FindValueByNumber(value) == nullptr) {
          return absl::InvalidArgumentError(
              absl::StrCat(at, ": unknown value ", value, "; ",
                           AcceptedNames(*field->enum_type())));
        }
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& sub =
            field->is_repeated()
                ? reflection.GetRepeatedMessage(message, field, i)
                : reflection.GetMessage(message, field);
        RETURN_IF_ERROR(CheckEnums(sub, absl::StrCat(at, ".")));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ShortEnumName(const pb::EnumValueDescriptor& value) {
  const absl::string_view prefix = SharedPrefix(*value.type());
  absl::string_view name = value.name();
  if (!absl::StartsWith(name, prefix) || name.size() == prefix.size() ||
      absl::ascii_isdigit(name[prefix.size()])) {
    return std::string(name);
  }
  return std::string(name.substr(prefix.size()));
}

std::vector<std::string> ShortEnumNames(const pb::EnumDescriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.value_count(); ++i) {
    names.push_back(ShortEnumName(*type.value(i)));
  }
  return names;
}

absl::StatusOr<int> ParseEnumValue(const pb::EnumDescriptor& type,
                                   absl::string_view name) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(name);
  // Full names first: a short name could spell another value's full name.
  for (int i = 0; i < type.value_count(); ++i) {
    if (absl::EqualsIgnoreCase(type.value(i)->name(), stripped)) {
      return type.value(i)->number();
    }
  }
  for (int i = 0; i < type.value_count(); ++i) {
    if (absl::EqualsIgnoreCase(ShortEnumName(*type.value(i)), stripped)) {
      return type.value(i)->number();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown value '", name, "'; ", AcceptedNames(type)));
}

absl::StatusOr<const pb::FieldDescriptor*> FindFieldByPath(
    const pb::Descriptor& type, absl::string_view path) {
  const pb::Descriptor* current = &type;
  const pb::FieldDescriptor* field = nullptr;
  for (absl::string_view part : absl::StrSplit(path, '.')) {
    if (current == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          type.name(), " has no field '", path, "' (",
          field->name(), " holds no fields)"));
    }
    field = current->FindFieldByName(std::string(part));
    if (field == nullptr) {
      return absl::NotFoundError(
          absl::StrCat(type.name(), " has no field '", path, "'"));
    }
    current = field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE &&
                      !field->is_repeated()
                  ? field->message_type()
                  : nullptr;
  }
  return field;
}

absl::Status SetFieldFromText(pb::Message* message, absl::string_view path,
                              absl::string_view text) {
  ASSIGN_OR_RETURN(const pb::FieldDescriptor* field,
                   FindFieldByPath(*message->GetDescriptor(), path));
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", why));
  };
  if (field->is_repeated() ||
      field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    return invalid("holds more than one value; set it in a config file");
  }
  const std::string value(absl::StripAsciiWhitespace(text));
  const std::string quoted = absl::StrCat("'", text, "'");
  // Parse first, so that a bad value changes nothing.
  int64_t integer = 0;
  uint64_t unsigned_integer = 0;
  double number = 0;
  bool boolean = false;
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      absl::StatusOr<int> n = ParseEnumValue(*field->enum_type(), value);
      if (!n.ok()) return invalid(n.status().message());
      integer = *n;
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      const std::string lower = absl::AsciiStrToLower(value);
      if (lower != "true" && lower != "false") {
        return invalid(absl::StrCat(quoted, ": expected true or false"));
      }
      boolean = lower == "true";
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_INT32:
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      const bool is32 = field->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT32;
      const int64_t lo = is32 ? std::numeric_limits<int32_t>::min()
                              : std::numeric_limits<int64_t>::min();
      const int64_t hi = is32 ? std::numeric_limits<int32_t>::max()
                              : std::numeric_limits<int64_t>::max();
      if (!absl::SimpleAtoi(value, &integer) || integer < lo || integer > hi) {
        return invalid(absl::StrCat(quoted, " is not an integer from ", lo,
                                    " to ", hi));
      }
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32:
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t hi =
          field->cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT32
              ? std::numeric_limits<uint32_t>::max()
              : std::numeric_limits<uint64_t>::max();
      if (value.empty() || value[0] == '-' ||
          !absl::SimpleAtoi(value, &unsigned_integer) ||
          unsigned_integer > hi) {
        return invalid(
            absl::StrCat(quoted, " is not an integer from 0 to ", hi));
      }
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      if (!absl::SimpleAtod(value, &number)) {
        return invalid(absl::StrCat(quoted, " is not a number"));
      }
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING:
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  // The message holding the field, made where the path passes through
  // unset ones.
  pb::Message* target = message;
  std::vector<absl::string_view> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const pb::FieldDescriptor* sub =
        target->GetDescriptor()->FindFieldByName(std::string(parts[i]));
    target = target->GetReflection()->MutableMessage(target, sub);
  }
  const pb::Reflection& r = *target->GetReflection();
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      r.SetEnumValue(target, field, static_cast<int>(integer));
      break;
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      r.SetBool(target, field, boolean);
      break;
    case pb::FieldDescriptor::CPPTYPE_INT32:
      r.SetInt32(target, field, static_cast<int32_t>(integer));
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      r.SetInt64(target, field, integer);
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      r.SetUInt32(target, field, static_cast<uint32_t>(unsigned_integer));
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      r.SetUInt64(target, field, unsigned_integer);
      break;
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      r.SetDouble(target, field, number);
      break;
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      r.SetFloat(target, field, static_cast<float>(number));
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING:
      r.SetString(target, field, std::string(text));
      break;
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return absl::OkStatus();
}

int ExpandedText::OriginalColumn(int line, int column) const {
  int original = column;
  for (const Shift& s : shifts) {
    if (s.line == line && s.column <= column) original -= s.delta;
  }
  return original;
}

absl::StatusOr<ExpandedText> ExpandShortEnumNames(
    absl::string_view text, absl::string_view source_name,
    const pb::Descriptor& type) {
  EnumNameFinder finder(text, source_name);
  RETURN_IF_ERROR(finder.Run(type));
  ExpandedText out;
  out.text = std::string(text);
  const std::vector<Replacement>& replacements = finder.replacements();
  if (replacements.empty()) return out;
  std::vector<size_t> lines = {0};
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') lines.push_back(i + 1);
  }
  // Replace from the end so that earlier offsets stay put.
  for (auto it = replacements.rbegin(); it != replacements.rend(); ++it) {
    const size_t offset = ByteOffset(text, lines, it->line, it->column);
    out.text.replace(offset, it->length, it->name);
  }
  int line = -1;
  int delta_so_far = 0;
  for (const Replacement& r : replacements) {
    if (r.line != line) {
      line = r.line;
      delta_so_far = 0;
    }
    const int delta = static_cast<int>(r.name.size()) - r.length;
    delta_so_far += delta;
    out.shifts.push_back({r.line, r.column + r.length + delta_so_far, delta});
  }
  return out;
}

absl::Status CheckEnumFields(const pb::Message& message) {
  return CheckEnums(message, "");
}

std::string ConfigText(const pb::Message& message) {
  pb::TextFormat::Printer line;
  line.SetSingleLineMode(true);
  const pb::Reflection& reflection = *message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);  // in field-number order
  std::string out;
  for (const pb::FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? reflection.FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      std::string value;
      if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& sub =
            field->is_repeated() ? reflection.GetRepeatedMessage(message, field, i)
                                 : reflection.GetMessage(message, field);
        line.PrintToString(sub, &value);  // "a: 1 b { c: 2 } ", or ""
        absl::StrAppend(&out, field->name(), " { ", value, "}\n");
      } else {
        line.PrintFieldValueToString(message, field, index, &value);
        absl::StrAppend(&out, field->name(), ": ", value, "\n");
      }
    }
  }
  return out;
}

}  // namespace sluice
