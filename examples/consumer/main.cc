// Runs the example MLP through sluice's public API only (include/sluice/):
// loads the model, feeds the input, and checks both outputs against the
// NumPy reference beside it, or prints them when there is none.
//
//   consumer examples/mlp.pbtxt            # exit 0 when the outputs match
//
// Reads MODEL's folder for mlp_input.npy, mlp_logits_expected.npy and
// mlp_probs_expected.npy.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sluice/config.h"
#include "sluice/npy.h"
#include "sluice/session.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

namespace {

// Whether `actual` matches `expected` within `atol`, element by element.
absl::Status CheckClose(const std::string& name, const sluice::Tensor& actual,
                        const sluice::Tensor& expected, double atol) {
  if (actual.dtype() != sluice::DT_FLOAT || actual.shape() != expected.shape()) {
    return absl::InternalError(name + ": got " + actual.DebugString(0) +
                               ", want " + expected.DebugString(0));
  }
  absl::Span<const float> a = actual.flat<float>();
  absl::Span<const float> e = expected.flat<float>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(std::fabs(a[i] - e[i]) <= atol)) {
      return absl::InternalError(name + "[" + std::to_string(i) + "] = " +
                                 std::to_string(a[i]) + ", want " +
                                 std::to_string(e[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status Run(const std::string& model) {
  const std::filesystem::path dir = std::filesystem::path(model).parent_path();
  sluice::RuntimeConfig config;
  config.set_inter_op_threads(2);
  SLUICE_RETURN_IF_ERROR(sluice::ValidateRuntimeConfig(config));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<sluice::Session> session,
                          sluice::Session::CreateFromFile(model, config));
  SLUICE_ASSIGN_OR_RETURN(sluice::Tensor x,
                          sluice::ReadNpy((dir / "mlp_input.npy").string()));
  SLUICE_ASSIGN_OR_RETURN(std::vector<sluice::Tensor> outputs,
                          session->Run({{"x", x}}, {"logits", "probs"}));
  const std::vector<std::string> names = {"logits", "probs"};
  for (size_t i = 0; i < names.size(); ++i) {
    std::printf("%s: %s\n", names[i].c_str(),
                outputs[i].DebugString(10).c_str());
    const std::filesystem::path expected_path =
        dir / ("mlp_" + names[i] + "_expected.npy");
    if (!std::filesystem::exists(expected_path)) continue;
    SLUICE_ASSIGN_OR_RETURN(sluice::Tensor expected,
                            sluice::ReadNpy(expected_path.string()));
    SLUICE_RETURN_IF_ERROR(CheckClose(names[i], outputs[i], expected, 1e-4));
    std::printf("%s matches %s\n", names[i].c_str(),
                expected_path.filename().c_str());
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s path/to/mlp.pbtxt\n", argv[0]);
    return 2;
  }
  const absl::Status status = Run(argv[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "consumer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
