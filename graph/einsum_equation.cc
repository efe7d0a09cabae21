// Einsum equation parsing (einsum_equation.h).
#include "graph/einsum_equation.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sluice {
namespace {

constexpr int kLetters = 52;

int LetterId(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// A term's letters, with -2 where its ellipsis is; INVALID_ARGUMENT for
// other characters or a second ellipsis.
absl::StatusOr<std::vector<int>> ParseTerm(absl::string_view term) {
  std::vector<int> ids;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.substr(i, 3) == "...") {
      if (ellipsis) {
        return absl::InvalidArgumentError(
            absl::StrCat("term \"", term, "\" has two ellipses"));
      }
      ellipsis = true;
      ids.push_back(-2);
      i += 2;
      continue;
    }
    const int id = LetterId(term[i]);
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "term \"", term, "\" has the character '", term.substr(i, 1),
          "'; labels are letters"));
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

absl::StatusOr<EinsumEquation> ParseEinsum(absl::string_view equation,
                                           const std::vector<int>& ranks) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq.push_back(c);
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = absl::StrSplit(lhs, ',');
  if (terms.size() != ranks.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("equation \"", equation, "\" has ", terms.size(),
                     " operand terms for ", ranks.size(), " inputs"));
  }
  std::vector<std::vector<int>> parsed;
  int ellipsis_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    auto ids = ParseTerm(terms[k]);
    if (!ids.ok()) return ids.status();
    const bool has_ellipsis =
        std::find(ids->begin(), ids->end(), -2) != ids->end();
    const int letters = static_cast<int>(ids->size()) - (has_ellipsis ? 1 : 0);
    const int extra = ranks[k] - letters;
    if (extra < 0 || (!has_ellipsis && extra != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "term \"", terms[k], "\" of \"", equation, "\" does not fit input ",
          k, " of rank ", ranks[k]));
    }
    ellipsis_rank = std::max(ellipsis_rank, extra);
    parsed.push_back(*std::move(ids));
  }
  EinsumEquation out;
  out.num_labels = kLetters + ellipsis_rank;
  std::vector<int> uses(out.num_labels, 0);
  for (size_t k = 0; k < parsed.size(); ++k) {
    const int letters = static_cast<int>(parsed[k].size()) -
                        (std::count(parsed[k].begin(), parsed[k].end(), -2));
    const int extra = ranks[k] - letters;
    std::vector<int> labels;
    for (int id : parsed[k]) {
      if (id == -2) {
        for (int t = 0; t < extra; ++t) {
          labels.push_back(kLetters + ellipsis_rank - extra + t);
        }
      } else {
        labels.push_back(id);
        ++uses[id];
      }
    }
    out.inputs.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    for (int t = 0; t < ellipsis_rank; ++t) out.output.push_back(kLetters + t);
    for (int id = 0; id < kLetters; ++id) {
      if (uses[id] == 1) out.output.push_back(id);
    }
    // 'A'-'Z' sort before 'a'-'z' in NumPy's implicit output.
    std::stable_partition(out.output.begin() + ellipsis_rank, out.output.end(),
                          [](int id) { return id >= 26; });
    return out;
  }
  auto rhs = ParseTerm(eq.substr(arrow + 2));
  if (!rhs.ok()) return rhs.status();
  std::vector<bool> seen(out.num_labels, false);
  for (int id : *rhs) {
    if (id == -2) {
      for (int t = 0; t < ellipsis_rank; ++t) {
        out.output.push_back(kLetters + t);
      }
      continue;
    }
    if (uses[id] == 0 || seen[id]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output label '", std::string(1, id < 26 ? 'a' + id : 'A' + id - 26),
          "' of \"", equation, "\" is ",
          seen[id] ? "repeated" : "in no input"));
    }
    seen[id] = true;
    out.output.push_back(id);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> EinsumLabelSizes(
    const EinsumEquation& eq, const std::vector<Shape>& shapes) {
  std::vector<int64_t> sizes(eq.num_labels, 0);
  std::vector<bool> used(eq.num_labels, false);
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    for (size_t d = 0; d < eq.inputs[k].size(); ++d) {
      const int id = eq.inputs[k][d];
      const int64_t n = shapes[k].unknown_rank() ? -1 : shapes[k].dim(d);
      const bool ellipsis = id >= kLetters;
      if (!used[id]) {
        used[id] = true;
        sizes[id] = n;
      } else if (n < 0) {
        if (ellipsis && sizes[id] == 1) sizes[id] = -1;  // may stretch
      } else if (sizes[id] < 0) {
        sizes[id] = n;
      } else if (n != sizes[id]) {
        if (ellipsis && (n == 1 || sizes[id] == 1)) {
          sizes[id] = std::max(n, sizes[id]);
        } else {
          return absl::InvalidArgumentError(absl::StrCat(
              "Einsum label ", id, " has sizes ", sizes[id], " and ", n,
              " (input ", k, ", dim ", d, ")"));
        }
      }
    }
  }
  return sizes;
}

}  // namespace sluice
