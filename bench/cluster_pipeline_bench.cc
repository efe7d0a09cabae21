// Throughput of a model split into two pipeline stages over two ranks, one
// step at a time against several steps in flight (docs/design.md decision
// 41). The model is a chain of LAYERS MatMul+Tanh layers of WIDTH x WIDTH
// float weights, generated here (fixed seed); each rank gets a logical CPU
// whose memory limit holds about half of the weights, so rank 0 places the
// chain in two equal stages, one per rank. Rank 0 runs STEPS steps one at a
// time from one thread, then the same steps from IN_FLIGHT threads at once
// (several Run calls in flight), ROUNDS times alternately, checks that
// every step's output equals the first, and prints both throughputs per
// round and their medians, then the whole chain's in one process on one
// core and from two threads (what the machine's two cores give without
// any message: the ceiling the steps in flight can reach) for reference;
// rank 1 serves. One intra-op thread per rank, so the
// two stages use one core each.
//
//   mpirun -np 2 --oversubscribe build/bench/cluster_pipeline_bench
//       [LAYERS=8 WIDTH=512 BATCH=16 STEPS=64 IN_FLIGHT=2 ROUNDS=5]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/fingerprint.h"
#include "core/status_macros.h"
#include "graph/loader.h"
#include "proto/config.pb.h"
#include "proto/graph.pb.h"
#include "sluice/session.h"

namespace sluice {
namespace {

struct Options {
  int layers = 8;
  int width = 512;
  int batch = 16;
  int steps = 64;
  int in_flight = 2;
  int rounds = 5;
};

void SetShape(AttrValue* value, std::vector<int64_t> dims) {
  for (int64_t d : dims) value->mutable_shape()->add_dim(d);
}

GraphDef ChainModel(const Options& o) {
  GraphDef def;
  NodeDef* x = def.add_node();
  x->set_name("x");
  x->set_op("Input");
  (*x->mutable_attr())["dtype"].set_type(DT_FLOAT);
  SetShape(&(*x->mutable_attr())["shape"], {-1, o.width});
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f / std::sqrt(o.width));
  std::string prev = "x";
  for (int l = 0; l < o.layers; ++l) {
    NodeDef* w = def.add_node();
    w->set_name(absl::StrCat("w", l));
    w->set_op("Const");
    TensorProto* t = (*w->mutable_attr())["value"].mutable_tensor();
    t->set_dtype(DT_FLOAT);
    t->mutable_shape()->add_dim(o.width);
    t->mutable_shape()->add_dim(o.width);
    for (int i = 0; i < o.width * o.width; ++i) t->add_float_val(normal(rng));
    NodeDef* mm = def.add_node();
    mm->set_name(absl::StrCat("mm", l));
    mm->set_op("MatMul");
    mm->add_input(prev);
    mm->add_input(w->name());
    NodeDef* act = def.add_node();
    act->set_name(absl::StrCat("tanh", l));
    act->set_op("Tanh");
    act->add_input(mm->name());
    prev = act->name();
  }
  auto* out = def.mutable_signature()->add_outputs();
  out->set_name("y");
  out->set_tensor(prev);
  return def;
}

// Steps per second of `steps` steps from `threads` threads; each step's
// output's fingerprint in `outputs`. Only fingerprints are kept: the outputs
// are allocated on the device whose memory limit made the split, so a round
// that held them all would run out of it (60 steps of 256 KiB did).
absl::StatusOr<double> Throughput(Session& session, const Tensor& x, int steps,
                                  int threads, std::vector<uint64_t>* outputs) {
  outputs->assign(steps, 0);
  std::vector<absl::Status> errors(threads);
  const absl::Time start = absl::Now();
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      for (int i = k; i < steps; i += threads) {
        absl::StatusOr<std::vector<Tensor>> out =
            session.Run({{"x", x}}, {"y"});
        if (!out.ok()) {
          errors[k] = out.status();
          return;
        }
        const Tensor& y = (*out)[0];
        (*outputs)[i] =
            Fingerprint64(y.raw_data(), static_cast<size_t>(y.bytes()),
                          static_cast<uint64_t>(y.bytes()));
      }
    });
  }
  for (std::thread& t : pool) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  for (const absl::Status& s : errors) {
    if (!s.ok()) return s;
  }
  return steps / seconds;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2]
                           : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

