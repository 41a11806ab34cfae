// A convolution's weight gradient as im2col + strided-batched cuBLAS GEMMs, the alternative to
// cuDNN's backward filter pass (model/kernels/wgrad_gemm.h has the algebra, the schedule and why).
// choose_wgrad_gemm times both at a plan's first weight gradient, as choose_narrow does for the
// narrow kernels, and keeps the faster; DOWNSCALE_CUDA_WGRAD_GEMM=0|1 forces the choice. In every
// math mode: TF32/FP32 operands, or in bf16/fp16 the unrolling rounds to 16 bits and the GEMM reads
// the pass's rounded dY, in the 16-bit layout (NCHW, or NHWC with the unrolling pixel-major), and x
// as it comes: FP32 NCHW or a 16-bit activation (NCHW or NHWC). On an H100 (2026-11-23) cuDNN's
// BF16 NCHW filter pass of MNN's 7x7 and 9x9 branch convolutions took 0.32-0.38 ms, twice its
// TF32 one; on an H200 (2026-11-29) its BF16 NHWC one of the 50 -> 25 branches 0.41-0.52 ms.
// The GEMM writes dW in FP32 where cuDNN's 16-bit pass rounds it to 16 bits before widening: on
// purpose (the more accurate of the two; the master weights are FP32). As with cudnnFind's own
// choices, which way a plan goes may differ between runs, and with it the last bits of dW.
#include <cstdint>
#include <cstdio>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/wgrad_gemm.h"

namespace ds::model {

namespace {

// A block per (sample of the chunk, row of col) plane, grid-stride over planes; its threads over
// the plane's pixels: the row's decoding is one per plane, the pixel's two 32-bit divisions.
// Store writes element i of col: FP32 as it is, or rounded to 16 bits.
struct StoreF32 {
  float* col;
  __device__ void operator()(int64_t i, float v) const { col[i] = v; }
};
struct StoreHalf16 {
  uint16_t* col;
  kernels::Half16 kind;
  __device__ void operator()(int64_t i, float v) const { col[i] = kernels::to_half16(kind, v); }
};

// The unrolling's source: x's element at an offset, as a float (a 16-bit activation widened; the
// 16-bit store then rounds it back exactly).
struct SourceF32 {
  const float* x;
  __device__ float operator()(int64_t i) const { return x[i]; }
};
struct SourceHalf16 {
  const uint16_t* x;
  kernels::Half16 kind;
  __device__ float operator()(int64_t i) const { return kernels::from_half16(kind, x[i]); }
};

// NCHW order (row-major by row, col_n K x P).
template <typename Source, typename Store>
__global__ void im2col_kernel(int64_t planes, kernels::WgradGemm g, Source src, bool x_nhwc, Store store) {
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const int64_t sample = plane / g.rows, row = plane - sample * g.rows;
    const kernels::Im2colRow r = kernels::im2col_row(g, row);
    for (int pix = threadIdx.x; pix < g.pixels; pix += blockDim.x)
      store(plane * g.pixels + pix, kernels::im2col_value(g, src, x_nhwc, sample, r, pix));
  }
}

// NHWC order (pixel-major, col_n P x K): consecutive threads write consecutive elements.
template <typename Source, typename Store>
__global__ void im2col_nhwc_kernel(int64_t n, kernels::WgradGemm g, Source src, bool x_nhwc, Store store) {
  DS_GRID_STRIDE(e, n) {
    const kernels::Im2colNhwcAt at = kernels::im2col_nhwc_at(g, e);
    store(e, kernels::im2col_value(g, src, x_nhwc, at.sample, kernels::im2col_row(g, at.row), at.pix));
  }
}

__global__ void sum_partials_kernel(int64_t n, int parts, int64_t stride, const float* partial, float* dw) {
  DS_GRID_STRIDE(e, n) kernels::sum_partials_at(e, parts, stride, partial, dw);
}

__global__ void ohwi_to_oihw_kernel(int64_t n, kernels::WgradGemm g, const float* ohwi, float* oihw) {
  DS_GRID_STRIDE(e, n) kernels::ohwi_to_oihw_at(e, g, ohwi, oihw);
}

}  // namespace

