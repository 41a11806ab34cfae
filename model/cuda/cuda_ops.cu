// CudaBackend's ops added with DeepESD, batch norm, pooling, dropout, the Gaussian/MSE losses and
// SGD: cuBLAS for the dense layer, grid-stride kernels for the rest (see cuda_kernels.cu). Batch
// norm's per-channel sums are one block per channel reducing in double, so they do not depend on
// the launch geometry; pooling backward gathers per input pixel (no atomics, fixed order).
#include <vector>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/batch_norm.h"
#include "model/kernels/dropout.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/loss.h"
#include "model/kernels/optimizer.h"
#include "model/kernels/points.h"
#include "model/kernels/pooling.h"
#include "model/kernels/gather.h"
#include "model/kernels/softmax_cross_entropy.h"

namespace ds::model {

namespace {

using namespace kernels;

// Sum of a block's doubles into partial[0]; every thread must call it.
__device__ double block_sum(double v, double* partial) {
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const double total = partial[0];
  __syncthreads();  // partial may be reused right after
  return total;
}

// --- dense ---
__global__ void add_bias_kernel(int64_t total, int out, const float* b, float* y) {
  DS_GRID_STRIDE(i, total) add_bias_at(i, out, b, y);
}

__global__ void bias_grad_kernel(int n, int out, const float* dy, float* db) {
  DS_GRID_STRIDE(o, out) bias_grad_at(o, n, out, dy, db);
}

// --- pooling (bodies in model/kernels/pooling.h) ---
__global__ void pool_forward_kernel(int64_t total, int h, int w, int out_h, int out_w, int k, int stride,
                                    int pad_top, int pad_left, bool max, const float* x, float* y) {
  DS_GRID_STRIDE(i, total) pool_forward_at(i, h, w, out_h, out_w, k, stride, pad_top, pad_left, max, x, y);
}

__global__ void pool_backward_kernel(int64_t total, int h, int w, int out_h, int out_w, int k, int stride,
                                     int pad_top, int pad_left, bool max, const float* x, const float* dy, float* dx) {
  DS_GRID_STRIDE(i, total) pool_backward_at(i, h, w, out_h, out_w, k, stride, pad_top, pad_left, max, x, dy, dx);
}

// --- softmax cross-entropy: one thread per row (k = 1000 classes is ~3k flops a row; the batch
// has tens of rows, next to a network's billions this is noise), summed on the host in row order.
__global__ void softmax_cross_entropy_kernel(int n, int k, const float* z, const float* labels, float grad_scale,
                                             float* dz, double* row_loss) {
  DS_GRID_STRIDE(r, n)
  row_loss[r] = softmax_cross_entropy_row(k, z + r * k, labels[r], grad_scale, dz ? dz + r * k : nullptr);
}

// The rows' losses summed in row order, as softmax_cross_entropy_mean does on the host (a row's
// -1, a label outside [0, k), makes the sum NaN), then into the loss record as the training
// step's loss is (kernels::accumulate_mean_loss).
__global__ void softmax_rows_accumulate_kernel(int n, const double* row_loss, int64_t step, double* acc) {
  double sum = 0;
  for (int r = 0; r < n; ++r) sum += row_loss[r] < 0 ? double(NAN) : row_loss[r];
  kernels::accumulate_mean_loss(sum, n, 1.0, step, acc);
}

// --- batch norm: one block per channel over its m = N*H*W elements ---
__global__ void bn_stats_kernel(int n, int c, int64_t hw, const float* x, float* mean, float* var) {
  __shared__ double partial[kThreads];
  const int ch = blockIdx.x;
  const int64_t m = int64_t(n) * hw;
  double s = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) s += x[bn_channel_offset(j, hw, c, ch)];
  const double mu = block_sum(s, partial) / double(m);
  double q = 0;  // two passes: the variance from centred values, no cancellation
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const double d = x[bn_channel_offset(j, hw, c, ch)] - mu;
    q += d * d;
  }
  const double v = block_sum(q, partial) / double(m);
  if (threadIdx.x == 0) {
    mean[ch] = float(mu);
    var[ch] = float(v);
  }
}

