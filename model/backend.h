// The device interface: buffers, a stream, and the ops the layers need. Layers and models call
// only this, so the same model code runs on oneDNN (CPU) and CUDA/cuDNN (GPU). All tensors are
// NCHW float32; conv weights are OIHW (as PyTorch; Keras' HWIO is transposed at load/save).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/tensor.h"

namespace ds::model {

// A 2-D convolution (cross-correlation, as every framework computes it) over an NCHW input.
// Padding is explicit per side so Keras' 'same' rule for even kernels (the extra row/column at
// the bottom/right) is representable: see same_padding().
struct ConvDesc {
  Shape in;                 // input shape (batch included)
  int out_c = 0, kh = 1, kw = 1, stride = 1;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  // 16-bit activations (Backend::activation_dtype): the input x / the output y (forward's y, and
  // backward's ReLU mask y) hold that type, packed, behind the float pointers. Gradients (dy, dx),
  // weights and biases are FP32 always. Set by the layers from their tensors' dtype.
  bool x16 = false, y16 = false;
  // Channel blocks (Backend::activation_block, Tensor::block) of x and dx / of y and dy: 0 plain
  // NCHW. Set by the layers from their tensors.
  int x_block = 0, y_block = 0;
  Shape out() const;
};

// Keras/TensorFlow 'same' padding for stride 1: total k-1, the smaller half at the top/left (any
// stride: resolve_padding in model/layers/padding.h).
void same_padding(int k, int& before, int& after);

// 2-D pooling over an NCHW input with a k x k window every `stride` pixels, padded per side
// (all 0: 'valid', Keras' default): out = (in + pad_before + pad_after - k) / stride + 1. Padded
// cells never win a max and are not counted in an average (Keras/TF 'same' semantics).
enum class PoolKind { kMax, kAverage };
struct PoolDesc {
  Shape in;
  int k = 2, stride = 2;
  PoolKind kind = PoolKind::kMax;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int block = 0;  // channel block of x, y, dx and dy (Tensor::block): 0 plain NCHW
  Shape out() const;
};

// Arithmetic of convolutions and matrix products (config key train.precision). kTf32 lets cuDNN
// and cuBLAS round their inputs to TF32 on tensor cores (10-bit mantissa: ~1e-3 relative per
// product; PyTorch's default for convolutions); kFp32 keeps plain FP32 FMA (what the parity tests
// pin). kBf16/kFp16 convert the inputs and weights of convolutions and matrix products to BF16
// (8-bit mantissa) / FP16 (11-bit, range 6e-5..65504) and accumulate in FP32; weights,
// gradients and optimizer state stay FP32, and so do the activations between layers except
// where the backend reads and writes them in 16 bits itself (activation_dtype below).
enum class MathMode { kTf32, kFp32, kBf16, kFp16 };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Chooses the math mode for the ops queued after it; false when the backend has no such choice
  // (the CPU backend computes in FP32 whatever is asked).
  virtual bool set_math(MathMode) { return false; }
  // The 16-bit type this backend's convolutions read and write directly under the current math
  // mode, for the activations the Net keeps in 16 bits between such layers (half the memory and
  // traffic, and no rounding pass of each input: it is rounded once, when written); kF32 when
  // there is none (FP32/TF32 math, or a backend without 16-bit activations). See ConvDesc::x16.
  virtual DType activation_dtype() const { return DType::kF32; }
  // Whether a convolution with out_c output channels and this stride reads and writes 16-bit
  // activations when activation_dtype() has a type (the Net plans with it): all of them, except
  // on a backend whose 16-bit activations some of its kernels cannot read (the CUDA backend's
  // narrow kernels under NHWC activations).
  virtual bool conv_activations16(int /*out_c*/, int /*stride*/) const { return true; }
  // Whether 16-bit activations are stored NHWC (their Shape still says n, c, h, w): what reads
  // one on the host (train/device_check.cpp's host_values) reorders it. The CUDA backend's with
  // DOWNSCALE_CUDA_LAYOUT=nhwc.
  virtual bool activations16_nhwc() const { return false; }
  // The channel block b of the layout this backend's convolutions, batch norms and poolings run
  // fastest in, nChw{b}c (oneDNN's blocked layout: 16 channels a vector on AVX-512, 8 on AVX2), in
  // which the Net keeps activations between the layers that take it (net.cpp), so that no op
  // reorders them from and back to NCHW; 0 when there is none (the CUDA backend). ConvDesc::
  // x_block/y_block, PoolDesc::block and the batch norms' `block` say which tensors are blocked;
  // elementwise ops and channel copies at offsets that are multiples of b need not know.
  virtual int activation_block() const { return 0; }

