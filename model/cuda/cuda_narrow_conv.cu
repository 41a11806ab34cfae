// The narrow path: stride-1 convolutions with at most kNarrowConvMaxOut output channels (MNN's
// head, 132 -> 3 channels 4x4 'valid', cost 8.5 ms of a 27 ms backward pass under cuDNN on an
// H100 for 1 % of the FLOPs) as hand-written kernels around model/kernels/narrow_conv.h.
//
// - forward: for kernels up to 4x4 one thread per output column of 4 rows (the input rows under
//   the taps loaded once per channel), else one per output pixel; backward data likewise: for
//   kernels up to 4x4 one thread per input column of 4 rows and 8 channels (the dy values under
//   the taps loaded once per output channel), else one per input pixel and 8 channels. The
//   packed weights (C x kh x kw x 4 floats, 33 KB for the head) are copied into shared memory per block where they fit in 48 KB, else read from global memory;
//   grids are capped at the blocks resident at once (at most 8 per SM) so few blocks copy them.
// - backward weights: for kernels up to 4x4 (the head), one warp per (image, input channel, 32
//   output columns), each lane walking down its column with the taps' inputs in registers; for
//   larger kernels one warp per (chunk of rows, channel group, tap), its lanes over columns;
//   each warp's sums reduce by __shfl_down_sync (offsets 16..1, the order
//   narrow_lane_tree_sum writes down) into a partials buffer, then one thread per weight sums the
//   chunks in order. The bias gradient likewise. No atomics: the result is the same run to run.
//
// Plain FP32 in every precision mode (no TF32/BF16 rounding of the operands: more accurate than
// the cuDNN path it replaces under tf32/bf16/fp16). Whether a pass runs here is decided per plan
// here (choose_narrow, at the end: timing, or DOWNSCALE_CUDA_NARROW). Scratch (packed weights,
// partials) comes from the caching allocator and goes back to it right after the launches.
#include <string>
#include <type_traits>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/cuda/warp_tree.cuh"
#include "model/kernels/narrow_conv.h"

