// The convolution passes (forward, with bias and ReLU; backward data; backward filter and bias)
// through cuDNN's legacy API (descriptor + algorithm + workspace). Each geometry's plan (Find,
// the ranked algorithms, refusals) is made in cuda_conv_plan.cu, the 16-bit casts around a pass
// in cuda_half16.cu, the per-pass clocks in cuda_pass_times.cu.
//
// cuDNN pads symmetrically only, but Keras 'same' with an even kernel pads one more row/column at
// the bottom/right. Those convolutions are computed on an explicitly zero-padded copy of the input
// (pad_nchw into a scratch buffer) with cuDNN padding 0, and backward-data crops its result back
// (crop_nchw). Symmetric cases (odd 'same', 'valid') use cuDNN's own padding, no copy.
//
// Math mode follows train.precision: TF32 (CUDNN_DEFAULT_MATH, which on Ampere and later lets FP32
// convolutions use TF32 tensor cores, as PyTorch sets it with allow_tf32; ~1e-3 relative
// differences from the CPU) or FP32 (CUDNN_FMA_MATH: plain FP32 FMA kernels, never tensor cores,
// so results match the CPU backend to float rounding; what the parity tests pin).
//
// BF16/FP16 (train.precision bf16|fp16): each pass rounds its FP32 operands into 16-bit scratch
// blocks from the caching allocator (cuda_half16.cu, around model/kernels/half_cast.h), laid out as
// NCHW, or transposed to NHWC with DOWNSCALE_CUDA_LAYOUT=nhwc; runs cuDNN on BF16/FP16 descriptors with FP32 compute
// type and CUDNN_TENSOR_OP_MATH, and widens the 16-bit result back into the FP32 NCHW output. The
// bias add and the bias gradient stay FP32 (on y32). Backward-filter's weight gradient comes out
// in 16 bits before widening, as under PyTorch's autocast; FP16 relies on loss scaling for range.
// The casts are fused into their neighbours (fused16(); DOWNSCALE_CUDA_FUSE16=0 turns it off):
// the forward's widening, bias add and ReLU are one kernel; conv2d_backward rounds the masked
// output gradient once for both backward passes; the polyphase path (cuda_upsample_conv.cu)
// interleaves straight from the 16-bit small output and de-interleaves straight into 16 bits.
// In the NHWC layout every cast is a tiled transpose (cuda_half16.cu, model/kernels/nhwc_tile.h,
// polyphase_nhwc.h) that reads and writes in order; the flat casts it replaced read one side
// with a stride of HW or C elements. On an H100 (2026-11-23) BF16 spent 22.6 % of its
// convolution time outside the cuDNN calls (NCHW, before the fusion), and NHWC trained at 870
// samples/s against NCHW's 1,027 (with the strided casts and without the fusion).
//
// Narrow convolutions (stride 1, out_c <= 4: MNN's head) may run any of their three passes on the
// hand-written FP32 kernels of cuda_narrow_conv.cu instead: choose_narrow (there) times both per
// pass once per plan, or DOWNSCALE_CUDA_NARROW=0|1 forces the choice. Other plans may compute the
// weight gradient by im2col + cuBLAS (cuda_wgrad_gemm.cu; NCHW or NHWC, FP32 or 16-bit operands), chosen the same way.
// In the 16-bit modes the two backward passes may run as TF32 instead (cuda_conv_tf32.cu).
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"

namespace ds::model {

namespace {

// A block per (sample, channel) plane (grid-stride over planes), its threads over the plane: the
// channel comes from one division per plane, not two 64-bit ones per element. Y: float, or
// uint16_t for a 16-bit activation output.
template <typename Y>
__global__ void cast_from_half16_bias_relu_kernel(int64_t planes, int c, int64_t hw, kernels::Half16 k,
                                                  const uint16_t* yh, const float* b, bool relu, Y* y) {
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const int ch = int(plane % c);
    for (int64_t j = threadIdx.x; j < hw; j += blockDim.x)
      kernels::cast_from_half16_bias_relu_at(plane * hw + j, ch, k, yh, b, relu, y);
  }
}

// The FP32 epilogue (kernels::bias_relu_at), planes as above.
__global__ void bias_relu_kernel(int64_t planes, int c, int64_t hw, const float* b, bool relu, float* y) {
  for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    const int ch = int(plane % c);
    for (int64_t j = threadIdx.x; j < hw; j += blockDim.x) kernels::bias_relu_at(plane * hw + j, ch, b, relu, y);
  }
}

