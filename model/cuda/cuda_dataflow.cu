// The training set held on the GPU (each step's batch gathered there, no store read or upload)
// and the loss added into a device accumulator (no per-step wait): see Backend in backend.h.
#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/gather.h"

namespace ds::model {

namespace {

__global__ void gather_rows_kernel(int64_t total, int64_t row_size, const float* index, const float* src, float* dst) {
  DS_GRID_STRIDE(i, total) kernels::gather_row_at(i, row_size, index, src, dst);
}

// One thread: the accumulator's update is two doubles.
__global__ void accumulate_mean_loss_kernel(const double* sum, int64_t valid, double weight, int64_t step,
                                            double* acc) {
  kernels::accumulate_mean_loss(*sum, valid, weight, step, acc);
}

}  // namespace

int64_t CudaBackend::free_bytes() {
  size_t free = 0, total = 0;
  DS_CUDA(cudaMemGetInfo(&free, &total));
  // Blocks the caching allocator holds count as used: the estimate errs on the safe side.
  return int64_t(free);
}

void CudaBackend::gather_rows(int64_t rows, int64_t row_size, const float* index, const float* src, float* dst) {
  const int64_t total = rows * row_size;
  if (total <= 0) return;
  gather_rows_kernel<<<blocks_for(total), kThreads, 0, stream_>>>(total, row_size, index, src, dst);
  DS_CUDA_LAUNCHED();
}

void CudaBackend::loss_sum_accumulate(int kind, const Shape& s, const float* out, const float* y, const float* mask,
                                      float* d_out, int64_t valid, double weight, int64_t step, double* acc) {
  if (kind == 0)
    queue_bernoulli_gamma_sum(s, out, y, mask, d_out, d_sum_);
  else
    queue_masked_loss_sum(kind == 1 ? 1 : 0, s, out, y, mask, d_out, d_sum_);
  accumulate_mean_loss_kernel<<<1, 1, 0, stream_>>>(d_sum_, valid, weight, step, acc);
  DS_CUDA_LAUNCHED();
}

}  // namespace ds::model
