// The image classifiers of the synthetic benchmark (Horovod's: keras.applications ResNet50,
// ResNet101, InceptionV3), as layer DAGs for build_model (models.h). Output: logits
// (N, classes, 1, 1), no softmax (loss.h's softmax_cross_entropy takes logits).
#pragma once
#include <string>
#include <vector>

#include "model/models.h"

namespace ds::model {

bool is_image_classifier(const std::string& name);  // resnet50 | resnet101 | inception_v3

// depth 50 or 101. Throws ds::UsageError for an input the net cannot take.
std::vector<Node> build_resnet(const ModelSpec& spec, Backend& be, int depth);
std::vector<Node> build_inception_v3(const ModelSpec& spec, Backend& be);

}  // namespace ds::model
