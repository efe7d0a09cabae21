#include "distributed/process_group_info.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// One launcher's claim: which variables, and the rank and size they give.
struct Claim {
  Launcher launcher;
  std::string rank_var;
  std::string size_var;
  std::optional<int> rank;
  std::optional<int> size;
  std::optional<int> local_rank;
};

bool HasOnlyPrintable(absl::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f) {
      return false;
    }
  }
  return true;
}

// A value shown in an error: at most 64 characters, controls escaped.
std::string Shown(absl::string_view value) {
  std::string out = absl::CHexEscape(value.substr(0, 64));
  if (value.size() > 64) absl::StrAppend(&out, "...");
  return out;
}

// A whole number in [min, max] read from variable `name`, or nothing when
// the variable is unset.
absl::StatusOr<std::optional<int>> ReadInt(const EnvLookup& getenv,
                                           const char* name, int min, int max) {
  std::optional<std::string> value = getenv(name);
  if (!value.has_value()) return std::optional<int>();
  absl::string_view text = absl::StripAsciiWhitespace(*value);
  int parsed = 0;
  bool digits_only = !text.empty();
  for (char c : text) digits_only = digits_only && c >= '0' && c <= '9';
  if (!digits_only || !absl::SimpleAtoi(text, &parsed) || parsed < min ||
      parsed > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, "='", Shown(*value), "' is not a whole number in ",
                     min, "..", max));
  }
  return std::optional<int>(parsed);
}

absl::StatusOr<Claim> ReadClaim(const EnvLookup& getenv, Launcher launcher,
                                const char* rank_var, const char* size_var,
                                const char* local_var) {
  Claim claim{launcher, rank_var, size_var ? size_var : "", {}, {}, {}};
  ASSIGN_OR_RETURN(claim.rank, ReadInt(getenv, rank_var, 0, kMaxWorldSize - 1));
  if (size_var != nullptr) {
    ASSIGN_OR_RETURN(claim.size, ReadInt(getenv, size_var, 1, kMaxWorldSize));
  }
  if (local_var != nullptr) {
    ASSIGN_OR_RETURN(claim.local_rank,
                     ReadInt(getenv, local_var, 0, kMaxWorldSize - 1));
  }
  return claim;
}

std::string Describe(const Claim& c) {
  std::string out = absl::StrCat(LauncherName(c.launcher), " (", c.rank_var,
                                 "=", c.rank.value_or(-1));
  if (c.size.has_value()) absl::StrAppend(&out, ", ", c.size_var, "=", *c.size);
  absl::StrAppend(&out, ")");
  return out;
}

}  // namespace

const char* LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kNone:
      return "none";
    case Launcher::kSluice:
      return "sluice";
    case Launcher::kOpenMpi:
      return "Open MPI";
    case Launcher::kPmix:
      return "PMIx";
    case Launcher::kSlurm:
      return "Slurm";
  }
  return "?";
}

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text,
                                       absl::string_view what) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, "='", Shown(text), "': ", why,
        " (expected host:port, [ipv6]:port, or a port alone for 127.0.0.1)"));
  };
  if (text.empty() || text.size() > 300) return bad("empty or too long");
  if (!HasOnlyPrintable(text)) return bad("spaces or control characters");
  HostPort out;
  absl::string_view port_text;
  if (text.front() == '[') {
    size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return bad("an IPv6 address needs ']:port' after it");
    }
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
    if (out.host.empty()) return bad("empty host");
  } else {
    size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) {
      out.host = "127.0.0.1";
      port_text = text;
    } else {
      if (text.substr(0, colon).find(':') != absl::string_view::npos) {
        return bad("an IPv6 address must be written in brackets");
      }
      out.host = colon == 0 ? "127.0.0.1" : std::string(text.substr(0, colon));
      port_text = text.substr(colon + 1);
    }
  }
  bool digits_only = !port_text.empty() && port_text.size() <= 5;
  for (char c : port_text) digits_only = digits_only && c >= '0' && c <= '9';
  int port = 0;
  if (!digits_only || !absl::SimpleAtoi(port_text, &port) || port < 1 ||
      port > 65535) {
    return bad(absl::StrCat("port '", Shown(port_text),
                            "' is not a number in 1..65535"));
  }
  out.port = port;
  return out;
}

