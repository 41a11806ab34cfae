// CudaBackend's ops added with DeepESD, batch norm, pooling, dropout, the Gaussian/MSE losses and
// SGD: cuBLAS for the dense layer, grid-stride kernels for the rest (see cuda_kernels.cu). Batch
// norm's per-channel sums are one block per channel reducing in double, so they do not depend on
// the launch geometry; pooling backward gathers per input pixel (no atomics, fixed order).
#include "model/counter_rng.h"
#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/gaussian_point.h"
#include "model/loss_point_valid.h"

namespace ds::model {

namespace {

#define DS_GRID_STRIDE(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

void cublas_check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLAS error in ") + what + " (" + file + ":" + std::to_string(line) +
                "): status " + std::to_string(int(s)));
}
#define DS_CUBLAS(call) cublas_check((call), #call, __FILE__, __LINE__)

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
  DS_GRID_STRIDE(i, total) y[i] += b[i % out];
}

__global__ void bias_grad_kernel(int n, int out, const float* dy, float* db) {
  DS_GRID_STRIDE(o, out) {
    double s = 0;
    for (int r = 0; r < n; ++r) s += dy[int64_t(r) * out + o];
    db[o] = float(s);
  }
}

// --- pooling ---
// The window of output (plane, oh, ow): its maximum's offset in the plane (first in row-major
// order on ties) or its mean.
__device__ int window_argmax(const float* plane, int w, int oh, int ow, int k, int stride) {
  int best = oh * stride * w + ow * stride;
  for (int a = 0; a < k; ++a)
    for (int b = 0; b < k; ++b) {
      const int o = (oh * stride + a) * w + ow * stride + b;
      if (plane[o] > plane[best]) best = o;
    }
  return best;
}

__global__ void pool_forward_kernel(int64_t total, int h, int w, int out_h, int out_w, int k, int stride, bool max,
                                    const float* x, float* y) {
  DS_GRID_STRIDE(i, total) {
    const int64_t plane = i / (int64_t(out_h) * out_w);
    const int oh = int(i / out_w % out_h), ow = int(i % out_w);
    const float* p = x + plane * h * w;
    if (max) {
      y[i] = p[window_argmax(p, w, oh, ow, k, stride)];
    } else {
      float s = 0;
      for (int a = 0; a < k; ++a)
        for (int b = 0; b < k; ++b) s += p[(oh * stride + a) * w + ow * stride + b];
      y[i] = s / float(k * k);
    }
  }
}

// One thread per input pixel: the outputs whose windows contain it are rows
// ceil((r-k+1)/stride) .. floor(r/stride) (and likewise columns), within the output.
__global__ void pool_backward_kernel(int64_t total, int h, int w, int out_h, int out_w, int k, int stride, bool max,
                                     const float* x, const float* dy, float* dx) {
  DS_GRID_STRIDE(i, total) {
    const int64_t plane = i / (int64_t(h) * w);
    const int r = int(i / w % h), c = int(i % w), here = r * w + c;
    const float* p = x + plane * h * w;
    const float* g = dy + plane * out_h * out_w;
    const int oh0 = r - k + 1 <= 0 ? 0 : (r - k + 1 + stride - 1) / stride;
    const int ow0 = c - k + 1 <= 0 ? 0 : (c - k + 1 + stride - 1) / stride;
    const int oh1 = min(r / stride, out_h - 1), ow1 = min(c / stride, out_w - 1);
    float s = 0;
    for (int oh = oh0; oh <= oh1; ++oh)
      for (int ow = ow0; ow <= ow1; ++ow) {
        if (max) {
          if (window_argmax(p, w, oh, ow, k, stride) == here) s += g[oh * out_w + ow];
        } else {
          s += g[oh * out_w + ow] / float(k * k);
        }
      }
    dx[i] = s;
  }
}

// --- batch norm: one block per channel over its m = N*H*W elements ---
__device__ inline int64_t channel_offset(int64_t j, int64_t hw, int c, int channel) {
  return ((j / hw) * c + channel) * hw + j % hw;
}

