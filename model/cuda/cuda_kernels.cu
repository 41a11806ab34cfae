// CudaBackend's elementwise and data-movement ops as CUDA kernels. Each kernel is a grid-stride
// loop over the flat NCHW index around a body from model/kernels/ (plain DS_HOST_DEVICE functions
// that the CPU tests run too: tests/model/kernel_bodies_test.cpp); each op is a few lines of
// arithmetic, memory-bound, so no tuning beyond coalesced access.
#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/copy.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/loss.h"
#include "model/kernels/optimizer.h"
#include "model/kernels/sigmoid.h"
#include "model/kernels/upsample.h"

namespace ds::model {

namespace {

using namespace kernels;

__global__ void fill_kernel(float* p, int64_t n, float v) {
  DS_GRID_STRIDE(i, n) fill_at(i, p, v);
}

__global__ void relu_forward_kernel(int64_t n, const float* x, float* y) {
  DS_GRID_STRIDE(i, n) relu_forward_at(i, x, y);
}

__global__ void relu_backward_kernel(int64_t n, const float* x, const float* dy, float* dx) {
  DS_GRID_STRIDE(i, n) relu_backward_at(i, x, dy, dx);
}

__global__ void relu_backward16_kernel(int64_t n, Half16 k, const uint16_t* y, const float* dy, float* dx) {
  DS_GRID_STRIDE(i, n) relu_backward16_at(i, k, y, dy, dx);
}

// Over the N*HW elements of one channel.
__global__ void sigmoid_channel_forward_kernel(int64_t n_hw, int64_t hw, int c, int channel, float* y) {
  DS_GRID_STRIDE(i, n_hw) sigmoid_channel_forward_at(i, hw, c, channel, y);
}

__global__ void sigmoid_channel_backward_kernel(int64_t n_hw, int64_t hw, int c, int channel, const float* y,
                                                float* dy) {
  DS_GRID_STRIDE(i, n_hw) sigmoid_channel_backward_at(i, hw, c, channel, y, dy);
}

__global__ void upsample_forward_kernel(int64_t n_out, int h, int w, int f, const float* x, float* y) {
  DS_GRID_STRIDE(i, n_out) upsample_forward_at(i, h, w, f, x, y);
}

__global__ void upsample_backward_kernel(int64_t n_in, int h, int w, int f, const float* dy, float* dx) {
  DS_GRID_STRIDE(i, n_in) upsample_backward_at(i, h, w, f, dy, dx);
}

template <typename T>
__global__ void strided_block_copy_kernel(int64_t total, int64_t block, const T* a, int64_t stride_a, T* b,
                                          int64_t stride_b) {
  DS_GRID_STRIDE(i, total) strided_block_copy_at(i, block, a, stride_a, b, stride_b);
}

__global__ void accumulate_kernel(int64_t n, const float* x, float* acc) {
  DS_GRID_STRIDE(i, n) accumulate_at(i, x, acc);
}

__global__ void scale_kernel(int64_t n, float alpha, float* x) {
  DS_GRID_STRIDE(i, n) scale_at(i, alpha, x);
}

__global__ void adam_kernel(int64_t n, float* w, const float* g, float* m, float* v, float lr_t, float b1, float b2,
                            float eps) {
  DS_GRID_STRIDE(i, n) adam_at(i, w, g, m, v, lr_t, b1, b2, eps);
}

// The multi-tensor Adam: a block per chunk (grid-stride over the chunks), its threads over the
// chunk's elements, each with its span's pointers (model/kernels/optimizer.h).
struct AdamPtrs {
  float* w;
  const float* g;
  float* m;
  float* v;
};
// Where adam_update_many's device list puts its chunks: after the spans' pointers, 16-aligned.
size_t adam_chunks_at(size_t spans) { return (spans * sizeof(AdamPtrs) + 15) / 16 * 16; }

__global__ void adam_many_kernel(int64_t chunks, const AdamPtrs* spans, const AdamChunk* list, float lr_t, float b1,
                                 float b2, float eps) {
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const AdamChunk k = list[c];
    const AdamPtrs s = spans[k.span];
    for (int64_t i = k.begin + threadIdx.x; i < k.end; i += blockDim.x) adam_at(i, s.w, s.g, s.m, s.v, lr_t, b1, b2, eps);
  }
}

// Each thread sums its points in double, the block reduces in shared memory, and one atomicAdd
// per block adds to the total (so the total's rounding may vary in the last bits run to run).
__global__ void bernoulli_gamma_kernel(int64_t n_hw, int64_t hw, const float* out, const float* y,
                                       const float* mask, float* d_out, double* total) {
  __shared__ double partial[kThreads];
  double local = 0.0;
  DS_GRID_STRIDE(i, n_hw) local += bernoulli_gamma_at(i, hw, out, y, mask, d_out);
  partial[threadIdx.x] = local;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, partial[0]);
}