// The same epilogue on a 16-bit NHWC activation output (NHWC activations): the 16-bit result
// and y both NHWC, the channel the fastest index. The channel is a remainder per element, in 32
// bits where the indices fit (every MNN activation; grid_stride_int_where_it_fits).
__global__ void cast_from_half16_bias_relu_nhwc_kernel(int64_t n, int c, kernels::Half16 k, const uint16_t* yh,
                                                       const float* b, bool relu, uint16_t* y) {
  grid_stride_int_where_it_fits(
      n, [&](auto i) { kernels::cast_from_half16_bias_relu_at(i, int(i % c), k, yh, b, relu, y); });
}

template <typename Y>
__global__ void relu_grad_to_half16_kernel(int64_t n, kernels::Half16 k, const Y* y, const float* dy, float* g,
                                           uint16_t* gh) {
  DS_GRID_STRIDE(i, n) kernels::relu_grad_to_half16_at(i, k, y, dy, g, gh);
}

}  // namespace

const void* CudaBackend::conv_input16(const ConvPlan& p, const ConvDesc& d, const float* x16, void*& owned) {
  if (!p.explicit_pad && !p.x_cs) return x16;
  if (p.x_cs && !act_nhwc()) throw Error("internal: padded channels for a 16-bit activation not in NHWC");
  // One copy pads both: the rows and columns (explicit_pad; else cuDNN pads them, and the copy
  // keeps x where it is) and the channels (x_cs, zeros).
  const Shape padded = p.x16_shape();
  const int top = p.explicit_pad ? d.pad_top : 0, left = p.explicit_pad ? d.pad_left : 0;
  owned = half16_scratch(padded);
  (act_nhwc() ? pad_nhwc16 : pad_nchw16)(stream_, d.in, top, left, padded, reinterpret_cast<const uint16_t*>(x16),
                                         static_cast<uint16_t*>(owned));
  return owned;
}

// x as cuDNN sees it: the zero-padded copy when the padding is one cuDNN cannot express
// (asymmetric), else x itself.
const float* CudaBackend::conv_input(const ConvPlan& p, const ConvDesc& d, const float* x) {
  if (!p.explicit_pad) return x;
  float* xp = pad_buffer(p.x_shape.size());
  pad_nchw(stream_, d.in, d.pad_top, d.pad_left, p.x_shape, x, xp);
  return xp;
}

void CudaBackend::conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  conv_forward_pass(d, x, w, b, y, false, false);
}