__global__ void bn_stats_kernel(int n, int c, int64_t hw, const float* x, float* mean, float* var) {
  __shared__ double partial[kThreads];
  const int ch = blockIdx.x;
  const int64_t m = int64_t(n) * hw;
  double s = 0;
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) s += x[channel_offset(j, hw, c, ch)];
  const double mu = block_sum(s, partial) / double(m);
  double q = 0;  // two passes: the variance from centred values, no cancellation
  for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
    const double d = x[channel_offset(j, hw, c, ch)] - mu;
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
  DS_GRID_STRIDE(i, total) {
    const int ch = int(i / hw % c);
    y[i] = gamma[ch] * (x[i] - mean[ch]) * rsqrtf(var[ch] + eps) + beta[ch];
  }
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
    const int64_t o = channel_offset(j, hw, c, ch);
    sb += dy[o];
    sg += dy[o] * (x[o] - mean[ch]) * inv_std;
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
  DS_GRID_STRIDE(i, total) {
    const int ch = int(i / hw % c);
    const float inv_std = rsqrtf(var[ch] + eps);
    const float xhat = (x[i] - mean[ch]) * inv_std;
    dx[i] = gamma[ch] * inv_std / float(m) * (float(m) * dy[i] - dbeta[ch] - xhat * dgamma[ch]);
  }
}

// --- elementwise ---
__global__ void dropout_kernel(int64_t n, float rate, uint64_t seed, const float* x, float* y, float* mask) {
  const float keep_scale = 1.0f / (1.0f - rate);
  DS_GRID_STRIDE(i, n) {
    mask[i] = counter_uniform(seed, uint64_t(i)) < rate ? 0.0f : keep_scale;
    y[i] = x[i] * mask[i];
  }
}

__global__ void multiply_kernel(int64_t n, const float* a, const float* b, float* y) {
  DS_GRID_STRIDE(i, n) y[i] = a[i] * b[i];
}

__global__ void axpby_kernel(int64_t n, float a, const float* x, float b, float* y) {
  DS_GRID_STRIDE(i, n) y[i] = a * x[i] + b * y[i];
}

__global__ void sgd_kernel(int64_t n, float* w, const float* g, float* v, float lr, float momentum) {
  DS_GRID_STRIDE(i, n) {
    const float vi = momentum * v[i] - lr * g[i];
    v[i] = vi;
    w[i] += vi;
  }
}

// --- land points ---
__global__ void scatter_kernel(int64_t total, int points, int64_t hw, const float* index, const float* src,
                               float* dst) {
  DS_GRID_STRIDE(i, total) {
    const int64_t block = i / points;  // sample * k + channel
    dst[block * hw + int64_t(index[i % points])] = src[i];
  }
}

__global__ void gather_kernel(int64_t total, int points, int64_t hw, const float* index, const float* dst_grad,
                              float* src_grad) {
  DS_GRID_STRIDE(i, total) {
    const int64_t block = i / points;
    src_grad[i] = dst_grad[block * hw + int64_t(index[i % points])];
  }
}

// --- masked losses: as bernoulli_gamma_kernel (cuda_kernels.cu), kind 0 MSE, 1 Gaussian ---
__global__ void masked_loss_kernel(int kind, int64_t n_hw, int64_t hw, int c, const float* out, const float* y,
                                   const float* mask, float* d_out, double* total) {
  __shared__ double partial[kThreads];
  double local = 0.0;
  DS_GRID_STRIDE(i, n_hw) {
    const int64_t s = i / hw, k = i % hw;
    const int64_t o = s * c * hw + k;
    if (!loss_point_valid(mask[k], y[i])) {  // mask 0 or NaN target, as the CPU loop
      if (d_out)
        for (int ch = 0; ch < c; ++ch) d_out[o + ch * hw] = 0.0f;
      continue;
    }
    if (kind == 0) {
      const SquaredErrorPoint r = squared_error_point(out[o], y[i]);
      local += r.loss;
      if (d_out) d_out[o] = float(r.d_value);
    } else {
      const GaussianPoint r = gaussian_point(out[o], out[o + hw], y[i]);
      local += r.loss;
      if (d_out) {
        d_out[o] = float(r.d_mean);
        d_out[o + hw] = float(r.d_log_var);
      }
    }
  }
  const double block_total = block_sum(local, partial);
  if (threadIdx.x == 0) atomicAdd(total, block_total);
}

}  // namespace

cublasHandle_t CudaBackend::cublas() {
  if (!cublas_) {
    DS_CUBLAS(cublasCreate(&cublas_));
    DS_CUBLAS(cublasSetStream(cublas_, stream_));
    // Plain FP32 arithmetic: no TF32 tensor-core shortcut (results must match the CPU's to 1e-3).
    DS_CUBLAS(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  }
  return cublas_;
}

// Row-major x (n, in), w (out, in), y (n, out) are column-major x^T, w^T, y^T to cuBLAS, so
// y^T = w x^T is gemm(T, N) with w read as the (in, out) column-major matrix it is in memory.
void CudaBackend::dense_forward(int n, int in, int out, const float* x, const float* w, const float* b, float* y) {
  const float one = 1.0f, zero = 0.0f;
  DS_CUBLAS(cublasSgemm(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, in, x, in, &zero, y, out));
  const int64_t total = int64_t(n) * out;
  add_bias_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, out, b, y);
  DS_CUDA_LAUNCHED();
}

