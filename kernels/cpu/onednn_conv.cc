// OneDnnConv on oneDNN's convolution_forward (forward_inference, direct),
// each image's output cut into slices (one primitive each) run on the
// intra-op pool, every oneDNN call serial on its thread. See the header.
//
// A plan, per (input shape, filter shape, threads per image, post-ops,
// least slice work):
//   1. the input layout: a primitive for the whole image with `any`
//      layouts says whether oneDNN wants plain nchw (kept); otherwise
//      channel blocks of the vector width are asked for (nChw16c / 8c),
//      and if oneDNN has no direct primitive for those, what `any` gave;
//   2. the cut (PlanConvSlicing): runs of output channels [oc0, oc1)
//      (groups [g0, g1), with their input channels, when grouped) times
//      bands of output rows [oh0, oh1). A slice starts on a channel block,
//      and in nChw{8,16}c as in nchw a run of whole channel blocks of one
//      image is one contiguous run of memory: a slice reads plain pointer
//      offsets, no views. A band reads its own copy of the input rows its
//      windows cover, [ih0, ih1), with the padding the band's edges need
//      (the image's top padding for the first band, its bottom for the
//      last, none between), so each band is an ordinary convolution of
//      its own shape; the filter is reordered once per run of channels
//      and shared by that run's bands;
//   3. reorders: the input into that layout (in chunks of channel blocks,
//      or of rows for nhwc, one per thread; per band when cut into
//      bands), each slice's output out of the layout oneDNN picked into
//      its channels and rows of the NCHW output, and the residual into the
//      slice's buffer before the primitive adds it (`sum`).
#include "kernels/cpu/onednn_conv.h"

#include <algorithm>
#include <atomic>
#include <string>

#if SLUICE_HAVE_ONEDNN_CONV
#include <omp.h>

