// Test helpers for the kernels: build a one-node graph whose inputs are
// Input nodes (so the kernel, not shape inference, sees the real shapes),
// create the node's kernel from the global registry and run it on a
// CpuDevice (RunOp) or a GPU (RunOpOnGpu).
//
//   ASSIGN_OR_RETURN(std::vector<Tensor> out,
//                    RunOp("Add", {F32({1, 2}, {2}), F32({3}, {})}));
//   ExpectValues(out[0], {4, 5});
//
// Not thread-safe; each call builds its own graph and device.
#ifndef SLUICE_TESTS_KERNELS_KERNEL_TEST_UTIL_H_
#define SLUICE_TESTS_KERNELS_KERNEL_TEST_UTIL_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_provider.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "device/gpu_device.h"
#include "graph/graph.h"
#include "gtest/gtest.h"
#include "proto/graph.pb.h"
#include "testing/compare.h"

namespace sluice::testing {

using Attrs = std::map<std::string, AttrValue>;

AttrValue IntAttr(int64_t v);
AttrValue FloatAttr(float v);
AttrValue BoolAttr(bool v);
AttrValue StringAttr(const std::string& v);
AttrValue TypeAttr(DataType v);
AttrValue IntListAttr(const std::vector<int64_t>& v);

struct RunOptions {
  int num_outputs = 1;       // Split: how many outputs to collect
  int intra_op_threads = 1;  // > 1: the device gets an Eigen pool
  int64_t memory_limit = 0;  // bytes; 0 = unlimited
  // Give the Input nodes the tensors' shapes (otherwise unknown rank, so
  // only the kernel checks shapes).
  bool known_shapes = false;
};

// The CPU provider RunOp's devices point to (kernels/cpu/cpu_provider.h),
// and a way to pick the path CPU convolutions take from now on in this
// test process (kAuto, the provider's default, until set). Test-only; set
// it on the test's thread before running ops.
const CpuProvider& TestCpuProvider();
void SetTestCpuConvolutions(CpuConvPath path);

// Builds the graph (errors from BuildGraph pass through), creates the
// kernel (NOT_FOUND when none is registered) and runs it.
absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op,
                                          const std::vector<Tensor>& inputs,
                                          const Attrs& attrs = {},
                                          const RunOptions& options = {});

// The graph RunOp and RunOpOnGpu run: Input nodes in0, in1, ... of the
// inputs' dtypes (and shapes with `known_shapes`, else of unknown rank) read
// by one node "op" of `op` with `attrs`.
absl::StatusOr<std::unique_ptr<const Graph>> OneNodeGraph(
    const std::string& op, const std::vector<Tensor>& inputs,
    const Attrs& attrs = {}, bool known_shapes = false);

// Runs `op`'s GPU kernel on `gpu`: copies the inputs in (except those the
// kernel reads in host memory), runs it, copies every output back and
// synchronises.
absl::StatusOr<std::vector<Tensor>> RunOpOnGpu(GpuDevice* gpu,
                                               const std::string& op,
                                               const std::vector<Tensor>& inputs,
                                               const Attrs& attrs = {});

// Every dtype that holds the integers 0..7 exactly (all but int2, uint2,
// float4 E2M1 and float8 E8M0), for the every-dtype data-movement tests.
std::vector<DataType> SmallIntExactTypes();

// Tensors from doubles, for any dtype (bool: v != 0).
Tensor MakeTensor(DataType dtype, const Shape& shape,
                  const std::vector<double>& values);
inline Tensor F32(const std::vector<float>& v, const Shape& s) {
  return Tensor::FromVector<float>(v, s);
}
inline Tensor I32(const std::vector<int32_t>& v, const Shape& s) {
  return Tensor::FromVector<int32_t>(v, s);
}
inline Tensor I64(const std::vector<int64_t>& v, const Shape& s) {
  return Tensor::FromVector<int64_t>(v, s);
}
Tensor Bool(const std::vector<bool>& v, const Shape& s);

// A tensor's values as doubles (any host dtype).
std::vector<double> ToDoubles(const Tensor& t);

// Checks shape and values through the tests' one comparator
// (testing/compare.h): integer and bool dtypes exactly, NaN only against
// NaN, infinities by sign, finite values within `tol` (absolute in the
// second form).
void ExpectTensor(const Tensor& t, const Shape& shape,
                  const std::vector<double>& values, Tolerance tol);
void ExpectTensor(const Tensor& t, const Shape& shape,
                  const std::vector<double>& values, double tol = 0);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_KERNELS_KERNEL_TEST_UTIL_H_
