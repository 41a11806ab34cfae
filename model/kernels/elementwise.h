// Bodies of the elementwise kernels: element i of fill, ReLU, accumulate, scale, multiply, axpby,
// and the dense layer's bias add and bias gradient. The CUDA kernels (model/cuda/*.cu) are only
// grid-stride loops around these; tests/model/kernel_bodies_test.cpp runs the same bodies on the
// CPU against the CPU backend, so a wrong index or formula is caught without a GPU.
#pragma once
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

DS_HOST_DEVICE inline void fill_at(int64_t i, float* p, float v) { p[i] = v; }

DS_HOST_DEVICE inline void relu_forward_at(int64_t i, const float* x, float* y) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }

// Zero gradient at x == 0, as TensorFlow and oneDNN.
DS_HOST_DEVICE inline void relu_backward_at(int64_t i, const float* x, const float* dy, float* dx) {
  dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

DS_HOST_DEVICE inline void accumulate_at(int64_t i, const float* x, float* acc) { acc[i] += x[i]; }

DS_HOST_DEVICE inline void scale_at(int64_t i, float alpha, float* x) { x[i] *= alpha; }

DS_HOST_DEVICE inline void multiply_at(int64_t i, const float* a, const float* b, float* y) { y[i] = a[i] * b[i]; }

DS_HOST_DEVICE inline void axpby_at(int64_t i, float a, const float* x, float b, float* y) { y[i] = a * x[i] + b * y[i]; }

// A convolution's FP32 epilogue where cuDNN's fused bias+ReLU call does not run: element i (of
// channel ch, which the caller's plane loop knows) gets + b[ch] (b null: none) and the ReLU when
// relu, in place; one pass where cudnnAddTensor (y = 1 * b + 1 * y) and relu_forward_at made two,
// with the same float operations: bit for bit.
DS_HOST_DEVICE inline float bias_relu_value(float v, const float* b, int ch, bool relu) {
  if (b) v = b[ch] + v;
  return relu ? (v > 0.0f ? v : 0.0f) : v;
}
DS_HOST_DEVICE inline void bias_relu_at(int64_t i, int ch, const float* b, bool relu, float* y) {
  y[i] = bias_relu_value(y[i], b, ch, relu);
}

// Dense: y (n, out) row-major gets b[o] added to column o.
DS_HOST_DEVICE inline void add_bias_at(int64_t i, int out, const float* b, float* y) { y[i] += b[i % out]; }

// Dense: db[o] = sum over the n rows of dy[:, o], in double, in row order.
DS_HOST_DEVICE inline void bias_grad_at(int64_t o, int n, int out, const float* dy, float* db) {
  double s = 0;
  for (int r = 0; r < n; ++r) s += dy[int64_t(r) * out + o];
  db[o] = float(s);
}

}  // namespace ds::model::kernels