  // --- memory and stream ---
  virtual float* allocate(int64_t n) = 0;
  virtual void release(float* p) = 0;
  virtual void copy_from_host(float* dst, const float* host, int64_t n) = 0;
  virtual void copy_to_host(float* host, const float* src, int64_t n) = 0;
  virtual void copy(float* dst, const float* src, int64_t n) = 0;
  virtual void fill(float* p, int64_t n, float value) = 0;
  virtual void synchronize() = 0;  // waits for queued work (no-op on the CPU)
  // True when none of x's n values is Inf or NaN; one synchronisation (loss scaling's check).
  virtual bool all_finite(int64_t n, const float* x) = 0;
  // The same over several buffers (every gradient of a step) with one synchronisation in all:
  // loss scaling checks dozens of gradient tensors per step. The default asks all_finite of each.
  struct FloatSpan {
    const float* data;
    int64_t size;
  };
  virtual bool all_finite(const std::vector<FloatSpan>& buffers);

  // --- ops (y/dx outputs are overwritten unless the name says accumulate) ---
  virtual void conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) = 0;
  virtual void conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) = 0;
  virtual void conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) = 0;
  // conv2d_forward then ReLU as one op where the backend can fuse them (cuDNN's
  // ConvolutionBiasActivationForward where it times faster; DOWNSCALE_CUDA_FUSE=0/1 never/always);
  // the default runs the two, the ReLU in place (backend.cpp).
  virtual void conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y);
  // The whole backward of a convolution (+ ReLU), as one op where the backend can share work
  // between its passes (the CUDA backend's 16-bit path rounds the output gradient once for both).
  // y non-null: the layer had a ReLU and y is its output; dy is first masked by [y > 0] into
  // scratch (d.out().size() floats, the caller's), as upsample_conv2d_backward does. Writes dw,
  // db (when non-null) and dx (when non-null). The default (backend.cpp) runs relu_backward,
  // conv2d_backward_weights and conv2d_backward_data.
  virtual void conv2d_backward(const ConvDesc& d, const float* x, const float* y, const float* dy, const float* w,
                               float* dx, float* dw, float* db, float* scratch);
  virtual void relu_forward(int64_t n, const float* x, float* y) = 0;
  virtual void relu_backward(int64_t n, const float* x, const float* dy, float* dx) = 0;
  // Sigmoid on channel `channel` only of an NCHW tensor, in place (the p head of Bernoulli-Gamma).
  virtual void sigmoid_channel_forward(const Shape& s, int channel, float* y) = 0;
  // dx = dy * y * (1 - y) on that channel; other channels pass dy through. y is the forward output.
  virtual void sigmoid_channel_backward(const Shape& s, int channel, const float* y, float* dy) = 0;
  virtual void upsample_nearest_forward(const Shape& in, int factor, const float* x, float* y) = 0;
  virtual void upsample_nearest_backward(const Shape& in, int factor, const float* dy, float* dx) = 0;
  // Nearest upsampling by `factor` followed by the 'same' convolution d, as one op: d.in is the
  // upsampled shape, x and dx are the small input (d.in.h / factor, d.in.w / factor). `scratch`
  // is the caller's buffer of upsample_conv2d_scratch(d, factor) floats, which the op may
  // overwrite. The defaults (upsample_conv_default.cpp) run the two ops above through scratch
  // (the upsampled input or its gradient); the CPU backend runs the pair as one convolution on the
  // small input, 2.5x fewer FLOPs for MNN's 8x8, and needs no scratch.
  virtual int64_t upsample_conv2d_scratch(const ConvDesc& d, int factor) const;
  virtual void upsample_conv2d_forward(const ConvDesc& d, int factor, const float* x, const float* w, const float* b,
                                       float* y, float* scratch);
  virtual void upsample_conv2d_backward_data(const ConvDesc& d, int factor, const float* dy, const float* w,
                                             float* dx, float* scratch);
  virtual void upsample_conv2d_backward_weights(const ConvDesc& d, int factor, const float* x, const float* dy,
                                                float* dw, float* db, float* scratch);
  // The same with the ReLU after the convolution, as one op: MNN's upsampling convs, whose
  // outputs are the biggest tensors of the network (32x132x120x212 floats at batch 32), so each
  // pass saved over them counts. The default runs upsample_conv2d_forward then relu_forward in
  // place; the CPU backend puts the ReLU in the small convolution as a post-op, the CUDA backend
  // adds the bias and applies the ReLU in the phase interleave.
  virtual void upsample_conv2d_relu_forward(const ConvDesc& d, int factor, const float* x, const float* w,
                                            const float* b, float* y, float* scratch);
  // The whole backward of upsample + conv (+ ReLU): with y (the forward output) non-null, dy is
  // first masked by the ReLU's gradient [y > 0] (y > 0 exactly where the pre-activation is, as
  // Conv2D+ReLU does); y null means no ReLU. Writes dw, db (when non-null) and dx (when
  // non-null). scratch: upsample_conv2d_backward_scratch(d, factor, y != nullptr) floats. The
  // default masks into scratch (relu_backward) and runs the two calls above on the masked
  // gradient; the CPU and CUDA backends mask and de-interleave dy in one pass onto the small grid
  // and run both small convolutions' backward on that one copy (no scratch).
  virtual int64_t upsample_conv2d_backward_scratch(const ConvDesc& d, int factor, bool relu) const;
  virtual void upsample_conv2d_backward(const ConvDesc& d, int factor, const float* x, const float* y, const float* dy,
                                        const float* w, float* dx, float* dw, float* db, float* scratch);
  // Channel-range copy for concat: dst[:, offset:offset+src.c] = src (and the reverse for backward).
  virtual void copy_channels(const Shape& src, const float* x, const Shape& dst, int offset, float* y) = 0;
  virtual void slice_channels(const Shape& dst, int offset, const Shape& src, const float* y, float* x) = 0;
  // copy_channels for 16-bit activations (any 16-bit type: values are moved, not converted). The
  // default throws: only a backend with an activation_dtype() implements it.
  virtual void copy_channels16(const Shape& src, const uint16_t* x, const Shape& dst, int offset, uint16_t* y);
  // relu_backward with the ReLU's output in 16 bits (activation_dtype()): dx = dy where y > 0,
  // else 0. A positive FP32 output of normal magnitude (>= 2^-126 for BF16; >= 2^-24 for FP16)
  // never rounds to 0, so the mask is the FP32 one but for outputs below that (a BF16
  // conversion may flush subnormals to zero, as avx512_bf16's does). The default throws.
  virtual void relu_backward16(int64_t n, const uint16_t* y, const float* dy, float* dx);
  virtual void accumulate(int64_t n, const float* x, float* acc) = 0;  // acc += x
  virtual void scale(int64_t n, float alpha, float* x) = 0;             // x *= alpha

  // Bernoulli-Gamma NLL (see loss.h): returns the sum over valid points and writes, if d_out is
  // non-null, d(sum)/d(out); the caller divides both by the number of valid points.
  virtual double bernoulli_gamma_sum(const Shape& out_shape, const float* out, const float* y, const float* mask,
                                     float* d_out) = 0;
  // Adam update of n weights: m, v moments; lr_t already bias-corrected.
  virtual void adam_update(int64_t n, float* w, const float* g, float* m, float* v, float lr_t, float b1, float b2,
                           float eps) = 0;

  // --- ops added for DeepESD, batch norm, pooling, dropout, the Gaussian/MSE losses and SGD ---
  // Dense (fully connected): x (n, in) row-major, w (out, in) as PyTorch/oneDNN, b (out), y (n, out).
  virtual void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b, float* y) = 0;
  virtual void dense_backward_data(int n, int in, int out, const float* dy, const float* w, float* dx) = 0;
  virtual void dense_backward_weights(int n, int in, int out, const float* x, const float* dy, float* dw,
                                      float* db) = 0;
  // Pooling; backward reads forward's input x (max pooling recomputes where each maximum was).
  virtual void pool2d_forward(const PoolDesc& d, const float* x, float* y) = 0;
  virtual void pool2d_backward(const PoolDesc& d, const float* x, const float* dy, float* dx) = 0;
  // Batch normalization per channel over (N, H, W), scale gamma and shift beta of size C.
  // `block`: the channel block of x, y, dx and dy (activation_block; 0 plain NCHW).
  // Training: normalizes with the batch's mean and biased variance and writes both out (C each).
  virtual void batch_norm_forward_training(const Shape& s, int block, const float* x, const float* gamma,
                                           const float* beta, float eps, float* y, float* mean, float* var) = 0;
  // Inference: normalizes with the given (running) mean and variance.
  virtual void batch_norm_forward_inference(const Shape& s, int block, const float* x, const float* gamma,
                                            const float* beta, const float* mean, const float* var, float eps,
                                            float* y) = 0;
  // Backward of the training forward (mean, var: what it wrote); writes dx, dgamma, dbeta.
  virtual void batch_norm_backward(const Shape& s, int block, const float* x, const float* dy, const float* gamma,
                                   const float* mean, const float* var, float eps, float* dx, float* dgamma,
                                   float* dbeta) = 0;
  // Global average pooling of a blocked x (block > 0, activation_block): y (N, C) = the mean of
  // each channel over (H, W), whose order is NCHW's when H = W = 1; backward spreads dy / (H*W)
  // over every cell. (A plain x is a matrix product: layers/global_average_pool.cpp.) The
  // defaults throw: only a backend with an activation_block() implements them.
  virtual void blocked_global_average_pool_forward(const Shape& s, int block, const float* x, float* y);
  virtual void blocked_global_average_pool_backward(const Shape& s, int block, const float* dy, float* dx);
  // Inverted dropout: mask[i] = 0 with probability rate, else 1/(1-rate), drawn from a counter-based
  // generator of (seed, i) (model/counter_rng.h) so CPU and GPU draw the same mask; y = x * mask.
  virtual void dropout_forward(int64_t n, float rate, uint64_t seed, const float* x, float* y, float* mask) = 0;
  virtual void multiply(int64_t n, const float* a, const float* b, float* y) = 0;     // y = a * b
  virtual void axpby(int64_t n, float a, const float* x, float b, float* y) = 0;      // y = a x + b y
  // DeepESD's dense heads predict only land points. scatter: src (n, k*points) -> dst (n, k, h, w)
  // with dst[s, c, index[p]] = src[s, c*points + p] and `fill` elsewhere; gather is its adjoint
  // (the backward). index holds grid offsets as floats (exact below 2^24; grids are far smaller).
  virtual void scatter_points(int n, int k, int points, const float* index, const Shape& grid, float fill,
                              const float* src, float* dst) = 0;
  virtual void gather_points(int n, int k, int points, const float* index, const Shape& grid, const float* dst_grad,
                             float* src_grad) = 0;
  // Masked sums of the squared error (out (N,1,H,W)) and the Gaussian NLL (out (N,2,H,W): mean,
  // log variance); same contract as bernoulli_gamma_sum (see loss.h for the formulas).
  virtual double mse_sum(const Shape& out_shape, const float* out, const float* y, const float* mask,
                         float* d_out) = 0;
  virtual double gaussian_nll_sum(const Shape& out_shape, const float* out, const float* y, const float* mask,
                                  float* d_out) = 0;
  // SGD with momentum as Keras: v = momentum v - lr g; w += v.
  virtual void sgd_momentum_update(int64_t n, float* w, const float* g, float* v, float lr, float momentum) = 0;

  // --- ops added for the image-classification benchmark nets (ResNet, Inception) ---
  // Softmax cross-entropy of n rows of k logits against labels (n class indices as floats):
  // returns the mean over rows of -log softmax(logits)[label] (one synchronisation) and writes,
  // if dlogits is non-null, d(mean)/d(logits) = (softmax - onehot) / n. Throws ds::Error naming
  // the row for a label outside [0, k). model/kernels/softmax_cross_entropy.h has the row body.
  virtual double softmax_cross_entropy(int n, int k, const float* logits, const float* labels, float* dlogits) = 0;

  // --- the training set in backend memory, the loss without a per-step wait (backend_dataflow.cpp) ---
  // Bytes this backend could still allocate: the GPU's free memory (cudaMemGetInfo), the CPU's
  // MemAvailable; -1 when unknown.
  virtual int64_t free_bytes();
  // dst row i = src row index[i], rows of row_size floats; index (backend memory) holds row
  // numbers as floats (exact below 2^24 rows). The default downloads index and copies row by row.
  virtual void gather_rows(int64_t rows, int64_t row_size, const float* index, const float* src, float* dst);
  // The loss op of a training step without the host waiting for it: computes the masked sum of
  // loss `kind` (LossKind's value, model/loss.h: 0 Bernoulli-Gamma, 1 Gaussian, 2 MSE) as the
  // *_sum ops do (d_out likewise, not yet divided by valid), then acc[0] += (sum / valid) * weight
  // (0 when valid is 0) and, when that mean is not finite and acc[1] < 0, acc[1] = step. acc: two
  // doubles in backend memory (the epoch's loss sum and the first non-finite step), read by the
  // caller when it needs them. The default runs the *_sum op and updates acc through the host.
  virtual void loss_sum_accumulate(int kind, const Shape& out_shape, const float* out, const float* y,
                                   const float* mask, float* d_out, int64_t valid, double weight, int64_t step,
                                   double* acc);

  // --- lanes: independent layers side by side (MNN's five branches; net.cpp schedules them) ---
  // How many lanes besides the main one (0) this backend runs concurrently: 0 means set_lane is
  // ignored and everything stays in order (the CPU; the CUDA backend with DOWNSCALE_CUDA_LANES=0).
  virtual int lanes() const { return 0; }
  // fork_lanes: work queued on any lane from now on runs after what the main lane queued so far.
  // set_lane(k): the ops that follow are queued on lane k (1..lanes(), or 0 the main one).
  // join_lanes: back on lane 0, whose later work runs after everything the lanes queued. Between
  // a fork and its join, memory released may be reused only after the join.
  virtual void fork_lanes() {}
  virtual void set_lane(int /*lane*/) {}
  virtual void join_lanes() {}
  // Deferred weight gradients: on = true asks the backend to queue each convolution's weight and
  // bias gradient passes from now on beside the work that follows (the CUDA backend: on a stream
  // of their own, DOWNSCALE_CUDA_DEFER_WEIGHTS=1), outside lane regions; it returns whether it
  // will. Until the next join_lanes, which waits for them too, such a layer's dw and db are not
  // final: net.cpp then holds its layer_done hook until that join, as for a lane region's layers.
  // MNN's decoder weight gradients (the head's, the upsampling convolutions') then run while the
  // five branches' small backward kernels leave the GPU part idle. on = false stops deferring
  // (call it after the join). The default defers nothing (every pass in order).
  virtual bool defer_weight_passes(bool /*on*/) { return false; }
  // One Adam step over several parameter tensors (Adam::step: all of a net's), each span updated
  // exactly as adam_update would: the CUDA backend runs them in one launch (MNN's 85 tensors were
  // 85 launches, about 0.2 ms of an 18.6 ms BF16 step on an H200; ResNet50 has 161). The default
  // calls adam_update per span.
  struct AdamSpan {
    float* w;
    const float* g;
    float* m;
    float* v;
    int64_t n;
  };
  virtual void adam_update_many(const std::vector<AdamSpan>& spans, float lr_t, float b1, float b2, float eps);
  // softmax_cross_entropy without the host waiting for it (the benchmark's steps): writes dlogits
  // alike and adds the batch's mean loss into acc (model/loss_accumulator.h, backend memory) as
  // loss_sum_accumulate does (weight 1; acc[1] = step the first time it is not finite). A label
  // outside [0, k) makes the CUDA backend's mean NaN (said when acc is read); the default throws
  // softmax_cross_entropy's error naming the row at once.
  virtual void softmax_cross_entropy_accumulate(int n, int k, const float* logits, const float* labels,
                                                float* dlogits, int64_t step, double* acc);
};

