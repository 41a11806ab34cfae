// STAND-IN until the branches `nets` (ResNet/Inception builders, Net::activation_bytes) and
// `layers` (model::softmax_cross_entropy) are merged: each model name builds the small "demo"
// net on a 3-channel image and its output, flattened, stands in for the logits; the loss is a
// host softmax cross-entropy. Only this file changes when they land.
#include "train/benchmark_model.h"

#include <algorithm>
#include <cmath>

#include "io/error.h"

namespace ds {

const std::vector<std::string>& benchmark_model_names() {
  static const std::vector<std::string> names{"resnet50", "resnet101", "inception_v3"};
  return names;
}

int benchmark_default_image_size(const std::string& model) {
  if (model == "resnet50" || model == "resnet101") return 224;
  if (model == "inception_v3") return 299;
  std::string choices;
  for (const auto& n : benchmark_model_names()) choices += (choices.empty() ? "" : ", ") + n;
  throw UsageError("--model '" + model + "': expected one of " + choices);
}

model::ModelSpec benchmark_spec(const std::string& model, int image_size, int classes) {
  benchmark_default_image_size(model);  // validates the name
  (void)classes;
  model::ModelSpec s;
  s.name = "demo";
  s.filters = {8, 8, 8};
  s.loss = "mse";
  s.in_channels = 3;
  s.in_h = s.in_w = image_size;
  return s;
}

double benchmark_loss(model::Backend& be, const model::Tensor& logits, const model::Tensor& labels,
                      model::Tensor* dlogits) {
  (void)be;
  const model::Shape sh = logits.shape();
  const int n = sh.n;
  const int64_t k = sh.size() / n;
  const std::vector<float> z = logits.to_host(), y = labels.to_host();
  std::vector<float> g(z.size());
  double loss = 0;
  for (int i = 0; i < n; ++i) {
    const float* zi = z.data() + i * k;
    const double m = *std::max_element(zi, zi + k);
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(zi[j] - m);
    const int64_t label = int64_t(y[i]);
    loss += std::log(sum) + m - zi[label];
    for (int64_t j = 0; j < k; ++j) g[i * k + j] = float((std::exp(zi[j] - m) / sum - (j == label)) / n);
  }
  if (dlogits) dlogits->upload(g.data());
  return loss / n;
}

int benchmark_classes(const model::Net& net) {
  const model::Shape s = net.output_shape(1);
  return int(std::min<int64_t>(1000, s.size()));
}

int64_t benchmark_activation_bytes(const model::Net& net, int n) {
  (void)net;
  (void)n;
  return -1;  // unknown until Net::activation_bytes lands
}

}  // namespace ds
