// One rank of a process group, for tests/distributed/bootstrap_test.cc's
// multi-process test: reads the launcher variables (SLUICE_RANK, ...),
// joins with fingerprint {"model": argv[1]}, all-gathers "rank R" and
// receives rank 0's broadcast, and prints
//   gathered: rank 0|rank 1|rank 2
//   broadcast: <blob>
// Exit 0 on success; 1 with the error on stderr otherwise.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distributed/bootstrap.h"

namespace {

absl::Status Run(const char* model) {
  absl::StatusOr<sluice::ProcessGroupInfo> me = sluice::DetectProcessGroup();
  if (!me.ok()) return me.status();
  absl::StatusOr<sluice::BootstrapOptions> options =
      sluice::BootstrapOptionsFor(*me, {{"model", model}});
  if (!options.ok()) return options.status();
  options->join_timeout = absl::Seconds(10);
  options->collective_timeout = absl::Seconds(10);
  auto group = sluice::JoinProcessGroup(*options);
  if (!group.ok()) return group.status();
  auto gathered = (*group)->AllGather(absl::StrCat("rank ", me->rank));
  if (!gathered.ok()) return gathered.status();
  auto broadcast = (*group)->Broadcast("");
  if (!broadcast.ok()) return broadcast.status();
  std::printf("gathered: %s\nbroadcast: %s\n",
              absl::StrJoin(*gathered, "|").c_str(), broadcast->c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::Status s = Run(argc > 1 ? argv[1] : "");
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
