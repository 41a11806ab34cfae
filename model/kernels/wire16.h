// 16-bit forms of FP32 values for compressed gradient allreduce (train.allreduce_dtype, Horovod's
// --fp16-allreduce): bfloat16 (FP32's exponent, 8 significant bits) and IEEE half (5-bit exponent,
// 11 significant bits), both rounded to nearest even. One body for the GPU's packing kernels
// (model/cuda/nccl_communicator.cu) and the MPI path's host conversion and user sum
// (train/distributed.cpp), tested on the CPU by KernelBodies.Wire16.
#pragma once
#include <cstdint>
#include <cstring>

#include "model/host_device.h"

namespace ds::model::kernels {

enum class Wire16 { kBf16, kFp16 };

DS_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
DS_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

DS_HOST_DEVICE inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // NaN stays a (quiet) NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);                     // ties to even
}
DS_HOST_DEVICE inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

// F. Giesen's float->half with round to nearest even (public domain "float_to_half_fast3_rtne"):
// overflow to infinity, subnormal halves through a float addition whose own rounding is the RNE.
DS_HOST_DEVICE inline uint16_t float_to_fp16(float f) {
  uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u >= 0x47800000u) return uint16_t(sign | (u > 0x7f800000u ? 0x7e00u : 0x7c00u));  // >= 65536, inf, NaN
  if (u < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
    const float t = bits_float(u) + 0.5f;
    return uint16_t(sign | (float_bits(t) - 0x3f000000u));
  }
  const uint32_t mant_odd = (u >> 13) & 1u;
  u += 0xc8000fffu + mant_odd;  // exponent rebias (15 - 127) << 23, plus rounding
  return uint16_t(sign | (u >> 13));
}
DS_HOST_DEVICE inline float fp16_to_float(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t o = uint32_t(h & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;  // infinity / NaN
  } else if (exp == 0) {      // zero / subnormal: renormalise through a float subtraction
    o += 1u << 23;
    o = float_bits(bits_float(o) - bits_float(113u << 23));
  }
  return bits_float(o | (uint32_t(h & 0x8000u) << 16));
}

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