void CudaBackend::gemm_backward_weights(const ConvDesc& d, const float* x, const float* dy, const void* dy16,
                                        float* dw, bool timing) {
  const Shape o = d.out();
  const bool h16 = half16();
  if (d.x16 && !h16) throw Error("internal: a 16-bit activation outside the 16-bit modes");
  // dY's rounded copy is in the 16-bit layout (nhwc_); x a 16-bit activation in that layout, or FP32 NCHW.
  const bool x_nhwc = d.x16 && nhwc_;
  const kernels::WgradGemm g =
      kernels::make_wgrad_gemm(d.in.n, d.in.c, d.in.h, d.in.w, d.kh, d.kw, d.stride, d.pad_top, d.pad_left, d.out_c,
                               o.h, o.w, wgrad_budget_bytes_, h16 ? 2 : 4, h16 && nhwc_);
  const int64_t nw = g.rows * g.out_c;
  if (nw == 0) return;
  if (g.n == 0 || g.pixels == 0) {  // no terms: the gradient is 0 (no GEMM with k = 0)
    fill(dw, nw, 0.0f);
    return;
  }
  // The unrolled input, the partial sums and dY's rounded copy (16 bits, when the caller has none)
  // come from the cache and go back to it: not the lane's grow-only workspace, where, when cuDNN
  // wins, up to 448 MiB per lane would stay. While choose_wgrad_gemm times this inside a lane
  // region, straight back: the device is idle but for this lane, whose later work is ordered
  // after this; held until the join, every timed run would pay a fresh cudaMalloc. A plan that
  // chose the GEMM, run inside a lane region, unrolls into its lane's workspace instead: the
  // cache holds releases until the join, so each of the region's GEMMs would take a block of its
  // own (about 1 GB over MNN's branches at batch 32), where the lane's workspace is reused in
  // stream order.
  void* col = nullptr;
  bool col_in_workspace = false;
  void* dy_cast = nullptr;
  float* partial = nullptr;
  float* ohwi = nullptr;  // NHWC: the GEMM's dW, OHWI, before its transpose into dw
  const auto give_back = [&] {
    for (void* b : {col_in_workspace ? nullptr : col, dy_cast, static_cast<void*>(partial),
                    static_cast<void*>(ohwi)}) {
      if (!b) continue;
      if (timing && concurrent())
        cache_.release_now(b);
      else
        cache_.release(b);  // reused only by work queued after this
    }
  };
  try {
    if (!g.direct) {
      const size_t bytes = size_t(kernels::wgrad_col_elements(g)) * size_t(g.col_bytes);
      col_in_workspace = concurrent() && !timing;
      col = col_in_workspace ? workspace(bytes) : cache_.allocate(bytes);
    }
    if (const int64_t np = kernels::wgrad_partial_floats(g)) partial = allocate(np);
    if (g.nhwc) ohwi = allocate(nw);
    float* result = g.nhwc ? ohwi : dw;  // what the GEMM (or the partials' sum) writes
    const void* b = dy;
    if (h16) b = dy16 ? dy16 : (dy_cast = to_half16(o, dy));  // in nhwc_'s layout, as g.nhwc says
    cublasHandle_t h = cublas();
    // TF32 tensor cores in tf32 mode, as cuDNN's descriptor allows them; plain FP32 in fp32 mode;
    // 16-bit operands with FP32 sums in bf16/fp16, as cuDNN's 16-bit passes compute.
    const cublasComputeType_t ct = math_ == MathMode::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const cudaDataType_t ab = !h16 ? CUDA_R_32F : math_ == MathMode::kBf16 ? CUDA_R_16BF : CUDA_R_16F;
    const size_t elem = size_t(g.col_bytes);
    const float one = 1.0f, zero = 0.0f;
    for (int chunk = 0; chunk < g.chunks; ++chunk) {
      const kernels::WgradGemmCall c = kernels::wgrad_gemm_call(g, chunk);
      const void* a = x + c.a_offset;  // direct: FP32 NCHW only
      if (!g.direct) {
        const int64_t first = int64_t(chunk) * g.per_chunk * g.c * int64_t(g.h) * g.w;  // the chunk's first sample
        const auto unroll = [&](auto src) {
          const int64_t planes = int64_t(c.batch) * g.rows, n = planes * g.pixels;
          if (g.nhwc)  // 16 bits only
            im2col_nhwc_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(
                n, g, src, x_nhwc, StoreHalf16{static_cast<uint16_t*>(col), half16_kind()});
          else if (h16)
            im2col_kernel<<<plane_blocks(planes), kThreads, 0, stream_>>>(
                planes, g, src, x_nhwc, StoreHalf16{static_cast<uint16_t*>(col), half16_kind()});
          else
            im2col_kernel<<<plane_blocks(planes), kThreads, 0, stream_>>>(planes, g, src, x_nhwc,
                                                                           StoreF32{static_cast<float*>(col)});
          DS_CUDA_LAUNCHED();
        };
        if (d.x16)
          unroll(SourceHalf16{reinterpret_cast<const uint16_t*>(x) + first, half16_kind()});
        else
          unroll(SourceF32{x + first});
        a = col;
      }
      const void* bc = static_cast<const char*>(b) + size_t(c.b_offset) * elem;
      DS_CUBLAS(cublasGemmStridedBatchedEx(h, c.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
                                           c.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, c.m, c.n, c.k, &one, a, ab,
                                           c.lda, c.stride_a,
                                           bc, ab, c.ldb, c.stride_b, c.accumulate ? &one : &zero,
                                           partial ? partial : result, CUDA_R_32F, c.ldc, c.stride_c, c.batch, ct,
                                           CUBLAS_GEMM_DEFAULT));
    }
    if (partial) {
      sum_partials_kernel<<<blocks_for(nw), kThreads, 0, stream_>>>(nw, g.per_chunk, nw, partial, result);
      DS_CUDA_LAUNCHED();
    }
    if (g.nhwc) {
      ohwi_to_oihw_kernel<<<blocks_for(nw), kThreads, 0, stream_>>>(nw, g, ohwi, dw);
      DS_CUDA_LAUNCHED();
    }
  } catch (...) {
    // Timed inside a lane region the blocks go straight back (release_now): on success the
    // timing's event wait comes before any other lane allocates, but a failure skips it, so wait
    // here for what this call queued, or another lane's next block could be one still in use.
    if (timing && concurrent()) cudaStreamSynchronize(stream_);
    give_back();
    throw;
  }
  give_back();
}

