// The 16-bit modes' casts (train.precision bf16|fp16): FP32 NCHW tensors rounded into 16-bit
// scratch blocks from the caching allocator (NHWC when DOWNSCALE_CUDA_LAYOUT=nhwc) and 16-bit
// results widened back, around model/kernels/half_cast.h (NCHW) and model/kernels/nhwc_tile.h
// (NHWC: tiled transposes, with the forward epilogue and the ReLU gradient's rounding fused in);
// half16_pass wraps one convolution pass in them. The casts fused into the kernels around the
// convolutions are in cuda_conv.cu.
#include <cstdint>
#include <functional>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/nhwc_tile.h"

namespace ds::model {

namespace {

// The NCHW casts: element i of the 16-bit buffer is element i of the FP32 tensor (the NHWC
// layout takes the tiled transposes below).
__global__ void cast_to_half16_kernel(int64_t n, kernels::Half16 k, int c, int h, int w, const float* x,
                                      uint16_t* xh) {
  DS_GRID_STRIDE(i, n) kernels::cast_to_half16_at(i, k, c, h, w, false, x, xh);
}

__global__ void cast_from_half16_kernel(int64_t n, kernels::Half16 k, int c, int h, int w, const uint16_t* xh,
                                        float* x) {
  DS_GRID_STRIDE(i, n) kernels::cast_from_half16_at(i, k, c, h, w, false, xh, x);
}

// The NHWC transposes: a block per kTile x kTile tile (model/kernels/nhwc_tile.h's tile_at and
// tile_blocks_*: x pixel tiles, y channel tiles, z samples, looping when there are more than
// 65,535), kTile x kTileRows threads, the two phases around a barrier.

// FP32 NCHW x -> 16-bit NHWC xh; with y, the ReLU's gradient [y > 0] x rounded (and kept in FP32
// in g when g is non-null).
__global__ void nchw_to_nhwc16_kernel(int64_t samples, int c, int64_t hw, kernels::Half16 k, const float* x,
                                      const float* y, float* g, uint16_t* xh, int cs) {
  __shared__ kernels::Tile t;
  for (int64_t n = blockIdx.z; n < samples; n += gridDim.z) {
    const kernels::TileAt a = kernels::tile_at(c, hw, n, blockIdx.x, blockIdx.y, cs);
    kernels::load_nchw_tile(a, threadIdx.x, threadIdx.y, x, y, g, t);
    __syncthreads();
    kernels::store_nhwc16_tile(a, threadIdx.x, threadIdx.y, k, t, xh);
    __syncthreads();  // the tile is refilled for the next sample
  }
}

// NHWC activations: the mask from the 16-bit NHWC output y16, loaded into a second tile first
// (model/kernels/nhwc_tile.h's load_nchw_tile_masked says why three phases).
__global__ void nchw_to_nhwc16_masked_kernel(int64_t samples, int c, int64_t hw, kernels::Half16 k, const float* x,
                                             const uint16_t* y16, float* g, uint16_t* xh) {
  __shared__ kernels::Tile m, t;
  for (int64_t n = blockIdx.z; n < samples; n += gridDim.z) {
    const kernels::TileAt a = kernels::tile_at(c, hw, n, blockIdx.x, blockIdx.y);
    kernels::load_nhwc16_tile(a, threadIdx.x, threadIdx.y, k, y16, m);
    __syncthreads();
    kernels::load_nchw_tile_masked(a, threadIdx.x, threadIdx.y, x, m, g, t);
    __syncthreads();
    kernels::store_nhwc16_tile(a, threadIdx.x, threadIdx.y, k, t, xh);
    __syncthreads();  // both tiles are refilled for the next sample
  }
}

// 16-bit NHWC xh -> FP32 NCHW y, + b and the ReLU on the way (b null, relu false: the plain widening).
__global__ void nhwc16_to_nchw_kernel(int64_t samples, int c, int64_t hw, kernels::Half16 k, const uint16_t* xh,
                                      const float* b, bool relu, float* y, int cs) {
  __shared__ kernels::Tile t;
  for (int64_t n = blockIdx.z; n < samples; n += gridDim.z) {
    const kernels::TileAt a = kernels::tile_at(c, hw, n, blockIdx.x, blockIdx.y, cs);
    kernels::load_nhwc16_tile(a, threadIdx.x, threadIdx.y, k, xh, t);
    __syncthreads();
    kernels::store_nchw_tile(a, threadIdx.x, threadIdx.y, t, b, relu, y);
    __syncthreads();
  }
}

dim3 tile_grid(const Shape& s) {
  const int64_t hw = int64_t(s.h) * s.w;
  return dim3(kernels::tile_blocks_x(hw), kernels::tile_blocks_y(s.c), kernels::tile_blocks_z(s.n));
}

}  // namespace

void CudaBackend::nchw_to_nhwc16(const Shape& s, const float* x, const float* y, float* g, void* xh, int cs) {
  if (s.size() == 0) return;  // no grid of 0 blocks
  nchw_to_nhwc16_kernel<<<tile_grid(s), dim3(kernels::kTile, kernels::kTileRows), 0, stream_>>>(
      s.n, s.c, int64_t(s.h) * s.w, half16_kind(), x, y, g, static_cast<uint16_t*>(xh), cs);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::nchw_to_nhwc16_masked(const Shape& s, const float* x, const void* y16, float* g, void* xh) {
  if (s.size() == 0) return;
  nchw_to_nhwc16_masked_kernel<<<tile_grid(s), dim3(kernels::kTile, kernels::kTileRows), 0, stream_>>>(
      s.n, s.c, int64_t(s.h) * s.w, half16_kind(), x, static_cast<const uint16_t*>(y16), g, static_cast<uint16_t*>(xh));
  DS_CUDA_LAUNCHED();
}

void CudaBackend::nhwc16_to_nchw(const Shape& s, const void* xh, const float* b, bool relu, float* y, int cs) {
  if (s.size() == 0) return;
  nhwc16_to_nchw_kernel<<<tile_grid(s), dim3(kernels::kTile, kernels::kTileRows), 0, stream_>>>(
      s.n, s.c, int64_t(s.h) * s.w, half16_kind(), static_cast<const uint16_t*>(xh), b, relu, y, cs);
  DS_CUDA_LAUNCHED();
}

kernels::Half16 CudaBackend::half16_kind() const {
  return math_ == MathMode::kBf16 ? kernels::Half16::kBf16 : kernels::Half16::kFp16;
}

// A channel stride above s.c exists only in NHWC (the plan pads only there): one check for all.
static void check_channel_stride(const Shape& s, int cs, bool nhwc) {
  if (cs > s.c && !nhwc) throw Error("internal: a padded channel stride outside the NHWC 16-bit layout");
  if (cs != 0 && cs < s.c) throw Error("internal: a channel stride below the channel count");
}

void* CudaBackend::half16_scratch(const Shape& s, int cs) {
  check_channel_stride(s, cs, nhwc_);
  const int64_t pixels = int64_t(s.n) * s.h * s.w;
  return cache_.allocate(size_t(cs > s.c ? pixels * cs : s.size()) * sizeof(uint16_t));
}

void* CudaBackend::to_half16(const Shape& s, const float* x, int cs) {
  void* xh = half16_scratch(s, cs);
  if (nhwc_) {
    try {
      // The padded channels are zeros that every pass reads (x, w) as real data: cleared first,
      // the transpose then writes channels 0..c-1 of each pixel.
      if (cs > s.c) DS_CUDA(cudaMemsetAsync(xh, 0, size_t(s.n) * s.h * s.w * cs * sizeof(uint16_t), stream_));
      nchw_to_nhwc16(s, x, nullptr, nullptr, xh, cs);
    } catch (...) {
      cache_.release(xh);
      throw;
    }
    return xh;
  }
  const int64_t n = s.size();
  cast_to_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, half16_kind(), s.c, s.h, s.w, x,
                                                                 static_cast<uint16_t*>(xh));
  DS_CUDA_LAUNCHED();
  return xh;
}

void CudaBackend::from_half16(const Shape& s, const void* xh, float* x, int cs) {
  check_channel_stride(s, cs, nhwc_);
  if (nhwc_) return nhwc16_to_nchw(s, xh, nullptr, false, x, cs);
  const int64_t n = s.size();
  cast_from_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, half16_kind(), s.c, s.h, s.w,
                                                                   static_cast<const uint16_t*>(xh), x);
  DS_CUDA_LAUNCHED();
}