void* CudaBackend::conv_forward_pass(const ConvDesc& d, const float* x, const float* w, const float* b, float* y,
                                     bool relu, bool keep16) {
  void* kept = nullptr;
  if (keep16 && (relu || b)) throw Error("internal: a kept 16-bit output takes no bias or ReLU" + conv_context(d));
  try {
    ConvPlan& p = conv_plan(d);
    // A narrow convolution without ReLU says once which passes run where (with ReLU,
    // conv2d_relu_forward's line says it).
    if (p.narrow_applies && !p.fuse_reported && !p.timing_paths) {
      p.fuse_reported = true;
      conv_note(d, narrow_summary(p));
    }
    bool relu_done = false;
    if (clocked(p)) pass_clock_start(0);
    if (p.narrow_fwd) {
      if (keep16) throw Error("internal: a 16-bit output asked of a narrow forward");
      narrow_conv_forward(d, x, w, b, y);  // a 16-bit x (d.x16) is widened as the kernels load it
    } else {
      const float one = 1.0f;
      // A 16-bit activation input is already the cuDNN operand (padded into 16 bits if need be).
      CacheBlock padded16{cache_};
      const float* src = d.x16 ? nullptr : conv_input(p, d, x);
      const void* x16 = d.x16 ? conv_input16(p, d, x, padded16.p) : nullptr;
      const auto forward = [&](const void* xs, const void* ws_, void* ys) {
        run_conv_pass(p, kFwdPass, xs, ws_, ys);
      };
      const Shape ws_shape{d.out_c, d.in.c, d.kh, d.kw};
      if (fused16()) {
        void* yh = half16_pass(p.x_shape, src, x16, ws_shape, w, nullptr, d.out(), nullptr, forward, true,
                               {p.x_cs, p.x_cs, 0});
        if (d.y16 && !keep16 && act_nhwc()) {  // the same in NHWC: the 16-bit result is in y's layout
          const Shape o = d.out();
          const int64_t n = o.size();
          if (n > 0) {
            cast_from_half16_bias_relu_nhwc_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(
                n, o.c, half16_kind(), static_cast<const uint16_t*>(yh), b, relu, reinterpret_cast<uint16_t*>(y));
          }
          cache_.release(yh);
          if (n > 0) DS_CUDA_LAUNCHED();
          relu_done = true;
        } else if (d.y16 && !keep16) {  // a 16-bit activation output: bias and ReLU, rounded again, into y
          const Shape o = d.out();
          const int64_t planes = int64_t(o.n) * o.c, hw = int64_t(o.h) * o.w;
          if (planes > 0 && hw > 0) {
            cast_from_half16_bias_relu_kernel<<<plane_blocks(planes), kThreads, 0, stream_>>>(
                planes, o.c, hw, half16_kind(), static_cast<const uint16_t*>(yh), b, relu, reinterpret_cast<uint16_t*>(y));
          }
          cache_.release(yh);
          if (planes > 0 && hw > 0) DS_CUDA_LAUNCHED();
          relu_done = true;
        } else if (keep16) {
          kept = yh;  // the caller widens it (the polyphase interleave, in either layout) and releases it
        } else if (nhwc_) {  // widened, bias and ReLU in the tiled transpose back to NCHW
          try {
            nhwc16_to_nchw(d.out(), yh, b, relu, y);
          } catch (...) {
            cache_.release(yh);
            throw;
          }
          cache_.release(yh);
          relu_done = true;
        } else {
          const Shape o = d.out();
          const int64_t planes = int64_t(o.n) * o.c, hw = int64_t(o.h) * o.w;
          if (planes > 0 && hw > 0) {  // no grid of 0 blocks
            cast_from_half16_bias_relu_kernel<<<plane_blocks(planes), kThreads, 0, stream_>>>(
                planes, o.c, hw, half16_kind(), static_cast<const uint16_t*>(yh), b, relu, y);
          }
          cache_.release(yh);  // before the launch check: reused only by work queued after this
          DS_CUDA_LAUNCHED();
          relu_done = true;
        }
      } else {
        if (keep16) throw Error("internal: a 16-bit output asked outside the fused 16-bit path");
        if (d.x16 || d.y16) throw Error("internal: a 16-bit activation outside the fused 16-bit path");
        if (half16()) {  // the separate casts (DOWNSCALE_CUDA_FUSE16=0): as before
          half16_pass(p.x_shape, src, nullptr, ws_shape, w, nullptr, d.out(), y, forward, false, {p.x_cs, p.x_cs, 0});
          if (b) DS_CUDNN(cudnnAddTensor(cudnn_, &one, p.b, b, &one, p.y32, y));
        } else {
          forward(src, w, y);
          // Bias and ReLU in one pass over y (cudnnAddTensor then a ReLU kernel made two).
          const Shape o = d.out();
          const int64_t planes = int64_t(o.n) * o.c, hw = int64_t(o.h) * o.w;
          if ((b || relu) && planes > 0 && hw > 0) {
            bias_relu_kernel<<<plane_blocks(planes), kThreads, 0, stream_>>>(planes, o.c, hw, b, relu, y);
            DS_CUDA_LAUNCHED();
          }
          relu_done = relu;
        }
      }
    }
    if (clocked(p)) pass_clock_stop(p, kFwdPass, 0);
    if (relu && !relu_done) {
      if (d.y16) throw Error("internal: an FP32 ReLU asked of a 16-bit activation");
      relu_forward(d.out().size(), y, y);
    }
  } catch (const Error& e) {
    if (kept) cache_.release(kept);
    throw Error(e.what() + conv_context(d), e.code());
  }
  return kept;
}

