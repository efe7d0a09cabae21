// OneDnnConvNhwc on oneDNN's convolution_forward (forward_inference,
// direct) with nhwc activations: one primitive per (input shape, filter
// shape, post-ops, threads), the whole batch at once on an OpenMP team of
// the pool's size. See the header.
#include "kernels/cpu/onednn_conv_nhwc.h"

#include <atomic>

#if SLUICE_HAVE_ONEDNN_CONV
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/fault_injector.h"
#include "kernels/cpu/conv_im2col_gemm.h"
#include "kernels/cpu/conv_tap_gemms.h"
#include "kernels/cpu/onednn_runtime.h"
#include "kernels/cpu/parallel.h"
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace sluice::cpu {
namespace {
std::atomic<int64_t> nhwc_runs{0};
std::atomic<int64_t> winograd_slices{0};
}  // namespace

int64_t OneDnnConvNhwcRuns() { return nhwc_runs.load(); }
int64_t OneDnnConvNhwcWinogradSlices() { return winograd_slices.load(); }

#if !SLUICE_HAVE_ONEDNN_CONV

std::unique_ptr<OneDnnConvNhwc> OneDnnConvNhwc::Create(const Conv2DParams&,
                                                       ConvActivation) {
  return nullptr;
}

bool OneDnnConvNhwcHasWinograd() { return false; }

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

// kH, kOh, kPadTop and kPadBottom are those of the slice the plan runs
// (the whole call's where it is one slice); kO and kO0 its output channels
// [kO0, kO0 + kO); kAct whether the primitive applies the activation (a
// slice of channels with a residual adds it and activates as it copies);
// kAllO the whole filter's output channels.
enum KeyField { kN, kC, kH, kW, kO, kKh, kKw, kOh, kOw, kThreads, kBias,
                kSide, kPadTop, kPadBottom, kO0, kAct, kAllO, kKeyFields };
using PlanKey = std::array<int64_t, kKeyFields>;

// One execution's memory objects, made once per plan and pointed at each
// call's buffers: making them and an argument map on every call cost about
// a third of a batch-1 1 x 1 convolution on a 1 x 1 image (a
// squeeze-and-excitation block's; bench/RESULTS.md, 2026-12-06). `scratch`
// owns its buffer where the plan's scratchpad is at most kOwnScratchBytes,
// else points at the call's.
struct Args {
  memory src, dst, bias, side, scratch;
  // A Winograd plan's activations in its blocked layouts (the call's
  // temporaries).
  memory blocked_src, blocked_dst;
};

// Scratchpads up to this size live with their Args (oneDNN's convolutions
// asked for 8 KiB or none on the zoo's CNNs at one and two threads);
// larger ones are the call's temporaries, counted against the device.
constexpr size_t kOwnScratchBytes = size_t{64} << 10;

struct Plan {
  dnnl::convolution_forward conv;
  memory::desc src, dst, weights, user_weights, bias, scratch;
  // Where user_weights starts in the filter, in floats: the first tap
  // kept when taps that read only padding are dropped (LiveTaps).
  int64_t weights_offset = 0;
  // The plan whose reordered filter this one reads (itself, or an earlier
  // slice's plan with the same filter layout and taps).
  const Plan* weights_owner = this;
  // The residual: read in place by a binary add post-op, or (where the
  // primitive takes no such post-op) copied into y for a `sum` post-op.
  bool side_by_sum = false;
  // SiLU applied by sluice over what the primitive wrote, not as oneDNN's
  // swish post-op (SiluAfterTheCall).
  bool silu_after = false;
  // A Winograd primitive (WinogradPays): it reads and writes channel
  // blocks, so the slice's rows are reordered into blocked_src before it
  // and out of blocked_dst after it.
  bool winograd = false;
  memory::desc blocked_src, blocked_dst;
  dnnl::reorder to_blocked, from_blocked;
  // Bytes of the call's temporaries a slice needs for the two, each
  // rounded up to 64: blocked_src's first, then blocked_dst's.
  size_t BlockedSrcBytes() const {
    return winograd ? (blocked_src.get_size() + 63) / 64 * 64 : 0;
  }
  size_t BlockedBytes() const {
    if (!winograd) return 0;
    return BlockedSrcBytes() + (blocked_dst.get_size() + 63) / 64 * 64;
  }
  // Args no call is using: a call takes one, or makes one, and gives it
  // back, so that calls running at once each have their own.
  mutable absl::Mutex args_mu;
  mutable std::vector<std::unique_ptr<Args>> idle_args
      ABSL_GUARDED_BY(args_mu);

  bool OwnsScratch() const { return scratch.get_size() <= kOwnScratchBytes; }
};

// A plan's Args for one call, given back when it ends. Throws dnnl::error
// (making the memory objects).
class LeasedArgs {
 public:
  explicit LeasedArgs(const Plan& plan) : plan_(plan) {
    {
      absl::MutexLock lock(&plan.args_mu);
      if (!plan.idle_args.empty()) {
        args_ = std::move(plan.idle_args.back());
        plan.idle_args.pop_back();
      }
    }
    if (args_ != nullptr) return;
    const dnnl::engine& engine = OneDnnEngine();
    args_ = std::make_unique<Args>();
    args_->src = memory(plan.src, engine, DNNL_MEMORY_NONE);
    args_->dst = memory(plan.dst, engine, DNNL_MEMORY_NONE);
    args_->bias = memory(plan.bias, engine, DNNL_MEMORY_NONE);
    args_->side = memory(plan.dst, engine, DNNL_MEMORY_NONE);
    if (plan.winograd) {
      args_->blocked_src = memory(plan.blocked_src, engine, DNNL_MEMORY_NONE);
      args_->blocked_dst = memory(plan.blocked_dst, engine, DNNL_MEMORY_NONE);
    }
    if (plan.scratch.get_size() > 0) {
      args_->scratch = plan.OwnsScratch()
                           ? memory(plan.scratch, engine)
                           : memory(plan.scratch, engine, DNNL_MEMORY_NONE);
    }
  }
  ~LeasedArgs() {
    absl::MutexLock lock(&plan_.args_mu);
    plan_.idle_args.push_back(std::move(args_));
  }
  LeasedArgs(const LeasedArgs&) = delete;
  LeasedArgs& operator=(const LeasedArgs&) = delete;

  Args& operator*() const { return *args_; }

 private:
  const Plan& plan_;
  std::unique_ptr<Args> args_;
};

// The taps [first, last) of one spatial axis of a convolution that read
// the image for some output position; the others read only padding (a
// dilated convolution on a small image: DeepLabV3's ASPP at rates 24 and
// 36 on 14 x 14 reads the centre tap alone), and the pads shrunk to
// match. Dropping them leaves the output as it is: what they read is zero.
struct Taps {
  int64_t first, last, pad_begin, pad_end;
};

Taps LiveTaps(int64_t in, int64_t out, int64_t k, int64_t stride,
              int64_t dilation, int64_t pad_begin, int64_t pad_end) {
  // Tap t reads rows y * stride - pad_begin + t * dilation, y in [0, out).
  auto live = [&](int64_t t) {
    const int64_t lo = -pad_begin + t * dilation;
    const int64_t hi = (out - 1) * stride - pad_begin + t * dilation;
    return hi >= 0 && lo < in;
  };
  Taps taps{0, k, pad_begin, pad_end};
  while (taps.first < k && !live(taps.first)) ++taps.first;
  while (taps.last > taps.first && !live(taps.last - 1)) --taps.last;
  if (taps.first == taps.last) return {0, k, pad_begin, pad_end};
  taps.pad_begin = pad_begin - taps.first * dilation;
  taps.pad_end = pad_end - (k - taps.last) * dilation;
  // oneDNN takes no negative padding: keep every tap then.
  if (taps.pad_begin < 0 || taps.pad_end < 0) return {0, k, pad_begin, pad_end};
  return taps;
}

// A part of one call's work, its own primitive: images [n0, n1), their
// output rows [out0, out1), reading input rows [in0, in1) with pad_top and
// pad_bottom rows of zeros around them, output channels [o0, o1). A slice
// of some of the channels writes a buffer of its own (oneDNN's direct
// kernels take no strided destination), copied into its channels of y.
struct Slice {
  int64_t n0, n1, out0, out1, in0, in1, pad_top, pad_bottom, o0, o1;
};

// A call's slices: as many as the pool's threads, inline up to this.
constexpr size_t kInlineSlices = 4;
using SliceList = absl::InlinedVector<Slice, kInlineSlices>;

// With at most this many pool threads a call is cut into slices for them
// (Slices) instead of running on an OpenMP team.
constexpr int kMostPoolThreadsForSlices = 2;

// A slice of output channels is a multiple of this many (a vector block of
// oneDNN's filter layouts with AVX2 and with AVX-512), and at least
// kMinChannelRun wide.
constexpr int64_t kChannelRun = 16;
constexpr int64_t kMinChannelRun = 64;

// Calls are cut into runs of output channels only where the filter has at
// least this many bytes: twice a core's L2 on the 2-core EPYC VM, so that
// every thread of a band would stream it from L3 or memory. Smaller
// filters stay with bands of rows (DenseNet-121's 3 x 3s of 32 output
// channels and 1 x 1s of at most 512 KB, RegNetY's): cut into runs of 16
// channels, DenseNet-121 at two threads ran 36% slower (bench/RESULTS.md,
// 2026-12-05).
constexpr int64_t kMinChannelRunFilterBytes = int64_t{1} << 20;

// A slice runs on oneDNN's Winograd convolution (where WinogradPays) only
// with at least this many multiply-adds: below it, on 7 x 7 images of
// DenseNet-121's 3 x 3 layers (128 -> 32 channels, 1.8 M), it measured
// no faster than the direct convolution, and its filter takes 1.8 to 4
// times the memory.
constexpr int64_t kMinWinogradMacs = int64_t{2} << 20;
// Nor with a filter larger than this: Winograd's copy of it (F(2x2, 3x3):
// 16 floats a 3 x 3 tap set, against 9) sits beside the model's own, and
// with ResNet-50's layers 3 and 4 (2.3 and 9.4 MB filters) the first
// step's host memory passed issue 29's bound (1.5 x the weights + the
// activations + 100 MiB: 253 MiB; 282 MiB measured).
constexpr int64_t kMaxWinogradFilterBytes = int64_t{1} << 20;
// Nor where its scratchpad (the transformed input and output tiles, a
// temporary of each call) is larger than this: F(4x4, 3x3) on ResNet-50's
// 28 x 28 layers asked for 10 MB, and the first step passed the bound
// above by 4 MiB with it.
constexpr size_t kMaxWinogradScratchBytes = size_t{4} << 20;

// Runs `reorder` from `from` to `to` on this thread's stream, its
// arguments an array for the C interface (the C++ call builds a map each
// time).
void ExecuteReorder(const dnnl::reorder& reorder, const memory& from,
                    const memory& to) {
  const std::array<dnnl_exec_arg_t, 2> args = {
      dnnl_exec_arg_t{DNNL_ARG_FROM, from.get()},
      dnnl_exec_arg_t{DNNL_ARG_TO, to.get()}};
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(reorder.get(), OneDnnThreadStream().get(),
                             static_cast<int>(args.size()), args.data()),
      "could not execute a reorder");
}

