// RuntimeConfig's fields by name, through the proto's descriptors: an enum
// value by its short name ("NONE" for OPTIMIZATION_NONE) or its full one, a
// scalar field set from text, and config text whose enum values are short
// names rewritten to the full names protobuf's text parser knows. What
// accepts a config value as text (config files, the command line's config
// flags, environment overrides) goes through here, so a field added to
// proto/config.proto takes its short names everywhere with no code.
//
//   ASSIGN_OR_RETURN(int level, ParseEnumValue(*field, "basic"));
//   RETURN_IF_ERROR(SetFieldFromText(&config, "conv_layout", "nhwc"));
//   ASSIGN_OR_RETURN(std::string full, ExpandShortEnumNames(text, "run.pbtxt",
//                                                            *RuntimeConfig::descriptor()));
//
// A short name is the value's name without the prefix every value of its
// enum shares, up to and including the last '_' of that prefix
// (OPTIMIZATION_BASIC -> BASIC, CONV_LAYOUT_NHWC -> NHWC). Names match
// without regard to case.
//
// Stateless functions; thread-safe.
#ifndef SLUICE_EXECUTOR_CONFIG_FIELDS_H_
#define SLUICE_EXECUTOR_CONFIG_FIELDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace sluice {

// "BASIC" for OPTIMIZATION_BASIC; the full name when the enum's values
// share no prefix.
std::string ShortEnumName(const google::protobuf::EnumValueDescriptor& value);

// The short names of `type`'s values in declaration order ("DEFAULT",
// "NONE", "BASIC", "ALL").
std::vector<std::string> ShortEnumNames(
    const google::protobuf::EnumDescriptor& type);

// The number of the value of `type` named `name` (short or full, any case).
// INVALID_ARGUMENT otherwise: "unknown value 'X'; use DEFAULT, NONE, BASIC
// or ALL (or the full names OPTIMIZATION_DEFAULT, ...)".
absl::StatusOr<int> ParseEnumValue(const google::protobuf::EnumDescriptor& type,
                                   absl::string_view name);

// The field at `path` ("precision", "resource_limits.max_folded_bytes") of
// `message`'s type, or NOT_FOUND naming the path.
absl::StatusOr<const google::protobuf::FieldDescriptor*> FindFieldByPath(
    const google::protobuf::Descriptor& type, absl::string_view path);

// Sets the singular scalar field at `path` from text as a user writes it:
// an enum value by short or full name, true|false, an integer, a number, a
// string as is. INVALID_ARGUMENT "PATH: ..." for a value the field cannot
// take (the enum's names listed); `message` is unchanged then. Repeated and
// message fields are INVALID_ARGUMENT too (not settable from one word).
absl::Status SetFieldFromText(google::protobuf::Message* message,
                              absl::string_view path, absl::string_view text);

// `text` (a text proto of `type`) with every enum value written by a short
// or differently cased name replaced by its full name, so that
// google::protobuf::TextFormat parses it. An identifier that names no value
// of its field's enum is INVALID_ARGUMENT
// "SOURCE:LINE:COLUMN: FIELD: unknown value 'X'; use ...". Text it cannot
// follow (a syntax error, an extension) is returned with the replacements
// made before that point, for the text parser to report.
struct ExpandedText {
  std::string text;
  // Per replacement: the 0-based line, the column just after the new name
  // and how many characters longer the new name is than the old, in order.
  struct Shift {
    int line;
    int column;
    int delta;
  };
  std::vector<Shift> shifts;
  // The column `column` of `line` (0-based) of `text` was at in the input.
  int OriginalColumn(int line, int column) const;
};
absl::StatusOr<ExpandedText> ExpandShortEnumNames(
    absl::string_view text, absl::string_view source_name,
    const google::protobuf::Descriptor& type);

// Every set enum field of `message` (and of the messages it holds) has a
// value its enum declares, else INVALID_ARGUMENT "PATH: unknown value N;
// use ...".
absl::Status CheckEnumFields(const google::protobuf::Message& message);

// `message` as the text a config file holds: one line per set field (one
// per value of a repeated field), a message value on its line in braces,
// enum values by their full names (so any text-proto parser reads it), in
// field-number order. Parses back to an equal message.
//
//   allow_growth: false
//   optimization_level: OPTIMIZATION_BASIC
//   gpu { index: 0 memory_limit { bytes: 1024 } }
std::string ConfigText(const google::protobuf::Message& message);

}  // namespace sluice

#endif  // SLUICE_EXECUTOR_CONFIG_FIELDS_H_