// cuDNN's fused bias+ReLU call, y = relu(conv(x) + b): its status (refused or not) is the caller's.
cudnnStatus_t CudaBackend::fused_bias_relu_call(ConvPlan& p, const float* x, const float* w, const float* b,
                                                float* y) {
  if (!relu_) {
    DS_CUDNN(cudnnCreateActivationDescriptor(&relu_));
    DS_CUDNN(cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  }
  const float one = 1.0f, zero = 0.0f;
  const ConvChoice& c = p.use[kFwdPass];
  void* ws = c.workspace ? workspace(c.workspace) : nullptr;
  // y = relu(conv(x) + 0 * z + b), with z = y (alpha2 0: its values do not matter).
  return cudnnConvolutionBiasActivationForward(cudnn_, &one, p.x, x, p.w, w, p.conv[kFwdPass],
                                               cudnnConvolutionFwdAlgo_t(c.algo), ws, c.workspace, &zero, p.y, y,
                                               p.b, b, relu_, p.y, y);
}

// Fused or separate, by timing both once on the first call's own x, w, b and y (both write the
// same y; the call then writes it again; time_two_ways). On an
// H100 (cuDNN 9.19, TF32) the fused call took 0.37 and 0.77 ms for MNN's 20 -> 50 5x5 and 7x7
// branch convolutions at batch 32, where the same algorithm found by cudnnFind, then bias and ReLU,
// took about 0.18 (docs/gpu_runs/2026-11-23_call{1,3}*.md): cudnnFind times the plain
// convolution, not the fused call, so "the algorithm allows it" is not "it pays". If the fused
// call fails or is refused while timed, the separate path stays.
void CudaBackend::choose_fused_bias_relu(const ConvDesc& d, ConvPlan& p, const float* x, const float* w,
                                         const float* b, float* y) {
  p.fuse_chosen = true;
  if (fuse_mode_ == 1) {
    p.fuse_faster = true;
    return;
  }
  const auto [fused_ms, separate_ms] = time_two_ways(
      p,
      [&] {
        const cudnnStatus_t st = fused_bias_relu_call(p, x, w, b, y);
        if (st != CUDNN_STATUS_SUCCESS)
          throw Error(std::string("cudnnConvolutionBiasActivationForward: ") + cudnnGetErrorString(st));
      },
      [&] { conv_forward_pass(d, x, w, b, y, true, false); });
  p.fused_ms = fused_ms;
  p.separate_ms = separate_ms;
  p.fuse_faster = fused_ms >= 0 && fused_ms < separate_ms;
}

void CudaBackend::conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  ConvPlan& p = conv_plan(d);
  // cuDNN fuses ReLU only with IMPLICIT_PRECOMP_GEMM; the explicit padding path keeps its copy.
  // Only on FP32 tensors: the 16-bit path's output is the FP32 widening of a 16-bit result, and
  // cuDNN refuses the fused call on those descriptors (CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE on an
  // H100, cuDNN 9.19).
  // The narrow forward is not cuDNN's: its bias and ReLU stay separate.
  const bool can_fuse = fuse_mode_ != 0 && !half16() && b && !p.explicit_pad && !p.narrow_fwd && !p.fuse_refused &&
                        p.use[kFwdPass].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  if (can_fuse && !p.fuse_chosen && !p.timing_paths) choose_fused_bias_relu(d, p, x, w, b, y);
  const bool fused = can_fuse && p.fuse_faster;
  if (!p.fuse_reported && !p.timing_paths) {
    p.fuse_reported = true;
    const std::string narrow = narrow_summary(p);
    char times[64] = "";
    if (can_fuse && fuse_mode_ < 0)
      std::snprintf(times, sizeof times, " (ms fused/separate %.3f/%.3f)", p.fused_ms, p.separate_ms);
    conv_note(d, std::string("bias+ReLU ") +
                     (fused       ? std::string("fused (cudnnConvolutionBiasActivationForward") +
                                  (fuse_mode_ == 1 ? ", DOWNSCALE_CUDA_FUSE=1)" : ")") + times
                      : can_fuse && p.fused_ms < 0 ? std::string("separate (timing it against cuDNN's fused call failed)")
                      : can_fuse  ? std::string("separate (faster than cuDNN's fused call)") + times
                      : fuse_mode_ == 0 ? std::string("separate (DOWNSCALE_CUDA_FUSE=0)")
                      : half16()  ? std::string("separate (16-bit precision)")
                      : p.narrow_fwd ? std::string("separate (narrow forward)")
                                     : "separate (algorithm " + std::to_string(p.use[kFwdPass].algo) +
                                           (p.explicit_pad ? ", explicit padding" : "") + ")") +
                     (narrow.empty() ? "" : "; ") + narrow);
  }
  if (fused) {
    if (clocked(p)) pass_clock_start(0);
    const cudnnStatus_t st = fused_bias_relu_call(p, x, w, b, y);
    if (st == CUDNN_STATUS_SUCCESS) {
      // The fused call is the convolution call: its bias and ReLU count with it.
      if (clocked(p)) pass_clock_stop(p, kFwdPass, 2);
      return;
    }
    if (!refused_before_launch(int(st)))
      throw Error(std::string("cuDNN error in cudnnConvolutionBiasActivationForward: ") + cudnnGetErrorString(st) +
                  conv_context(d));
    // Refused (nothing ran): the separate conv and ReLU from now on, said once.
    cudaGetLastError();
    p.fuse_refused = true;
    conv_note(d, std::string("fused bias+ReLU refused (") + cudnnGetErrorString(st) + "); separate from now on");
  }
  // In the fused 16-bit path the ReLU is applied in the forward's epilogue (one pass over y).
  conv_forward_pass(d, x, w, b, y, true, false);
}

