// CudaBackend's upsample_conv2d_*: nearest upsampling by f then a 'same' convolution, run as one
// cuDNN convolution on the small input with O*f*f output channels (the polyphase form, as the CPU
// backend does it: model/cpu/dnnl_upsample_conv.cpp). For MNN's x2 then 8x8 that is 2.56x fewer
// FLOPs, and the upsampled input (and, backward, its gradient) is never written. The folds and
// the phase interleave are grid-stride loops around bodies from model/kernels/polyphase.h, which
// the CPU tests run against the default upsample-then-convolve path. The bias and, for the
// relu form, the ReLU are applied in the interleave, and backward masks and de-interleaves the
// output gradient once for both gradients (model/kernels/polyphase.h). The folded weights and the
// small output come from the caching allocator and go back to it after the queued work.
#include <type_traits>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/lane_tree.h"
#include "model/kernels/polyphase.h"
#include "model/kernels/polyphase_nhwc.h"

namespace ds::model {

namespace {

using namespace kernels;

__global__ void fold_weights_kernel(int64_t n, Polyphase p, const float* w, float* ws) {
  DS_GRID_STRIDE(i, n) fold_weights_at(i, p, w, ws);
}

__global__ void unfold_weight_grads_kernel(int64_t n, Polyphase p, const float* dws, float* dw) {
  DS_GRID_STRIDE(i, n) unfold_weight_grads_at(i, p, dws, dw);
}

__global__ void unfold_bias_grad_kernel(int64_t n, int f, const float* dbs, float* db) {
  DS_GRID_STRIDE(i, n) unfold_bias_grad_at(i, f, dbs, db);
}

// The two big-grid passes in row form (model/kernels/polyphase.h says why): a warp per big row
// (grid-stride over rows), its lanes over the row's f * W columns, so the row's decode (64-bit
// divisions) is paid once per lane and row, not once per element as with a block per row (MNN's
// up2_conv1 spent about 0.9 ms a pass outside its convolution on an H200, in TF32 and BF16 alike,
// for 0.15 to 0.3 ms of bytes). F: the phase count at compile time (2) or 0 (p.f at run time).
#define DS_ROW_PER_WARP(r, rows)                                                                      \
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes; r < (rows);            \
       r += int64_t(gridDim.x) * blockDim.x / kLanes)
#define DS_ROW_LANES(x, cols) for (int x = int(threadIdx.x % kLanes); x < (cols); x += kLanes)

template <int F>
__global__ void phase_interleave_bias_relu_kernel(int64_t rows, Polyphase p, const float* small, const float* b,
                                                  bool relu, float* big) {
  const int cols = phase_f<F>(p) * p.w;
  DS_ROW_PER_WARP(r, rows) {
    const PhaseRow row = phase_row<F>(r, p);
    DS_ROW_LANES(x, cols) phase_interleave_bias_relu_row_at<F>(r, x, row, p, small, b, relu, big);
  }
}

// An FP32 small output into a 16-bit activation output (rounded after bias and ReLU).
template <int F>
__global__ void phase_interleave_bias_relu16_kernel(int64_t rows, Polyphase p, const float* small, const float* b,
                                                    bool relu, Half16 k, uint16_t* big) {
  const int cols = phase_f<F>(p) * p.w;
  DS_ROW_PER_WARP(r, rows) {
    const PhaseRow row = phase_row<F>(r, p);
    DS_ROW_LANES(x, cols) phase_interleave_bias_relu_row_at<F>(r, x, row, p, small, b, relu, k, big);
  }
}

// Big: float, or uint16_t for a 16-bit activation output.
template <int F, typename Big>
__global__ void phase_interleave_half16_bias_relu_kernel(int64_t rows, Polyphase p, Half16 k, const uint16_t* small,
                                                         const float* b, bool relu, Big* big) {
  const int cols = phase_f<F>(p) * p.w;
  DS_ROW_PER_WARP(r, rows) {
    const PhaseRow row = phase_row<F>(r, p);
    DS_ROW_LANES(x, cols) phase_interleave_half16_bias_relu_row_at<F>(r, x, row, p, k, small, b, relu, big);
  }
}

// Y: the forward output's storage, float or uint16_t (a 16-bit activation).
template <int F, typename Y>
__global__ void phase_deinterleave_relu_grad_half16_kernel(int64_t rows, Polyphase p, Half16 k, const Y* y,
                                                           const float* dy, float* dys, uint16_t* dysh) {
  const int cols = phase_f<F>(p) * p.w;
  DS_ROW_PER_WARP(r, rows) {
    const PhaseRow row = phase_row<F>(r, p);
    DS_ROW_LANES(x, cols) phase_deinterleave_relu_grad_half16_row_at<F>(r, x, row, p, k, y, dy, dys, dysh);
  }
}

template <int F>
__global__ void phase_deinterleave_relu_grad_kernel(int64_t rows, Polyphase p, const float* y, const float* dy,
                                                    float* dys) {
  const int cols = phase_f<F>(p) * p.w;
  DS_ROW_PER_WARP(r, rows) {
    const PhaseRow row = phase_row<F>(r, p);
    DS_ROW_LANES(x, cols) phase_deinterleave_relu_grad_row_at<F>(r, x, row, p, y, dy, dys);
  }
}

#undef DS_ROW_PER_WARP
#undef DS_ROW_LANES

// The same two passes with the 16-bit small grid in NHWC (DOWNSCALE_CUDA_LAYOUT=nhwc): a block per
// tile of kTile columns w by kTile big rows r (model/kernels/polyphase_nhwc.h's phase_tile_at and
// phase_blocks_*), kTile x kTileRows threads, the two phases around a barrier; small rows beyond
// the grid's z in a loop (the same for every thread of a block), a barrier before the tile is
// refilled.
template <int F>
__global__ void phase_interleave_nhwc16_bias_relu_kernel(Polyphase p, Half16 k, const uint16_t* small, const float* b,
                                                         bool relu, float* big) {
  __shared__ PhaseTile t;
  for (int64_t z = blockIdx.z; z < phase_rows(p); z += gridDim.z) {
    const PhaseTileAt a = phase_tile_at(p, blockIdx.x, blockIdx.y, z);
    load_phase_nhwc16_tile<F>(a, threadIdx.x, threadIdx.y, p, k, small, t);
    __syncthreads();
    store_phase_big_tile<F>(a, threadIdx.x, threadIdx.y, p, t, b, relu, big);
    __syncthreads();
  }
}

template <int F>
__global__ void phase_deinterleave_relu_grad_nhwc16_kernel(Polyphase p, Half16 k, const float* y, const float* dy,
                                                           float* dys, uint16_t* dysh) {
  __shared__ PhaseTile t;
  for (int64_t z = blockIdx.z; z < phase_rows(p); z += gridDim.z) {
    const PhaseTileAt a = phase_tile_at(p, blockIdx.x, blockIdx.y, z);
    load_big_relu_grad_tile<F>(a, threadIdx.x, threadIdx.y, p, y, dy, dys, t);
    __syncthreads();
    store_phase_nhwc16_tile<F>(a, threadIdx.x, threadIdx.y, p, k, t, dysh);
    __syncthreads();
  }
}

// NHWC activations: the small NHWC output straight onto the 16-bit NHWC big output (a flat pass
// in the small output's order), and the de-interleave masked by that output (three phases: the
// mask tile, the masked load, the store; polyphase_nhwc.h).
// The element's decode in 32 bits where the indices fit, as cuda_conv.cu's NHWC epilogue does.
template <int F>
__global__ void phase_interleave_nhwc16_to_nhwc16_kernel(int64_t n, Polyphase p, Half16 k, const uint16_t* small,
                                                         const float* b, bool relu, uint16_t* big) {
  grid_stride_int_where_it_fits(n, [&](auto i) {
    phase_interleave_nhwc16_to_nhwc16_at<F, decltype(i)>(i, p, k, small, b, relu, big);
  });
}

template <int F>
__global__ void phase_deinterleave_masked_nhwc16_kernel(Polyphase p, Half16 k, const uint16_t* y, const float* dy,
                                                        float* dys, uint16_t* dysh) {
  __shared__ PhaseTile m, t;
  for (int64_t z = blockIdx.z; z < phase_rows(p); z += gridDim.z) {
    const PhaseTileAt a = phase_tile_at(p, blockIdx.x, blockIdx.y, z);
    load_phase_mask_nhwc16_tile<F>(a, threadIdx.x, threadIdx.y, p, k, y, m);
    __syncthreads();
    load_big_relu_grad_tile_masked<F>(a, threadIdx.x, threadIdx.y, p, m, dy, dys, t);
    __syncthreads();
    store_phase_nhwc16_tile<F>(a, threadIdx.x, threadIdx.y, p, k, t, dysh);
    __syncthreads();
  }
}

// Calls go(std::integral_constant<int, F>{}): F = 2 for a x2 upsampling (MNN's both) unless
// DOWNSCALE_CUDA_PHASE_F2=0, else F = 0 (any f, read at run time).
template <class Go>
void with_phase_f(const Polyphase& p, bool specialize, Go&& go) {
  if (specialize && p.f == 2)
    go(std::integral_constant<int, 2>{});
  else
    go(std::integral_constant<int, 0>{});
}

dim3 phase_tile_grid(const Polyphase& p) { return dim3(phase_blocks_x(p), phase_blocks_y(p), phase_blocks_z(p)); }
const dim3 kPhaseTileBlock(kTile, kTileRows);

// Launch shape of a row-form pass: kThreads threads, a warp per row (kThreads / 32 rows a block),
// up to 2^20 blocks, then a stride.
struct RowLaunch {
  int64_t rows;
  int blocks, threads;
};
static_assert(kThreads % kLanes == 0, "the row kernels take whole warps");
RowLaunch row_launch(const Polyphase& p) {
  const int64_t rows = int64_t(p.n) * p.o * p.f * p.h, per_block = kThreads / kLanes;
  const int64_t blocks = (rows + per_block - 1) / per_block, cap = int64_t(1) << 20;
  return RowLaunch{rows, int(blocks < cap ? blocks : cap), kThreads};
}

int64_t folded_weights(const ConvDesc& small) { return int64_t(small.out_c) * small.in.c * small.kh * small.kw; }

}  // namespace

