// Helpers shared by the model tests: random tensors, and a finite-difference check of a layer's
// backward pass (inputs and parameters).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/error.h"
#include "model/backend.h"
#include "model/layers/layer.h"
#include "model/model_spec.h"
#include "model/tensor.h"

namespace ds::model::test {

// MNN on c predictors of h x w (the reference experiment's: 20 on 30 x 53).
inline ModelSpec mnn_spec(int c, int h, int w) {
  ModelSpec s;
  s.name = "mnn";
  s.in_channels = c;
  s.in_h = h;
  s.in_w = w;
  return s;
}

// |want - got| <= rel * max |want| everywhere, the first 5 misses named: for sums whose order
// differs between the two sides (a backend against a kernel body run on the host).
inline void expect_close(const std::vector<float>& want, const std::vector<float>& got, double rel,
                         const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double scale = 1e-30;
  for (float v : want) scale = std::max(scale, double(std::abs(v)));
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(double(want[i]) - got[i]) <= rel * scale) && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "]: backend " << want[i] << " body " << got[i];
  EXPECT_EQ(bad, 0) << what;
}

// Uniform values in [lo, hi], or +-[lo, hi] with a random sign when `signed_away_from_zero`
// (ReLU's finite differences are wrong within eps of its kink at 0).
inline std::vector<float> random_values(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                                        bool signed_away_from_zero = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) {
    x = u(rng);
    if (signed_away_from_zero && (rng() & 1)) x = -x;
  }
  return v;
}

inline Tensor make_tensor(Backend& be, Shape s, const std::vector<float>& values) {
  Tensor t(be, s);
  t.upload(values.data());
  return t;
}

inline Tensor random_tensor(Backend& be, Shape s, uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                            bool signed_away_from_zero = false) {
  return make_tensor(be, s, random_values(size_t(s.size()), seed, lo, hi, signed_away_from_zero));
}

// The central difference of `loss` in entry i of `value` (whose host copy is `host`, restored
// afterwards) at `step`, divided by the float step actually taken. For the network-level checks.
inline double central_difference(Tensor& value, std::vector<float>& host, size_t i, float step,
                                 const std::function<double()>& loss) {
  const float x = host[i];
  host[i] = x + step;
  const float hi = host[i];
  value.upload(host.data());
  const double lp = loss();
  host[i] = x - step;
  const float lo = host[i];
  value.upload(host.data());
  const double lm = loss();
  host[i] = x;
  value.upload(host.data());
  return (lp - lm) / (double(hi) - double(lo));
}

// The `m` entries of `g` largest in magnitude, largest first.
inline std::vector<size_t> largest_entries(const std::vector<float>& g, size_t m) {
  std::vector<size_t> order(g.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  m = std::min(m, order.size());
  std::partial_sort(order.begin(), order.begin() + m, order.end(),
                    [&](size_t a, size_t c) { return std::abs(g[a]) > std::abs(g[c]); });
  order.resize(m);
  return order;
}

// Checks layer.backward against central differences of L = sum(out * R) for a fixed random R,
// for which dL/dout = R exactly. Every input element and every parameter is perturbed.
//
// Tolerance: the forward runs in float. For an element perturbed by +-eps, only the outputs it
// reaches change, each with float rounding ~6e-8 relative, so the difference quotient carries
// ~1e-5 absolute noise at eps = 1e-2; the nonlinear layers (sigmoid) add truncation error
// eps^2 f'''/6 ~ 1e-5. A bug (wrong padding side, a missing term) makes O(1) errors, so
// |analytic - numeric| <= tol * max(1, |analytic|) with tol = 1e-2 is both safe and sharp enough.
inline void check_layer_gradients(Backend& be, Layer& layer, std::vector<Tensor*> inputs, double eps = 1e-2,
                                  double tol = 1e-2) {
  std::vector<Shape> shapes;
  std::vector<const Tensor*> in;
  for (Tensor* t : inputs) {
    shapes.push_back(t->shape());
    in.push_back(t);
  }
  const Shape os = layer.output_shape(shapes);
  Tensor out(be, os);
  const std::vector<float> r = random_values(size_t(os.size()), 777);
  Tensor dout = make_tensor(be, os, r);

  auto loss = [&]() {
    layer.forward(be, in, out);
    const std::vector<float> y = out.to_host();
    double s = 0.0;
    for (size_t i = 0; i < y.size(); ++i) s += double(y[i]) * r[i];
    return s;
  };

  // Analytic gradients.
  loss();
  std::vector<Tensor> din;
  std::vector<Tensor*> din_ptr;
  // NaN in every gradient the backward writes: one that adds to what was there instead of
  // writing it reads as NaN below (zero-filled, it passed).
  const auto fill_nan = [](Tensor& t) {
    const std::vector<float> v(size_t(t.size()), std::numeric_limits<float>::quiet_NaN());
    t.upload(v.data());
  };
  for (const Shape& s : shapes) din.emplace_back(be, s);
  for (Tensor& t : din) {
    fill_nan(t);
    din_ptr.push_back(&t);
  }
  for (Param& p : layer.params()) fill_nan(*p.grad);
  layer.backward(be, in, out, dout, din_ptr);

  // Numeric, one element at a time. The actual float step (x+eps) - (x-eps) is the divisor.
  auto check_tensor = [&](Tensor& value, const std::vector<float>& analytic, const std::string& what) {
    std::vector<float> v = value.to_host();
    int bad = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const float x = v[i];
      v[i] = x + float(eps);
      const float xp = v[i];
      value.upload(v.data());
      const double lp = loss();
      v[i] = x - float(eps);
      const float xm = v[i];
      value.upload(v.data());
      const double lm = loss();
      v[i] = x;
      value.upload(v.data());
      const double numeric = (lp - lm) / (double(xp) - double(xm));
      const double a = analytic[i];
      if (std::abs(a - numeric) > tol * std::max(1.0, std::abs(a)) && ++bad <= 5)
        ADD_FAILURE() << layer.name() << " " << what << "[" << i << "]: analytic " << a << " numeric " << numeric;
    }
    EXPECT_EQ(bad, 0) << what;
  };

  for (size_t k = 0; k < inputs.size(); ++k) check_tensor(*inputs[k], din[k].to_host(), "d input " + std::to_string(k));
  for (Param& p : layer.params()) check_tensor(*p.value, p.grad->to_host(), "d " + p.name);
}

// A CPU backend (2 threads) in BF16 math, or null where oneDNN cannot (no avx512_bf16).
inline std::unique_ptr<Backend> cpu_bf16_backend() {
  auto be = make_cpu_backend(2);
  if (!be->set_math(MathMode::kBf16)) return nullptr;
  return be;
}
#define REQUIRE_CPU_BF16(be)                            \
  auto be = ::ds::model::test::cpu_bf16_backend();      \
  if (!be) GTEST_SKIP() << "the CPU has no avx512_bf16 (oneDNN ISA below avx512_core_bf16)"

// A coastline for land masks: land on the right part of each row, more of it further down.
inline std::vector<uint8_t> coast_mask(int h, int w) {
  std::vector<uint8_t> m(size_t(h) * w, 0);
  for (int r = 0; r < h; ++r)
    for (int c = w / 3 - r / 2; c < w; ++c)
      if (c >= 0) m[size_t(r * w + c)] = 1;
  return m;
}

}  // namespace ds::model::test