void CudaBackend::conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) {
  conv_backward_data_pass(d, dy, nullptr, w, dx);
}

void CudaBackend::conv_backward_data_pass(const ConvDesc& d, const float* dy, const void* dy16, const float* w,
                                          float* dx) {
  try {
    ConvPlan& p = conv_plan(d);
    // In a 16-bit mode, maybe as TF32 on dy's FP32 copy (cuda_conv_tf32.cu).
    if (tf32_instead(d, p, kDataPass, [&] { tf32_backward_data(d, dy, w, dx); },
                     [&] { conv_backward_data_pass(d, dy, dy16, w, dx); }))
      return;
    if (clocked(p)) pass_clock_start(0);
    if (p.narrow_bwd_data) {
      narrow_conv_backward_data(d, dy, w, dx);
    } else {
      float* dst = p.explicit_pad ? pad_buffer(p.x_shape.size()) : dx;
      const auto data = [&](const void* dys, const void* ws_, void* dxs) {
        run_conv_pass(p, kDataPass, dxs, ws_, dys);
      };
      if (half16())
        half16_pass(d.out(), dy, dy16, Shape{d.out_c, d.in.c, d.kh, d.kw}, w, nullptr, p.x_shape, dst, data, false,
                    {0, p.x_cs, p.x_cs});
      else
        data(dy, w, dst);
      // The padded border's gradient belongs to zeros that are not inputs: dropped by the crop.
      if (p.explicit_pad) crop_nchw(stream_, p.x_shape, d.pad_top, d.pad_left, d.in, dst, dx);
    }
    if (clocked(p)) pass_clock_stop(p, kDataPass, 0);
  } catch (const Error& e) {
    throw Error(e.what() + conv_context(d), e.code());
  }
}

void CudaBackend::conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) {
  conv_backward_weights_pass(d, x, dy, nullptr, dw, db);
}

void CudaBackend::conv_backward_weights_pass(const ConvDesc& d, const float* x, const float* dy, const void* dy16,
                                             float* dw, float* db) {
  try {
    ConvPlan& p = conv_plan(d);
    if (!p.gemm_chosen && !p.timing_paths) choose_wgrad_gemm(d, p, x, dy, dy16, dw);
    // After the GEMM's choice: the 16-bit side of the TF32 timing is the faster 16-bit way.
    if (tf32_instead(d, p, kFilterPass, [&] { tf32_backward_weights(d, x, dy, dw, db, p.timing_paths); },
                     [&] { conv_backward_weights_pass(d, x, dy, dy16, dw, db); }))
      return;
    if (clocked(p)) pass_clock_start(0);
    if (p.narrow_bwd_weights) {
      narrow_conv_backward_weights(d, x, dy, dw, db);  // a 16-bit x is widened as the kernels load it
    } else if (!(p.gemm_bwd_weights && gemm_weights_or_fall_back(d, p, x, dy, dy16, dw))) {
      // Padded again rather than kept from forward: a cheap copy instead of a buffer per layer.
      // A 16-bit activation input is the cuDNN operand itself.
      CacheBlock padded16{cache_};
      const float* src = d.x16 ? nullptr : conv_input(p, d, x);
      const void* x16 = d.x16 ? conv_input16(p, d, x, padded16.p) : nullptr;
      if (x16 && !half16()) throw Error("internal: a 16-bit activation outside the 16-bit modes");
      const auto filter = [&](const void* xs, const void* dys, void* dws) {
        run_conv_pass(p, kFilterPass, xs, dws, dys);
      };
      if (half16())
        half16_pass(p.x_shape, src, x16, d.out(), dy, dy16, Shape{d.out_c, d.in.c, d.kh, d.kw}, dw, filter, false,
                    {p.x_cs, 0, p.x_cs});
      else
        filter(src, dy, dw);
    }
    if (!p.narrow_bwd_weights && db) {  // the narrow kernels sum db with dw
      const float one = 1.0f, zero = 0.0f;
      if (cudnn_bias_grad_)
        DS_CUDNN(cudnnConvolutionBackwardBias(cudnn_, &one, p.y32, dy, &zero, p.b, db));
      else
        conv_bias_grad(d.out(), dy, db);
    }
    if (clocked(p)) pass_clock_stop(p, kFilterPass, 0);
  } catch (const Error& e) {
    throw Error(e.what() + conv_context(d), e.code());
  }
}

