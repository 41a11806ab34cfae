// The image nets `downscale benchmark` trains (Horovod's synthetic benchmark: ResNet50,
// ResNet101, InceptionV3) and the pieces of a classification step it needs from model/: the
// spec of each net, its default input size, the softmax cross-entropy and the activation
// footprint. One file so that the command's loop (train/benchmark.cpp) does not care where
// they come from.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/net.h"

namespace ds {

// "resnet50", "resnet101", "inception_v3", in the reference script's order.
const std::vector<std::string>& benchmark_model_names();
// 224 for the ResNets, 299 for InceptionV3; throws UsageError naming the choices for others.
int benchmark_default_image_size(const std::string& model);
model::ModelSpec benchmark_spec(const std::string& model, int image_size, int classes);
// The mean softmax cross-entropy of logits (N, K, 1, 1) against class indices (N, 1, 1, 1);
// dlogits (may be null) gets d(mean)/d(logits). One synchronisation.
double benchmark_loss(model::Backend& be, const model::Tensor& logits, const model::Tensor& labels,
                      model::Tensor* dlogits);
// The same added into the loss record `acc` (model/loss_accumulator.h) for `step`, without a wait:
// a timed step then queues its work only (PyTorch's synthetic benchmarks read no loss either).
void benchmark_loss_accumulate(model::Backend& be, const model::Tensor& logits, const model::Tensor& labels,
                               model::Tensor* dlogits, int64_t step, double* acc);
// Classes the net's output holds (labels are drawn below it).
int benchmark_classes(const model::Net& net);
// Bytes of activations and gradient buffers a step at batch n holds (Net::activation_bytes).
int64_t benchmark_activation_bytes(const model::Net& net, int n);

}  // namespace ds
