// AlgorithmCache (algorithm_cache.h): timing a problem's candidates once,
// and running the fastest that can run now.
#include "kernels/algorithm_cache.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// A refusal: the next candidate runs.
bool IsRefusal(const absl::Status& s) {
  return absl::IsUnimplemented(s) || absl::IsFailedPrecondition(s);
}

bool Eligible(const AlgorithmCandidate& c, const AlgorithmCache::Options& o) {
  return c.can_implement.ok() && c.workspace_bytes <= o.max_workspace_bytes;
}

std::string FullKey(const std::string& library, const std::string& key) {
  return absl::StrCat(library, ": ", key);
}

// How many ways there are to choose between: the eligible candidates of no
// group, and one per group (its members are ranked already).
int Choices(absl::Span<const AlgorithmCandidate> candidates,
            const AlgorithmCache::Options& options) {
  int choices = 0;
  std::set<int> groups;
  for (const AlgorithmCandidate& c : candidates) {
    if (!Eligible(c, options)) continue;
    if (c.ranked_group < 0 || groups.insert(c.ranked_group).second) ++choices;
  }
  return choices;
}

std::vector<std::string> Names(absl::Span<const AlgorithmCandidate> candidates) {
  std::vector<std::string> names;
  names.reserve(candidates.size());
  for (const AlgorithmCandidate& c : candidates) names.push_back(c.name);
  return names;
}

// AlgorithmCache::ProcessActivity's figures.
struct ActivityState {
  absl::Mutex mu;
  int64_t problems_timed ABSL_GUARDED_BY(mu) = 0;
  int timing ABSL_GUARDED_BY(mu) = 0;  // problems being timed now
  std::string last_library ABSL_GUARDED_BY(mu);  // of the latest to start
};

ActivityState& SharedActivity() {
  static ActivityState* state = new ActivityState;
  return *state;
}

// Marks a problem of `library` as being timed while it lives; counted as
// timed when Done() was called.
class TimingNow {
 public:
  explicit TimingNow(const std::string& library) {
    absl::MutexLock lock(&SharedActivity().mu);
    ++SharedActivity().timing;
    SharedActivity().last_library = library.empty() ? "kernel" : library;
  }
  ~TimingNow() {
    absl::MutexLock lock(&SharedActivity().mu);
    --SharedActivity().timing;
    if (done_) ++SharedActivity().problems_timed;
  }
  void Done() { done_ = true; }
  TimingNow(const TimingNow&) = delete;
  TimingNow& operator=(const TimingNow&) = delete;

 private:
  bool done_ = false;
};

}  // namespace

AlgorithmCache::Activity AlgorithmCache::ProcessActivity() {
  ActivityState& a = SharedActivity();
  absl::MutexLock lock(&a.mu);
  return {a.problems_timed, a.timing > 0 ? a.last_library : std::string()};
}

absl::Status AlgorithmCache::Time(absl::Span<const AlgorithmCandidate> candidates,
                                  const Options& options, Device* device, Entry* e) {
  TimingNow timing_now(options.library);
  const int n = static_cast<int>(candidates.size());
  e->times_ms.assign(n, -1);
  std::vector<bool> failed(n, false);
  std::set<int> groups_timed;
  std::vector<std::string> tried;  // for e->timings
  for (int i = 0; i < n; ++i) {
    const AlgorithmCandidate& c = candidates[i];
    if (!c.can_implement.ok()) continue;
    if (c.workspace_bytes > options.max_workspace_bytes) {
      tried.push_back(absl::StrCat(c.name, ": ", c.workspace_bytes,
                                   " B of workspace is over the limit of ",
                                   options.max_workspace_bytes));
      continue;
    }
    // A ranked group's later members follow its first that ran, untimed.
    if (c.ranked_group >= 0 && groups_timed.count(c.ranked_group) > 0) continue;
    Tensor ws;
    if (c.workspace_bytes > 0) {
      absl::StatusOr<Tensor> t = device->Workspace(c.workspace_bytes);
      if (absl::IsResourceExhausted(t.status())) {  // an untimed fallback
        tried.push_back(absl::StrCat(c.name, ": no room for ", c.workspace_bytes,
                                     " B of workspace"));
        continue;
      }
      RETURN_IF_ERROR(t.status());
      ws = *std::move(t);
    }
    void* ws_data = c.workspace_bytes > 0 ? ws.raw_data() : nullptr;
    absl::StatusOr<float> ms = device->Time([&]() { return c.run(ws_data); });
    if (!ms.ok()) {  // refused or failed: never run for this problem
      failed[i] = true;
      tried.push_back(absl::StrCat(c.name, ": ", ms.status().message()));
      continue;
    }
    e->times_ms[i] = *ms;
    if (c.ranked_group >= 0) groups_timed.insert(c.ranked_group);
    tried.push_back(absl::StrCat(
        c.name, " ", *ms, " ms",
        c.workspace_bytes > 0 ? absl::StrCat(" (", c.workspace_bytes, " B workspace)")
                              : ""));
  }
  e->order.clear();
  for (int i = 0; i < n; ++i) {
    if (e->times_ms[i] >= 0) e->order.push_back(i);
  }
  std::stable_sort(e->order.begin(), e->order.end(), [&](int a, int b) {
    return e->times_ms[a] < e->times_ms[b];
  });
  const bool any_timed = !e->order.empty();
  // Then the fallbacks: untimed (a ranked group's later members, or no
  // room for their workspace then), in the given order.
  for (int i = 0; i < n; ++i) {
    if (e->times_ms[i] < 0 && !failed[i] && Eligible(candidates[i], options)) {
      e->order.push_back(i);
    }
  }
  e->timings = absl::StrCat(absl::StrJoin(tried, ", "), ": ",
                            any_timed ? candidates[e->order[0]].name
                                      : std::string("none ran"));
  timing_now.Done();
  return absl::OkStatus();
}

