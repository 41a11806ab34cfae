// A short training run as one record of numbers, for tests that compare two ways of running the
// same step (16-bit activations or not, blocked activations or not) value for value.
#pragma once
#include <functional>
#include <vector>

#include "model/adam.h"
#include "model/loss.h"
#include "model/net.h"
#include "model_test_util.h"

namespace ds::model::test {

// Two Adam steps of `spec` on `be` at batch 3 (Bernoulli-Gamma loss against a fixed target, every
// fifth cell masked out), then an inference forward (it runs on the reused activation slots): each
// step's output and loss, every parameter gradient, the weights after the steps, the inference
// output, in that order. `configure` sets the Net up before its first forward (the switch under
// test); `after_forward`, if set, is called after each training forward (to check what it held).
inline std::vector<float> two_adam_steps(const ModelSpec& spec, Backend& be, const std::function<void(Net&)>& configure,
                                         const std::function<void(Net&)>& after_forward = {}) {
  Net net(spec, be);
  net.init(7);
  configure(net);
  const int n = 3;
  const Shape os = net.output_shape(n);
  const size_t hw = size_t(os.h) * os.w;
  std::vector<float> y(n * hw), mask(hw, 1.0f);
  for (size_t i = 0; i < y.size(); ++i) y[i] = i % 3 == 0 ? 0.0f : float(0.3 + (i % 11) * 0.4);
  for (size_t i = 0; i < hw; i += 5) mask[i] = 0.0f;
  Tensor x = make_tensor(be, Shape{n, spec.in_channels, spec.in_h, spec.in_w},
                         random_values(size_t(n) * spec.in_channels * spec.in_h * spec.in_w, 11));
  Tensor yt = make_tensor(be, Shape{n, 1, os.h, os.w}, y), mt = make_tensor(be, Shape{1, 1, os.h, os.w}, mask);
  Adam adam(net.params(), be);
  Tensor d(be, os);
  std::vector<float> all;
  for (int step = 0; step < 2; ++step) {
    const Tensor& out = net.forward(x);
    if (after_forward) after_forward(net);
    const std::vector<float> o = out.to_host();
    all.insert(all.end(), o.begin(), o.end());
    all.push_back(float(bernoulli_gamma_loss(be, out, yt, mt, &d)));
    net.backward(d);
    for (const Param& p : net.params()) {
      const std::vector<float> g = p.grad->to_host();
      all.insert(all.end(), g.begin(), g.end());
    }
    adam.step(1e-3);
  }
  for (const Param& p : net.params()) {
    const std::vector<float> w = p.value->to_host();
    all.insert(all.end(), w.begin(), w.end());
  }
  net.set_mode(ForwardMode{false, 0});
  const std::vector<float> o = net.forward(x).to_host();
  all.insert(all.end(), o.begin(), o.end());
  return all;
}

}  // namespace ds::model::test