// dx^T (in, n) = w^T (in, out) dy^T (out, n).
void CudaBackend::dense_backward_data(int n, int in, int out, const float* dy, const float* w, float* dx) {
  const float one = 1.0f, zero = 0.0f;
  DS_CUBLAS(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one, w, in, dy, out, &zero, dx, in));
}

// dw^T (in, out) = x^T (in, n) dy (n, out); db = column sums of dy.
void CudaBackend::dense_backward_weights(int n, int in, int out, const float* x, const float* dy, float* dw,
                                         float* db) {
  const float one = 1.0f, zero = 0.0f;
  DS_CUBLAS(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, x, in, dy, out, &zero, dw, in));
  bias_grad_kernel<<<blocks_for(out), kThreads, 0, stream_>>>(n, out, dy, db);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::pool2d_forward(const PoolDesc& d, const float* x, float* y) {
  const Shape o = d.out();
  const int64_t total = o.size();
  if (total == 0) return;
  pool_forward_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, d.in.h, d.in.w, o.h, o.w, d.k, d.stride,
                                                                   d.kind == PoolKind::kMax, x, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::pool2d_backward(const PoolDesc& d, const float* x, const float* dy, float* dx) {
  const Shape o = d.out();
  const int64_t total = d.in.size();
  if (total == 0) return;
  pool_backward_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, d.in.h, d.in.w, o.h, o.w, d.k, d.stride,
                                                                    d.kind == PoolKind::kMax, x, dy, dx);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::batch_norm_forward_training(const Shape& s, const float* x, const float* gamma, const float* beta,
                                              float eps, float* y, float* mean, float* var) {
  const int64_t hw = int64_t(s.h) * s.w, total = s.size();
  if (total == 0) return;
  bn_stats_kernel<<<s.c, kThreads, 0, stream_>>>(s.n, s.c, hw, x, mean, var);
  DS_CUDA_LAUNCHED();
  bn_apply_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, s.c, hw, x, gamma, beta, mean, var, eps, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::batch_norm_forward_inference(const Shape& s, const float* x, const float* gamma, const float* beta,
                                               const float* mean, const float* var, float eps, float* y) {
  const int64_t hw = int64_t(s.h) * s.w, total = s.size();
  if (total == 0) return;
  bn_apply_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, s.c, hw, x, gamma, beta, mean, var, eps, y);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::batch_norm_backward(const Shape& s, const float* x, const float* dy, const float* gamma,
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

namespace {
double masked_loss_sum(cudaStream_t stream, double* d_sum, int kind, const Shape& s, const float* out, const float* y,
                       const float* mask, float* d_out) {
  const int64_t hw = int64_t(s.h) * s.w, n = s.n * hw;
  DS_CUDA(cudaMemsetAsync(d_sum, 0, sizeof(double), stream));
  if (n > 0) {
    const int blocks = blocks_for(n) < 1024 ? blocks_for(n) : 1024;
    masked_loss_kernel<<<blocks, kThreads, 0, stream>>>(kind, n, hw, s.c, out, y, mask, d_out, d_sum);
    DS_CUDA_LAUNCHED();
  }
  double total = 0.0;
  DS_CUDA(cudaMemcpyAsync(&total, d_sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
  DS_CUDA(cudaStreamSynchronize(stream));
  return total;
}
}  // namespace

double CudaBackend::mse_sum(const Shape& s, const float* out, const float* y, const float* mask, float* d_out) {
  return masked_loss_sum(stream_, d_sum_, 0, s, out, y, mask, d_out);
}

double CudaBackend::gaussian_nll_sum(const Shape& s, const float* out, const float* y, const float* mask,
                                     float* d_out) {
  return masked_loss_sum(stream_, d_sum_, 1, s, out, y, mask, d_out);
}

void CudaBackend::sgd_momentum_update(int64_t n, float* w, const float* g, float* v, float lr, float momentum) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(n, w, g, v, lr, momentum);
  DS_CUDA_LAUNCHED();
}

}  // namespace ds::model