// The GEMM for a plan that chose it. Timing (choose_wgrad_gemm running it): errors go to the
// chooser, which keeps cuDNN. Otherwise a failure (out of memory for the unrolled input, a
// cuBLAS error) turns the plan back to cuDNN for good, with one line, as a refused cuDNN
// algorithm is replaced; false then, and the caller runs cuDNN's pass, which writes all of dw.
bool CudaBackend::gemm_weights_or_fall_back(const ConvDesc& d, ConvPlan& p, const float* x, const float* dy,
                                            const void* dy16, float* dw) {
  if (p.timing_paths) {
    gemm_backward_weights(d, x, dy, dy16, dw, true);
    return true;
  }
  try {
    gemm_backward_weights(d, x, dy, dy16, dw, false);
    return true;
  } catch (const Error& e) {
    cudaGetLastError();
    p.gemm_bwd_weights = false;
    conv_note(d, std::string("weight gradient by im2col + cuBLAS failed (") + e.what() + "); cuDNN from now on");
    return false;
  }
}

// Both ways on the first call's own x and dy, writing its dw (the call then writes it again;
// the bias gradient is left out: the same either way), so nothing is allocated for the timing
// (time_two_ways); the faster stays. If anything fails, cuDNN stays.
void CudaBackend::choose_wgrad_gemm(const ConvDesc& d, ConvPlan& p, const float* x, const float* dy,
                                    const void* dy16, float* dw) {
  p.gemm_chosen = true;
  if (p.narrow_applies || wgrad_gemm_mode_ == 0) return;
  // Reading a 16-bit activation or NHWC operands: timed under bf16 (its default since it passed on
  // an H200, 2026-11-30) or with DOWNSCALE_CUDA_WGRAD_GEMM=timed, forced with =1; FP16's stay on
  // cuDNN unless asked (set_math).
  if ((d.x16 || (half16() && nhwc_)) && wgrad_gemm_mode_ == -1 && !wgrad_gemm_16bit_layouts_) return;
  const Shape o = d.out();
  const int64_t rows = int64_t(d.in.c) * d.kh * d.kw, pixels = int64_t(o.h) * o.w;
  if (rows > (int64_t(1) << 30) || pixels > (int64_t(1) << 30)) return;  // cuBLAS takes int sizes
  p.gemm_applies = true;
  if (wgrad_gemm_mode_ == 1) {
    p.gemm_bwd_weights = true;
    conv_note(d, "weight gradient by im2col + cuBLAS (DOWNSCALE_CUDA_WGRAD_GEMM=1)");
    return;
  }
  const std::function<void()> pass = [&] { conv_backward_weights_pass(d, x, dy, dy16, dw, nullptr); };
  const auto [cudnn_ms, gemm_ms] = time_two_ways(
      p,
      [&] {
        p.gemm_bwd_weights = false;
        pass();
      },
      [&] {
        p.gemm_bwd_weights = true;
        pass();
      });
  p.cudnn_filter_ms = cudnn_ms;
  p.gemm_ms = gemm_ms;
  p.gemm_bwd_weights = gemm_ms >= 0 && gemm_ms < cudnn_ms;
  char times[80];
  std::snprintf(times, sizeof times, " (ms im2col+cuBLAS/cuDNN %.3f/%.3f)", p.gemm_ms, p.cudnn_filter_ms);
  conv_note(d, std::string("weight gradient by ") + (p.gemm_bwd_weights ? "im2col + cuBLAS" : "cuDNN") + times);
}

}  // namespace ds::model