void* CudaBackend::half16_pass(const Shape& as, const float* a, const void* a16, const Shape& bs, const float* b,
                               const void* b16, const Shape& out_shape, float* out,
                               const std::function<void(const void*, const void*, void*)>& run, bool keep_out,
                               ChannelStrides cs) {
  // Only what is cast here goes back to the cache here, whatever throws; a16/b16 are the caller's
  // (already in the strides cs says).
  void* h[3] = {nullptr, nullptr, nullptr};
  try {
    if (!a16) h[0] = to_half16(as, a, cs.a);
    if (!b16) h[1] = to_half16(bs, b, cs.b);
    // A padded output's extra channels are written by the pass itself (cuDNN's backward data and
    // filter compute every channel the descriptor has) and skipped by the widening.
    h[2] = half16_scratch(out_shape, cs.out);
    run(a16 ? a16 : h[0], b16 ? b16 : h[1], h[2]);
    for (int i = 0; i < 2; ++i)
      if (h[i]) cache_.release(h[i]), h[i] = nullptr;  // reused only by work queued after this
    if (keep_out) {
      if (cs.out > out_shape.c) throw Error("internal: a kept 16-bit output with padded channels");
      return h[2];
    }
    from_half16(out_shape, h[2], out, cs.out);
  } catch (...) {
    for (void* x : h)
      if (x) cache_.release(x);
    throw;
  }
  cache_.release(h[2]);
  return nullptr;
}

}  // namespace ds::model
