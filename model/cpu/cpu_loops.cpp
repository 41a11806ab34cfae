// DnnlBackend's cheap ops as plain loops: memory-bound, so a straight OpenMP loop is as fast as a
// library call and easier to read.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "model/bernoulli_gamma_point.h"
#include "model/loss_point_valid.h"
#include "model/cpu/dnnl_backend.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/softmax_cross_entropy.h"

namespace ds::model {

void DnnlBackend::sigmoid_channel_forward(const Shape& s, int channel, float* y) {
  const int64_t hw = int64_t(s.h) * s.w;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < s.n; ++n) {
    float* p = y + (int64_t(n) * s.c + channel) * hw;
    // 1/(1+exp(-x)) saturates cleanly in float: exp overflows to inf -> 0, underflows to 0 -> 1.
    for (int64_t i = 0; i < hw; ++i) p[i] = 1.0f / (1.0f + std::exp(-p[i]));
  }
}

void DnnlBackend::sigmoid_channel_backward(const Shape& s, int channel, const float* y, float* dy) {
  const int64_t hw = int64_t(s.h) * s.w;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < s.n; ++n) {
    const int64_t off = (int64_t(n) * s.c + channel) * hw;
    for (int64_t i = 0; i < hw; ++i) dy[off + i] *= y[off + i] * (1.0f - y[off + i]);
  }
}

namespace {
// dst[:, offset:offset + src.c] = src for FP32 or 16-bit elements (T): per sample, the src
// channels are one contiguous block of the dst sample, a memcpy each.
template <typename T>
void copy_channel_blocks(const Shape& src, const T* x, const Shape& dst, int offset, T* y) {
  const int64_t block = int64_t(src.c) * src.h * src.w;
  const int64_t dst_sample = int64_t(dst.c) * dst.h * dst.w;
  const int64_t dst_off = int64_t(offset) * dst.h * dst.w;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < src.n; ++n) std::memcpy(y + n * dst_sample + dst_off, x + n * block, size_t(block) * sizeof(T));
}
}  // namespace

void DnnlBackend::copy_channels(const Shape& src, const float* x, const Shape& dst, int offset, float* y) {
  copy_channel_blocks(src, x, dst, offset, y);
}

void DnnlBackend::slice_channels(const Shape& dst, int offset, const Shape& src, const float* y, float* x) {
  // dst: the slice's shape (x), src: the concatenated tensor's shape (y).
  const int64_t block = int64_t(dst.c) * dst.h * dst.w;
  const int64_t src_sample = int64_t(src.c) * src.h * src.w;
  const int64_t src_off = int64_t(offset) * src.h * src.w;
#pragma omp parallel for schedule(static)
  for (int n = 0; n < dst.n; ++n) copy(x + n * block, y + n * src_sample + src_off, block);
}

void DnnlBackend::copy_channels16(const Shape& src, const uint16_t* x, const Shape& dst, int offset, uint16_t* y) {
  copy_channel_blocks(src, x, dst, offset, y);
}

void DnnlBackend::relu_backward16(int64_t n, const uint16_t* y, const float* dy, float* dx) {
  // This backend's only 16-bit activation type is BF16 (activation_dtype).
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) kernels::relu_backward16_at(i, kernels::Half16::kBf16, y, dy, dx);
}

void DnnlBackend::accumulate(int64_t n, const float* x, float* acc) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

void DnnlBackend::scale(int64_t n, float alpha, float* x) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

// Bit test rather than std::isfinite: immune to a fast-math build assuming no Inf/NaN exists.
bool DnnlBackend::all_finite(int64_t n, const float* x) {
  bool finite = true;
#pragma omp parallel for schedule(static) reduction(&& : finite)
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    finite = finite && (u & 0x7f800000u) != 0x7f800000u;
  }
  return finite;
}

double DnnlBackend::bernoulli_gamma_sum(const Shape& s, const float* out, const float* y, const float* mask,
                                        float* d_out) {
  const int64_t hw = int64_t(s.h) * s.w;
  double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum) collapse(2)
  for (int n = 0; n < s.n; ++n) {
    for (int64_t i = 0; i < hw; ++i) {
      const int64_t o = int64_t(n) * 3 * hw + i;  // channel 0 of sample n; +hw, +2hw the others
      // Invalid points (mask 0, or a NaN target) are skipped, not multiplied by 0: NaN * 0 is
      // NaN, which would poison the sum and the gradient.
      const float target = y[int64_t(n) * hw + i];
      if (!loss_point_valid(mask[i], target)) {
        if (d_out) d_out[o] = d_out[o + hw] = d_out[o + 2 * hw] = 0.0f;
        continue;
      }
      const BernoulliGammaPoint r = bernoulli_gamma_point(out[o], out[o + hw], out[o + 2 * hw], target);
      sum += r.loss;
      if (d_out) {
        d_out[o] = float(r.d_p);
        d_out[o + hw] = float(r.d_log_alpha);
        d_out[o + 2 * hw] = float(r.d_log_beta);
      }
    }
  }
  return sum;
}

void DnnlBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, float lr_t, float b1, float b2,
                              float eps) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    m[i] = b1 * m[i] + (1.0f - b1) * g[i];
    v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
  }
}

}  // namespace ds::model

namespace ds::model {

double DnnlBackend::softmax_cross_entropy(int n, int k, const float* logits, const float* labels, float* dlogits) {
  // Per-row losses first, summed in row order after: the same total for any thread count.
  std::vector<double> row(size_t(n > 0 ? n : 0));
  const float grad_scale = n > 0 ? 1.0f / float(n) : 0.0f;
#pragma omp parallel for schedule(static)
  for (int r = 0; r < n; ++r)
    row[size_t(r)] = kernels::softmax_cross_entropy_row(k, logits + int64_t(r) * k, labels[r], grad_scale,
                                                        dlogits ? dlogits + int64_t(r) * k : nullptr);
  return softmax_cross_entropy_mean(row.data(), n, k);
}

}  // namespace ds::model