int64_t CudaBackend::upsample_conv2d_scratch(const ConvDesc& d, int f) const {
  (void)conv_key(d);  // refuses a 16-bit activation outside the mode that takes them, before any pass
  return polyphase_applies(d, f) ? 0 : Backend::upsample_conv2d_scratch(d, f);
}

// Folds w into a new buffer of the small convolution's weights (the caller releases it).
float* CudaBackend::fold_weights(const Polyphase& p, const ConvDesc& small, const float* w) {
  const int64_t n = folded_weights(small);
  float* ws = allocate(n);
  fold_weights_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, p, w, ws);
  DS_CUDA_LAUNCHED();
  return ws;
}

void CudaBackend::upsample_conv2d_forward(const ConvDesc& d, int f, const float* x, const float* w, const float* b,
                                          float* y, float* scratch) {
  if (!polyphase_applies(d, f)) return Backend::upsample_conv2d_forward(d, f, x, w, b, y, scratch);
  polyphase_forward(d, f, x, w, b, y, false);
}

void CudaBackend::upsample_conv2d_relu_forward(const ConvDesc& d, int f, const float* x, const float* w,
                                               const float* b, float* y, float* scratch) {
  if (!polyphase_applies(d, f)) return Backend::upsample_conv2d_relu_forward(d, f, x, w, b, y, scratch);
  polyphase_forward(d, f, x, w, b, y, true);
}