__global__ void bn_apply_kernel(int64_t total, int c, int64_t hw, const float* x, const float* gamma,
                                const float* beta, const float* mean, const float* var, float eps, float* y) {
  DS_GRID_STRIDE(i, total) bn_apply_at(i, c, hw, x, gamma, beta, mean, var, eps, y);
}

// dbeta = sum dy, dgamma = sum dy * xhat per channel.
__global__ void bn_param_grad_kernel(int n, int c, int64_t hw, const float* x, const float* dy, const float* mean,
                                     const float* var, float eps, float* dgamma, float* dbeta) {
  __shared__ double partial[kThreads];
  const int ch = blockIdx.x;
  const int64_t m = int64_t(n) * hw;
  const double inv_std = 1.0 / sqrt(double(var[ch]) + eps);
  double sg = 0, sb = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    double tg = 0, tb = 0;
    bn_param_grad_terms(j, hw, c, ch, x, dy, mean[ch], inv_std, tg, tb);
    sg += tg;
    sb += tb;
  }
  const double g = block_sum(sg, partial), b = block_sum(sb, partial);
  if (threadIdx.x == 0) {
    dgamma[ch] = float(g);
    dbeta[ch] = float(b);
  }
}

// dx = gamma inv_std / m (m dy - dbeta - xhat dgamma).
__global__ void bn_data_grad_kernel(int64_t total, int c, int64_t hw, int64_t m, const float* x, const float* dy,
                                    const float* gamma, const float* mean, const float* var, float eps,
                                    const float* dgamma, const float* dbeta, float* dx) {
  DS_GRID_STRIDE(i, total) bn_data_grad_at(i, c, hw, m, x, dy, gamma, mean, var, eps, dgamma, dbeta, dx);
}

// --- elementwise ---
__global__ void dropout_kernel(int64_t n, float rate, uint64_t seed, const float* x, float* y, float* mask) {
  const float keep_scale = 1.0f / (1.0f - rate);
  DS_GRID_STRIDE(i, n) dropout_at(i, rate, keep_scale, seed, x, y, mask);
}

__global__ void multiply_kernel(int64_t n, const float* a, const float* b, float* y) {
  DS_GRID_STRIDE(i, n) multiply_at(i, a, b, y);
}

__global__ void axpby_kernel(int64_t n, float a, const float* x, float b, float* y) {
  DS_GRID_STRIDE(i, n) axpby_at(i, a, x, b, y);
}

__global__ void sgd_kernel(int64_t n, float* w, const float* g, float* v, float lr, float momentum) {
  DS_GRID_STRIDE(i, n) sgd_momentum_at(i, w, g, v, lr, momentum);
}

// --- land points ---
__global__ void scatter_kernel(int64_t total, int points, int64_t hw, const float* index, const float* src,
                               float* dst) {
  DS_GRID_STRIDE(i, total) scatter_at(i, points, hw, index, src, dst);
}

__global__ void gather_kernel(int64_t total, int points, int64_t hw, const float* index, const float* dst_grad,
                              float* src_grad) {
  DS_GRID_STRIDE(i, total) gather_at(i, points, hw, index, dst_grad, src_grad);
}

// --- masked losses: as bernoulli_gamma_kernel (cuda_kernels.cu), kind 0 MSE, 1 Gaussian ---
__global__ void masked_loss_kernel(int kind, int64_t n_hw, int64_t hw, int c, const float* out, const float* y,
                                   const float* mask, float* d_out, double* total) {
  __shared__ double partial[kThreads];
  double local = 0.0;
  DS_GRID_STRIDE(i, n_hw) local += masked_loss_at(kind, i, hw, c, out, y, mask, d_out);
  const double block_total = block_sum(local, partial);
  if (threadIdx.x == 0) atomicAdd(total, block_total);
}

}  // namespace