namespace ds::model {

namespace {

using kernels::kNarrowChannelGroup;
using kernels::kNarrowConvMaxOut;
using kernels::kNarrowLanes;
using kernels::NarrowConv;

// Packed weights go to shared memory up to the default dynamic limit (no opt-in attribute, which
// would also cut the blocks resident per SM).
constexpr size_t kNarrowSharedBytes = size_t(48) << 10;

// The weights the bodies read: a copy in shared memory (kShared) or the packed global buffer.
// n4: the packed weights' length in float4s.
template <bool kShared>
__device__ const float* narrow_weights(const float* wp, int64_t n4, float4* sh) {
  if constexpr (!kShared) {
    return wp;
  } else {
    for (int64_t k = threadIdx.x; k < n4; k += blockDim.x) sh[k] = reinterpret_cast<const float4*>(wp)[k];
    __syncthreads();
    return reinterpret_cast<const float*>(sh);
  }
}

__global__ void narrow_pack_kernel(int64_t n, NarrowConv g, const float* w, float* wp) {
  DS_GRID_STRIDE(i, n) kernels::narrow_pack_weights_at(i, g, w, wp);
}

// X: float, or uint16_t for a 16-bit activation input (g.xk), widened as it is loaded.
template <int O, bool kShared, typename X>
__global__ void narrow_forward_kernel(int64_t n, NarrowConv g, int64_t n4, const X* x, const float* wp,
                                      const float* b, float* y) {
  extern __shared__ float4 narrow_shared[];
  const float* w = narrow_weights<kShared>(wp, n4, narrow_shared);
  DS_GRID_STRIDE(p, n) kernels::narrow_conv_forward_at<O>(p, g, x, w, b, y);
}

template <int O, bool kShared, typename X>
__global__ void narrow_forward_window_kernel(int64_t n, NarrowConv g, int64_t n4, const X* x, const float* wp,
                                             const float* b, float* y) {
  extern __shared__ float4 narrow_shared[];
  const float* w = narrow_weights<kShared>(wp, n4, narrow_shared);
  DS_GRID_STRIDE(t, n) kernels::narrow_conv_forward_window_at<O>(t, g, x, w, b, y);
}

template <int O, bool kShared>
__global__ void narrow_backward_data_kernel(int64_t n, NarrowConv g, int64_t n4, const float* dy, const float* wp,
                                            float* dx) {
  extern __shared__ float4 narrow_shared[];
  const float* w = narrow_weights<kShared>(wp, n4, narrow_shared);
  DS_GRID_STRIDE(t, n) kernels::narrow_conv_backward_data_at<O>(t, g, dy, w, dx);
}

template <int O, bool kShared>
__global__ void narrow_backward_data_window_kernel(int64_t n, NarrowConv g, int64_t n4, const float* dy,
                                                   const float* wp, float* dx) {
  extern __shared__ float4 narrow_shared[];
  const float* w = narrow_weights<kShared>(wp, n4, narrow_shared);
  DS_GRID_STRIDE(t, n) kernels::narrow_conv_backward_data_window_at<O>(t, g, dy, w, dx);
}

// The warp's tree (narrow_lane_tree_sum's order): lane l adds lane l + offset's value.
__device__ float narrow_warp_sum(float v) { return warp_tree_sum(v); }

// n is a multiple of 32 and so are the block size and the grid stride: every warp is one
// partial's 32 lanes, all active in every iteration (the shuffles need them).
template <int O, typename X>
__global__ void narrow_weight_partial_kernel(int64_t n, NarrowConv g, const X* x, const float* dy,
                                             float* partial) {
  constexpr int kSlots = kNarrowChannelGroup * kNarrowConvMaxOut;
  DS_GRID_STRIDE(t, n) {
    float acc[kSlots];
    kernels::narrow_conv_weight_lane<O>(t, g, x, dy, acc);
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      if (s % kNarrowConvMaxOut >= O) continue;  // no such output channel: never read
      const float v = narrow_warp_sum(acc[s]);
      if (t % kNarrowLanes == 0) partial[t / kNarrowLanes * kSlots + s] = v;
    }
  }
}

// The window path (kh, kw <= 4): one warp per (image, input channel, block of 32 columns); only
// the slots of real taps and output channels are summed and written (the conditions are the
// same for the whole warp).
template <int O, typename X>
__global__ void narrow_weight_window_kernel(int64_t n, NarrowConv g, const X* x, const float* dy,
                                            float* partial) {
  DS_GRID_STRIDE(t, n) {
    float acc[kernels::kNarrowWindowSlots];
    kernels::narrow_conv_weight_window_lane<O>(t, g, x, dy, acc);
#pragma unroll
    for (int s = 0; s < kernels::kNarrowWindowSlots; ++s) {
      if (!kernels::narrow_window_slot_used(s, g)) continue;
      const float v = narrow_warp_sum(acc[s]);
      if (t % kNarrowLanes == 0) partial[t / kNarrowLanes * kernels::kNarrowWindowSlots + s] = v;
    }
  }
}

template <int O>
__global__ void narrow_bias_partial_kernel(int64_t n, NarrowConv g, const float* dy, float* partial) {
  DS_GRID_STRIDE(t, n) {
    float acc[kNarrowConvMaxOut];
    kernels::narrow_conv_bias_lane<O>(t, g, dy, acc);
#pragma unroll
    for (int oc = 0; oc < O; ++oc) {
      const float v = narrow_warp_sum(acc[oc]);
      if (t % kNarrowLanes == 0) partial[t / kNarrowLanes * kNarrowConvMaxOut + oc] = v;
    }
  }
}

__global__ void narrow_weight_finish_kernel(int64_t n, NarrowConv g, const float* partial, float* dw) {
  DS_GRID_STRIDE(i, n) {
    if (g.window)
      kernels::narrow_conv_weight_window_finish_at(i, g, partial, dw);
    else
      kernels::narrow_conv_weight_finish_at(i, g, partial, dw);
  }
}

__global__ void narrow_bias_finish_kernel(NarrowConv g, const float* partial, float* db) {
  DS_GRID_STRIDE(oc, g.o) kernels::narrow_conv_bias_finish_at(int(oc), g, partial, db);
}

// Calls f(std::integral_constant<int, O>{}) for the plan's output channel count.
template <typename F>
void with_out_channels(int o, F&& f) {
  switch (o) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    default: throw Error("narrow convolution with " + std::to_string(o) + " output channels (1 to 4 expected)");
  }
}

}  // namespace

