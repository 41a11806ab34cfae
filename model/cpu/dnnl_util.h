// Helpers shared by the oneDNN files of the CPU backend (dnnl_*.cpp).
#pragma once
#include <dnnl.hpp>

#include "model/tensor.h"

namespace ds::model::dnnl_util {

// A plain NCHW float32 memory descriptor of a tensor shape.
inline dnnl::memory::desc nchw(const Shape& s) {
  return dnnl::memory::desc({s.n, s.c, s.h, s.w}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw);
}

// The layout of an activation in channel block b (Tensor::block): plain NCHW for 0, else oneDNN's
// nChw{b}c (the backend offers 8 and 16 only: DnnlBackend::activation_block).
inline dnnl::memory::format_tag act_tag(int block) {
  using tag = dnnl::memory::format_tag;
  return block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : tag::nchw;
}

// A float32 memory descriptor of a tensor shape in channel block b.
inline dnnl::memory::desc act(const Shape& s, int block) {
  return dnnl::memory::desc({s.n, s.c, s.h, s.w}, dnnl::memory::data_type::f32, act_tag(block));
}

// oneDNN takes const-less handles; the primitives only read the inputs cast here.
inline void* mut(const float* p) { return const_cast<float*>(p); }

}  // namespace ds::model::dnnl_util