// Copies `count` floats on up to `threads` of the pool.
void CopyOnPool(const Eigen::ThreadPoolDevice* pool, int threads,
                const float* from, float* to, int64_t count) {
  const int64_t blocks =
      std::max<int64_t>(1, std::min<int64_t>(threads, count >> 14));
  RunBlocks(pool, blocks, [&](int64_t b) {
    const int64_t b0 = count * b / blocks, b1 = count * (b + 1) / blocks;
    std::memcpy(to + b0, from + b0, (b1 - b0) * sizeof(float));
  });
}

// SiLU is applied after the call rather than as oneDNN's swish post-op:
// oneDNN 2.6's brgemm convolutions (AVX-512) spend about 0.5 ns an element
// on that post-op, so that EfficientNet-B0's expansion 1 x 1 (16 -> 96
// channels on 112 x 112) took 1.12 ms with it and 0.49 ms without, while
// Eigen's logistic over the output takes about 0.26 ns an element
// (bench/RESULTS.md, 2026-12-06).
// v * sigmoid(v) over `count` floats in place, on up to `threads` of the
// pool.
void SiluOnPool(const Eigen::ThreadPoolDevice* pool, int threads, float* v,
                int64_t count) {
  constexpr int64_t kChunk = 16384;  // floats: 64 KiB, within L2
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  auto chunk = [&](int64_t c) {
    const int64_t c0 = c * kChunk, n = std::min(kChunk, count - c0);
    Eigen::Map<Eigen::ArrayXf> a(v + c0, n);
    a = a * a.logistic();
  };
  if (threads <= 1 || chunks == 1) {
    for (int64_t c = 0; c < chunks; ++c) chunk(c);
    return;
  }
  RunBlocks(pool, chunks, chunk);
}