// The mean of softmax_cross_entropy's n per-row losses (kernels::softmax_cross_entropy_row's
// returns, on the host), summed in row order; throws ds::Error naming the first row whose label
// was not a class index in [0, k) (its return, -1). Shared by the backends.
double softmax_cross_entropy_mean(const double* row_loss, int n, int k);

// The oneDNN CPU backend; threads <= 0 uses every core.
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);

// The CUDA backend lives in a plugin, libdownscale_cuda.so, loaded at run time (model/
// backend_factory.cpp): found beside the executable or in ../lib, or at $DOWNSCALE_CUDA_PLUGIN.
// What it found: `devices` GPUs; when 0, `reason` says why (no plugin, its CUDA libraries missing,
// no driver, no GPU visible) and `unusable` tells GPUs that exist but cannot be used (driver too
// old for this build's CUDA...) from plain absence.
struct CudaProbe {
  int devices = 0;
  bool unusable = false;
  std::string reason;
};
CudaProbe cuda_probe();  // asked once per process, then cached
// True when a GPU can be used (the plugin loads and sees one).
bool cuda_available();
// The CUDA/cuDNN backend on GPU `device`; throws ds::Error naming the cause if there is none or it
// cannot run this build's kernels.
std::unique_ptr<Backend> make_cuda_backend(int device = 0);
// GPUs this process can see (CUDA_VISIBLE_DEVICES applies); 0 without a usable plugin.
int cuda_device_count();
// The backend a run asked for: "cpu"; "cuda" on GPU local_rank (modulo the GPUs visible, so N
// ranks on a node of N GPUs take one each), an error (exit 2) naming the setting and the reason
// if there is none; "auto" is cuda when a GPU is visible, else cpu with one log line saying why,
// and an error when GPUs exist but cannot be used. threads: the CPU backend's. `setting` is what
// the user set, as messages name it: the config key "run.device" (train, predict) or the
// command-line option "--device" (benchmark and the bench tools: the default). `origin`: where
// a config key was set (the file, or its --set), which errors start with; "" for an option.
std::unique_ptr<Backend> make_backend(const std::string& device, int threads, int local_rank = 0,
                                      const std::string& setting = "--device", const std::string& origin = "");

}  // namespace ds::model
