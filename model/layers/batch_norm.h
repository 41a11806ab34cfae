// Keras BatchNormalization over channels (axis=-1 in NHWC is C in NCHW): per channel,
// y = gamma (x - mean) / sqrt(var + eps) + beta. Training normalizes with the batch's statistics
// and updates the running ones; inference uses the running ones. Keras' defaults: momentum 0.99,
// eps 1e-3, gamma 1, beta 0, running mean 0 and variance 1. scale=false / center=false are Keras'
// flags of the same names: gamma is fixed at 1 / beta at 0 and is no parameter (parameter_count
// and params() leave it out; Keras' model total also counts the moving mean and variance, which
// are buffers() here).
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class BatchNorm : public Layer {
 public:
  BatchNorm(std::string name, Backend& be, int channels, float momentum = 0.99f, float eps = 1e-3f,
            bool scale = true, bool center = true);
  std::string type() const override { return "BatchNormalization"; }
  // Through the backend's `block` argument.
  bool reads_blocked() const override { return true; }
  bool writes_blocked() const override { return true; }
  bool same_block() const override { return true; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
  std::vector<Param> params() override;
  std::vector<Param> buffers() override;
  int64_t parameter_count() const override;
  void init(std::mt19937_64& rng) override;
  void set_mode(const ForwardMode& mode) override { training_ = mode.training; }

  Tensor& running_mean() { return running_mean_; }
  Tensor& running_var() { return running_var_; }

 private:
  int channels_;
  float momentum_, eps_;
  bool scale_, center_;
  bool training_ = true;
  Tensor gamma_, beta_, dgamma_, dbeta_;
  Tensor running_mean_, running_var_;
  Tensor batch_mean_, batch_var_;  // the last training forward's statistics, for backward
};

}  // namespace ds::model
