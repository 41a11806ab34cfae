#include "model/layers/batch_norm.h"

#include "io/error.h"

namespace ds::model {

BatchNorm::BatchNorm(std::string name, Backend& be, int channels, float momentum, float eps, bool scale,
                     bool center)
    : Layer(std::move(name)),
      channels_(channels),
      momentum_(momentum),
      eps_(eps),
      scale_(scale),
      center_(center),
      gamma_(be, Shape{1, channels, 1, 1}),
      beta_(be, Shape{1, channels, 1, 1}),
      dgamma_(be, Shape{1, channels, 1, 1}),
      dbeta_(be, Shape{1, channels, 1, 1}),
      running_mean_(be, Shape{1, channels, 1, 1}),
      running_var_(be, Shape{1, channels, 1, 1}),
      batch_mean_(be, Shape{1, channels, 1, 1}),
      batch_var_(be, Shape{1, channels, 1, 1}) {
  if (channels < 1) throw Error("layer " + this->name() + ": batch norm needs at least one channel");
  if (!(momentum >= 0 && momentum < 1) || !(eps > 0))
    throw Error("layer " + this->name() + ": batch norm needs 0 <= momentum < 1 and eps > 0");
  be.fill(gamma_.data(), channels, 1.0f);
  be.fill(running_var_.data(), channels, 1.0f);
}

Shape BatchNorm::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  if (in[0].c != channels_)
    throw Error("layer " + name() + " expects " + std::to_string(channels_) + " channels, got " + in[0].str());
  return in[0];
}

void BatchNorm::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  const Shape& s = in[0]->shape();
  const int block = common_block(*in[0], out);
  if (!training_) {
    be.batch_norm_forward_inference(s, block, in[0]->data(), gamma_.data(), beta_.data(), running_mean_.data(),
                                    running_var_.data(), eps_, out.data());
    return;
  }
  be.batch_norm_forward_training(s, block, in[0]->data(), gamma_.data(), beta_.data(), eps_, out.data(),
                                 batch_mean_.data(), batch_var_.data());
  // running = momentum running + (1 - momentum) batch. The variance enters with Bessel's
  // correction m/(m-1), as PyTorch and TensorFlow's fused kernel do: the running variance
  // estimates the population's, the batch normalizes with its own biased one.
  const double m = double(s.n) * s.h * s.w;
  const float bessel = m > 1 ? float(m / (m - 1)) : 1.0f;
  be.axpby(channels_, 1.0f - momentum_, batch_mean_.data(), momentum_, running_mean_.data());
  be.axpby(channels_, (1.0f - momentum_) * bessel, batch_var_.data(), momentum_, running_var_.data());
}

void BatchNorm::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/,
                         const Tensor& dout, const std::vector<Tensor*>& din) {
  if (!training_)
    throw Error("layer " + name() + ": backward after an inference-mode forward (set the net to training)");
  // The backend computes dx whether or not anyone needs it; a scratch target keeps the contract.
  Tensor* dx = din[0];
  Tensor scratch;
  if (!dx) {
    scratch = Tensor(be, in[0]->shape(), DType::kF32, in[0]->block());
    dx = &scratch;
  }
  be.batch_norm_backward(in[0]->shape(), common_block(*in[0], *dx), in[0]->data(), dout.data(), gamma_.data(),
                         batch_mean_.data(), batch_var_.data(), eps_, dx->data(), dgamma_.data(), dbeta_.data());
}

// Without scale (center) gamma (beta) keeps its constant 1 (0): the backends still read it and
// write its gradient, but no optimizer sees it, so it never moves.
std::vector<Param> BatchNorm::params() {
  std::vector<Param> p;
  if (scale_) p.push_back({name() + "/gamma", &gamma_, &dgamma_});
  if (center_) p.push_back({name() + "/beta", &beta_, &dbeta_});
  return p;
}

std::vector<Param> BatchNorm::buffers() {
  return {{name() + "/running_mean", &running_mean_, nullptr}, {name() + "/running_var", &running_var_, nullptr}};
}

int64_t BatchNorm::parameter_count() const {
  return (scale_ ? gamma_.size() : 0) + (center_ ? beta_.size() : 0);
}

void BatchNorm::init(std::mt19937_64& /*rng*/) {
  // Keras' initializers are constants: nothing to draw, but init() must reset a reused layer.
  Backend& be = *gamma_.backend();
  be.fill(gamma_.data(), channels_, 1.0f);
  be.fill(beta_.data(), channels_, 0.0f);
  be.fill(running_mean_.data(), channels_, 0.0f);
  be.fill(running_var_.data(), channels_, 1.0f);
}

}  // namespace ds::model
