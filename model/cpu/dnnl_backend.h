// The CPU backend: oneDNN primitives for the heavy ops (convolution, ReLU, nearest resampling),
// plain OpenMP loops for the cheap elementwise ones (cpu_loops.cpp).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include <dnnl.hpp>

#include "model/backend.h"
#include "model/cpu/host_buffer.h"

namespace ds::model {

class DnnlBackend : public Backend {
 public:
  explicit DnnlBackend(int threads);
  ~DnnlBackend() override;
  std::string name() const override;
  // kBf16: convolutions (plain and polyphase) and the dense layer read bfloat16 copies of their
  // inputs and weights and accumulate and write FP32, on CPUs whose oneDNN ISA has avx512_bf16
  // (false elsewhere, mode unchanged). kFp16: false (no FP16 convolutions in oneDNN on x86).
  // kTf32/kFp32: false, FP32 as ever (TF32 is a tensor-core format).
  bool set_math(MathMode mode) override;
  // Whether oneDNN may run bfloat16 convolutions here: avx512_core_bf16 or better (AMX).
  static bool cpu_has_bf16();
  // BF16 under BF16 math: convolutions (plain and polyphase) read and write bfloat16 activations.
  DType activation_dtype() const override { return bf16_ ? DType::kBf16 : DType::kF32; }
  // 16 (nChw16c) where oneDNN's ISA is AVX-512, 8 (nChw8c) on AVX2: the blocks its direct
  // convolution, batch norm and pooling kernels take; 0 on older CPUs.
  int activation_block() const override { return block_; }

  float* allocate(int64_t n) override;
  void release(float* p) override;
  void copy_from_host(float* dst, const float* host, int64_t n) override;
  void copy_to_host(float* host, const float* src, int64_t n) override;
  void copy(float* dst, const float* src, int64_t n) override;
  void fill(float* p, int64_t n, float value) override;
  void synchronize() override {}
  using Backend::all_finite;  // the several-buffer form: the base class asks this one of each
  bool all_finite(int64_t n, const float* x) override;

