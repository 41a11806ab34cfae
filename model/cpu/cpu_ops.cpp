// DnnlBackend's loops for the ops added with DeepESD and the new losses/optimizers: dropout,
// elementwise helpers, the land-point scatter/gather, the MSE and Gaussian sums, SGD. All are
// memory-bound one-pass loops (see cpu_loops.cpp for why loops and not library calls).
#include <cmath>

#include "model/counter_rng.h"
#include "model/cpu/dnnl_backend.h"
#include "model/gaussian_point.h"
#include "model/loss_point_valid.h"

namespace ds::model {

void DnnlBackend::dropout_forward(int64_t n, float rate, uint64_t seed, const float* x, float* y, float* mask) {
  const float keep_scale = 1.0f / (1.0f - rate);  // inverted dropout: no rescaling at inference
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    mask[i] = counter_uniform(seed, uint64_t(i)) < rate ? 0.0f : keep_scale;
    y[i] = x[i] * mask[i];
  }
}

void DnnlBackend::multiply(int64_t n, const float* a, const float* b, float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void DnnlBackend::axpby(int64_t n, float a, const float* x, float b, float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + b * y[i];
}

void DnnlBackend::scatter_points(int n, int k, int points, const float* index, const Shape& grid, float fill,
                                 const float* src, float* dst) {
  const int64_t hw = int64_t(grid.h) * grid.w;
  this->fill(dst, int64_t(n) * k * hw, fill);  // ocean points (and every point, then overwritten)
#pragma omp parallel for schedule(static) collapse(2)
  for (int s = 0; s < n; ++s)
    for (int c = 0; c < k; ++c) {
      const float* from = src + (int64_t(s) * k + c) * points;
      float* to = dst + (int64_t(s) * k + c) * hw;
      for (int p = 0; p < points; ++p) to[int64_t(index[p])] = from[p];
    }
}

void DnnlBackend::gather_points(int n, int k, int points, const float* index, const Shape& grid,
                                const float* dst_grad, float* src_grad) {
  const int64_t hw = int64_t(grid.h) * grid.w;
#pragma omp parallel for schedule(static) collapse(2)
  for (int s = 0; s < n; ++s)
    for (int c = 0; c < k; ++c) {
      const float* from = dst_grad + (int64_t(s) * k + c) * hw;
      float* to = src_grad + (int64_t(s) * k + c) * points;
      for (int p = 0; p < points; ++p) to[p] = from[int64_t(index[p])];
    }
}

namespace {

// The masked sum shared by the MSE and Gaussian losses: `point(o, hw, y)` gives the loss of
// the point whose channel 0 is at out[o] and writes its gradients when d_out is set. Invalid
// points (mask 0 or NaN target: loss_point_valid) are skipped, since NaN * 0 is NaN.
template <typename PointFn>
double masked_sum(const Shape& s, const float* y, const float* mask, float* d_out, PointFn point) {
  const int64_t hw = int64_t(s.h) * s.w;
  double sum = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : sum) collapse(2)
  for (int n = 0; n < s.n; ++n) {
    for (int64_t i = 0; i < hw; ++i) {
      const int64_t o = int64_t(n) * s.c * hw + i;
      const float target = y[int64_t(n) * hw + i];
      if (!loss_point_valid(mask[i], target)) {
        if (d_out)
          for (int c = 0; c < s.c; ++c) d_out[o + c * hw] = 0.0f;
        continue;
      }
      sum += point(o, hw, double(target));
    }
  }
  return sum;
}

}  // namespace

double DnnlBackend::mse_sum(const Shape& s, const float* out, const float* y, const float* mask, float* d_out) {
  return masked_sum(s, y, mask, d_out, [&](int64_t o, int64_t, double target) {
    const SquaredErrorPoint r = squared_error_point(out[o], target);
    if (d_out) d_out[o] = float(r.d_value);
    return r.loss;
  });
}

double DnnlBackend::gaussian_nll_sum(const Shape& s, const float* out, const float* y, const float* mask,
                                     float* d_out) {
  return masked_sum(s, y, mask, d_out, [&](int64_t o, int64_t hw, double target) {
    const GaussianPoint r = gaussian_point(out[o], out[o + hw], target);
    if (d_out) {
      d_out[o] = float(r.d_mean);
      d_out[o + hw] = float(r.d_log_var);
    }
    return r.loss;
  });
}

void DnnlBackend::sgd_momentum_update(int64_t n, float* w, const float* g, float* v, float lr, float momentum) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    v[i] = momentum * v[i] - lr * g[i];
    w[i] += v[i];
  }
}

}  // namespace ds::model