absl::StatusOr<ProcessGroupInfo> DetectProcessGroup(const EnvLookup& getenv) {
  ASSIGN_OR_RETURN(Claim sluice, ReadClaim(getenv, Launcher::kSluice, kEnvRank,
                                           kEnvWorldSize, kEnvLocalRank));
  ASSIGN_OR_RETURN(
      Claim ompi,
      ReadClaim(getenv, Launcher::kOpenMpi, "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"));
  ASSIGN_OR_RETURN(Claim pmix, ReadClaim(getenv, Launcher::kPmix, "PMIX_RANK",
                                         nullptr, nullptr));
  ASSIGN_OR_RETURN(Claim slurm,
                   ReadClaim(getenv, Launcher::kSlurm, "SLURM_PROCID",
                             "SLURM_NTASKS", "SLURM_LOCALID"));
  ProcessGroupInfo info;
  // Rule 1: a rank needs its size (PMIx has none of its own).
  for (const Claim* c : {&sluice, &ompi, &slurm}) {
    if (c->rank.has_value() != c->size.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          c->rank.has_value() ? c->rank_var : c->size_var, " is set but ",
          c->rank.has_value() ? c->size_var : c->rank_var,
          " is not: set both, or neither"));
    }
  }
  if (slurm.rank.has_value() &&
      (ompi.rank.has_value() || pmix.rank.has_value())) {
    info.notes.push_back(
        absl::StrCat("SLURM_PROCID=", *slurm.rank,
                     " ignored: ", ompi.rank.has_value() ? "Open MPI" : "PMIx",
                     " started this process inside the Slurm allocation"));
    slurm.rank.reset();
    slurm.size.reset();
  }
  // Rule 2: every launcher present agrees. The first present, in the order
  // sluice, Open MPI, Slurm, names the launcher.
  std::vector<const Claim*> present;
  for (const Claim* c : {&sluice, &ompi, &pmix, &slurm}) {
    if (c->rank.has_value()) present.push_back(c);
  }
  std::optional<int> size;
  for (const Claim* c : present) {
    if (c->size.has_value() && !size.has_value()) size = c->size;
  }
  if (!present.empty() && !size.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("PMIX_RANK=", *pmix.rank,
                     " is set but no launcher gives the world size: set ",
                     kEnvWorldSize, " (or start the processes with mpirun)"));
  }
  bool agree = true;
  for (const Claim* c : present) {
    agree = agree && *c->rank == *present.front()->rank &&
            (!c->size.has_value() || *c->size == *size);
  }
  if (!agree) {
    std::vector<std::string> parts;
    for (const Claim* c : present) parts.push_back(Describe(*c));
    return absl::InvalidArgumentError(absl::StrCat(
        "launchers disagree on this process's rank or world size: ",
        absl::StrJoin(parts, " against "),
        "; unset the variables of the launcher that did not start it"));
  }
  if (!present.empty()) {
    const Claim& first = *present.front();
    info.launcher = first.launcher == Launcher::kPmix && ompi.rank.has_value()
                        ? Launcher::kOpenMpi
                        : first.launcher;
    info.rank = *first.rank;
    info.world_size = *size;
    for (const Claim* c : {&sluice, &ompi, &slurm}) {
      if (c->rank.has_value() && c->local_rank.has_value() &&
          !info.local_rank.has_value()) {
        info.local_rank = c->local_rank;
      }
    }
    std::vector<std::string> parts;
    for (const Claim* c : present) parts.push_back(Describe(*c));
    info.notes.push_back(absl::StrCat("rank ", info.rank, " of ",
                                      info.world_size, " from ",
                                      absl::StrJoin(parts, ", ")));
  } else if (sluice.local_rank.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kEnvLocalRank, " is set but ", kEnvRank, " and ",
                     kEnvWorldSize, " are not"));
  }
  // Rule 3.
  if (info.rank >= info.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", info.rank, " is not below the world size ", info.world_size,
        " (", present.empty() ? "" : Describe(*present.front()),
        "): ranks count from 0"));
  }
  if (info.local_rank.has_value() && *info.local_rank > info.rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local rank ", *info.local_rank, " is above the rank ", info.rank,
        ": a process's rank on its host cannot exceed its rank in the job"));
  }
  // Rule 4.
  if (std::optional<std::string> v = getenv(kEnvCoordinator)) {
    ASSIGN_OR_RETURN(info.coordinator, ParseHostPort(*v, kEnvCoordinator));
  }
  if (std::optional<std::string> v = getenv(kEnvJobToken)) {
    if (v->size() < kMinJobTokenLength || v->size() > kMaxJobTokenLength ||
        !HasOnlyPrintable(*v)) {
      // The value is a secret: its length only.
      return absl::InvalidArgumentError(absl::StrCat(
          kEnvJobToken, " must be ", kMinJobTokenLength, " to ",
          kMaxJobTokenLength, " printable characters without spaces (it has ",
          v->size(), "); for example: export ", kEnvJobToken,
          "=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n')"));
    }
    info.job_token = *v;
  }
  if (info.launcher == Launcher::kSluice && info.world_size > 1) {
    if (!info.coordinator.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kEnvWorldSize, "=", info.world_size, " needs ", kEnvCoordinator,
          "=host:port: the address rank 0 listens on, the same in every "
          "rank"));
    }
    if (info.job_token.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kEnvWorldSize, "=", info.world_size, " needs ", kEnvJobToken,
          ": a secret of at least ", kMinJobTokenLength,
          " characters, the same in every rank, so that only this job's "
          "processes may join"));
    }
  }
  return info;
}

absl::StatusOr<ProcessGroupInfo> DetectProcessGroup() {
  return DetectProcessGroup([](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

absl::StatusOr<std::string> GenerateJobToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(absl::StrCat(
          "cannot read the kernel's random source for a job token: ",
          std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte of the longer string is visited whatever the contents; the
  // branch on the index depends on the lengths only.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  // Keeps the compiler from ending the loop at the first difference.
  asm volatile("" : "+r"(diff));
  return diff == 0;
}

}  // namespace sluice