  void conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) override;
  void conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) override;
  void conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) override;
  void conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) override;
  void relu_forward(int64_t n, const float* x, float* y) override;
  void relu_backward(int64_t n, const float* x, const float* dy, float* dx) override;
  void sigmoid_channel_forward(const Shape& s, int channel, float* y) override;
  void sigmoid_channel_backward(const Shape& s, int channel, const float* y, float* dy) override;
  void upsample_nearest_forward(const Shape& in, int factor, const float* x, float* y) override;
  void upsample_nearest_backward(const Shape& in, int factor, const float* dy, float* dx) override;
  // dnnl_upsample_conv.cpp: one convolution on the small input instead of upsample + conv.
  int64_t upsample_conv2d_scratch(const ConvDesc& d, int factor) const override;
  void upsample_conv2d_forward(const ConvDesc& d, int factor, const float* x, const float* w, const float* b, float* y,
                               float* scratch) override;
  void upsample_conv2d_backward_data(const ConvDesc& d, int factor, const float* dy, const float* w, float* dx,
                                     float* scratch) override;
  void upsample_conv2d_backward_weights(const ConvDesc& d, int factor, const float* x, const float* dy, float* dw,
                                        float* db, float* scratch) override;
  // The ReLU as the small convolution's post-op; backward masks and shuffles the gradient once
  // for both gradients, no scratch.
  void upsample_conv2d_relu_forward(const ConvDesc& d, int factor, const float* x, const float* w, const float* b,
                                    float* y, float* scratch) override;
  int64_t upsample_conv2d_backward_scratch(const ConvDesc& d, int factor, bool relu) const override;
  void upsample_conv2d_backward(const ConvDesc& d, int factor, const float* x, const float* y, const float* dy,
                                const float* w, float* dx, float* dw, float* db, float* scratch) override;
  void copy_channels(const Shape& src, const float* x, const Shape& dst, int offset, float* y) override;
  void slice_channels(const Shape& dst, int offset, const Shape& src, const float* y, float* x) override;
  void copy_channels16(const Shape& src, const uint16_t* x, const Shape& dst, int offset, uint16_t* y) override;
  void relu_backward16(int64_t n, const uint16_t* y, const float* dy, float* dx) override;
  void accumulate(int64_t n, const float* x, float* acc) override;
  void scale(int64_t n, float alpha, float* x) override;
  double bernoulli_gamma_sum(const Shape& out_shape, const float* out, const float* y, const float* mask,
                             float* d_out) override;
  void adam_update(int64_t n, float* w, const float* g, float* m, float* v, float lr_t, float b1, float b2,
                   float eps) override;

  // dnnl_dense.cpp (inner product), dnnl_pooling.cpp, dnnl_batch_norm.cpp; the rest in cpu_ops.cpp.
  void dense_forward(int n, int in, int out, const float* x, const float* w, const float* b, float* y) override;
  void dense_backward_data(int n, int in, int out, const float* dy, const float* w, float* dx) override;
  void dense_backward_weights(int n, int in, int out, const float* x, const float* dy, float* dw,
                              float* db) override;
  void pool2d_forward(const PoolDesc& d, const float* x, float* y) override;
  void pool2d_backward(const PoolDesc& d, const float* x, const float* dy, float* dx) override;
  void batch_norm_forward_training(const Shape& s, int block, const float* x, const float* gamma, const float* beta,
                                   float eps, float* y, float* mean, float* var) override;
  void batch_norm_forward_inference(const Shape& s, int block, const float* x, const float* gamma, const float* beta,
                                    const float* mean, const float* var, float eps, float* y) override;
  void batch_norm_backward(const Shape& s, int block, const float* x, const float* dy, const float* gamma,
                           const float* mean, const float* var, float eps, float* dx, float* dgamma,
                           float* dbeta) override;
  void blocked_global_average_pool_forward(const Shape& s, int block, const float* x, float* y) override;
  void blocked_global_average_pool_backward(const Shape& s, int block, const float* dy, float* dx) override;
  void dropout_forward(int64_t n, float rate, uint64_t seed, const float* x, float* y, float* mask) override;
  void multiply(int64_t n, const float* a, const float* b, float* y) override;
  void axpby(int64_t n, float a, const float* x, float b, float* y) override;
  void scatter_points(int n, int k, int points, const float* index, const Shape& grid, float fill, const float* src,
                      float* dst) override;
  void gather_points(int n, int k, int points, const float* index, const Shape& grid, const float* dst_grad,
                     float* src_grad) override;
  double mse_sum(const Shape& out_shape, const float* out, const float* y, const float* mask, float* d_out) override;
  double gaussian_nll_sum(const Shape& out_shape, const float* out, const float* y, const float* mask,
                          float* d_out) override;
  void sgd_momentum_update(int64_t n, float* w, const float* g, float* v, float lr, float momentum) override;
  double softmax_cross_entropy(int n, int k, const float* logits, const float* labels, float* dlogits) override;

 private:
  // Primitives are built once per geometry and reused: building one costs far more than running
  // it on a small batch. The key includes the batch size because the last batch of an epoch is
  // usually smaller; that adds at most one more entry per layer.
  // Convolutions (dnnl_conv.cpp) run in the layouts oneDNN chooses; ConvOperand relates one
  // operand's plain layout to the chosen one, conv_in/conv_out move data between them.
  struct ConvPrims;
  struct ConvOperand;
  // Geometry, then whether the inputs are bfloat16 (primitives of both modes coexist), then
  // whether x and y are 16-bit activations (ConvDesc::x16, y16).
  // then the blocks of x and y (ConvDesc::x_block, y_block).
  using ConvKey = std::tuple<int, int, int, int, int, int, int, int, int, int, int, int, bool, bool, bool, int, int>;
  ConvPrims& conv_prims(const ConvDesc& d);
  void run_conv_forward(const ConvDesc& d, const ConvPrims& p, const dnnl::convolution_forward::primitive_desc& pd,
                        const dnnl::convolution_forward& fwd, const ConvOperand& src_op, const ConvOperand& wei_op,
                        const ConvOperand& dst_op, const float* x, const float* w, const float* b, float* y);
  dnnl::memory conv_in(const ConvOperand& op, const float* user, HostBuffer& ws);
  dnnl::memory conv_out(const ConvOperand& op, float* user, HostBuffer& ws);
  void conv_out_done(const ConvOperand& op, dnnl::memory m, float* user);
  dnnl::memory scratchpad(const dnnl::memory::desc& md);
  struct ReluPrims;
  ReluPrims& relu_prims(int64_t n);
  struct ResamplePrims;
  ResamplePrims& resample_prims(const Shape& in, int factor);

  // Throws unless block is 0 or this backend's (an op handed a tensor blocked for another CPU).
  void expect_block(int block, const char* op) const;
  int threads_;
  int block_ = 0;      // activation_block()
  bool plain_layouts_ = false;  // DS_CONV_PLAIN_LAYOUTS=1 at construction (dnnl_backend.cpp)
  bool bf16_ = false;  // set_math(kBf16) honoured: conv/dense inputs in bfloat16
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<ConvKey, std::shared_ptr<ConvPrims>> conv_cache_;  // shared_ptr: ConvPrims is complete only in dnnl_conv.cpp
  // Workspaces shared by every convolution: blocked operand copies (A, B, C), a zero or dropped
  // bias, oneDNN's scratchpad; then the polyphase upsample-conv's folded weights, bias and
  // small-grid output (or output gradient).
  enum { kA, kB, kC, kBias, kScratch, kUpW, kUpB, kUpY, kWorkspaces };
  HostBuffer conv_ws_[kWorkspaces];
  float* workspace(int slot, int64_t floats);
  void polyphase_forward(const ConvDesc& d, int f, const float* x, const float* w, const float* b, float* y,
                         bool relu);
  // The three backward ops in one (y null: no ReLU mask; dw null: no weight and bias gradients;
  // dx null: no data gradient).
  void polyphase_backward(const ConvDesc& d, int f, const float* x, const float* y, const float* dy, const float* w,
                          float* dx, float* dw, float* db);
  std::map<int64_t, std::unique_ptr<ReluPrims>> relu_cache_;
  std::map<std::tuple<int, int, int, int, int>, std::unique_ptr<ResamplePrims>> resample_cache_;
  // Same once-per-geometry caching for the ops of dnnl_dense/pooling/batch_norm.cpp. shared_ptr,
  // not unique_ptr: its deleter is bound where the struct is complete (those files), so the
  // destructor in dnnl_backend.cpp needs no definition of these structs.
  struct DensePrims;
  DensePrims& dense_prims(int n, int in, int out);
  struct PoolPrims;
  PoolPrims& pool_prims(const PoolDesc& d);
  struct BatchNormPrims;
  BatchNormPrims& batch_norm_prims(const Shape& s, int block, float eps);
  struct GlobalPoolPrims;
  GlobalPoolPrims& global_pool_prims(const Shape& s, int block);
  std::map<std::tuple<int, int, int, bool>, std::shared_ptr<DensePrims>> dense_cache_;  // + bf16_
  std::map<std::tuple<int, int, int, int, int, int, int, int, int, int, int, int>, std::shared_ptr<PoolPrims>>
      pool_cache_;  // + PoolDesc::block
  std::map<std::tuple<int, int, int, int, int, float>, std::shared_ptr<BatchNormPrims>> batch_norm_cache_;
  std::map<std::tuple<int, int, int, int, int>, std::shared_ptr<GlobalPoolPrims>> global_pool_cache_;
};

}  // namespace ds::model