// A filter reordered for one plan.
struct Weights {
  const Plan* plan;
  std::shared_ptr<Buffer> source;  // pinned, so its address is not reused
  memory value;
};

class OneDnnConvNhwcImpl final : public OneDnnConvNhwc {
 public:
  OneDnnConvNhwcImpl(const Conv2DParams& p, ConvActivation act)
      : params_(p), act_(act) {}

  absl::StatusOr<bool> Compute(OpKernelContext* ctx, const Tensor& x,
                               const Tensor& f, const float* bias,
                               const Tensor* side, Tensor* y) override {
    const auto* pool = ctx->device()->eigen_cpu_device();
    // A dilated window whose taps mostly read padding: one GEMM per tap
    // over the positions it reads (conv_tap_gemms.h).
    if (TapGemmsPay(params_, x.dim(1), x.dim(2), y->dim(1), y->dim(2),
                    f.dim(1), f.dim(2))) {
      RETURN_IF_ERROR(
          InjectedFault(FaultKind::kLibrary, "oneDNN sgemm (tap GEMMs)"));
      ConvTapGemmsNhwc(pool, params_, act_, x, f, bias, side, y);
      nhwc_runs.fetch_add(1);
      return true;
    }
    const int threads = PoolThreads(pool);
    // Deep inputs on small maps and strided windows: im2col and one GEMM
    // by the filter as it is (conv_im2col_gemm.h).
    if (Im2colGemmPays(params_, x.dim(3), f.dim(1), f.dim(2), threads,
                       OneDnnHasAvx512())) {
      const Im2colGemmPlan plan =
          PlanIm2colGemm(y->dim(0) * y->dim(1) * y->dim(2), y->dim(3),
                         f.dim(1) * f.dim(2) * f.dim(3), threads);
      ASSIGN_OR_RETURN(
          Tensor scratch,
          ctx->allocate_temp(DT_FLOAT, Shape({plan.scratch_floats})));
      RETURN_IF_ERROR(
          InjectedFault(FaultKind::kLibrary, "oneDNN sgemm (im2col GEMM)"));
      ConvIm2colGemmNhwc(pool, plan, params_, act_, x, f, bias, side, y,
                         scratch.data<float>());
      nhwc_runs.fetch_add(1);
      return true;
    }
    // Where the pool has more than two threads, the whole call is one
    // primitive on an OpenMP team of the pool's size (decision 32); with
    // two or fewer, slices on the pool's own threads, each primitive
    // serial: a team's worker spins after the call and takes the core
    // from the threads that run the next node (MobileNetV3-small at 2
    // threads on a loaded 2-core VM: 1,745 ms a step on a team, 17.6 ms
    // with the workers sleeping; bench/RESULTS.md, 2026-12-05).
    const bool team = threads > kMostPoolThreadsForSlices;
    SliceList slices =
        team ? SliceList{Whole(x, *y)} : Slices(x, f, *y, threads);
    std::optional<OmpThreads> omp;
    if (team) {
      omp.emplace(threads);  // primitives are made and run with their team
    } else {
      SerialOnThisThread();
    }
    const int team_threads = team ? threads : 1;
    // Inline: a call has one slice a thread, and allocations per call
    // are a measurable part of a small convolution's cost.
    absl::InlinedVector<const Plan*, kInlineSlices> plans;
    absl::InlinedVector<std::shared_ptr<const Weights>, kInlineSlices> weights;
    size_t scratch_bytes = 0;
    size_t blocked_bytes = 0;
    // Each slice's plan and filter; false where oneDNN declines one.
    // Throws dnnl::error.
    auto plan_slices = [&]() {
      plans.assign(slices.size(), nullptr);
      weights.assign(slices.size(), nullptr);
      scratch_bytes = 0;
      blocked_bytes = 0;
      for (size_t i = 0; i < slices.size(); ++i) {
        const Slice& sl = slices[i];
        const bool part = sl.o1 - sl.o0 != f.dim(0);
        const PlanKey key = {sl.n1 - sl.n0, x.dim(3), sl.in1 - sl.in0,
                             x.dim(2), sl.o1 - sl.o0, f.dim(1), f.dim(2),
                             sl.out1 - sl.out0, y->dim(2), team_threads,
                             bias != nullptr, side != nullptr && !part,
                             sl.pad_top, sl.pad_bottom, sl.o0,
                             !(part && side != nullptr), f.dim(0)};
        plans[i] = GetPlan(key);
        if (plans[i] == nullptr) return false;
        weights[i] = GetWeights(*plans[i], f);
        if (!plans[i]->OwnsScratch()) {
          scratch_bytes =
              std::max(scratch_bytes, plans[i]->scratch.get_size());
        }
        blocked_bytes = std::max(blocked_bytes, plans[i]->BlockedBytes());
      }
      return true;
    };
    try {
      if (!plan_slices()) {
        // oneDNN declines a band's shape (its padding) but may take the
        // whole call: run that, serially.
        if (slices.size() == 1) return false;
        slices = {Whole(x, *y)};
        if (!plan_slices()) return false;
      }
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution (NHWC): ",
                                              e.what(), " (status ", e.status,
                                              ")"));
    }
    // One scratchpad per slice, 64-byte aligned, where the plans' are
    // larger than their Args keep.
    const int64_t scratch_floats =
        static_cast<int64_t>((scratch_bytes + 63) / 64 * 16);
    // A temporary of the call holding `floats` for each slice (none for 0).
    auto per_slice = [&](int64_t floats, Tensor* t) -> absl::Status {
      if (floats == 0) return absl::OkStatus();
      ASSIGN_OR_RETURN(*t, ctx->allocate_temp(
                               DT_FLOAT, Shape({floats * static_cast<int64_t>(
                                                             slices.size())})));
      return absl::OkStatus();
    };
    Tensor scratch;
    RETURN_IF_ERROR(per_slice(scratch_floats, &scratch));
    // A Winograd slice's blocked input and output.
    const int64_t blocked_floats = static_cast<int64_t>(blocked_bytes / 4);
    Tensor blocked;
    RETURN_IF_ERROR(per_slice(blocked_floats, &blocked));
    const int64_t h = x.dim(1), w = x.dim(2), c = x.dim(3);
    const int64_t oh = y->dim(1), ow = y->dim(2), o = y->dim(3);
    // Where each slice of some of the channels writes: its own run of one
    // buffer, [images, rows, ow, channels].
    absl::InlinedVector<int64_t, kInlineSlices> part_at(slices.size(), -1);
    int64_t part_floats = 0;
    for (size_t i = 0; i < slices.size(); ++i) {
      const Slice& sl = slices[i];
      if (sl.o1 - sl.o0 == o) continue;
      part_at[i] = part_floats;
      part_floats +=
          (sl.n1 - sl.n0) * (sl.out1 - sl.out0) * ow * (sl.o1 - sl.o0);
    }
    Tensor parts;
    if (part_floats > 0) {
      ASSIGN_OR_RETURN(parts,
                       ctx->allocate_temp(DT_FLOAT, Shape({part_floats})));
    }
    RETURN_IF_ERROR(
        InjectedFault(FaultKind::kLibrary, "oneDNN convolution (NHWC)"));
    absl::Mutex mu;
    absl::Status status;
    auto run = [&](int64_t i) {
      const Slice& sl = slices[i];
      const Plan& plan = *plans[i];
      if (!team) SerialOnThisThread();
      const float* src = x.data<float>() + (sl.n0 * h + sl.in0) * w * c;
      const int64_t out_at = (sl.n0 * oh + sl.out0) * ow * o;
      const bool part = part_at[i] >= 0;
      float* dst =
          part ? parts.data<float>() + part_at[i] : y->data<float>() + out_at;
      const float* res = side == nullptr || part
                             ? nullptr
                             : side->data<float>() + out_at;
      if (res != nullptr && plan.side_by_sum) {
        const int64_t count = (sl.n1 - sl.n0) * (sl.out1 - sl.out0) * ow * o;
        if (team) {
          CopyOnPool(pool, threads, res, dst, count);
        } else {
          std::memcpy(dst, res, count * sizeof(float));
        }
      }
      try {
        LeasedArgs leased(plan);
        Args& a = *leased;
        // The C interface takes the arguments as an array: no map.
        std::array<dnnl_exec_arg_t, 5> args;
        int count = 0;
        auto pass = [&](int arg, const memory& m, const float* data) {
          if (data != nullptr) m.set_data_handle(const_cast<float*>(data));
          args[count++] = {arg, m.get()};
        };
        if (plan.winograd) {
          float* at = blocked.data<float>() + i * blocked_floats;
          a.src.set_data_handle(const_cast<float*>(src));
          a.blocked_src.set_data_handle(at);
          a.blocked_dst.set_data_handle(at + plan.BlockedSrcBytes() / 4);
          a.dst.set_data_handle(dst);
          ExecuteReorder(plan.to_blocked, a.src, a.blocked_src);
          pass(DNNL_ARG_SRC, a.blocked_src, nullptr);
          pass(DNNL_ARG_WEIGHTS, weights[i]->value, nullptr);
          pass(DNNL_ARG_DST, a.blocked_dst, nullptr);
        } else {
          pass(DNNL_ARG_SRC, a.src, src);
          pass(DNNL_ARG_WEIGHTS, weights[i]->value, nullptr);
          pass(DNNL_ARG_DST, a.dst, dst);
        }
        if (bias != nullptr) pass(DNNL_ARG_BIAS, a.bias, bias + sl.o0);
        if (res != nullptr && !plan.side_by_sum) {
          pass(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, a.side,
               res);
        }
        if (plan.scratch.get_size() > 0) {
          pass(DNNL_ARG_SCRATCHPAD, a.scratch,
               plan.OwnsScratch() ? nullptr
                                  : scratch.data<float>() + i * scratch_floats);
        }
        dnnl::error::wrap_c_api(
            dnnl_primitive_execute(plan.conv.get(), OneDnnThreadStream().get(),
                                   count, args.data()),
            "could not execute the convolution");
        if (plan.winograd) {
          ExecuteReorder(plan.from_blocked, a.blocked_dst, a.dst);
          winograd_slices.fetch_add(1);
        }
      } catch (const dnnl::error& e) {
        absl::MutexLock lock(&mu);
        status = absl::InternalError(absl::StrCat(
            "oneDNN convolution (NHWC): ", e.what(), " (status ", e.status,
            ")"));
        return;
      }
      if (plan.silu_after) {
        SiluOnPool(pool, team ? threads : 1, dst,
                   (sl.n1 - sl.n0) * (sl.out1 - sl.out0) * ow * (sl.o1 - sl.o0));
      }
      if (part) {
        CopyChannelsInto(sl, dst, side == nullptr
                                      ? nullptr
                                      : side->data<float>() + out_at,
                         y->data<float>() + out_at, ow, o);
      }
    };
    if (team || slices.size() == 1) {
      run(0);
    } else {
      RunBlocks(pool, static_cast<int64_t>(slices.size()), run);
    }
    RETURN_IF_ERROR(status);
    nhwc_runs.fetch_add(1);
    return true;
  }

 private:
  // The whole call as one slice.
  Slice Whole(const Tensor& x, const Tensor& y) const {
    return {0, x.dim(0), 0, y.dim(1), 0, x.dim(1), params_.pads[0],
            params_.pads[2], 0, y.dim(3)};
  }

  // A slice of channels [o0, o1) computed into `part` ([pixels, o1 - o0])
  // goes into its channels of `out` (the slice's first pixel of y, o
  // channels a pixel); with a residual (`res`, laid out as `out`) it is
  // added and the activation applied here, the primitive having done the
  // bias alone.
  void CopyChannelsInto(const Slice& sl, const float* part, const float* res,
                        float* out, int64_t ow, int64_t o) const {
    const int64_t width = sl.o1 - sl.o0;
    const int64_t pixels = (sl.n1 - sl.n0) * (sl.out1 - sl.out0) * ow;
    for (int64_t q = 0; q < pixels; ++q) {
      const float* from = part + q * width;
      float* to = out + q * o + sl.o0;
      if (res == nullptr) {
        std::memcpy(to, from, width * sizeof(float));
        continue;
      }
      const float* r = res + q * o + sl.o0;
      for (int64_t j = 0; j < width; ++j) {
        to[j] = ApplyConvActivation(act_, from[j] + r[j]);
      }
    }
  }

  // The call cut for `threads` pool threads: runs of whole images where
  // the batch has at least as many, else bands of each image's output
  // rows; no slice below kMinConvSliceMacs of work (one slice where the
  // call has less). A band reads the input rows its window covers, padded
  // where they pass the image's edge as the whole call pads it.
  SliceList Slices(const Tensor& x, const Tensor& f, const Tensor& y,
                            int threads) const {
    const Conv2DParams& p = params_;
    const int64_t n = x.dim(0), h = x.dim(1), oh = y.dim(1);
    // Per image; the filter is [O, KH, KW, C/group].
    const int64_t macs =
        oh * y.dim(2) * y.dim(3) * f.dim(1) * f.dim(2) * f.dim(3);
    SliceList out;
    if (n >= threads) {
      const int64_t parts = std::min<int64_t>(
          threads, std::max<int64_t>(1, n * macs / kMinConvSliceMacs));
      for (int64_t i = 0; i < parts; ++i) {
        out.push_back({n * i / parts, n * (i + 1) / parts, 0, oh, 0, h,
                       p.pads[0], p.pads[2], 0, y.dim(3)});
      }
      return out;
    }
    // Where the filter outweighs the output (each output channel reads
    // more filter floats than the image has output positions) and is
    // larger than a core's cache (ResNet-50's layers 3 and 4), runs of
    // output channels, so that the threads share the filter's reads
    // instead of each streaming all of it.
    const int64_t o = y.dim(3);
    const int64_t per_channel = f.dim(1) * f.dim(2) * f.dim(3);
    if (p.group == 1 && per_channel > oh * y.dim(2) &&
        o * per_channel * static_cast<int64_t>(sizeof(float)) >=
            kMinChannelRunFilterBytes) {
      const int64_t parts = std::min<int64_t>(
          {(threads + n - 1) / n, o / kMinChannelRun,
           std::max<int64_t>(1, macs / kMinConvSliceMacs)});
      if (parts > 1) {
        for (int64_t img = 0; img < n; ++img) {
          for (int64_t i = 0; i < parts; ++i) {
            const int64_t o0 = o * i / parts / kChannelRun * kChannelRun;
            const int64_t o1 = i + 1 == parts
                                   ? o
                                   : o * (i + 1) / parts / kChannelRun *
                                         kChannelRun;
            out.push_back({img, img + 1, 0, oh, 0, h, p.pads[0], p.pads[2],
                           o0, o1});
          }
        }
        return out;
      }
    }
    const int64_t bands = std::min<int64_t>(
        {(threads + n - 1) / n, oh,
         std::max<int64_t>(1, macs / kMinConvSliceMacs)});
    if (bands == 1) return {Whole(x, y)};
    const int64_t span = (f.dim(1) - 1) * p.dilations[0] + 1;
    for (int64_t img = 0; img < n; ++img) {
      for (int64_t b = 0; b < bands; ++b) {
        const int64_t out0 = oh * b / bands, out1 = oh * (b + 1) / bands;
        const int64_t r0 = out0 * p.strides[0] - p.pads[0];
        const int64_t r1 = (out1 - 1) * p.strides[0] - p.pads[0] + span;
        const int64_t in0 = std::max<int64_t>(0, r0);
        const int64_t in1 = std::min(h, r1);
        if (in1 <= in0) return {Whole(x, y)};  // a band of padding alone
        out.push_back({img, img + 1, out0, out1, in0, in1, in0 - r0, r1 - in1,
                       0, y.dim(3)});
      }
    }
    return out;
  }

  // The cached plan for `key`, made on first use; nullptr when oneDNN
  // declines the problem (also cached). Throws dnnl::error.
  const Plan* GetPlan(const PlanKey& key) {
    absl::MutexLock lock(&mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
    std::unique_ptr<Plan> plan = MakePlan(key, /*side_by_sum=*/false);
    if (plan == nullptr && key[kSide] != 0) {
      plan = MakePlan(key, /*side_by_sum=*/true);
    }
    if (plan != nullptr) {
      for (const auto& [k, other] : plans_) {
        if (other != nullptr && other->weights == plan->weights &&
            other->user_weights == plan->user_weights &&
            other->weights_offset == plan->weights_offset) {
          plan->weights_owner = other->weights_owner;
          break;
        }
      }
    }
    const Plan* result = plan.get();
    plans_[key] = std::move(plan);
    return result;
  }

  // Whether a slice runs on oneDNN's Winograd convolution: a 3 x 3
  // window at stride 1, undilated and ungrouped, all of its taps live, no
  // residual.
  bool WinogradPays(const PlanKey& key, int64_t kh, int64_t kw) const {
    const Conv2DParams& p = params_;
    if (key[kKh] != 3 || key[kKw] != 3 || kh != 3 || kw != 3 ||
        p.group != 1 || p.strides[0] != 1 || p.strides[1] != 1 ||
        p.dilations[0] != 1 || p.dilations[1] != 1 || key[kSide] != 0) {
      return false;
    }
    const int64_t macs = key[kN] * key[kOh] * key[kOw] * key[kO] * key[kC] * 9;
    const int64_t filter_bytes = key[kAllO] * key[kC] * 9 * 4;
    return macs >= kMinWinogradMacs && filter_bytes <= kMaxWinogradFilterBytes;
  }

  // Makes `plan` (its src, dst and bias set) a Winograd plan: the
  // primitive, its blocked layouts and the reorders into and out of them.
  // False, `plan` unchanged, where oneDNN has none for the problem or its
  // scratchpad passes kMaxWinogradScratchBytes.
  static bool MakeWinograd(const memory::dims& w_dims, bool bias,
                           const Taps& rows, const Taps& cols,
                           const dnnl::primitive_attr& attr, Plan* plan) {
    try {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_winograd,
          memory::desc(plan->src.dims(), kF32, Tag::any),
          memory::desc(w_dims, kF32, Tag::any),
          bias ? plan->bias : memory::desc(),
          memory::desc(plan->dst.dims(), kF32, Tag::any), {1, 1}, {0, 0},
          {rows.pad_begin, cols.pad_begin}, {rows.pad_end, cols.pad_end});
      dnnl::convolution_forward::primitive_desc pd(desc, attr,
                                                   OneDnnEngine());
      if (pd.scratchpad_desc().get_size() > kMaxWinogradScratchBytes) {
        return false;
      }
      dnnl::reorder to_blocked(dnnl::reorder::primitive_desc(
          OneDnnEngine(), plan->src, OneDnnEngine(), pd.src_desc()));
      dnnl::reorder from_blocked(dnnl::reorder::primitive_desc(
          OneDnnEngine(), pd.dst_desc(), OneDnnEngine(), plan->dst));
      dnnl::convolution_forward conv(pd);
      plan->winograd = true;
      plan->blocked_src = pd.src_desc();
      plan->blocked_dst = pd.dst_desc();
      plan->to_blocked = std::move(to_blocked);
      plan->from_blocked = std::move(from_blocked);
      plan->weights = pd.weights_desc();
      plan->scratch = pd.scratchpad_desc();
      plan->conv = std::move(conv);
      return true;
    } catch (const dnnl::error&) {
      return false;  // none for this problem: direct
    }
  }

  // The primitive for `key`, the residual added as `side_by_sum` says;
  // nullptr where oneDNN has none, or only one it declines.
  std::unique_ptr<Plan> MakePlan(const PlanKey& key, bool side_by_sum) const {
    const Conv2DParams& p = params_;
    const int64_t groups = p.group, c = key[kC], o = key[kO];
    const Taps rows = LiveTaps(key[kH], key[kOh], key[kKh], p.strides[0],
                               p.dilations[0], key[kPadTop], key[kPadBottom]);
    const Taps cols = LiveTaps(key[kW], key[kOw], key[kKw], p.strides[1],
                               p.dilations[1], p.pads[1], p.pads[3]);
    // The filter's own extent (its strides), and the taps the plan reads.
    const int64_t fkw = key[kKw];
    const int64_t kh = rows.last - rows.first, kw = cols.last - cols.first;
    const int64_t cg = c / groups, og = o / groups;
    auto plan = std::make_unique<Plan>();
    plan->side_by_sum = side_by_sum;
    plan->src = memory::desc({key[kN], c, key[kH], key[kW]}, kF32, Tag::nhwc);
    plan->dst =
        memory::desc({key[kN], o, key[kOh], key[kOw]}, kF32, Tag::nhwc);
    // The filter as sluice holds it: [O, KH, KW, C/g], from its first
    // live tap.
    const int64_t fk = key[kKh] * fkw * cg;  // floats per output channel
    plan->weights_offset =
        key[kO0] * fk + (rows.first * fkw + cols.first) * cg;
    const memory::dims w_dims = groups == 1
                                    ? memory::dims{o, c, kh, kw}
                                    : memory::dims{groups, og, cg, kh, kw};
    plan->user_weights =
        groups == 1
            ? memory::desc(w_dims, kF32, {fk, 1, fkw * cg, cg})
            : memory::desc(w_dims, kF32, {og * fk, fk, 1, fkw * cg, cg});
    plan->bias = memory::desc({o}, kF32, Tag::x);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (key[kSide] != 0) {
      if (side_by_sum) {
        ops.append_sum(1.0f);
      } else {
        ops.append_binary(dnnl::algorithm::binary_add, plan->dst);
      }
    }
    if (key[kAct] != 0) {
      if (act_ == ConvActivation::kSilu) {
        plan->silu_after = true;
      } else {
        AppendActivation(act_, &ops);
      }
    }
    attr.set_post_ops(ops);
    if (WinogradPays(key, kh, kw) &&
        MakeWinograd(w_dims, key[kBias] != 0, rows, cols, attr, plan.get())) {
      return plan;
    }
    dnnl::convolution_forward::primitive_desc pd;
    try {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, plan->src,
          memory::desc(w_dims, kF32, Tag::any),
          key[kBias] != 0 ? plan->bias : memory::desc(), plan->dst,
          {p.strides[0], p.strides[1]},
          {p.dilations[0] - 1, p.dilations[1] - 1},
          {rows.pad_begin, cols.pad_begin}, {rows.pad_end, cols.pad_end});
      pd = dnnl::convolution_forward::primitive_desc(desc, attr,
                                                     OneDnnEngine());
    } catch (const dnnl::error&) {
      return nullptr;  // no implementation for this problem
    }
    if (OneDnnImplDeclined(pd.impl_info_str())) return nullptr;
    plan->weights = pd.weights_desc();
    plan->scratch = pd.scratchpad_desc();
    plan->conv = dnnl::convolution_forward(pd);
    return plan;
  }

  // The filter reordered for `plan`, cached per filter buffer
  // (ReorderedFilters). Throws dnnl::error.
  std::shared_ptr<const Weights> GetWeights(const Plan& plan,
                                            const Tensor& f) {
    absl::MutexLock lock(&mu_);
    if (auto found = weights_.Find(plan.weights_owner, f.buffer().get())) {
      return found;
    }
    auto w = std::make_shared<Weights>();
    w->plan = plan.weights_owner;
    w->source = f.buffer();
    memory user(plan.user_weights, OneDnnEngine(),
                const_cast<float*>(f.data<float>()) + plan.weights_offset);
    w->value = memory(plan.weights, OneDnnEngine());
    if (plan.winograd) {
      // oneDNN reorders into a Winograd filter layout only from a plain
      // one: OIHW first.
      memory plain(memory::desc(plan.user_weights.dims(), kF32, Tag::oihw),
                   OneDnnEngine());
      dnnl::reorder(user, plain).execute(OneDnnThreadStream(), user, plain);
      dnnl::reorder(plain, w->value)
          .execute(OneDnnThreadStream(), plain, w->value);
    } else {
      dnnl::reorder(user, w->value)
          .execute(OneDnnThreadStream(), user, w->value);
    }
    OneDnnThreadStream().wait();
    weights_.Add(w);
    return w;
  }

  // Never change after construction.
  const Conv2DParams params_;
  const ConvActivation act_;

  absl::Mutex mu_;
  // A plan is never removed, so pointers to plans stay valid.
  absl::flat_hash_map<PlanKey, std::unique_ptr<Plan>> plans_
      ABSL_GUARDED_BY(mu_);
  ReorderedFilters<Weights> weights_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

bool OneDnnConvNhwcHasWinograd() {
  static const bool has = [] {
    try {
      const memory::desc act({1, 64, 28, 28}, kF32, Tag::any);
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_winograd, act,
          memory::desc({64, 64, 3, 3}, kF32, Tag::any), act, {1, 1}, {0, 0},
          {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc pd(desc, OneDnnEngine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

std::unique_ptr<OneDnnConvNhwc> OneDnnConvNhwc::Create(
    const Conv2DParams& params, ConvActivation activation) {
  return std::make_unique<OneDnnConvNhwcImpl>(params, activation);
}

#endif  // SLUICE_HAVE_ONEDNN_CONV

}  // namespace sluice::cpu
