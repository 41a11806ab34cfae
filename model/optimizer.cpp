// The optimizer factory: the config's train.optimizer and train.momentum to an Optimizer.
#include "model/optimizer.h"

#include "io/error.h"
#include "model/adam.h"
#include "model/sgd.h"

namespace ds::model {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSpec& spec, std::vector<Param> params, Backend& backend) {
  if (spec.name == "adam") return std::make_unique<Adam>(std::move(params), backend);
  if (spec.name == "sgd") return std::make_unique<Sgd>(std::move(params), backend, spec.momentum);
  throw UsageError("unknown optimizer '" + spec.name + "' (expected adam or sgd)");
}

}  // namespace ds::model