int CudaBackend::sm_count() {
  if (sm_count_ == 0) DS_CUDA(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device_));
  return sm_count_;
}

// The window kernels (kernels up to 4x4) are the default; DOWNSCALE_CUDA_NARROW_WINDOW=0 runs the
// per-pixel and per-tap kernels they replaced, for measuring one against the other.
NarrowConv CudaBackend::narrow_geometry(const ConvDesc& d) const {
  NarrowConv g = kernels::make_narrow_conv(d);
  g.window = g.window && narrow_window_;
  return g;
}

float* CudaBackend::narrow_pack(const kernels::NarrowConv& g, const float* w) {
  const int64_t n = kernels::narrow_packed_weights(g);
  auto* wp = static_cast<float*>(cache_.allocate(size_t(n) * sizeof(float)));
  narrow_pack_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, g, w, wp);
  DS_CUDA_LAUNCHED();
  return wp;
}

// Grid of a kernel over n threads; with `bytes` of packed weights in shared memory, no more blocks
// than are resident at once (kernels::narrow_shared_grid says why).
int CudaBackend::narrow_grid(int64_t n, const void* kernel, size_t bytes) {
  if (bytes == 0) return blocks_for(n);
  int per_sm = 0;
  DS_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, bytes));
  return kernels::narrow_shared_grid(blocks_for(n), sm_count(), per_sm);
}

void CudaBackend::narrow_conv_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  if (d.x16) return narrow_conv_forward_as(d, reinterpret_cast<const uint16_t*>(x), w, b, y);
  narrow_conv_forward_as(d, x, w, b, y);
}

template <typename X>
void CudaBackend::narrow_conv_forward_as(const ConvDesc& d, const X* x, const float* w, const float* b, float* y) {
  NarrowConv g = narrow_geometry(d);
  g.xk = half16_kind();  // read only for a 16-bit x
  float* wp = narrow_pack(g, w);
  // Kernels up to 4x4: one thread per column of kNarrowStripRows output rows, else per pixel.
  const int64_t n4 = kernels::narrow_packed_weights(g) / 4,
                n = g.window ? int64_t(g.n) * kernels::narrow_strips(g) * g.ow : int64_t(g.n) * g.oh * g.ow;
  const size_t bytes = size_t(n4) * sizeof(float4);
  const bool shared = bytes <= kNarrowSharedBytes;
  with_out_channels(g.o, [&](auto o) {
    constexpr int O = decltype(o)::value;
    if (shared) {
      const auto kernel = g.window ? narrow_forward_window_kernel<O, true, X> : narrow_forward_kernel<O, true, X>;
      kernel<<<narrow_grid(n, reinterpret_cast<const void*>(kernel), bytes), kThreads, bytes, stream_>>>(n, g, n4, x,
                                                                                                        wp, b, y);
    } else {
      const auto kernel = g.window ? narrow_forward_window_kernel<O, false, X> : narrow_forward_kernel<O, false, X>;
      kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, g, n4, x, wp, b, y);
    }
  });
  DS_CUDA_LAUNCHED();
  cache_.release(wp);  // reused only by work queued after this
}

void CudaBackend::narrow_conv_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) {
  const NarrowConv g = narrow_geometry(d);
  float* wp = narrow_pack(g, w);
  // Kernels up to 4x4: one thread per input column of 4 rows and 8 channels, else per pixel.
  const int64_t rows = g.window ? kernels::narrow_input_strips(g) : g.h;
  const int64_t n4 = kernels::narrow_packed_weights(g) / 4, n = int64_t(g.n) * g.groups * rows * g.w;
  const size_t bytes = size_t(n4) * sizeof(float4);
  const bool shared = bytes <= kNarrowSharedBytes;
  with_out_channels(g.o, [&](auto o) {
    constexpr int O = decltype(o)::value;
    if (shared) {
      const auto kernel = g.window ? narrow_backward_data_window_kernel<O, true> : narrow_backward_data_kernel<O, true>;
      kernel<<<narrow_grid(n, reinterpret_cast<const void*>(kernel), bytes), kThreads, bytes, stream_>>>(n, g, n4, dy,
                                                                                                        wp, dx);
    } else {
      const auto kernel = g.window ? narrow_backward_data_window_kernel<O, false> : narrow_backward_data_kernel<O, false>;
      kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, g, n4, dy, wp, dx);
    }
  });
  DS_CUDA_LAUNCHED();
  cache_.release(wp);
}

