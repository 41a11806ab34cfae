// The 16-bit modes' casts (train.precision bf16|fp16): FP32 NCHW tensors rounded into 16-bit
// scratch blocks from the caching allocator (NHWC when DOWNSCALE_CUDA_LAYOUT=nhwc) and 16-bit
// results widened back, around model/kernels/half_cast.h; half16_pass wraps one convolution pass
// in them. The casts fused into the kernels around the convolutions are in cuda_conv.cu.
#include <cstdint>
#include <functional>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/half_cast.h"

namespace ds::model {

namespace {

__global__ void cast_to_half16_kernel(int64_t n, kernels::Half16 k, int c, int h, int w, bool nhwc, const float* x,
                                      uint16_t* xh) {
  DS_GRID_STRIDE(i, n) kernels::cast_to_half16_at(i, k, c, h, w, nhwc, x, xh);
}

__global__ void cast_from_half16_kernel(int64_t n, kernels::Half16 k, int c, int h, int w, bool nhwc,
                                        const uint16_t* xh, float* x) {
  DS_GRID_STRIDE(i, n) kernels::cast_from_half16_at(i, k, c, h, w, nhwc, xh, x);
}

}  // namespace

kernels::Half16 CudaBackend::half16_kind() const {
  return math_ == MathMode::kBf16 ? kernels::Half16::kBf16 : kernels::Half16::kFp16;
}

void* CudaBackend::half16_scratch(const Shape& s) { return cache_.allocate(size_t(s.size()) * sizeof(uint16_t)); }

void* CudaBackend::to_half16(const Shape& s, const float* x) {
  void* xh = half16_scratch(s);
  const int64_t n = s.size();
  const auto k = math_ == MathMode::kBf16 ? kernels::Half16::kBf16 : kernels::Half16::kFp16;
  cast_to_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, k, s.c, s.h, s.w, nhwc_, x,
                                                                 static_cast<uint16_t*>(xh));
  DS_CUDA_LAUNCHED();
  return xh;
}

void CudaBackend::from_half16(const Shape& s, const void* xh, float* x) {
  const int64_t n = s.size();
  const auto k = math_ == MathMode::kBf16 ? kernels::Half16::kBf16 : kernels::Half16::kFp16;
  cast_from_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, k, s.c, s.h, s.w, nhwc_,
                                                                   static_cast<const uint16_t*>(xh), x);
  DS_CUDA_LAUNCHED();
}

void* CudaBackend::half16_pass(const Shape& as, const float* a, const void* a16, const Shape& bs, const float* b,
                               const void* b16, const Shape& out_shape, float* out,
                               const std::function<void(const void*, const void*, void*)>& run, bool keep_out) {
  // Only what is cast here goes back to the cache here; a16/b16 are the caller's.
  void* h[3] = {a16 ? nullptr : to_half16(as, a), b16 ? nullptr : to_half16(bs, b), half16_scratch(out_shape)};
  try {
    run(a16 ? a16 : h[0], b16 ? b16 : h[1], h[2]);
  } catch (...) {
    for (void* x : h)
      if (x) cache_.release(x);
    throw;
  }
  for (int i = 0; i < 2; ++i)
    if (h[i]) cache_.release(h[i]);  // reused only by work queued after this
  if (keep_out) return h[2];
  from_half16(out_shape, h[2], out);
  cache_.release(h[2]);
  return nullptr;
}

}  // namespace ds::model
