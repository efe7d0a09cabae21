#include "executor/cross_process.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/copy_kernel.h"

namespace sluice {
namespace {

class CrossProcessSendKernel final : public OpKernel {
 public:
  CrossProcessSendKernel(const Node& producer, CrossProcessTransfers* owner,
                         int t, int dst_rank, bool gpu_route, Device* src)
      : OpKernel(producer), owner_(owner), t_(t), dst_rank_(dst_rank),
        gpu_route_(gpu_route), src_(src) {}
  absl::Status Compute(OpKernelContext* ctx) override {
    return owner_->Send(t_, dst_rank_, gpu_route_, ctx->input(0), src_);
  }

 private:
  CrossProcessTransfers* const owner_;
  const int t_, dst_rank_;
  const bool gpu_route_;
  Device* const src_;
};

class CrossProcessRecvKernel final : public OpKernel {
 public:
  CrossProcessRecvKernel(const Node& producer, CrossProcessTransfers* owner,
                         int t, int src_rank, bool gpu_route, Device* dst)
      : OpKernel(producer), owner_(owner), t_(t), src_rank_(src_rank),
        gpu_route_(gpu_route), dst_(dst) {}
  absl::Status Compute(OpKernelContext* ctx) override {
    ASSIGN_OR_RETURN(Tensor value,
                     owner_->Receive(t_, src_rank_, gpu_route_, dst_));
    ctx->set_output(0, std::move(value));
    return absl::OkStatus();
  }

 private:
  CrossProcessTransfers* const owner_;
  const int t_, src_rank_;
  const bool gpu_route_;
  Device* const dst_;
};

// The step of the thread running a plan (ScopedCrossProcessStep).
thread_local CrossProcessStep* current_step = nullptr;

absl::StatusOr<CrossProcessStep*> CurrentStep() {
  if (current_step == nullptr) {
    return absl::InternalError(
        "a cross-process transfer ran outside a step (no "
        "ScopedCrossProcessStep on this thread)");
  }
  return current_step;
}

absl::StatusOr<TensorHeader> MakeHeader(const Tensor& value) {
  TensorHeader h;
  h.dtype = value.dtype();
  h.rank = value.shape().rank();
  if (h.rank > kMaxHeaderDims) {
    return absl::UnimplementedError(absl::StrCat(
        "a tensor of rank ", h.rank, " cannot cross processes (at most ",
        kMaxHeaderDims, " dimensions)"));
  }
  for (int i = 0; i < h.rank; ++i) h.dims[i] = value.shape().dim(i);
  return h;
}

}  // namespace

ScopedCrossProcessStep::ScopedCrossProcessStep(CrossProcessStep* step)
    : previous_(current_step) {
  current_step = step;
}

ScopedCrossProcessStep::~ScopedCrossProcessStep() {
  current_step = previous_;
}

absl::StatusOr<Shape> ShapeFromHeader(const TensorHeader& h, int src_rank) {
  if (h.rank < 0 || h.rank > kMaxHeaderDims ||
      DataTypeSize(static_cast<DataType>(h.dtype)) == 0) {
    return absl::DataLossError(absl::StrCat(
        "a malformed tensor header from rank ", src_rank, " (dtype ", h.dtype,
        ", rank ", h.rank, ")"));
  }
  std::vector<int64_t> dims(h.dims, h.dims + h.rank);
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::DataLossError(absl::StrCat(
          "a tensor header from rank ", src_rank, " with dimension ", d));
    }
  }
  return Shape(absl::MakeConstSpan(dims));
}

bool CrossProcessTransfers::GpuRoute(const Transfer& x) const {
  // A GPU at either end: NCCL (one copy on the host end, where there is
  // one); host memory at both: MPI, unless the job has no MPI messages.
  return gpu_ != nullptr &&
         (topology_->devices[x.src_device].type == DeviceType::kGpu ||
          topology_->devices[x.dst_device].type == DeviceType::kGpu ||
          !group_->HasMessages());
}

absl::StatusOr<std::unique_ptr<OpKernel>> CrossProcessTransfers::MakeKernel(
    int t, const Transfer& x, const Node& producer, Device* local,
    bool send) {
  // `producer` names the kernel in errors and traces (the graph owns it).
  const int src_rank = (*rank_of_device_)[x.src_device];
  const int dst_rank = (*rank_of_device_)[x.dst_device];
  const bool gpu_route = GpuRoute(x);
  if (t >= kTagsPerStep) {
    return absl::UnimplementedError(absl::StrCat(
        "a step with more than ", kTagsPerStep, " transfers"));
  }
  if (!gpu_route && !group_->HasMessages()) {
    return absl::UnimplementedError(absl::StrCat(
        "a value crosses from ", topology_->devices[x.src_device].name,
        " to ", topology_->devices[x.dst_device].name,
        " through host memory, which ", group_->Describe(),
        " cannot carry: start the job with mpirun (sluice built with MPI), "
        "or give every rank a GPU so that tensors go by NCCL"));
  }
  if (send) {
    return std::unique_ptr<OpKernel>(new CrossProcessSendKernel(
        producer, this, t, dst_rank, gpu_route, local));
  }
  return std::unique_ptr<OpKernel>(new CrossProcessRecvKernel(
      producer, this, t, src_rank, gpu_route, local));
}