// The small convolution without bias, then one pass that adds the bias (the same one addition
// cudnnAddTensor made on the small grid) and applies the ReLU while writing the big grid: the
// output is written once, where bias add, interleave and a ReLU layer made three passes over it.
void CudaBackend::polyphase_forward(const ConvDesc& d, int f, const float* x, const float* w, const float* b,
                                    float* y, bool relu) {
  ConvDesc small;
  const Polyphase p = make_polyphase(d, f, small);
  small.y16 = false;  // the small output is the kept 16-bit scratch, not an activation
  if ((d.x16 || d.y16) && !fused16_polyphase(p))
    throw Error("internal: a 16-bit activation outside the fused polyphase path (NHWC: up to " +
                std::to_string(kernels::kMaxPhaseF) + " phases a side)");
  float* ws = fold_weights(p, small, w);
  const RowLaunch rl = row_launch(p);
  // Fused 16-bit casts: the small output stays 16-bit (in the scratch layout) and the interleave
  // widens it as it reads.
  if (fused16_polyphase(p) && !conv_plan(small).narrow_fwd) {
    void* ysh = nullptr;
    try {
      ysh = conv_forward_pass(small, x, ws, nullptr, nullptr, false, true);
    } catch (...) {
      release(ws);
      throw;
    }
    const int64_t n_small = small.out().size();
    const auto* s16 = static_cast<const uint16_t*>(ysh);
    with_phase_f(p, phase_f2_, [&](auto fc) {
      constexpr int F = decltype(fc)::value;
      if (rl.rows > 0 && nhwc_ && d.y16) {  // NHWC activations: NHWC onto NHWC, rounded after bias and ReLU
        phase_interleave_nhwc16_to_nhwc16_kernel<F><<<blocks_for(n_small), kThreads, 0, stream_>>>(
            n_small, p, half16_kind(), s16, b, relu, reinterpret_cast<uint16_t*>(y));
      } else if (rl.rows > 0 && nhwc_) {  // an empty batch: no grid of 0 blocks
        phase_interleave_nhwc16_bias_relu_kernel<F><<<phase_tile_grid(p), kPhaseTileBlock, 0, stream_>>>(
            p, half16_kind(), s16, b, relu, y);
      } else if (rl.rows > 0 && d.y16) {  // the big output is a 16-bit activation: rounded after bias and ReLU
        phase_interleave_half16_bias_relu_kernel<F><<<rl.blocks, rl.threads, 0, stream_>>>(
            rl.rows, p, half16_kind(), s16, b, relu, reinterpret_cast<uint16_t*>(y));
      } else if (rl.rows > 0) {
        phase_interleave_half16_bias_relu_kernel<F><<<rl.blocks, rl.threads, 0, stream_>>>(rl.rows, p, half16_kind(),
                                                                                            s16, b, relu, y);
      }
    });
    cache_.release(ysh);  // before the launch check: reused only by work queued after this
    if (rl.rows > 0) DS_CUDA_LAUNCHED();
    release(ws);
    return;
  }
  // The small convolution on the narrow FP32 kernels (out_c * f * f <= 4) or the separate casts:
  // an FP32 small output (a 16-bit x is widened by the narrow forward), interleaved into y in its
  // own type.
  const int64_t n_small = small.out().size();
  float* ys = allocate(n_small);
  conv2d_forward(small, x, ws, nullptr, ys);
  with_phase_f(p, phase_f2_, [&](auto fc) {
    constexpr int F = decltype(fc)::value;
    if (rl.rows > 0 && d.y16) {
      phase_interleave_bias_relu16_kernel<F><<<rl.blocks, rl.threads, 0, stream_>>>(rl.rows, p, ys, b, relu,
                                                                                    half16_kind(),
                                                                                    reinterpret_cast<uint16_t*>(y));
      DS_CUDA_LAUNCHED();
    } else if (rl.rows > 0) {  // an empty batch: no grid of 0 blocks
      phase_interleave_bias_relu_kernel<F><<<rl.blocks, rl.threads, 0, stream_>>>(rl.rows, p, ys, b, relu, y);
      DS_CUDA_LAUNCHED();
    }
  });
  release(ys);  // back to the cache; later work on the stream runs after the queued kernels
  release(ws);
}