void CudaBackend::narrow_conv_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw,
                                               float* db) {
  if (d.x16) return narrow_conv_backward_weights_as(d, reinterpret_cast<const uint16_t*>(x), dy, dw, db);
  narrow_conv_backward_weights_as(d, x, dy, dw, db);
}

template <typename X>
void CudaBackend::narrow_conv_backward_weights_as(const ConvDesc& d, const X* x, const float* dy, float* dw,
                                                  float* db) {
  static_assert(kThreads % kNarrowLanes == 0, "a block must hold whole warps");
  NarrowConv g = narrow_geometry(d);
  g.xk = half16_kind();  // read only for a 16-bit x
  auto* partial = static_cast<float*>(cache_.allocate(size_t(kernels::narrow_weight_partials(g)) * sizeof(float)));
  const int64_t n = kernels::narrow_weight_warps(g) * kNarrowLanes;
  const int64_t nw = int64_t(g.o) * g.c * g.kh * g.kw;
  with_out_channels(g.o, [&](auto o) {
    constexpr int O = decltype(o)::value;
    if (g.window)
      narrow_weight_window_kernel<O, X><<<blocks_for(n), kThreads, 0, stream_>>>(n, g, x, dy, partial);
    else
      narrow_weight_partial_kernel<O, X><<<blocks_for(n), kThreads, 0, stream_>>>(n, g, x, dy, partial);
  });
  DS_CUDA_LAUNCHED();
  narrow_weight_finish_kernel<<<blocks_for(nw), kThreads, 0, stream_>>>(nw, g, partial, dw);
  DS_CUDA_LAUNCHED();
  cache_.release(partial);
  if (!db) return;
  auto* bias_partial = static_cast<float*>(cache_.allocate(size_t(kernels::narrow_bias_partials(g)) * sizeof(float)));
  const int64_t nb = int64_t(g.bias_chunks) * kNarrowLanes;
  with_out_channels(g.o, [&](auto o) {
    constexpr int O = decltype(o)::value;
    narrow_bias_partial_kernel<O><<<blocks_for(nb), kThreads, 0, stream_>>>(nb, g, dy, bias_partial);
  });
  DS_CUDA_LAUNCHED();
  narrow_bias_finish_kernel<<<1, kNarrowConvMaxOut, 0, stream_>>>(g, bias_partial, db);
  DS_CUDA_LAUNCHED();
  cache_.release(bias_partial);
}