template <typename T>
__global__ void pad_kernel(int64_t n_padded, int h, int w, int top, int left, int ph, int pw, const T* x, T* xp) {
  DS_GRID_STRIDE(i, n_padded) pad_at(i, h, w, top, left, ph, pw, x, xp);
}

__global__ void pad_nhwc_kernel(int64_t n_padded, int c, int cs, int h, int w, int top, int left, int ph, int pw,
                                const uint16_t* x, uint16_t* xp) {
  DS_GRID_STRIDE(i, n_padded) pad_nhwc_at(i, c, cs, h, w, top, left, ph, pw, x, xp);
}

__global__ void crop_kernel(int64_t n_out, int ph, int pw, int top, int left, int h, int w, const float* xp,
                            float* x) {
  DS_GRID_STRIDE(i, n_out) crop_at(i, ph, pw, top, left, h, w, xp, x);
}

// Any element with an all-ones exponent (Inf or NaN) clears the flag; a bit test, so no fast-math
// assumption can remove it.
__global__ void all_finite_kernel(int64_t n, const float* x, int* flag) {
  DS_GRID_STRIDE(i, n) if ((__float_as_uint(x[i]) & 0x7f800000u) == 0x7f800000u) *flag = 0;
}

}  // namespace

// One flag for every buffer, one copy back and one synchronisation for all of them.
bool CudaBackend::all_finite(const std::vector<FloatSpan>& buffers) {
  int got = 0;
  DS_CUDA(cudaMemsetAsync(d_flag_, 1, sizeof(int), stream_));
  for (const FloatSpan& b : buffers) {
    if (b.size <= 0) continue;
    all_finite_kernel<<<blocks_for(b.size), kThreads, 0, stream_>>>(b.size, b.data, d_flag_);
    DS_CUDA_LAUNCHED();
  }
  DS_CUDA(cudaMemcpyAsync(&got, d_flag_, sizeof(int), cudaMemcpyDeviceToHost, stream_));
  DS_CUDA(cudaStreamSynchronize(stream_));
  return got != 0;
}

bool CudaBackend::all_finite(int64_t n, const float* x) { return all_finite({{x, n}}); }