absl::Status CrossProcessTransfers::Send(int t, int dst_rank, bool gpu_route,
                                         const Tensor& value, Device* src) {
  ASSIGN_OR_RETURN(CrossProcessStep * step, CurrentStep());
  ASSIGN_OR_RETURN(TensorHeader header, MakeHeader(value));
  if (gpu_route) {
    if (gpu_aborted_) {
      return absl::FailedPreconditionError(
          "the GPU transport was aborted after an earlier step failed; "
          "create the session again");
    }
    Tensor on_gpu = value;
    if (src != gpu_->device()) {
      ASSIGN_OR_RETURN(on_gpu, CopyTensor(value, src, gpu_->device()));
    }
    step->keep_alive_.push_back(on_gpu);
    RETURN_IF_ERROR(gpu_->Send(header, on_gpu, gpu_->device(), dst_rank));
    step->sent_.push_back(t);
    step->sent_to_.push_back(dst_rank);
    return absl::OkStatus();
  }
  Tensor on_host = value;
  if (src->type() != DeviceType::kCpu) {
    ASSIGN_OR_RETURN(on_host, CopyTensor(value, src, host_));
  }
  step->headers_.push_back(header);
  step->keep_alive_.push_back(on_host);
  const int tag = StepTag(step->step(), t);
  RETURN_IF_ERROR(group_->Send(dst_rank, tag, &step->headers_.back(),
                               sizeof(TensorHeader)));
  if (on_host.bytes() > 0) {
    RETURN_IF_ERROR(group_->Send(dst_rank, tag, on_host.raw_data(),
                                 static_cast<size_t>(on_host.bytes())));
  }
  step->sent_.push_back(t);
  step->sent_to_.push_back(dst_rank);
  return absl::OkStatus();
}

absl::StatusOr<Tensor> CrossProcessTransfers::Receive(int t, int src_rank,
                                                      bool gpu_route,
                                                      Device* dst) {
  ASSIGN_OR_RETURN(CrossProcessStep * step, CurrentStep());
  if (gpu_route) {
    if (gpu_aborted_) {
      return absl::FailedPreconditionError(
          "the GPU transport was aborted after an earlier step failed; "
          "create the session again");
    }
    ASSIGN_OR_RETURN(Tensor value, gpu_->Receive(gpu_->device(), src_rank));
    step->received_.push_back(t);
    if (dst == gpu_->device()) return value;
    return CopyTensor(value, gpu_->device(), dst);
  }
  TensorHeader header;
  const int tag = StepTag(step->step(), t);
  ASSIGN_OR_RETURN(size_t got,
                   group_->Recv(src_rank, tag, &header, sizeof(header),
                                absl::Now() + timeout_));
  if (got != sizeof(header)) {
    return absl::DataLossError(absl::StrCat(
        "a tensor header of ", got, " bytes from rank ", src_rank));
  }
  ASSIGN_OR_RETURN(Shape shape, ShapeFromHeader(header, src_rank));
  const DataType dtype = static_cast<DataType>(header.dtype);
  Device* landing = dst->type() == DeviceType::kCpu ? dst : host_;
  absl::StatusOr<Tensor> value =
      Tensor::Create(dtype, shape, landing->allocator());
  if (!value.ok()) {
    step->header_only_[t] = header;
    return value.status();
  }
  if (value->bytes() > 0) {
    absl::StatusOr<size_t> bytes =
        group_->Recv(src_rank, tag, value->raw_data(),
                     static_cast<size_t>(value->bytes()),
                     absl::Now() + timeout_);
    if (!bytes.ok()) {
      step->header_only_[t] = header;
      return bytes.status();
    }
    if (*bytes != static_cast<size_t>(value->bytes())) {
      return absl::DataLossError(absl::StrCat(
          "rank ", src_rank, " sent ", *bytes, " bytes for a tensor of ",
          value->bytes()));
    }
  }
  step->received_.push_back(t);
  if (landing == dst) return *std::move(value);
  return CopyTensor(*value, host_, dst);
}

absl::Status CrossProcessTransfers::EndStep(
    CrossProcessStep* step, const Partitioning* parts,
    const std::vector<std::pair<int, int>>& sent_by_peers) {
  const absl::flat_hash_set<int> got(step->received_.begin(),
                                     step->received_.end());
  const absl::Time deadline = absl::Now() + timeout_;
  absl::Status status;
  for (const auto& [src, t] : sent_by_peers) {
    if (got.contains(t) || t < 0) continue;
    const bool known =
        parts != nullptr && t < static_cast<int>(parts->transfers.size());
    // Without the partitioning the route is unknown: a GPU transport is
    // ended as below, host messages are read as usual.
    if (gpu_ != nullptr && (!known || GpuRoute(parts->transfers[t]))) {
      // NCCL has no way to drop a message: end the communicator instead.
      if (!gpu_aborted_) gpu_->Abort();
      gpu_aborted_ = true;
      continue;
    }
    TensorHeader header;
    const int tag = StepTag(step->step(), t);
    auto partial = step->header_only_.find(t);
    if (partial != step->header_only_.end()) {
      header = partial->second;
    } else {
      absl::StatusOr<size_t> h =
          group_->Recv(src, tag, &header, sizeof(header), deadline);
      if (!h.ok()) {
        status.Update(h.status());
        continue;
      }
    }
    absl::StatusOr<Shape> shape = ShapeFromHeader(header, src);
    if (!shape.ok()) {
      status.Update(shape.status());
      continue;
    }
    const int64_t bytes =
        shape->num_elements() * DataTypeSize(static_cast<DataType>(header.dtype));
    if (bytes > 0) {
      std::vector<char> scratch(bytes);
      status.Update(
          group_->Recv(src, tag, scratch.data(), scratch.size(), deadline)
              .status());
    }
  }
  status.Update(group_->WaitSends(step->step(), deadline));
  step->keep_alive_.clear();
  step->headers_.clear();
  step->header_only_.clear();
  return status;
}

}  // namespace sluice