int64_t CudaBackend::upsample_conv2d_backward_scratch(const ConvDesc& d, int f, bool relu) const {
  (void)conv_key(d);  // as above
  return polyphase_applies(d, f) ? 0 : Backend::upsample_conv2d_backward_scratch(d, f, relu);
}

// One pass over the big y and dy writes the masked small gradient dys; the weight and data
// gradients both read that one copy (the separate ops de-interleaved dy once each, after a ReLU
// layer's pass), and the weights are folded once, only when dx is wanted.
void CudaBackend::upsample_conv2d_backward(const ConvDesc& d, int f, const float* x, const float* y,
                                           const float* dy, const float* w, float* dx, float* dw, float* db,
                                           float* scratch) {
  if (!polyphase_applies(d, f)) return Backend::upsample_conv2d_backward(d, f, x, y, dy, w, dx, dw, db, scratch);
  polyphase_backward(d, f, x, y, dy, w, dx, dw, db);
}

void CudaBackend::upsample_conv2d_backward_data(const ConvDesc& d, int f, const float* dy, const float* w, float* dx,
                                                float* scratch) {
  if (!polyphase_applies(d, f)) return Backend::upsample_conv2d_backward_data(d, f, dy, w, dx, scratch);
  polyphase_backward(d, f, nullptr, nullptr, dy, w, dx, nullptr, nullptr);
}

void CudaBackend::upsample_conv2d_backward_weights(const ConvDesc& d, int f, const float* x, const float* dy,
                                                   float* dw, float* db, float* scratch) {
  if (!polyphase_applies(d, f)) return Backend::upsample_conv2d_backward_weights(d, f, x, dy, dw, db, scratch);
  polyphase_backward(d, f, x, nullptr, dy, nullptr, nullptr, dw, db);
}