cublasHandle_t CudaBackend::cublas() {
  if (!cublas_) {  // kept only once set up: a half-made handle would run on the legacy stream
    cublasHandle_t h = nullptr;
    DS_CUBLAS(cublasCreate(&h));
    try {
      DS_CUBLAS(cublasSetStream(h, stream_));
      set_cublas_math(h);
    } catch (...) {
      cublasDestroy(h);
      throw;
    }
    cublas_ = h;
  }
  return cublas_;
}

// TF32 tensor cores for train.precision tf32; plain FP32 (CUBLAS_DEFAULT_MATH) for fp32, which
// the parity tests pin (results then match the CPU's to float rounding). The 16-bit modes choose
// per call through gemm()'s compute type, so the handle stays at the default there.
void CudaBackend::set_cublas_math(cublasHandle_t h) {
  DS_CUBLAS(cublasSetMathMode(h, math_ == MathMode::kTf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

namespace {
// Column-major C = op(A) op(B) on FP32 data: cublasSgemm in tf32/fp32 (the handle's math mode
// decides), cublasGemmEx with compute type 32F_FAST_16BF / 32F_FAST_16F in bf16/fp16 (cuBLAS
// rounds the inputs to 16 bits for the tensor cores and accumulates in FP32).
void gemm(cublasHandle_t h, MathMode math, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
  const float one = 1.0f, zero = 0.0f;
  if (math == MathMode::kBf16 || math == MathMode::kFp16) {
    const cublasComputeType_t ct =
        math == MathMode::kBf16 ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F_FAST_16F;
    DS_CUBLAS(cublasGemmEx(h, ta, tb, m, n, k, &one, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb, &zero, c, CUDA_R_32F,
                           ldc, ct, CUBLAS_GEMM_DEFAULT));
  } else {
    DS_CUBLAS(cublasSgemm(h, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc));
  }
}
}  // namespace

DType CudaBackend::activation_dtype() const {
  if (!act16_ || !fused16()) return DType::kF32;
  return math_ == MathMode::kBf16 ? DType::kBf16 : DType::kF16;
}

bool CudaBackend::conv_activations16(int out_c, int stride) const {
  return !(nhwc_ && stride == 1 && out_c <= kernels::kNarrowConvMaxOut);
}

bool CudaBackend::set_math(MathMode mode) {
  if (mode != math_) defer_said_ = false;  // the deferred passes' line once per mode (the device check's rows)
  math_ = mode;
  // BF16's defaults: NHWC 16-bit activations (cuda_backend.h says why); FP16 keeps NCHW FP32
  // activations (cuDNN refused FP16 backward data in NHWC). The environment overrides either.
  const bool bf16 = mode == MathMode::kBf16;
  nhwc_ = layout_env_ >= 0 ? layout_env_ == 1 : bf16;
  act16_ = act16_env_ >= 0 ? act16_env_ == 1 : bf16;
  resolve_timed_paths();
  if (cublas_) set_cublas_math(cublas_);
  for (const Lane& l : lanes_)  // the other lanes' handles (the current one's is cublas_)
    if (l.cublas && l.cublas != cublas_) set_cublas_math(l.cublas);
  return true;
}

// BF16's timed paths (cuda_backend.h, above graph_env_, says where and how fast): each unset
// switch gives way to them under bf16 only, where they ran, and to never otherwise.
void CudaBackend::resolve_timed_paths() {
  const bool bf16 = math_ == MathMode::kBf16;
  graph_mode_ = graph_env_.value_or(bf16 ? -1 : 0);
  tf32_passes_mode_ = tf32_passes_env_.value_or(bf16 ? -1 : 0);
  pad_channels_ = pad_env_.value_or(bf16 ? -1 : 0);
  defer_weights_ = defer_env_.value_or(bf16);
  wgrad_gemm_16bit_layouts_ = wgrad_16bit_env_.value_or(bf16);
}

// Row-major x (n, in), w (out, in), y (n, out) are column-major x^T, w^T, y^T to cuBLAS, so
// y^T = w x^T is gemm(T, N) with w read as the (in, out) column-major matrix it is in memory.
void CudaBackend::dense_forward(int n, int in, int out, const float* x, const float* w, const float* b, float* y) {
  gemm(cublas(), math_, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, w, in, x, in, y, out);
  const int64_t total = int64_t(n) * out;
  add_bias_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, out, b, y);
  DS_CUDA_LAUNCHED();
}

// dx^T (in, n) = w^T (in, out) dy^T (out, n).
void CudaBackend::dense_backward_data(int n, int in, int out, const float* dy, const float* w, float* dx) {
  gemm(cublas(), math_, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, w, in, dy, out, dx, in);
}

// dw^T (in, out) = x^T (in, n) dy (n, out); db = column sums of dy.
void CudaBackend::dense_backward_weights(int n, int in, int out, const float* x, const float* dy, float* dw,
                                         float* db) {
  gemm(cublas(), math_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, x, in, dy, out, dw, in);
  bias_grad_kernel<<<blocks_for(out), kThreads, 0, stream_>>>(n, out, dy, db);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::pool2d_forward(const PoolDesc& d, const float* x, float* y) {
  no_blocked_activations(d.block);
  const Shape o = d.out();
  const int64_t total = o.size();
  if (total == 0) return;
  pool_forward_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, d.in.h, d.in.w, o.h, o.w, d.k, d.stride,
                                                                   d.pad_top, d.pad_left, d.kind == PoolKind::kMax,
                                                                   x, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::pool2d_backward(const PoolDesc& d, const float* x, const float* dy, float* dx) {
  no_blocked_activations(d.block);
  const Shape o = d.out();
  const int64_t total = d.in.size();
  if (total == 0) return;
  pool_backward_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, d.in.h, d.in.w, o.h, o.w, d.k, d.stride,
                                                                    d.pad_top, d.pad_left, d.kind == PoolKind::kMax,
                                                                    x, dy, dx);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::bn_kernels_forward_training(const Shape& s, const float* x, const float* gamma, const float* beta,
                                              float eps, float* y, float* mean, float* var) {
  const int64_t hw = int64_t(s.h) * s.w, total = s.size();
  if (total == 0) return;
  bn_stats_kernel<<<s.c, kThreads, 0, stream_>>>(s.n, s.c, hw, x, mean, var);
  DS_CUDA_LAUNCHED();
  bn_apply_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, s.c, hw, x, gamma, beta, mean, var, eps, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::bn_kernels_forward_inference(const Shape& s, const float* x, const float* gamma, const float* beta,
                                               const float* mean, const float* var, float eps, float* y) {
  const int64_t hw = int64_t(s.h) * s.w, total = s.size();
  if (total == 0) return;
  bn_apply_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, s.c, hw, x, gamma, beta, mean, var, eps, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::bn_kernels_backward(const Shape& s, const float* x, const float* dy, const float* gamma,
                                      const float* mean, const float* var, float eps, float* dx, float* dgamma,
                                      float* dbeta) {
  const int64_t hw = int64_t(s.h) * s.w, total = s.size();
  if (total == 0) return;
  bn_param_grad_kernel<<<s.c, kThreads, 0, stream_>>>(s.n, s.c, hw, x, dy, mean, var, eps, dgamma, dbeta);
  DS_CUDA_LAUNCHED();
  bn_data_grad_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, s.c, hw, int64_t(s.n) * hw, x, dy, gamma,
                                                                   mean, var, eps, dgamma, dbeta, dx);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::dropout_forward(int64_t n, float rate, uint64_t seed, const float* x, float* y, float* mask) {
  if (n == 0) return;
  dropout_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, rate, seed, x, y, mask);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::multiply(int64_t n, const float* a, const float* b, float* y) {
  if (n == 0) return;
  multiply_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, a, b, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::axpby(int64_t n, float a, const float* x, float b, float* y) {
  if (n == 0) return;
  axpby_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, a, x, b, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::scatter_points(int n, int k, int points, const float* index, const Shape& grid, float fill,
                                 const float* src, float* dst) {
  const int64_t hw = int64_t(grid.h) * grid.w, total = int64_t(n) * k * points;
  this->fill(dst, int64_t(n) * k * hw, fill);  // ocean, then the land points over it (same stream)
  if (total == 0) return;
  scatter_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, points, hw, index, src, dst);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::gather_points(int n, int k, int points, const float* index, const Shape& grid,
                                const float* dst_grad, float* src_grad) {
  const int64_t hw = int64_t(grid.h) * grid.w, total = int64_t(n) * k * points;
  if (total == 0) return;
  gather_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, points, hw, index, dst_grad, src_grad);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::queue_masked_loss_sum(int kind, const Shape& s, const float* out, const float* y, const float* mask,
                                        float* d_out, double* total) {
  const int64_t hw = int64_t(s.h) * s.w, n = s.n * hw;
  DS_CUDA(cudaMemsetAsync(total, 0, sizeof(double), stream_));
  if (n > 0) {
    const int blocks = blocks_for(n) < 1024 ? blocks_for(n) : 1024;
    masked_loss_kernel<<<blocks, kThreads, 0, stream_>>>(kind, n, hw, s.c, out, y, mask, d_out, total);
    DS_CUDA_LAUNCHED();
  }
}

namespace {
double read_sum(cudaStream_t stream, const double* d_sum) {
  double total = 0.0;
  DS_CUDA(cudaMemcpyAsync(&total, d_sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
  DS_CUDA(cudaStreamSynchronize(stream));
  return total;
}
}  // namespace

double CudaBackend::mse_sum(const Shape& s, const float* out, const float* y, const float* mask, float* d_out) {
  queue_masked_loss_sum(0, s, out, y, mask, d_out, d_sum_);
  return read_sum(stream_, d_sum_);
}

double CudaBackend::gaussian_nll_sum(const Shape& s, const float* out, const float* y, const float* mask,
                                     float* d_out) {
  queue_masked_loss_sum(1, s, out, y, mask, d_out, d_sum_);
  return read_sum(stream_, d_sum_);
}

void CudaBackend::sgd_momentum_update(int64_t n, float* w, const float* g, float* v, float lr, float momentum) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, w, g, v, lr, momentum);
  DS_CUDA_LAUNCHED();
}

double CudaBackend::softmax_cross_entropy(int n, int k, const float* logits, const float* labels, float* dlogits) {
  if (n <= 0) return 0.0;
  double* row = static_cast<double*>(workspace(size_t(n) * sizeof(double)));
  softmax_cross_entropy_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, k, logits, labels, 1.0f / float(n),
                                                                        dlogits, row);
  DS_CUDA_LAUNCHED();
  std::vector<double> host(static_cast<size_t>(n));
  DS_CUDA(cudaMemcpyAsync(host.data(), row, size_t(n) * sizeof(double), cudaMemcpyDeviceToHost, stream_));
  DS_CUDA(cudaStreamSynchronize(stream_));
  return softmax_cross_entropy_mean(host.data(), n, k);
}

void CudaBackend::softmax_cross_entropy_accumulate(int n, int k, const float* logits, const float* labels,
                                                   float* dlogits, int64_t step, double* acc) {
  if (n <= 0) return;
  // The rows' losses in the workspace, read by the next kernel on the same stream: no wait.
  double* row = static_cast<double*>(workspace(size_t(n) * sizeof(double)));
  softmax_cross_entropy_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, k, logits, labels, 1.0f / float(n),
                                                                        dlogits, row);
  DS_CUDA_LAUNCHED();
  softmax_rows_accumulate_kernel<<<1, 1, 0, stream_>>>(n, row, step, acc);
  DS_CUDA_LAUNCHED();
}

}  // namespace ds::model