void CudaBackend::fill(float* p, int64_t n, float value) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(p, n, value);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::relu_forward(int64_t n, const float* x, float* y) {
  if (n == 0) return;
  relu_forward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, x, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::relu_backward(int64_t n, const float* x, const float* dy, float* dx) {
  if (n == 0) return;
  relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, x, dy, dx);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::relu_backward16(int64_t n, const uint16_t* y, const float* dy, float* dx) {
  if (n == 0) return;
  // A flat pass pairs y and dy element by element: an NHWC y would mask other elements.
  if (act_nhwc()) throw Error("internal: relu_backward16 on a 16-bit NHWC activation (its gradient is NCHW)");
  relu_backward16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, half16_kind(), y, dy, dx);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::sigmoid_channel_forward(const Shape& s, int channel, float* y) {
  const int64_t hw = int64_t(s.h) * s.w, n = s.n * hw;
  if (n == 0) return;
  sigmoid_channel_forward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, hw, s.c, channel, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::sigmoid_channel_backward(const Shape& s, int channel, const float* y, float* dy) {
  const int64_t hw = int64_t(s.h) * s.w, n = s.n * hw;
  if (n == 0) return;
  sigmoid_channel_backward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, hw, s.c, channel, y, dy);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::upsample_nearest_forward(const Shape& in, int factor, const float* x, float* y) {
  const int64_t n = in.size() * factor * factor;
  if (n == 0) return;
  upsample_forward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, in.h, in.w, factor, x, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::upsample_nearest_backward(const Shape& in, int factor, const float* dy, float* dx) {
  const int64_t n = in.size();
  if (n == 0) return;
  upsample_backward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, in.h, in.w, factor, dy, dx);
  DS_CUDA_LAUNCHED();
}

namespace {
// dst[:, offset:offset + src.c] = src, for FP32 or 16-bit elements (T).
template <typename T>
void copy_channels_on(cudaStream_t stream, const Shape& src, const T* x, const Shape& dst, int offset, T* y) {
  const int64_t hw = int64_t(dst.h) * dst.w, block = src.c * hw, total = src.n * block;
  if (total == 0) return;
  strided_block_copy_kernel<<<blocks_for(total), kThreads, 0, stream>>>(total, block, x, block, y + offset * hw,
                                                                        dst.c * hw);
  DS_CUDA_LAUNCHED();
}
}  // namespace

void CudaBackend::copy_channels(const Shape& src, const float* x, const Shape& dst, int offset, float* y) {
  copy_channels_on(stream_, src, x, dst, offset, y);
}

// 16-bit activations: the same strided copy on 2-byte elements; in NHWC each pixel's src.c
// channels go to channels offset.. of the pixel's dst.c.
void CudaBackend::copy_channels16(const Shape& src, const uint16_t* x, const Shape& dst, int offset, uint16_t* y) {
  if (!act_nhwc()) return copy_channels_on(stream_, src, x, dst, offset, y);
  const int64_t total = src.size();
  if (total == 0) return;
  strided_block_copy_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, int64_t(src.c), x, int64_t(src.c),
                                                                         y + offset, int64_t(dst.c));
  DS_CUDA_LAUNCHED();
}

void CudaBackend::slice_channels(const Shape& dst, int offset, const Shape& src, const float* y, float* x) {
  const int64_t hw = int64_t(src.h) * src.w, block = dst.c * hw, total = dst.n * block;
  if (total == 0) return;
  strided_block_copy_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, block, y + offset * hw, src.c * hw, x,
                                                                         block);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::accumulate(int64_t n, const float* x, float* acc) {
  if (n == 0) return;
  accumulate_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, x, acc);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::scale(int64_t n, float alpha, float* x) {
  if (n == 0) return;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, alpha, x);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::queue_bernoulli_gamma_sum(const Shape& s, const float* out, const float* y, const float* mask,
                                            float* d_out, double* total) {
  const int64_t hw = int64_t(s.h) * s.w, n = s.n * hw;
  DS_CUDA(cudaMemsetAsync(total, 0, sizeof(double), stream_));
  if (n > 0) {
    // Capped grid: each thread then sums many points locally, which keeps atomics few.
    const int blocks = blocks_for(n) < 1024 ? blocks_for(n) : 1024;
    bernoulli_gamma_kernel<<<blocks, kThreads, 0, stream_>>>(n, hw, out, y, mask, d_out, total);
    DS_CUDA_LAUNCHED();
  }
}

double CudaBackend::bernoulli_gamma_sum(const Shape& s, const float* out, const float* y, const float* mask,
                                        float* d_out) {
  queue_bernoulli_gamma_sum(s, out, y, mask, d_out, d_sum_);
  double total = 0.0;
  DS_CUDA(cudaMemcpyAsync(&total, d_sum_, sizeof(double), cudaMemcpyDeviceToHost, stream_));
  DS_CUDA(cudaStreamSynchronize(stream_));
  return total;
}

void CudaBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, float lr_t, float b1, float b2,
                              float eps) {
  if (n == 0) return;
  adam_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, w, g, m, v, lr_t, b1, b2, eps);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::adam_update_many(const std::vector<AdamSpan>& spans, float lr_t, float b1, float b2, float eps) {
  bool same = adam_list_ && spans.size() == adam_spans_.size();
  for (size_t i = 0; same && i < spans.size(); ++i) {
    const AdamSpan &a = spans[i], &b = adam_spans_[i];
    same = a.w == b.w && a.g == b.g && a.m == b.m && a.v == b.v && a.n == b.n;
  }
  if (!same) {  // a new list (the first step, or other tensors): built and uploaded once
    std::vector<int64_t> sizes;
    for (const AdamSpan& a : spans) sizes.push_back(a.n);
    const int count = int(spans.size());
    const int64_t chunks = adam_chunk_count(sizes.data(), count);
    const size_t at = adam_chunks_at(spans.size()), bytes = at + size_t(chunks) * sizeof(AdamChunk);
    std::vector<unsigned char> host(bytes > 0 ? bytes : 1);
    auto* ptrs = reinterpret_cast<AdamPtrs*>(host.data());
    for (size_t i = 0; i < spans.size(); ++i) ptrs[i] = {spans[i].w, spans[i].g, spans[i].m, spans[i].v};
    adam_chunks(sizes.data(), count, reinterpret_cast<AdamChunk*>(host.data() + at));
    // The old list goes back to the cache: work queued after this (the upload) is ordered after
    // the kernels that read it.
    if (adam_list_) cache_.release(adam_list_);
    adam_list_ = nullptr;
    adam_spans_.clear();
    adam_chunks_ = 0;  // nothing to launch until the new list is whole
    adam_list_ = cache_.allocate(host.size());
    DS_CUDA(cudaMemcpyAsync(adam_list_, host.data(), host.size(), cudaMemcpyHostToDevice, stream_));
    DS_CUDA(cudaStreamSynchronize(stream_));  // `host` goes when this returns
    adam_spans_ = spans;
    adam_chunks_ = chunks;
  }
  if (adam_chunks_ == 0) return;
  const size_t at = adam_chunks_at(spans.size());
  const auto* base = static_cast<const unsigned char*>(adam_list_);
  const int blocks = int(adam_chunks_ < 65535 ? adam_chunks_ : 65535);
  adam_many_kernel<<<blocks, kThreads, 0, stream_>>>(adam_chunks_, reinterpret_cast<const AdamPtrs*>(base),
                                                    reinterpret_cast<const AdamChunk*>(base + at), lr_t, b1, b2, eps);
  DS_CUDA_LAUNCHED();
}