#include <array>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "device/fault_injector.h"
#include "kernels/cpu/onednn_runtime.h"
#include "kernels/cpu/parallel.h"
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace sluice::cpu {
namespace {

std::atomic<int64_t> onednn_runs{0};
std::atomic<int64_t> row_sliced_runs{0};
std::atomic<int64_t> min_slice_macs{0};  // 0: kMinConvSliceMacs

// Each slice's fixed cost in PlanConvSlicing's sums, in multiply-adds
// (about a microsecond: the call, its reorders' setup).
constexpr int64_t kSliceOverheadMacs = int64_t{1} << 14;

int64_t CeilDivide(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The channel block of oneDNN's direct convolutions on this CPU: 16 floats
// with AVX-512, else 8 (without oneDNN: 16). Defined below.
int BlockWidth();

}  // namespace


bool PreferOneDnn(int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                  int64_t in_per_group, int64_t out_per_group, int64_t groups,
                  int64_t batch, int threads) {
  if (kh * kw == 1) return false;
  if (in_per_group == 1 && out_per_group == 1 && oh * ow > 14 * 14) {
    return false;
  }
  if (batch >= threads) return true;  // cut by image
  const int64_t block = BlockWidth();
  const int64_t units = (groups * out_per_group + block - 1) / block;
  // An image with fewer channel blocks than threads stays on the loops:
  // routed to oneDNN's bands of rows instead (the rule was units * oh >=
  // threads), ResNet-50 batch 1 at 16 threads on the H200 host measured
  // 0.42x onnxruntime against 0.51x (2026-12-02 09:44; bench/RESULTS.md).
  (void)oh;
  return units >= threads;
}

int64_t OneDnnConvRuns() { return onednn_runs.load(); }
int64_t OneDnnConvRowSlicedRuns() { return row_sliced_runs.load(); }

void SetMinConvSliceMacs(int64_t macs) { min_slice_macs.store(macs); }

int64_t MinConvSliceMacs() {
  const int64_t m = min_slice_macs.load();
  return m > 0 ? m : kMinConvSliceMacs;
}

ConvSlicing PlanConvSlicing(int64_t units, int64_t rows, int64_t macs,
                            int64_t batch, int threads,
                            int64_t min_slice_macs) {
  ConvSlicing best;
  if (threads <= 1 || batch >= threads || units < 1 || rows < 1) return best;
  // More slices than a few per thread only add calls.
  const int64_t per_image = CeilDivide(threads, std::max<int64_t>(batch, 1));
  const int64_t most = std::max<int64_t>(
      1, std::min(4 * per_image, macs / std::max<int64_t>(min_slice_macs, 1)));
  const double cell = static_cast<double>(macs) /
                      static_cast<double>(units * rows);  // per unit-row
  auto cost = [&](int64_t cu, int64_t r) {
    const int64_t waves = CeilDivide(batch * cu * r, threads);
    return static_cast<double>(waves) *
           (static_cast<double>(CeilDivide(units, cu) * CeilDivide(rows, r)) *
                cell +
            static_cast<double>(kSliceOverheadMacs));
  };
  double best_cost = cost(1, 1);
  for (int64_t cu = 1; cu <= std::min(units, most); ++cu) {
    for (int64_t r = 1; r <= std::min(rows, most / cu); ++r) {
      const double c = cost(cu, r);
      const int64_t n = cu * r;
      if (c < best_cost ||
          (c == best_cost && (n < best.slices() ||
                              (n == best.slices() && r < best.row_parts)))) {
        best = ConvSlicing{cu, r};
        best_cost = c;
      }
    }
  }
  return best;
}

#if !SLUICE_HAVE_ONEDNN_CONV

namespace {
int BlockWidth() { return 16; }
}  // namespace

bool OneDnnConvolutionsBuiltIn() { return false; }
std::string OneDnnVersion() { return "not built in"; }
bool OneDnnHasAvx512() { return false; }

std::unique_ptr<OneDnnConv> OneDnnConv::Create(const Conv2DParams&,
                                               ConvActivation) {
  return nullptr;
}

#else

dnnl::engine& OneDnnEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::stream& OneDnnThreadStream() {
  thread_local dnnl::stream stream(OneDnnEngine());
  return stream;
}

// Per thread in libgomp, so set once each (see sgemm.cc).
void SerialOnThisThread() {
  thread_local const bool serial = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)serial;
}

// oneDNN's reference loops ("ref:any") and its im2col + GEMM
// ("x64:gemm:jit", what it offers for a group of channels no vector block
// fits, or a depthwise multiplier) are no faster than conv.cc's own loops.
bool OneDnnImplDeclined(const std::string& impl) {
  return absl::StartsWith(impl, "ref") || absl::StrContains(impl, "gemm:");
}

void AppendActivation(ConvActivation activation, dnnl::post_ops* ops) {
  using dnnl::algorithm;
  switch (activation) {
    case ConvActivation::kNone:
      break;
    case ConvActivation::kRelu:
      ops->append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      break;
    case ConvActivation::kRelu6:
      ops->append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 6.0f);
      break;
    case ConvActivation::kHardSwish:
      // oneDNN 2.x ignores alpha and beta (v * relu6(v + 3) / 6); 3.x
      // reads them as v * clamp(alpha * v + beta, 0, 1).
      ops->append_eltwise(1.0f, algorithm::eltwise_hardswish, 1.0f / 6.0f,
                          0.5f);
      break;
    case ConvActivation::kHardSigmoid:
      ops->append_eltwise(1.0f, algorithm::eltwise_linear, 1.0f / 6.0f, 0.5f);
      ops->append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 1.0f);
      break;
    case ConvActivation::kSigmoid:
      ops->append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
      break;
    case ConvActivation::kSilu:
      ops->append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
      break;
  }
}

bool OneDnnConvolutionsBuiltIn() { return true; }

std::string OneDnnVersion() {
  const dnnl_version_t* v = dnnl_version();
  return absl::StrCat("oneDNN ", v->major, ".", v->minor, ".", v->patch);
}

bool OneDnnHasAvx512() {
  // cpu_isa values are bit sets, each ISA's including those it extends.
  static const bool has = [] {
    const auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    return (isa & core) == core;
  }();
  return has;
}

