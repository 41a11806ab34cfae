// The convolution bias gradient (model/kernels/bias_grad.h has the bodies and says why it is not
// cuDNN's): one warp per chunk of a (sample, channel) plane, then one thread per channel adding
// its partials in order. Both kernels are grid-stride loops; the first launches whole warps only.
#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/cuda/warp_tree.cuh"
#include "model/kernels/bias_grad.h"

namespace ds::model {

namespace {

// n = partials * 32, and block size and grid stride are multiples of 32: each warp is one
// partial's lanes, all active in each iteration (the shuffles need them).
__global__ void bias_grad_partial_kernel(int64_t n, kernels::BiasGrad g, const float* dy, float* partial) {
  DS_GRID_STRIDE(t, n) {
    const float v = warp_tree_sum(kernels::bias_grad_lane(t, g, dy));
    if (t % kernels::kLanes == 0) partial[t / kernels::kLanes] = v;
  }
}

__global__ void bias_grad_finish_kernel(int64_t n, kernels::BiasGrad g, const float* partial, float* db) {
  DS_GRID_STRIDE(c, n) kernels::bias_grad_finish_at(c, g, partial, db);
}

}  // namespace

void CudaBackend::conv_bias_grad(const Shape& out, const float* dy, float* db) {
  const kernels::BiasGrad g = kernels::make_bias_grad(out.n, out.c, int64_t(out.h) * out.w);
  if (out.c == 0) return;
  if (out.n == 0 || g.plane == 0) {  // no terms: the gradient is 0 (no grid of 0 blocks)
    fill(db, out.c, 0.0f);
    return;
  }
  const int64_t parts = kernels::bias_grad_partials(g), lanes = parts * kernels::kLanes;
  float* partial = allocate(parts);
  bias_grad_partial_kernel<<<blocks_for(lanes), kThreads, 0, stream_>>>(lanes, g, dy, partial);
  DS_CUDA_LAUNCHED();
  bias_grad_finish_kernel<<<blocks_for(out.c), kThreads, 0, stream_>>>(out.c, g, partial, db);
  DS_CUDA_LAUNCHED();
  release(partial);  // back to the cache; reused only by work queued after this
}

}  // namespace ds::model
