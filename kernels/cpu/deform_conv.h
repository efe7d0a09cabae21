// The CPU kernel of DeformConv (ONNX's deformable convolution, opset 19,
// 2-D: torchvision's deform_conv2d): each tap of the window reads the input
// at its regular position moved by a learned offset (bilinear, zero
// outside the image), scaled by the optional mask, then the columns are
// multiplied by the filter per group (Eigen), plus the bias. The offsets
// are shared by the channels of each of `offset_group` groups. float and
// double. There is no GPU kernel: the placer keeps DeformConv on the CPU.
//
//   cpu::RegisterDeformConvKernels(&registry);  // RegisterCpuKernels
//
// Stateless registration; the kernel is thread-safe (Compute keeps its
// columns per call).
#ifndef SLUICE_KERNELS_CPU_DEFORM_CONV_H_
#define SLUICE_KERNELS_CPU_DEFORM_CONV_H_

#include "kernels/kernel_registry.h"

namespace sluice::cpu {

void RegisterDeformConvKernels(KernelRegistry* registry);

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_DEFORM_CONV_H_
