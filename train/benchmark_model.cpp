// The benchmark's nets and loss come from model/: ResNet50/101 and InceptionV3
// (model/imagenet_models.h, logits (N, classes, 1, 1)), model::softmax_cross_entropy (loss.h)
// and Net::activation_bytes (net.h).
#include "train/benchmark_model.h"

#include "io/error.h"
#include "model/loss.h"

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
  model::ModelSpec s;
  s.name = model;
  s.in_channels = 3;
  s.in_h = s.in_w = image_size;
  s.classes = classes;
  return s;  // InceptionV3 without its auxiliary head, as the reference (Keras' default)
}

double benchmark_loss(model::Backend& be, const model::Tensor& logits, const model::Tensor& labels,
                      model::Tensor* dlogits) {
  return model::softmax_cross_entropy(be, logits, labels, dlogits);
}

void benchmark_loss_accumulate(model::Backend& be, const model::Tensor& logits, const model::Tensor& labels,
                               model::Tensor* dlogits, int64_t step, double* acc) {
  model::softmax_cross_entropy_accumulate(be, logits, labels, dlogits, step, acc);
}

int benchmark_classes(const model::Net& net) { return net.spec().classes; }

int64_t benchmark_activation_bytes(const model::Net& net, int n) { return net.activation_bytes(n); }

}  // namespace ds
