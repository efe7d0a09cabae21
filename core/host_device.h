// SLUICE_HOST_DEVICE marks a function that CUDA device code may call too:
// `__host__ __device__` under nvcc, nothing for other compilers, so headers
// that use it stay CUDA-free.
//
//   SLUICE_HOST_DEVICE inline uint8_t Low4(uint8_t b) { return b & 0xf; }
//
// A macro only; thread-safe.
#ifndef SLUICE_CORE_HOST_DEVICE_H_
#define SLUICE_CORE_HOST_DEVICE_H_

#if defined(__CUDACC__)
#define SLUICE_HOST_DEVICE __host__ __device__
#else
#define SLUICE_HOST_DEVICE
#endif

#endif  // SLUICE_CORE_HOST_DEVICE_H_
