// Backend's defaults for the training set in backend memory and the loss accumulated without a
// wait (backend.h): right for the CPU, where backend memory is host memory; the CUDA backend runs
// them as kernels on its stream (cuda/cuda_dataflow.cu).
#include <fstream>
#include <string>
#include <vector>

#include "model/backend.h"
#include "model/kernels/gather.h"

namespace ds::model {

int64_t Backend::free_bytes() {
  // MemAvailable: what the kernel can give without swapping (page cache included).
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return -1;
}

void Backend::gather_rows(int64_t rows, int64_t row_size, const float* index, const float* src, float* dst) {
  std::vector<float> host(size_t(rows > 0 ? rows : 0));
  if (rows > 0) copy_to_host(host.data(), index, rows);
  for (int64_t r = 0; r < rows; ++r) copy(dst + r * row_size, src + int64_t(host[size_t(r)]) * row_size, row_size);
}

void Backend::loss_sum_accumulate(int kind, const Shape& s, const float* out, const float* y, const float* mask,
                                  float* d_out, int64_t valid, double weight, int64_t step, double* acc) {
  double sum = 0;
  switch (kind) {
    case 0: sum = bernoulli_gamma_sum(s, out, y, mask, d_out); break;
    case 1: sum = gaussian_nll_sum(s, out, y, mask, d_out); break;
    default: sum = mse_sum(s, out, y, mask, d_out); break;
  }
  double host[2];
  copy_to_host(reinterpret_cast<float*>(host), reinterpret_cast<const float*>(acc), 4);
  kernels::accumulate_mean_loss(sum, valid, weight, step, host);
  copy_from_host(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(host), 4);
}

void Backend::softmax_cross_entropy_accumulate(int n, int k, const float* logits, const float* labels,
                                                float* dlogits, int64_t step, double* acc) {
  const double mean = softmax_cross_entropy(n, k, logits, labels, dlogits);
  double host[2];
  copy_to_host(reinterpret_cast<float*>(host), reinterpret_cast<const float*>(acc), 4);
  kernels::accumulate_mean_loss(mean * n, n, 1.0, step, host);
  copy_from_host(reinterpret_cast<float*>(acc), reinterpret_cast<const float*>(host), 4);
}

}  // namespace ds::model
