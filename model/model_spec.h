// What is needed to rebuild a network (ModelSpec) and its JSON form, stored in checkpoints so
// that `predict` needs no config (model/model_spec.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds::model {

// What is needed to rebuild a network: stored in checkpoints as JSON so `predict` needs no config.
struct ModelSpec {
  std::string name = "demo";     // demo | mnn | deepesd | resnet50 | resnet101 | inception_v3
  int in_channels = 0, in_h = 0, in_w = 0;
  std::vector<int> filters;      // demo only: conv widths (see models.cpp)
  std::string loss = "bernoulli_gamma";  // the head matches it: bernoulli_gamma | gaussian | mse (loss.h)
  // deepesd only: the predictand grid and its land mask (h*w, row-major, 1 = land), because its
  // dense heads have one output per land point. Stored as run lengths in the JSON.
  int out_h = 0, out_w = 0;
  std::vector<uint8_t> land_mask;
  // The image classifiers (resnet50, resnet101, inception_v3; model/imagenet_models.h) end in
  // logits over `classes` (N, classes, 1, 1); `loss` does not apply to them. aux_head: InceptionV3's
  // auxiliary classifier after mixed7 (computed in forward, its output read by no loss).
  int classes = 1000;
  bool aux_head = false;
  std::string to_json() const;
  static ModelSpec from_json(const std::string& json);  // throws ds::InputError on bad JSON
};

}  // namespace ds::model
