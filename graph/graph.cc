// Graph and Node accessors, and input-string parsing.
#include "graph/graph.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/escape.h"

namespace sluice {

std::string Node::DebugName() const {
  std::string out = absl::StrCat("node '", EscapeForTerminal(name_, 200), "' (",
                                 EscapeForTerminal(op(), 100), ")");
  if (source_line_ > 0) absl::StrAppend(&out, " at line ", source_line_);
  return out;
}

const Node* Graph::FindNode(std::string_view name) const {
  auto it = index_.find(absl::string_view(name.data(), name.size()));
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

absl::Status Graph::MoveConstValue(int id, Tensor value) {
  if (id < 0 || id >= num_nodes() || !nodes_[id].is_const() ||
      !nodes_[id].const_value_.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MoveConstValue: node ", id, " is not a Const with a value"));
  }
  Node& n = nodes_[id];
  if (value.dtype() != n.const_value_->dtype() ||
      value.shape() != n.const_value_->shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MoveConstValue: ", n.DebugName(), " holds ",
        n.const_value_->DebugString(0), ", not ", value.DebugString(0)));
  }
  n.const_value_ = std::move(value);
  return absl::OkStatus();
}

const GraphInput* Graph::FindInput(std::string_view name) const {
  for (const GraphInput& in : inputs_) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

const GraphOutput* Graph::FindOutput(std::string_view name) const {
  for (const GraphOutput& out : outputs_) {
    if (out.name == name) return &out;
  }
  return nullptr;
}

absl::StatusOr<ParsedInput> ParseInputString(std::string_view input_view) {
  // Debian's Abseil has its own string_view; work in absl::string_view.
  absl::string_view input(input_view.data(), input_view.size());
  ParsedInput parsed;
  absl::string_view rest = input;
  if (!rest.empty() && rest[0] == '^') {
    parsed.control = true;
    rest.remove_prefix(1);
  }
  size_t colon = rest.rfind(':');
  if (colon != absl::string_view::npos) {
    if (parsed.control) {
      return absl::InvalidArgumentError(absl::StrCat(
          "control input '", input, "' must not name a port"));
    }
    absl::string_view port = rest.substr(colon + 1);
    int value = 0;
    if (port.empty() || !absl::SimpleAtoi(port, &value) || value < 0 ||
        port[0] == '+' || port[0] == '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", input, "' has a bad port '", port, "'"));
    }
    parsed.port = value;
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", input, "' has an empty node name"));
  }
  parsed.node = std::string(rest);
  return parsed;
}

}  // namespace sluice
