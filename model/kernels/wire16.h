// 16-bit forms of FP32 values for compressed gradient allreduce (train.allreduce_dtype, Horovod's
// --fp16-allreduce): bfloat16 (FP32's exponent, 8 significant bits) and IEEE half (5-bit exponent,
// 11 significant bits), both rounded to nearest even. One body for the GPU's packing kernels
// (model/cuda/nccl_communicator.cu) and the MPI path's host conversion and user sum
// (train/distributed.cpp), tested on the CPU by KernelBodies.Wire16.
#pragma once
#include <cstdint>

#include "model/host_device.h"
// The conversions themselves are the convolutions' (round to nearest even, overflow to infinity,
// NaN kept): one implementation, pinned by KernelBodies (checked equal to the former copy here
// on all 2^32 floats and 2^16 halves, 2026-11-23).
#include "model/kernels/half_cast.h"

namespace ds::model::kernels {

enum class Wire16 { kBf16, kFp16 };

DS_HOST_DEVICE inline uint16_t to_wire16(Wire16 w, float f) {
  return w == Wire16::kBf16 ? float_to_bf16(f) : float_to_fp16(f);
}
DS_HOST_DEVICE inline float from_wire16(Wire16 w, uint16_t h) {
  return w == Wire16::kBf16 ? bf16_to_float(h) : fp16_to_float(h);
}

// Element i of the packing kernel, of its inverse, and of the MPI user reduction (sum in FP32,
// stored back in 16 bits: what NCCL does per hop).
DS_HOST_DEVICE inline void pack_wire16_at(int64_t i, Wire16 w, const float* x, uint16_t* y) { y[i] = to_wire16(w, x[i]); }
DS_HOST_DEVICE inline void unpack_wire16_at(int64_t i, Wire16 w, const uint16_t* y, float* x) {
  x[i] = from_wire16(w, y[i]);
}
DS_HOST_DEVICE inline void sum_wire16_at(int64_t i, Wire16 w, const uint16_t* in, uint16_t* inout) {
  inout[i] = to_wire16(w, from_wire16(w, in[i]) + from_wire16(w, inout[i]));
}

}  // namespace ds::model::kernels