// The polyphase backward: y null (no ReLU) is a plain de-interleave; dw null skips the weight
// and bias gradients, dx null the data gradient.
void CudaBackend::polyphase_backward(const ConvDesc& d, int f, const float* x, const float* y, const float* dy,
                                     const float* w, float* dx, float* dw, float* db) {
  ConvDesc small;
  const Polyphase p = make_polyphase(d, f, small);
  small.y16 = false;  // as in polyphase_forward: the same plan
  if ((d.x16 || d.y16) && !fused16_polyphase(p))
    throw Error("internal: a 16-bit activation outside the fused polyphase path (NHWC: up to " +
                std::to_string(kernels::kMaxPhaseF) + " phases a side)");
  const int64_t n_small = small.out().size(), n_ws = folded_weights(small), n_w = int64_t(d.out_c) * d.in.c * d.kh * d.kw;
  // dys and dysh go back to the cache at the end, or if a launch or a pass throws.
  CacheBlock give_dys{cache_}, give_dysh{cache_};
  float* dys = allocate(n_small);
  give_dys.p = dys;
  const RowLaunch rl = row_launch(p);
  // Fused 16-bit casts: the de-interleave also writes the rounded copy both small passes read
  // (they would each cast dys again); dys itself stays for the bias gradient and narrow passes.
  void* dysh = fused16_polyphase(p) ? half16_scratch(small.out()) : nullptr;
  give_dysh.p = dysh;
  auto* gh = static_cast<uint16_t*>(dysh);
  with_phase_f(p, phase_f2_, [&](auto fc) {
    constexpr int F = decltype(fc)::value;
    if (rl.rows > 0 && dysh && nhwc_ && y && d.y16) {  // NHWC activations: the mask from the 16-bit NHWC output
      phase_deinterleave_masked_nhwc16_kernel<F><<<phase_tile_grid(p), kPhaseTileBlock, 0, stream_>>>(
          p, half16_kind(), reinterpret_cast<const uint16_t*>(y), dy, dys, gh);
      DS_CUDA_LAUNCHED();
    } else if (rl.rows > 0 && dysh && nhwc_) {
      phase_deinterleave_relu_grad_nhwc16_kernel<F><<<phase_tile_grid(p), kPhaseTileBlock, 0, stream_>>>(
          p, half16_kind(), y, dy, dys, gh);
      DS_CUDA_LAUNCHED();
    } else if (rl.rows > 0 && dysh && y && d.y16) {  // the mask from the 16-bit activation output
      phase_deinterleave_relu_grad_half16_kernel<F><<<rl.blocks, rl.threads, 0, stream_>>>(
          rl.rows, p, half16_kind(), reinterpret_cast<const uint16_t*>(y), dy, dys, gh);
      DS_CUDA_LAUNCHED();
    } else if (rl.rows > 0 && dysh) {
      phase_deinterleave_relu_grad_half16_kernel<F><<<rl.blocks, rl.threads, 0, stream_>>>(rl.rows, p, half16_kind(),
                                                                                           y, dy, dys, gh);
      DS_CUDA_LAUNCHED();
    } else if (rl.rows > 0) {
      phase_deinterleave_relu_grad_kernel<F><<<rl.blocks, rl.threads, 0, stream_>>>(rl.rows, p, y, dy, dys);
      DS_CUDA_LAUNCHED();
    }
  });
  // Deferred (weight_pass): reads x (an activation) and dys, dysh (blocks held until the join).
  // dws and dbs go back to the cache at the end, or if the pass or a launch throws.
  if (dw) weight_pass([&] {
    CacheBlock give_dws{cache_}, give_dbs{cache_};
    float* dws = allocate(n_ws);
    give_dws.p = dws;
    float* dbs = db ? allocate(small.out_c) : nullptr;
    give_dbs.p = dbs;
    conv_backward_weights_pass(small, x, dys, dysh, dws, dbs);
    unfold_weight_grads_kernel<<<blocks_for(n_w), kThreads, 0, stream_>>>(n_w, p, dws, dw);
    DS_CUDA_LAUNCHED();
    if (db) {
      unfold_bias_grad_kernel<<<blocks_for(d.out_c), kThreads, 0, stream_>>>(d.out_c, f, dbs, db);
      DS_CUDA_LAUNCHED();
    }
  });
  if (dx) {
    float* ws = fold_weights(p, small, w);
    conv_backward_data_pass(small, dys, dysh, ws, dx);  // lands on the small grid: the upsampling's backward included
    release(ws);
  }
}

}  // namespace ds::model