namespace {

int BlockWidth() { return OneDnnHasAvx512() ? 16 : 8; }

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

dnnl::engine& Engine() { return OneDnnEngine(); }
dnnl::stream& ThreadStream() { return OneDnnThreadStream(); }

// A band of one image's output rows, [oh0, oh1), and the input rows its
// windows cover, [ih0, ih1), with the padding its edges need: pt rows above
// (the image's top padding, for the first band) and pb below. Its input
// starts src_offset floats into the image's part of the input scratch: a
// copy of its own in channel blocks (or plain nchw), or its rows of the
// whole image's nhwc copy. A plan not cut into bands has one, the whole
// image (read in place when oneDNN takes plain nchw).
struct Band {
  int64_t oh0 = 0, oh1 = 0, ih0 = 0, ih1 = 0, pt = 0, pb = 0;
  int64_t src_offset = 0;
};

// One output slice of one image: channels [oc0, oc1) of the output and
// [ic0, ic1) of the input (all of them unless grouped), groups [g0, g1),
// output rows [oh0, oh1) (its band's). Its output goes to its own dense
// buffer in the layout oneDNN picked for it, at dst_offset floats into the
// image's part of the output scratch, unless that is the NCHW output's.
struct Slice {
  int64_t oc0 = 0, oc1 = 0, ic0 = 0, ic1 = 0, g0 = 0, g1 = 0;
  int64_t oh0 = 0, oh1 = 0;
  int64_t src_offset = 0;  // floats into one image's input, as slices read it
  int64_t dst_offset = 0;  // floats into one image's output scratch
  int64_t weights = 0;     // which of the plan's reordered filters
  dnnl::convolution_forward conv;
  memory::desc src, dst, weights_md, user_weights, bias, user_dst, scratch_md;
  size_t scratch = 0;
  bool reorder_dst = false;
  dnnl::reorder dst_out, side_in;  // when reorder_dst
};

// A part of one image's input reordered into the layout the slices read:
// from user_offset floats into the NCHW input to blocked_offset floats
// into the reordered copy (whole channel blocks, or rows for NHWC; whole
// channel blocks of one band's rows when cut into bands).
struct SrcChunk {
  int64_t user_offset = 0, blocked_offset = 0;
  memory::desc user, blocked;
  dnnl::reorder reorder;
};

struct Plan {
  bool reorder_src = false;
  int64_t src_floats = 0, dst_floats = 0;  // one image, in oneDNN's layouts
  size_t scratch = 0;                      // the largest slice's
  std::vector<Band> bands;
  std::vector<SrcChunk> chunks;
  std::vector<Slice> slices;
  // For each distinct reordered filter (a run of output channels in one
  // layout, shared by the run's bands), a slice that reads it.
  std::vector<int64_t> weight_slices;
};

// What a plan is made for: the shapes, the post-ops, the pool's threads,
// the batch (at most the threads: any larger batch is cut by image) and
// the least work per slice.
enum KeyField { kC, kH, kW, kO, kKh, kKw, kThreads, kBatch, kBias, kSide,
                kMinMacs, kKeyFields };
using PlanKey = std::array<int64_t, kKeyFields>;

// How far a plan cuts: not at all, output channels only, or channels and
// rows (GetPlan tries the last first and falls back).
enum class Cut { kNone, kChannels, kChannelsAndRows };

// The filter reordered for each distinct filter slice of one plan.
struct Weights {
  const Plan* plan;
  std::shared_ptr<Buffer> source;  // pinned, so its address is not reused
  std::vector<memory> slices;      // by Slice::weights
};

// The input layouts a plan can cut: channel blocks of `block` (plain nchw
// is 1, nChw8c 8, nChw16c 16), kNhwc (cut by rows), or 0 (not cut).
constexpr int kNhwc = -1;
int LayoutOf(const memory::desc& md, const memory::dims& dims) {
  if (md == memory::desc(dims, kF32, Tag::nchw)) return 1;
  if (md == memory::desc(dims, kF32, Tag::nChw8c)) return 8;
  if (md == memory::desc(dims, kF32, Tag::nChw16c)) return 16;
  if (md == memory::desc(dims, kF32, Tag::nhwc)) return kNhwc;
  return 0;
}

Tag TagOf(int layout) {
  switch (layout) {
    case 16: return Tag::nChw16c;
    case 8: return Tag::nChw8c;
    case kNhwc: return Tag::nhwc;
    default: return Tag::nchw;
  }
}

dnnl::reorder MakeReorder(const memory::desc& from, const memory::desc& to) {
  return dnnl::reorder(
      dnnl::reorder::primitive_desc(Engine(), from, Engine(), to));
}

// A slice's bounds, the rest to be filled by MakeSlice.
Slice Bounds(int64_t oc0, int64_t oc1, int64_t ic0, int64_t ic1, int64_t g0,
             int64_t g1) {
  Slice s;
  s.oc0 = oc0;
  s.oc1 = oc1;
  s.ic0 = ic0;
  s.ic1 = ic1;
  s.g0 = g0;
  s.g1 = g1;
  return s;
}

// Gives each of plan's slices its place in the output scratch (where it
// writes its own buffer) and its reordered filter (shared by the slices of
// a run of channels whose filter layout is the same), and sizes the
// scratchpad.
void AssignBuffers(Plan* plan) {
  for (int64_t i = 0; i < static_cast<int64_t>(plan->slices.size()); ++i) {
    Slice& s = plan->slices[i];
    plan->scratch = std::max(plan->scratch, s.scratch);
    if (s.reorder_dst) {
      s.dst_offset = plan->dst_floats;
      plan->dst_floats += static_cast<int64_t>((s.dst.get_size() + 63) / 64 *
                                               16);
    }
    // A run of channels whose filter another band's slice already has in
    // this layout shares it.
    s.weights = static_cast<int64_t>(plan->weight_slices.size());
    for (int64_t j = 0; j < static_cast<int64_t>(plan->weight_slices.size());
         ++j) {
      const Slice& other = plan->slices[plan->weight_slices[j]];
      if (other.oc0 == s.oc0 && other.oc1 == s.oc1 &&
          other.weights_md == s.weights_md) {
        s.weights = j;
        break;
      }
    }
    if (s.weights == static_cast<int64_t>(plan->weight_slices.size())) {
      plan->weight_slices.push_back(i);
    }
  }
}

// Fills plan->chunks: the reorders of one image's NCHW input into the
// layout the plan's slices read, about `parts` of them to run in parallel.
// Channel blocks (or plain nchw) cut into bands: each band's rows, in
// chunks of whole channel blocks, into the band's own copy. Otherwise
// chunks of whole channel blocks, rows for nhwc (which bands read in
// place), or one reorder of the whole image for another layout.
void AddSrcChunks(int layout, int64_t c, int64_t h, int64_t w, int64_t parts,
                  const memory::desc& whole_src, Plan* plan) {
  auto add = [&](int64_t user_offset, const memory::desc& user,
                 int64_t blocked_offset, const memory::desc& blocked) {
    SrcChunk chunk;
    chunk.user_offset = user_offset;
    chunk.blocked_offset = blocked_offset;
    chunk.user = user;
    chunk.blocked = blocked;
    chunk.reorder = MakeReorder(chunk.user, chunk.blocked);
    plan->chunks.push_back(std::move(chunk));
  };
  const memory::dims nchw_strides = {c * h * w, h * w, w, 1};
  if (layout > 0) {
    const int64_t blocks = (c + layout - 1) / layout;
    const int64_t bands = static_cast<int64_t>(plan->bands.size());
    const int64_t per_band = std::min(blocks, CeilDivide(parts, bands));
    for (const Band& b : plan->bands) {
      const int64_t bh = b.ih1 - b.ih0;
      for (int64_t i = 0; i < per_band; ++i) {
        const int64_t c0 = std::min(c, blocks * i / per_band * layout);
        const int64_t c1 = std::min(c, blocks * (i + 1) / per_band * layout);
        const memory::dims dims = {1, c1 - c0, bh, w};
        add(c0 * h * w + b.ih0 * w, memory::desc(dims, kF32, nchw_strides),
            b.src_offset + c0 * bh * w, memory::desc(dims, kF32, TagOf(layout)));
      }
    }
  } else if (layout == kNhwc) {
    const int64_t chunks = std::min(h, parts);
    for (int64_t i = 0; i < chunks; ++i) {
      const int64_t h0 = h * i / chunks, h1 = h * (i + 1) / chunks;
      const memory::dims dims = {1, c, h1 - h0, w};
      add(h0 * w, memory::desc(dims, kF32, nchw_strides), h0 * w * c,
          memory::desc(dims, kF32, {c * h * w, 1, w * c, c}));
    }
  } else {  // another layout: one reorder of the whole image
    add(0, memory::desc({1, c, h, w}, kF32, Tag::nchw), 0, whole_src);
  }
}

class OneDnnConvImpl final : public OneDnnConv {
 public:
  OneDnnConvImpl(const Conv2DParams& p, ConvActivation act)
      : params_(p), act_(act) {}