absl::StatusOr<AlgorithmCache::Ran> AlgorithmCache::Run(
    const std::string& key, absl::Span<const AlgorithmCandidate> candidates,
    const Options& options, Device* device) {
  const std::string full_key = FullKey(options.library, key);
  Entry e;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(full_key);
    if (it != entries_.end()) e = it->second;
  }
  Ran ran;
  std::vector<std::string> names = Names(candidates);
  // A choice stands while the candidates are the same.
  bool timed = e.timed && e.names == names;
  if (!timed && options.time && device->CanTime() &&
      Choices(candidates, options) >= 2) {
    RETURN_IF_ERROR(Time(candidates, options, device, &e));
    e.names = std::move(names);
    e.timed = timed = true;
    ran.timed_now = true;
  }
  std::vector<int> order;
  if (timed) {
    order = e.order;
  } else {
    for (int i = 0; i < static_cast<int>(candidates.size()); ++i) order.push_back(i);
  }
  absl::Status last_refusal;
  int64_t no_room = -1;  // the workspace of the first that did not fit
  for (int i : order) {
    const AlgorithmCandidate& c = candidates[i];
    if (!Eligible(c, options)) continue;
    Tensor ws;
    if (c.workspace_bytes > 0) {
      absl::StatusOr<Tensor> t = device->Workspace(c.workspace_bytes);
      if (absl::IsResourceExhausted(t.status())) {
        if (no_room < 0) no_room = c.workspace_bytes;
        continue;
      }
      RETURN_IF_ERROR(t.status());
      ws = *std::move(t);
    }
    absl::Status s = c.run(c.workspace_bytes > 0 ? ws.raw_data() : nullptr);
    if (IsRefusal(s)) {
      last_refusal = s;
      continue;
    }
    RETURN_IF_ERROR(s);
    ran.index = i;
    ran.workspace_bytes = c.workspace_bytes;
    ++e.runs;
    e.last = c.name;
    e.last_workspace_bytes = c.workspace_bytes;
    break;
  }
  if (ran.index < 0) {
    if (!last_refusal.ok()) {
      ran.why_not = absl::StrCat(options.library, " refused every algorithm for ", key,
                                 "; the last: ", last_refusal.message());
    } else if (no_room >= 0) {
      ran.why_not = absl::StrCat("no ", options.library, " algorithm for ", key,
                                 " fits: the fastest needs ", no_room,
                                 " bytes of workspace and the device has no room for any");
    } else {
      // Nothing could implement it: say why the first could not.
      std::string why = "none was offered";
      for (const AlgorithmCandidate& c : candidates) {
        if (!c.can_implement.ok()) {
          why = absl::StrCat(c.name, ": ", c.can_implement.message());
          break;
        }
        if (c.workspace_bytes > options.max_workspace_bytes) {
          why = absl::StrCat(c.name, " needs ", c.workspace_bytes,
                             " bytes of workspace, over the limit of ",
                             options.max_workspace_bytes);
          break;
        }
      }
      ran.why_not =
          absl::StrCat(options.library, " has no algorithm for ", key, " (", why, ")");
    }
  }
  absl::MutexLock lock(&mu_);
  entries_[full_key] = std::move(e);
  return ran;
}

AlgorithmCache::Entry AlgorithmCache::Find(const std::string& library,
                                           const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(FullKey(library, key));
  return it == entries_.end() ? Entry() : it->second;
}

}  // namespace sluice
