// The strides cuDNN's graph API is given for a convolution operand (model/cuda/cuda_conv_graph.cu),
// in the layout the backend stores it: NCHW, or NHWC (a filter's KRSC, the OHWI order the 16-bit
// weight casts write). Plain C++ so the CPU tests hold them to the casts' own index map
// (kernels::nchw_index_of: tests/model/graph_strides_test.cpp): strides that disagreed with it
// would make an engine read every operand in another order than the one the backend wrote.
#pragma once
#include <array>
#include <cstdint>

namespace ds::model {

// dims in NCHW order (n, c, h, w; a filter's k, c, r, s) whatever the layout; the strides in the
// same order, in elements.
inline std::array<int64_t, 4> graph_strides(const std::array<int64_t, 4>& dims, bool nhwc) {
  std::array<int64_t, 4> s{};
  if (nhwc) {
    s[1] = 1;
    s[3] = dims[1];
    s[2] = dims[3] * dims[1];
    s[0] = dims[2] * s[2];
  } else {
    s[3] = 1;
    s[2] = dims[3];
    s[1] = dims[2] * dims[3];
    s[0] = dims[1] * s[1];
  }
  return s;
}

}  // namespace ds::model
