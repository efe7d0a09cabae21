// Test helpers for the CPU kernels.
#include "kernel_test_util.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/cpu_device.h"
#include "graph/loader.h"
#include "kernels/kernel.h"
#include "testing/element_values.h"
#include "kernels/kernel_registry.h"

namespace sluice::testing {

AttrValue IntAttr(int64_t v) {
  AttrValue a;
  a.set_i(v);
  return a;
}
AttrValue FloatAttr(float v) {
  AttrValue a;
  a.set_f(v);
  return a;
}
AttrValue BoolAttr(bool v) {
  AttrValue a;
  a.set_b(v);
  return a;
}
AttrValue StringAttr(const std::string& v) {
  AttrValue a;
  a.set_s(v);
  return a;
}
AttrValue TypeAttr(DataType v) {
  AttrValue a;
  a.set_type(v);
  return a;
}
AttrValue IntListAttr(const std::vector<int64_t>& v) {
  AttrValue a;
  auto* list = a.mutable_list();
  for (int64_t x : v) list->add_i(x);
  return a;
}

absl::StatusOr<std::unique_ptr<const Graph>> OneNodeGraph(
    const std::string& op, const std::vector<Tensor>& inputs,
    const Attrs& attrs, bool known_shapes) {
  GraphDef def;
  NodeDef node;
  node.set_name("op");
  node.set_op(op);
  for (size_t i = 0; i < inputs.size(); ++i) {
    NodeDef* in = def.add_node();
    in->set_name(absl::StrCat("in", i));
    in->set_op("Input");
    (*in->mutable_attr())["dtype"] = TypeAttr(inputs[i].dtype());
    AttrValue shape;
    *shape.mutable_shape() = known_shapes
                                 ? ShapeToProto(inputs[i].shape())
                                 : ShapeToProto(Shape::UnknownRank());
    (*in->mutable_attr())["shape"] = shape;
    node.add_input(in->name());
  }
  for (const auto& [name, value] : attrs) (*node.mutable_attr())[name] = value;
  *def.add_node() = node;
  return BuildGraph(def);
}

namespace {
std::unique_ptr<CpuProvider>& TestProvider() {
  static auto* provider = new std::unique_ptr<CpuProvider>(
      std::make_unique<CpuProvider>());
  return *provider;
}
}  // namespace

const CpuProvider& TestCpuProvider() { return *TestProvider(); }

void SetTestCpuConvolutions(CpuConvPath path) {
  TestProvider() = std::make_unique<CpuProvider>(
      CpuProviderOptions{.convolutions = path});
}

absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op,
                                          const std::vector<Tensor>& inputs,
                                          const Attrs& attrs,
                                          const RunOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph,
                   OneNodeGraph(op, inputs, attrs, options.known_shapes));
  const Node* n = graph->FindNode("op");
  if (n == nullptr) return absl::InternalError("node 'op' missing");
  ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                   KernelRegistry::Global()->Create(*n, DeviceType::kCpu));
  CpuDevice device(0, options.memory_limit, options.intra_op_threads);
  device.set_provider(&TestCpuProvider());
  std::vector<Tensor> outputs(n->num_outputs());
  OpKernelContext ctx(n, &device, inputs, absl::MakeSpan(outputs));
  RETURN_IF_ERROR(kernel->Compute(&ctx));
  // The device (and its allocator) dies with this call: hand back copies in
  // the process-wide host allocator.
  std::vector<Tensor> result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].valid()) {
      return absl::InternalError(absl::StrCat("output ", i, " was not set"));
    }
    if (outputs[i].allocator() == CpuAllocator()) {
      result.push_back(outputs[i]);
      continue;
    }
    ASSIGN_OR_RETURN(Tensor copy,
                     Tensor::Create(outputs[i].dtype(), outputs[i].shape()));
    if (copy.bytes() > 0) {
      std::memcpy(copy.raw_data(), outputs[i].raw_data(), copy.bytes());
    }
    result.push_back(std::move(copy));
  }
  return result;
}

absl::StatusOr<std::vector<Tensor>> RunOpOnGpu(GpuDevice* gpu,
                                               const std::string& op,
                                               const std::vector<Tensor>& inputs,
                                               const Attrs& attrs) {
  ASSIGN_OR_RETURN(std::unique_ptr<const Graph> graph,
                   OneNodeGraph(op, inputs, attrs));
  const Node* n = graph->FindNode("op");
  ASSIGN_OR_RETURN(const KernelDef* def,
                   KernelRegistry::Global()->Find(*n, DeviceType::kGpu));
  ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel, def->factory(*n));
  std::vector<Tensor> dev_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool host = false;
    for (int h : def->host_memory_inputs) host = host || h == static_cast<int>(i);
    if (host) {
      dev_inputs.push_back(inputs[i]);
    } else {
      ASSIGN_OR_RETURN(Tensor t, gpu->CopyToDevice(inputs[i]));
      dev_inputs.push_back(std::move(t));
    }
  }
  std::vector<Tensor> outputs(n->num_outputs());
  OpKernelContext ctx(n, gpu, dev_inputs, absl::MakeSpan(outputs));
  RETURN_IF_ERROR(kernel->Compute(&ctx));
  std::vector<Tensor> result;
  for (const Tensor& t : outputs) {
    if (!t.valid()) return absl::InternalError("an output was not set");
    ASSIGN_OR_RETURN(Tensor h, gpu->CopyToHost(t));
    result.push_back(std::move(h));
  }
  RETURN_IF_ERROR(gpu->Synchronize());
  return result;
}

namespace {

using testing::FromDouble;
using testing::ToDouble;

}  // namespace

Tensor MakeTensor(DataType dtype, const Shape& shape,
                  const std::vector<double>& values) {
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, shape);
  EXPECT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumElements(), static_cast<int64_t>(values.size()));
  SLUICE_SWITCH_DTYPE(dtype, {
    T* p = t->data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = FromDouble<T>(values[i]);
  }, {});
  return *t;
}

std::vector<DataType> SmallIntExactTypes() {
  std::vector<DataType> out;
  for (DataType t : AllDataTypes()) {
    if (t == DT_INT2 || t == DT_UINT2 || t == DT_FLOAT4_E2M1 ||
        t == DT_FLOAT8_E8M0) {
      continue;
    }
    out.push_back(t);
  }
  return out;
}

Tensor Bool(const std::vector<bool>& v, const Shape& s) {
  std::vector<double> d(v.begin(), v.end());
  return MakeTensor(DT_BOOL, s, d);
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> out;
  SLUICE_SWITCH_DTYPE(t.dtype(), {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.NumElements(); ++i) out.push_back(ToDouble(p[i]));
  }, {});
  return out;
}

void ExpectTensor(const Tensor& t, const Shape& shape,
                  const std::vector<double>& values, Tolerance tol) {
  ASSERT_TRUE(t.valid());
  ASSERT_EQ(t.shape(), shape) << "got " << t.shape().DebugString();
  EXPECT_EQ(CompareValues(ToDoubles(t), values, t.dtype(), tol), "")
      << DataTypeName(t.dtype()) << " " << shape.DebugString();
}

void ExpectTensor(const Tensor& t, const Shape& shape,
                  const std::vector<double>& values, double tol) {
  ExpectTensor(t, shape, values, Tolerance{tol, 0});
}

}  // namespace sluice::testing
