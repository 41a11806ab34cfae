// The graph API operands' strides (model/cuda/graph_strides.h) against the index map the 16-bit
// casts lay tensors and filters out by (kernels::nchw_index_of): the engine must read element
// (n, c, h, w) where the backend wrote it, in NHWC (filters KRSC) and NCHW. Exact: integers.
#include <gtest/gtest.h>

#include "model/cuda/graph_strides.h"
#include "model/kernels/half_cast.h"

namespace ds::model {
namespace {

TEST(GraphStrides, EveryElementIsWhereTheCastsPutIt) {
  // Odd sizes, a single-channel and a single-pixel case, MNN's 100 -> 528 5x5 filter.
  const std::array<int64_t, 4> shapes[] = {{2, 3, 4, 5}, {3, 1, 7, 2}, {4, 6, 1, 1}, {528, 100, 5, 5}, {1, 20, 30, 53}};
  for (const auto& dims : shapes)
    for (bool nhwc : {false, true}) {
      const auto s = graph_strides(dims, nhwc);
      const int c = int(dims[1]), h = int(dims[2]), w = int(dims[3]);
      const int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
      for (int64_t i = 0; i < n; ++i) {  // i: the offset in the buffer as the casts write it
        const int64_t f = kernels::nchw_index_of(i, c, h, w, nhwc);  // the element's NCHW flat index
        const int64_t x = f % w, y = (f / w) % h, ch = (f / (int64_t(w) * h)) % c, sample = f / (int64_t(w) * h * c);
        ASSERT_EQ(sample * s[0] + ch * s[1] + y * s[2] + x * s[3], i)
            << (nhwc ? "NHWC" : "NCHW") << " (" << dims[0] << ", " << c << ", " << h << ", " << w << ") element " << f;
      }
    }
}

}  // namespace
}  // namespace ds::model
