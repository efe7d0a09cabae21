// The cell math of the Recurrent op (ONNX RNN, GRU, LSTM) that its CPU
// and CUDA kernels share: which cell, its sizes, and the activations as
// plain functions of a double, so that both devices compute the same thing.
// Free of protobuf and graph headers, so .cu files include it
// (kernels/recurrent_params.h parses the attributes).
//
//   double v = ApplyActivation(attrs.acts[0], x);
//
// Value types; thread-compatible. ApplyActivation is marked for device code
// only when a CUDA compiler reads this header.
#ifndef SLUICE_KERNELS_RECURRENT_CELL_H_
#define SLUICE_KERNELS_RECURRENT_CELL_H_

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define SLUICE_RECURRENT_HD __host__ __device__
#else
#define SLUICE_RECURRENT_HD
#endif

namespace sluice {

enum class RecurrentCell : int { kRnn = 0, kGru = 1, kLstm = 2 };

enum class ActivationKind : int {
  kSigmoid, kTanh, kRelu, kLeakyRelu, kThresholdedRelu, kScaledTanh,
  kHardSigmoid, kElu, kSoftsign, kSoftplus, kAffine
};

// One cell activation with its alpha and beta (ONNX's defaults filled in).
struct Activation {
  ActivationKind kind = ActivationKind::kTanh;
  float alpha = 0, beta = 0;
};

SLUICE_RECURRENT_HD inline double ApplyActivation(const Activation& a,
                                                  double x) {
  switch (a.kind) {
    case ActivationKind::kSigmoid: return 1.0 / (1.0 + exp(-x));
    case ActivationKind::kTanh: return tanh(x);
    case ActivationKind::kRelu: return x < 0.0 ? 0.0 : x;
    case ActivationKind::kLeakyRelu: return x >= 0 ? x : a.alpha * x;
    case ActivationKind::kThresholdedRelu: return x > a.alpha ? x : 0.0;
    case ActivationKind::kScaledTanh: return a.alpha * tanh(a.beta * x);
    case ActivationKind::kHardSigmoid: {
      const double v = a.alpha * x + a.beta;
      return v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
    }
    case ActivationKind::kElu: return x >= 0 ? x : a.alpha * (exp(x) - 1);
    case ActivationKind::kSoftsign: return x / (1 + fabs(x));
    case ActivationKind::kSoftplus: return log1p(exp(x));
    case ActivationKind::kAffine: return a.alpha * x + a.beta;
  }
  return x;
}

struct RecurrentSizes {
  int64_t s, b, in, h, d, g;  // steps, batch, input, hidden, dirs, gates
};

}  // namespace sluice

#endif  // SLUICE_KERNELS_RECURRENT_CELL_H_