// The whole backward of a convolution (+ ReLU). In the fused 16-bit path the output gradient is
// masked and rounded once (relu_grad_to_half16_at) and both cuDNN passes read that copy, where
// the separate ops made the ReLU's gradient in one pass and each cast it again; the FP32 masked
// gradient (scratch) is still written for the bias gradient. Passes on the narrow FP32 kernels
// read the FP32 copy. Otherwise Backend's composition.
void CudaBackend::conv2d_backward(const ConvDesc& d, const float* x, const float* y, const float* dy, const float* w,
                                  float* dx, float* dw, float* db, float* scratch) {
  if (!fused16()) return conv2d_backward_composed(d, x, y, dy, w, dx, dw, db, scratch);
  // Both passes on the narrow FP32 kernels (MNN's head): nothing would read a rounded copy.
  const ConvPlan& p = conv_plan(d);
  if ((p.narrow_bwd_weights || !dw) && (p.narrow_bwd_data || !dx))
    return conv2d_backward_composed(d, x, y, dy, w, dx, dw, db, scratch);
  const Shape o = d.out();
  const int64_t n = o.size();
  // A deferred weight pass may read the FP32 gradient (bias, TF32 or narrow passes) after later
  // layers have reused dy's buffer: without a ReLU (no masked copy in the layer's scratch), a copy.
  CacheBlock dy_copy{cache_};
  const float* gf = y ? scratch : dw && deferring() ? copy_held(dy_copy, dy, n) : dy;
  void* gh = half16_scratch(o);
  float* g = y ? scratch : nullptr;
  try {
    if (nhwc_ && d.y16 && y) {  // NHWC activations: the mask from the 16-bit NHWC output
      nchw_to_nhwc16_masked(o, dy, y, g, gh);
    } else if (nhwc_) {
      nchw_to_nhwc16(o, dy, y, g, gh);  // the same mask and rounding, transposed on the way
    } else if (n > 0 && d.y16) {  // the mask from the 16-bit activation output
      relu_grad_to_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(
          n, half16_kind(), reinterpret_cast<const uint16_t*>(y), dy, g, static_cast<uint16_t*>(gh));
      DS_CUDA_LAUNCHED();
    } else if (n > 0) {
      relu_grad_to_half16_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, half16_kind(), y, dy, g,
                                                                          static_cast<uint16_t*>(gh));
      DS_CUDA_LAUNCHED();
    }
    if (dw) weight_pass([&] { conv_backward_weights_pass(d, x, gf, gh, dw, db); });
    if (dx) conv_backward_data_pass(d, gf, gh, w, dx);
  } catch (...) {
    cache_.release(gh);
    throw;
  }
  cache_.release(gh);
}

const float* CudaBackend::copy_held(CacheBlock& held, const float* src, int64_t n) {
  if (n <= 0) return src;
  auto* dst = allocate(n);
  held.p = dst;
  copy(dst, src, n);
  return dst;
}

void CudaBackend::conv2d_backward_composed(const ConvDesc& d, const float* x, const float* y, const float* dy,
                                           const float* w, float* dx, float* dw, float* db, float* scratch) {
  if (!dw || !deferring()) return Backend::conv2d_backward(d, x, y, dy, w, dx, dw, db, scratch);
  const int64_t n = d.out().size();
  CacheBlock dy_copy{cache_};  // no ReLU: dy itself, a Net buffer later layers may reuse, copied
  const float* g = dy;
  if (y) {
    if (d.y16)
      relu_backward16(n, reinterpret_cast<const uint16_t*>(y), dy, scratch);
    else
      relu_backward(n, y, dy, scratch);
    g = scratch;  // the layer's own buffer: unchanged until its next backward
  } else {
    g = copy_held(dy_copy, dy, n);
  }
  weight_pass([&] { conv2d_backward_weights(d, x, g, dw, db); });
  if (dx) conv2d_backward_data(d, g, w, dx);
}

}  // namespace ds::model