void pad_nchw(cudaStream_t s, const Shape& in, int top, int left, const Shape& padded, const float* x, float* xp) {
  const int64_t n = padded.size();
  if (n == 0) return;
  pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, in.h, in.w, top, left, padded.h, padded.w, x, xp);
  DS_CUDA_LAUNCHED();
}

void pad_nchw16(cudaStream_t s, const Shape& in, int top, int left, const Shape& padded, const uint16_t* x,
                uint16_t* xp) {
  const int64_t n = padded.size();
  if (n == 0) return;
  pad_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, in.h, in.w, top, left, padded.h, padded.w, x, xp);
  DS_CUDA_LAUNCHED();
}

void pad_nhwc16(cudaStream_t s, const Shape& in, int top, int left, const Shape& padded, const uint16_t* x,
                uint16_t* xp) {
  const int64_t n = padded.size();
  if (n == 0) return;
  pad_nhwc_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, in.c, padded.c, in.h, in.w, top, left, padded.h, padded.w, x,
                                                      xp);
  DS_CUDA_LAUNCHED();
}

void crop_nchw(cudaStream_t s, const Shape& padded, int top, int left, const Shape& out, const float* xp, float* x) {
  const int64_t n = out.size();
  if (n == 0) return;
  crop_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, padded.h, padded.w, top, left, out.h, out.w, xp, x);
  DS_CUDA_LAUNCHED();
}

}  // namespace ds::model
