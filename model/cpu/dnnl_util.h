// Helpers shared by the oneDNN files of the CPU backend (dnnl_*.cpp).
#pragma once
#include <dnnl.hpp>

#include "model/tensor.h"

namespace ds::model::dnnl_util {

// A plain NCHW float32 memory descriptor of a tensor shape.
inline dnnl::memory::desc nchw(const Shape& s) {
  return dnnl::memory::desc({s.n, s.c, s.h, s.w}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw);
}

// oneDNN takes const-less handles; the primitives only read the inputs cast here.
inline void* mut(const float* p) { return const_cast<float*>(p); }

}  // namespace ds::model::dnnl_util