  absl::StatusOr<bool> Compute(OpKernelContext* ctx, const Tensor& x,
                               const Tensor& f, const float* bias,
                               const Tensor* side, Tensor* y) override {
    SerialOnThisThread();
    const auto* pool = ctx->device()->eigen_cpu_device();
    const int threads = PoolThreads(pool);
    const int64_t n = x.dim(0);
    auto run = [&](int64_t count, const auto& fn) {
      RunBlocks(pool, count, fn);
    };
    PlanKey key;
    key[kC] = x.dim(1);
    key[kH] = x.dim(2);
    key[kW] = x.dim(3);
    key[kO] = f.dim(0);
    key[kKh] = f.dim(2);
    key[kKw] = f.dim(3);
    key[kThreads] = threads;
    key[kBatch] = std::min<int64_t>(n, threads);
    key[kBias] = bias != nullptr;
    key[kSide] = side != nullptr;
    key[kMinMacs] = MinConvSliceMacs();
    const Plan* plan = nullptr;
    std::shared_ptr<const Weights> weights;
    try {
      plan = GetPlan(key, y->dim(2), y->dim(3));
      if (plan == nullptr) return false;
      weights = GetWeights(*plan, f);
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution: ", e.what(),
                                              " (status ", e.status, ")"));
    }
    const int64_t slices = static_cast<int64_t>(plan->slices.size());
    const int64_t chunks = static_cast<int64_t>(plan->chunks.size());
    const int64_t x_image = x.NumElements() / n, y_image = y->NumElements() / n;
    const int64_t ow = y->dim(3), ohw = y->dim(2) * ow;
    Tensor src_tmp, dst_tmp, scratch_tmp;
    if (plan->reorder_src) {
      ASSIGN_OR_RETURN(src_tmp, ctx->allocate_temp(
                                    DT_FLOAT, Shape({n * plan->src_floats})));
    }
    if (plan->dst_floats > 0) {
      ASSIGN_OR_RETURN(dst_tmp, ctx->allocate_temp(
                                    DT_FLOAT, Shape({n * plan->dst_floats})));
    }
    // Each task's scratchpad 64-byte aligned (a float count, multiple of 16).
    const int64_t scratch_floats =
        static_cast<int64_t>((plan->scratch + 63) / 64 * 16);
    if (scratch_floats > 0) {
      ASSIGN_OR_RETURN(scratch_tmp,
                       ctx->allocate_temp(DT_FLOAT, Shape({n * slices *
                                                           scratch_floats})));
    }
    RETURN_IF_ERROR(InjectedFault(FaultKind::kLibrary, "oneDNN convolution"));
    std::atomic<bool> failed{false};
    std::string error;  // written by the one task that sets `failed`
    auto guard = [&](auto&& fn) {
      try {
        SerialOnThisThread();
        fn();
      } catch (const dnnl::error& e) {
        if (!failed.exchange(true)) {
          error = absl::StrCat(e.what(), " (status ", e.status, ")");
        }
      }
    };
    float* xd = x.data<float>();
    if (plan->reorder_src) {
      run(n * chunks, [&](int64_t t) {
        guard([&] {
          const SrcChunk& c = plan->chunks[t % chunks];
          const int64_t img = t / chunks;
          memory from(c.user, Engine(), xd + img * x_image + c.user_offset);
          memory to(c.blocked, Engine(),
                    src_tmp.data<float>() + img * plan->src_floats +
                        c.blocked_offset);
          c.reorder.execute(ThreadStream(), from, to);
        });
      });
    }
    run(n * slices, [&](int64_t t) {
      guard([&] {
        const int64_t img = t / slices, si = t % slices;
        const Slice& s = plan->slices[si];
        float* src = plan->reorder_src
                         ? src_tmp.data<float>() + img * plan->src_floats
                         : xd + img * x_image;
        const int64_t y_offset = img * y_image + s.oc0 * ohw + s.oh0 * ow;
        float* yd = y->data<float>() + y_offset;
        float* dst = s.reorder_dst ? dst_tmp.data<float>() +
                                         img * plan->dst_floats + s.dst_offset
                                   : yd;
        memory dst_mem(s.dst, Engine(), dst);
        if (side != nullptr) {
          float* sd = side->data<float>() + y_offset;
          if (s.reorder_dst) {
            memory from(s.user_dst, Engine(), sd);
            s.side_in.execute(ThreadStream(), from, dst_mem);
          } else {  // all rows of its channels: one run of memory
            std::memcpy(dst, sd, (s.oc1 - s.oc0) * ohw * sizeof(float));
          }
        }
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_SRC, memory(s.src, Engine(), src + s.src_offset)},
            {DNNL_ARG_WEIGHTS, weights->slices[s.weights]},
            {DNNL_ARG_DST, dst_mem}};
        if (bias != nullptr) {
          args.emplace(DNNL_ARG_BIAS,
                       memory(s.bias, Engine(),
                              const_cast<float*>(bias) + s.oc0));
        }
        if (s.scratch > 0) {
          args.emplace(DNNL_ARG_SCRATCHPAD,
                       memory(s.scratch_md, Engine(),
                              scratch_tmp.data<float>() + t * scratch_floats));
        }
        s.conv.execute(ThreadStream(), args);
        if (s.reorder_dst) {
          memory to(s.user_dst, Engine(), yd);
          s.dst_out.execute(ThreadStream(), dst_mem, to);
        }
      });
    });
    if (failed.load()) {
      return absl::InternalError(absl::StrCat("oneDNN convolution: ", error));
    }
    onednn_runs.fetch_add(1);
    if (plan->bands.size() > 1) row_sliced_runs.fetch_add(1);
    return true;
  }

 private:
  // The cached plan for `key`, made on first use: cut into channels and
  // rows where oneDNN takes every slice, else into channels only, else
  // not cut; nullptr when oneDNN declines the problem. Throws dnnl::error.
  const Plan* GetPlan(const PlanKey& key, int64_t oh, int64_t ow) {
    absl::MutexLock lock(&mu_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second.get();
    std::unique_ptr<Plan>& plan = plans_[key];
    try {
      for (Cut cut : {Cut::kChannelsAndRows, Cut::kChannels, Cut::kNone}) {
        if (plan == nullptr) plan = MakePlan(key, oh, ow, cut);
      }
    } catch (const dnnl::error&) {
      plans_.erase(key);  // an error, not a decline: try again next time
      throw;
    }
    return plan.get();
  }

  dnnl::primitive_attr Attr(bool side) const {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (side) ops.append_sum(1.0f);
    AppendActivation(act_, &ops);
    attr.set_post_ops(ops);
    return attr;
  }

  // Fills the primitive of slice `s`, whose band is `band` of an output
  // oh x ow, reading its input in `src_md` (`any` to let oneDNN choose),
  // writing its output in the layout oneDNN chooses. Returns false if
  // oneDNN has no primitive for it, or only one OneDnnImplDeclined names.
  bool MakeSlice(const PlanKey& key, int64_t oh, int64_t ow, const Band& band,
                 const memory::desc& src_md, Slice* s) const {
    const Conv2DParams& p = params_;
    const int64_t groups = p.group, cg = key[kC] / groups;
    const int64_t og = key[kO] / groups;
    const int64_t kh = key[kKh], kw = key[kKw];
    const bool bias = key[kBias] != 0, side = key[kSide] != 0;
    const int64_t ng = s->g1 - s->g0;
    const int64_t oc = s->oc1 - s->oc0;
    s->oh0 = band.oh0;
    s->oh1 = band.oh1;
    const int64_t rows = band.oh1 - band.oh0;
    const memory::dims dst_dims = {1, oc, rows, ow};
    const memory::dims w_dims = groups == 1
                                    ? memory::dims{oc, key[kC], kh, kw}
                                    : memory::dims{ng, og, cg, kh, kw};
    s->user_weights =
        memory::desc(w_dims, kF32, groups == 1 ? Tag::oihw : Tag::goihw);
    // The slice's rows of its channels of the NCHW output.
    s->user_dst = rows == oh ? memory::desc(dst_dims, kF32, Tag::nchw)
                             : memory::desc(dst_dims, kF32,
                                            {oc * oh * ow, oh * ow, ow, 1});
    s->bias = memory::desc({oc}, kF32, Tag::x);
    dnnl::convolution_forward::primitive_desc pd;
    try {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference,
          dnnl::algorithm::convolution_direct, src_md,
          memory::desc(w_dims, kF32, Tag::any),
          bias ? s->bias : memory::desc(),
          memory::desc(dst_dims, kF32, Tag::any),
          {p.strides[0], p.strides[1]},
          {p.dilations[0] - 1, p.dilations[1] - 1}, {band.pt, p.pads[1]},
          {band.pb, p.pads[3]});
      pd = dnnl::convolution_forward::primitive_desc(desc, Attr(side),
                                                     Engine());
    } catch (const dnnl::error&) {
      return false;
    }
    if (OneDnnImplDeclined(pd.impl_info_str())) return false;
    s->src = pd.src_desc();
    s->dst = pd.dst_desc();
    s->weights_md = pd.weights_desc();
    s->scratch_md = pd.scratchpad_desc();
    s->scratch = s->scratch_md.get_size();
    s->conv = dnnl::convolution_forward(pd);
    s->reorder_dst = rows != oh || !(s->dst == s->user_dst);
    if (s->reorder_dst) {
      s->dst_out = MakeReorder(s->dst, s->user_dst);
      if (side) s->side_in = MakeReorder(s->user_dst, s->dst);
    }
    return true;
  }

  // `parts` bands of an output of `oh` rows from an input of `h`, for a
  // window `kh` rows high; empty when a band's windows would lie wholly in
  // the padding.
  std::vector<Band> MakeBands(int64_t h, int64_t oh, int64_t kh,
                              int64_t parts) const {
    const Conv2DParams& p = params_;
    const int64_t sh = p.strides[0], top = p.pads[0];
    const int64_t extent = (kh - 1) * p.dilations[0] + 1;
    std::vector<Band> bands;
    for (int64_t i = 0; i < parts; ++i) {
      Band b;
      b.oh0 = oh * i / parts;
      b.oh1 = oh * (i + 1) / parts;
      if (b.oh1 <= b.oh0) return {};
      // The input rows the band's windows span, padding included.
      const int64_t first = b.oh0 * sh - top;
      const int64_t end = (b.oh1 - 1) * sh - top + extent;
      b.ih0 = std::max<int64_t>(first, 0);
      b.ih1 = std::min(end, h);
      if (b.ih1 <= b.ih0) return {};
      b.pt = b.ih0 - first;
      b.pb = end - b.ih1;
      bands.push_back(b);
    }
    return bands;
  }

  // The plan cut as `cut` allows; nullptr when oneDNN declines it.
  std::unique_ptr<Plan> MakePlan(const PlanKey& key, int64_t oh, int64_t ow,
                                 Cut cut) const {
    const int64_t groups = params_.group, c = key[kC], o = key[kO];
    const int64_t h = key[kH], w = key[kW];
    const int64_t cg = c / groups, og = o / groups;
    const memory::dims src_dims = {1, c, h, w};
    Band all;
    all.oh1 = oh;
    all.ih1 = h;
    all.pt = params_.pads[0];
    all.pb = params_.pads[2];
    // 1. The input layout for the whole image: plain nchw where oneDNN
    // asks for it (a stem of 3 channels), else channel blocks of the
    // vector width. (oneDNN 2.6 asks for nhwc on AVX-512 and runs its
    // brgemm convolutions there, which were slower on ResNet-50 here than
    // its direct ones on nChw16c, and whose input a thread's slice of
    // channels cannot be cut from: bench/RESULTS.md, the 2026-12-02 05:14 entry.)
    Slice whole = Bounds(0, o, 0, c, 0, groups);
    if (!MakeSlice(key, oh, ow, all, memory::desc(src_dims, kF32, Tag::any),
                   &whole)) {
      return nullptr;
    }
    int layout = LayoutOf(whole.src, src_dims);
    if (layout != 1) {
      Slice blocked = Bounds(0, o, 0, c, 0, groups);
      const int block = BlockWidth();
      if (MakeSlice(key, oh, ow, all,
                    memory::desc(src_dims, kF32, TagOf(block)), &blocked)) {
        whole = std::move(blocked);
        layout = block;
      }
    }
    // 2. The cut: ungrouped, runs of output channels (a vector block at a
    // time, all reading the whole input); grouped, runs of `step` groups,
    // each reading its own channels, which needs a channel-blocked (or
    // plain) input layout whose blocks the runs start on; and bands of
    // rows, which need such a layout or nhwc. An input layout of another
    // kind is not cut. (The last slice takes whatever channels are left.)
    int64_t units = 0, step = 1;
    const int64_t unit_channels = BlockWidth();
    if (layout == 0) {
      units = 1;
    } else if (groups == 1) {
      units = (o + unit_channels - 1) / unit_channels;
    } else if (layout > 0) {
      while (step < groups && (step * cg) % layout != 0) ++step;
      units = (step * cg) % layout == 0 ? (groups + step - 1) / step : 1;
    } else {
      units = 1;
    }
    const int64_t macs = o * oh * ow * cg * key[kKh] * key[kKw];
    ConvSlicing cuts;
    if (cut != Cut::kNone) {
      const int64_t rows =
          cut == Cut::kChannelsAndRows && layout != 0 ? oh : 1;
      cuts = PlanConvSlicing(units, rows, macs, key[kBatch],
                             static_cast<int>(key[kThreads]), key[kMinMacs]);
    }
    if (cut == Cut::kChannelsAndRows && cuts.row_parts == 1) {
      return nullptr;  // the same as kChannels, which GetPlan tries next
    }
    auto plan = std::make_unique<Plan>();
    std::vector<Band> bands = {all};
    if (cuts.row_parts > 1) {
      bands = MakeBands(h, oh, key[kKh], cuts.row_parts);
      if (bands.empty()) return nullptr;
      if (layout == kNhwc) {
        // A band's rows are one run of the whole image's NHWC copy.
        plan->src_floats = static_cast<int64_t>(whole.src.get_size() / 4);
        for (Band& b : bands) b.src_offset = b.ih0 * w * c;
      } else {
        // Each band's input is its own copy in the plan's channel blocks.
        for (Band& b : bands) {
          b.src_offset = plan->src_floats;
          const memory::desc md({1, c, b.ih1 - b.ih0, w}, kF32,
                                TagOf(layout));
          plan->src_floats += static_cast<int64_t>(
              (md.get_size() + 63) / 64 * 16);
        }
      }
    } else {
      plan->src_floats = static_cast<int64_t>(whole.src.get_size() / 4);
    }
    const int64_t count = std::min(cuts.channel_parts, units);
    if (count == 1 && bands.size() == 1) {
      plan->slices.push_back(std::move(whole));
    } else {
      for (const Band& b : bands) {
        const int64_t bh = b.ih1 - b.ih0;
        for (int64_t i = 0; i < count; ++i) {
          const int64_t u0 = units * i / count, u1 = units * (i + 1) / count;
          Slice s;
          memory::desc slice_src = whole.src;
          const bool last = i == count - 1;
          if (groups == 1) {
            s = Bounds(u0 * unit_channels,
                       last ? o : std::min(o, u1 * unit_channels), 0, c, 0, 1);
            s.src_offset = b.src_offset;
            if (bands.size() > 1) {
              slice_src = memory::desc({1, c, bh, w}, kF32, TagOf(layout));
            }
          } else {
            // (In NHWC, not cut by groups: g0 is 0.)
            const int64_t g0 = u0 * step;
            const int64_t g1 = last ? groups : std::min(groups, u1 * step);
            s = Bounds(g0 * og, g1 * og, g0 * cg, g1 * cg, g0, g1);
            s.src_offset = b.src_offset + g0 * cg * bh * w;
            slice_src =
                memory::desc({1, (g1 - g0) * cg, bh, w}, kF32, TagOf(layout));
          }
          if (!MakeSlice(key, oh, ow, b, slice_src, &s)) return nullptr;
          plan->slices.push_back(std::move(s));
        }
      }
    }
    plan->bands = bands;
    AssignBuffers(plan.get());
    // 3. The input's reorder, where the slices do not read it in place.
    plan->reorder_src = layout != 1 || bands.size() > 1;
    if (plan->reorder_src) {
      AddSrcChunks(layout, c, h, w,
                   CeilDivide(key[kThreads], std::max<int64_t>(key[kBatch], 1)),
                   whole.src, plan.get());
    }
    return plan;
  }

  // The filter reordered for `plan`'s slices, cached per filter buffer.
  // Throws dnnl::error.
  std::shared_ptr<const Weights> GetWeights(const Plan& plan,
                                            const Tensor& f) {
    absl::MutexLock lock(&mu_);
    if (auto found = weights_.Find(&plan, f.buffer().get())) return found;
    auto w = std::make_shared<Weights>();
    w->plan = &plan;
    w->source = f.buffer();
    const int64_t per_out = f.NumElements() / f.dim(0);  // C/g * KH * KW
    for (int64_t index : plan.weight_slices) {
      const Slice& s = plan.slices[index];
      memory user(s.user_weights, Engine(), f.data<float>() + s.oc0 * per_out);
      memory value(s.weights_md, Engine());
      MakeReorder(s.user_weights, s.weights_md)
          .execute(ThreadStream(), user, value);
      w->slices.push_back(std::move(value));
    }
    weights_.Add(w);
    return w;
  }

  // Never change after construction.
  const Conv2DParams params_;
  const ConvActivation act_;

  absl::Mutex mu_;
  // A plan is never removed, so pointers into the map's values stay valid.
  absl::flat_hash_map<PlanKey, std::unique_ptr<Plan>> plans_
      ABSL_GUARDED_BY(mu_);
  ReorderedFilters<Weights> weights_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<OneDnnConv> OneDnnConv::Create(const Conv2DParams& params,
                                               ConvActivation activation) {
  return std::make_unique<OneDnnConvImpl>(params, activation);
}

#endif  // SLUICE_HAVE_ONEDNN_CONV

}  // namespace sluice::cpu