// Per pass: the narrow kernels or cuDNN. Unless DOWNSCALE_CUDA_NARROW forces it, each pass runs
// both ways on zeroed scratch tensors of the plan's shapes (from the caching allocator, so the
// blocks the plan's Find scratch just returned are reused): once to warm up (module loading, cuDNN's first
// call), then kNarrowReps times between two events; the faster stays. The whole pass is timed
// (padding copies, 16-bit casts, bias), as training runs it. A side whose timing fails loses
// its pass to the other; if the scratch cannot be had, cuDNN stays.
void CudaBackend::choose_narrow(const ConvDesc& d, ConvPlan& p) {
  // The narrow kernels write FP32: a plan with a 16-bit output (a 16-bit activation) stays on
  // cuDNN for all three passes, DOWNSCALE_CUDA_NARROW=1 included (MNN's head writes FP32). A
  // 16-bit input is widened as they load it (NarrowConv::xk); the timing below runs the passes
  // with d's flags (its zeroed FP32 x reads as 16-bit zeros).
  if (!kernels::narrow_conv_applies(d) || d.y16) return;
  p.narrow_applies = true;
  if (narrow_mode_ >= 0) {
    p.narrow_fwd = p.narrow_bwd_data = p.narrow_bwd_weights = narrow_mode_ == 1;
    return;
  }
  constexpr int kNarrowReps = 2;
  const Shape out = d.out();
  const int64_t nx = d.in.size(), nw = int64_t(d.out_c) * d.in.c * d.kh * d.kw, ny = out.size();
  float *x = nullptr, *dx = nullptr, *w = nullptr, *dw = nullptr, *b = nullptr, *db = nullptr, *y = nullptr;
  p.timing_paths = true;
  try {
    x = allocate(nx);
    dx = allocate(nx);
    w = allocate(nw);
    dw = allocate(nw);
    b = allocate(d.out_c);
    db = allocate(d.out_c);
    y = allocate(ny);
    for (auto [buf, n] : {std::pair{x, nx}, {w, nw}, {b, int64_t(d.out_c)}, {y, ny}})
      DS_CUDA(cudaMemsetAsync(buf, 0, size_t(n) * sizeof(float), stream_));
    const std::function<void()> passes[3] = {[&] { conv2d_forward(d, x, w, b, y); },
                                             [&] { conv2d_backward_data(d, y, w, dx); },
                                             [&] { conv2d_backward_weights(d, x, y, dw, db); }};
    bool* flags[3] = {&p.narrow_fwd, &p.narrow_bwd_data, &p.narrow_bwd_weights};
    for (int k = 0; k < 3; ++k) {
      // Each side on its own: a side that fails (cuDNN refusing every algorithm for this shape
      // and precision, say) loses the pass to the other, its time -1; both failing leaves cuDNN.
      for (bool narrow : {false, true}) {
        *flags[k] = narrow;
        float& ms = (narrow ? p.narrow_ms : p.cudnn_ms)[k];
        try {
          ms = time_runs(passes[k], kNarrowReps);
        } catch (const Error&) {
          ms = -1;
          cudaGetLastError();  // a failed call leaves no error for the next check to misreport
        }
      }
      *flags[k] = p.narrow_ms[k] >= 0 && (p.cudnn_ms[k] < 0 || p.narrow_ms[k] < p.cudnn_ms[k]);
    }
  } catch (const Error&) {
    p.narrow_fwd = p.narrow_bwd_data = p.narrow_bwd_weights = false;  // cuDNN, as without this path
    for (int k = 0; k < 3; ++k) p.narrow_ms[k] = p.cudnn_ms[k] = -1;
  }
  cudaGetLastError();  // a failed call leaves no error for the next check to misreport
  p.timing_paths = false;
  for (float* buf : {x, dx, w, dw, b, db, y})
    if (buf) release(buf);
}

std::string CudaBackend::narrow_summary(const ConvPlan& p) const {
  if (!p.narrow_applies) return "";
  if (narrow_mode_ == 0) return "narrow FP32 kernels off (DOWNSCALE_CUDA_NARROW=0)";
  if (narrow_mode_ == 1) return "narrow FP32 kernels for every pass (DOWNSCALE_CUDA_NARROW=1)";
  if (p.narrow_ms[0] < 0 && p.narrow_ms[1] < 0 && p.narrow_ms[2] < 0)
    return "narrow FP32 kernels not used (timing them failed)";
  std::string passes;
  const char* const names[3] = {"forward", "backward data", "backward weights"};
  const bool used[3] = {p.narrow_fwd, p.narrow_bwd_data, p.narrow_bwd_weights};
  for (int k = 0; k < 3; ++k)
    if (used[k]) passes += (passes.empty() ? "" : ", ") + std::string(names[k]);
  char times[160];
  std::snprintf(times, sizeof times, " (ms narrow/cuDNN, -1 where it failed: forward %.3f/%.3f, data %.3f/%.3f, weights %.3f/%.3f)",
                p.narrow_ms[0], p.cudnn_ms[0], p.narrow_ms[1], p.cudnn_ms[1], p.narrow_ms[2], p.cudnn_ms[2]);
  return "narrow FP32 kernels for " + (passes.empty() ? std::string("no pass") : passes) + times;
}

}  // namespace ds::model
