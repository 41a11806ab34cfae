// CudaBackend's batch normalization through cuDNN (CUDNN_BATCHNORM_SPATIAL: statistics per
// channel over N*H*W), as PyTorch runs it on GPUs. The hand-written kernels of cuda_ops.cu (their
// bodies shared with the CPU tests) stay selectable with DOWNSCALE_CUDA_BN=kernels: they reduce
// each channel in one block, slow for ResNet's early layers (64 channels over 3.2 M values at
// batch 256), which is why cuDNN's is the default.
//
// The Backend interface hands the layer the batch mean and the biased batch variance (the layer
// keeps the running statistics itself, model/layers/batch_norm.cpp). cuDNN returns the batch mean
// and 1/sqrt(var + eps) as its "saved" forward results, so the variance is recovered from the
// latter; cuDNN's own running averages go to scratch. Backward hands cuDNN the forward's
// statistics (the layer's mean and 1/sqrt(var + eps) from its variance) as the "saved" ones, so
// cuDNN does not reduce x a second time.
#include <cstdlib>
#include <string>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"

namespace ds::model {

namespace {

// var = 1 / inv_std^2 - eps, clamped at 0 (rounding may leave -1e-12 for a constant channel).
__global__ void bn_var_from_inv_std_kernel(int c, const float* inv_std, float eps, float* var) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < c; i += blockDim.x * gridDim.x) {
    const float v = 1.0f / (inv_std[i] * inv_std[i]) - eps;
    var[i] = v > 0.0f ? v : 0.0f;
  }
}

// inv_std = 1 / sqrt(var + eps): the "saved" form cuDNN's backward takes.
__global__ void bn_inv_std_kernel(int c, const float* var, float eps, float* inv_std) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < c; i += blockDim.x * gridDim.x)
    inv_std[i] = 1.0f / sqrtf(var[i] + eps);
}

}  // namespace

bool CudaBackend::bn_kernels() const { return bn_kernels_; }

CudaBackend::BnPlan& CudaBackend::bn_plan(const Shape& s) {
  const auto key = std::make_tuple(s.n, s.c, s.h, s.w);
  auto it = bn_plans_.find(key);
  if (it != bn_plans_.end()) return *it->second;
  auto p = std::make_unique<BnPlan>();
  DS_CUDNN(cudnnCreateTensorDescriptor(&p->x));
  DS_CUDNN(cudnnCreateTensorDescriptor(&p->stat));
  DS_CUDNN(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w));
  DS_CUDNN(cudnnDeriveBNTensorDescriptor(p->stat, p->x, CUDNN_BATCHNORM_SPATIAL));
  auto& ref = *p;
  bn_plans_.emplace(key, std::move(p));
  return ref;
}

void CudaBackend::batch_norm_forward_training(const Shape& s, int block, const float* x, const float* gamma,
                                              const float* beta, float eps, float* y, float* mean, float* var) {
  no_blocked_activations(block);
  if (s.size() == 0) return;
  if (bn_kernels() || eps < CUDNN_BN_MIN_EPSILON) {
    bn_kernels_forward_training(s, x, gamma, beta, eps, y, mean, var);
    return;
  }
  const BnPlan& p = bn_plan(s);
  // Scratch for cuDNN's running averages (unused: the layer keeps its own) and 1/sqrt(var + eps);
  // back to the cache at once, reused only by work queued after this on the same stream.
  float* scratch = static_cast<float*>(cache_.allocate(3 * size_t(s.c) * sizeof(float)));
  float *run_mean = scratch, *run_var = scratch + s.c, *inv_std = scratch + 2 * s.c;
  const float one = 1.0f, zero = 0.0f;
  DS_CUDNN(cudnnBatchNormalizationForwardTraining(cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, p.x, x, p.x, y,
                                                  p.stat, gamma, beta, 1.0, run_mean, run_var, double(eps), mean,
                                                  inv_std));
  bn_var_from_inv_std_kernel<<<blocks_for(s.c), kThreads, 0, stream_>>>(s.c, inv_std, eps, var);
  DS_CUDA_LAUNCHED();
  cache_.release(scratch);
}

void CudaBackend::batch_norm_forward_inference(const Shape& s, int block, const float* x, const float* gamma,
                                               const float* beta, const float* mean, const float* var, float eps,
                                               float* y) {
  no_blocked_activations(block);
  if (s.size() == 0) return;
  if (bn_kernels() || eps < CUDNN_BN_MIN_EPSILON) {
    bn_kernels_forward_inference(s, x, gamma, beta, mean, var, eps, y);
    return;
  }
  const BnPlan& p = bn_plan(s);
  const float one = 1.0f, zero = 0.0f;
  DS_CUDNN(cudnnBatchNormalizationForwardInference(cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, p.x, x, p.x, y,
                                                   p.stat, gamma, beta, mean, var, double(eps)));
}

void CudaBackend::batch_norm_backward(const Shape& s, int block, const float* x, const float* dy, const float* gamma,
                                      const float* mean, const float* var, float eps, float* dx, float* dgamma,
                                      float* dbeta) {
  no_blocked_activations(block);
  if (s.size() == 0) return;
  if (bn_kernels() || eps < CUDNN_BN_MIN_EPSILON) {
    bn_kernels_backward(s, x, dy, gamma, mean, var, eps, dx, dgamma, dbeta);
    return;
  }
  const BnPlan& p = bn_plan(s);
  float* inv_std = static_cast<float*>(cache_.allocate(size_t(s.c) * sizeof(float)));
  bn_inv_std_kernel<<<blocks_for(s.c), kThreads, 0, stream_>>>(s.c, var, eps, inv_std);
  DS_CUDA_LAUNCHED();
  const float one = 1.0f, zero = 0.0f;
  // dx, dgamma and dbeta overwritten (beta factors 0).
  DS_CUDNN(cudnnBatchNormalizationBackward(cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, p.x, x, p.x, dy,
                                           p.x, dx, p.stat, gamma, dgamma, dbeta, double(eps), mean, inv_std));
  cache_.release(inv_std);
}

}  // namespace ds::model