absl::Status Main(const Options& o) {
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph,
                   BuildGraph(ChainModel(o)));
  RuntimeConfig config;
  config.mutable_cluster();
  config.set_use_gpu(false);
  config.set_intra_op_threads(1);
  config.set_inter_op_threads(1);
  // The placer's budget is 3/4 of a small device's limit (WorkspaceReserve):
  // half of the weights and 9/10 of a layer, so each stage holds half the
  // layers; the other quarter holds the activations of the steps in flight
  // (keep the batch small against WIDTH).
  const int64_t layer = int64_t{4} * o.width * o.width;
  const int64_t weights = layer * o.layers;
  config.add_logical_cpus()->mutable_memory_limit()->set_bytes(
      (weights / 2 + layer * 9 / 10) * 4 / 3);
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   Session::Create(std::move(graph), config));
  if (session->rank() != 0) return session->Serve();
  for (const std::string& line : session->log()) {
    if (line.find("cluster:") == 0) std::printf("%s\n", line.c_str());
  }
  std::vector<float> values(int64_t{o.batch} * o.width);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::sin(0.001f * static_cast<float>(i));
  }
  const Tensor x = Tensor::FromVector(values, Shape({o.batch, o.width}));
  std::vector<uint64_t> one, many, alone;
  ASSIGN_OR_RETURN(double warm, Throughput(*session, x, 8, o.in_flight, &one));
  (void)warm;
  // Rounds alternate the two ways (the machine's load changes under them);
  // the medians are reported.
  std::vector<double> serial, piped, ratio;
  for (int round = 0; round < o.rounds; ++round) {
    ASSIGN_OR_RETURN(double a, Throughput(*session, x, o.steps, 1, &one));
    ASSIGN_OR_RETURN(double b,
                     Throughput(*session, x, o.steps, o.in_flight, &many));
    for (int i = 0; i < o.steps; ++i) {
      if (many[i] != one[0] || one[i] != one[0]) {
        return absl::InternalError(
            absl::StrCat("step ", i, " in flight gave another output"));
      }
    }
    std::printf("round %d: one at a time %.1f steps/s, %d in flight %.1f "
                "steps/s (%.2fx)\n",
                round + 1, a, o.in_flight, b, b / a);
    serial.push_back(a);
    piped.push_back(b);
    ratio.push_back(b / a);
  }
  // The whole chain in one process on one core, for reference (the other
  // rank waits in Serve meanwhile).
  RuntimeConfig single;
  single.set_use_gpu(false);
  single.set_intra_op_threads(1);
  single.set_inter_op_threads(1);
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph1,
                   BuildGraph(ChainModel(o)));
  ASSIGN_OR_RETURN(std::unique_ptr<Session> one_process,
                   Session::Create(std::move(graph1), single));
  ASSIGN_OR_RETURN(double c, Throughput(*one_process, x, o.steps, 1, &alone));
  // And from two threads at once (or one, with one step in flight), with
  // nothing crossing processes: what this machine gives for the same work
  // on the two cores the two stages use, the ceiling of the steps in
  // flight (a VM's cores may not add up).
  const int cores = std::min(o.in_flight, 2);
  std::vector<uint64_t> threaded;
  ASSIGN_OR_RETURN(double d,
                   Throughput(*one_process, x, o.steps, cores, &threaded));
  for (int i = 0; i < o.steps; ++i) {
    if (alone[i] != one[0] || threaded[i] != one[0]) {
      return absl::InternalError("one process gave another output");
    }
  }
  std::printf(
      "chain of %d MatMul+Tanh layers, %dx%d weights, batch %d, 2 ranks, "
      "%d rounds of %d steps\n"
      "median: one step at a time %.1f steps/s, %d Run calls in flight "
      "%.1f steps/s, ratio %.2fx (per round: median %.2fx); outputs equal\n"
      "one process, the whole chain: %.1f steps/s on one core, %.1f "
      "steps/s from %d threads (%.2fx: the ceiling of two stages here; "
      "in flight reached %.2f of it)\n",
      o.layers, o.width, o.width, o.batch, o.rounds, o.steps, Median(serial),
      o.in_flight, Median(piped), Median(piped) / Median(serial), Median(ratio),
      c, d, cores, d / c, Median(piped) / d);
  return absl::OkStatus();
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  sluice::Options o;
  int* fields[] = {&o.layers, &o.width,     &o.batch,
                   &o.steps,  &o.in_flight, &o.rounds};
  for (int i = 1; i < argc && i <= 6; ++i) *fields[i - 1] = std::atoi(argv[i]);
  if (o.layers < 2 || o.width < 1 || o.batch < 1 || o.steps < 1 ||
      o.in_flight < 1 || o.rounds < 1) {
    std::fprintf(stderr,
                 "usage: cluster_pipeline_bench [LAYERS>=2 WIDTH BATCH STEPS "
                 "IN_FLIGHT ROUNDS]\n");
    return 2;
  }
  absl::Status s = sluice::Main(o);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
