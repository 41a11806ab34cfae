// The optimizer interface the trainer and checkpoints use: one update per step from the params'
// gradients at a learning rate the caller chooses (the schedule lives in the trainer), and the
// optimizer's state as named slots of per-parameter tensors so a checkpoint can hold it whatever
// the optimizer is ("adam/m", "adam/v"; "sgd/velocity").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/net.h"

namespace ds::model {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;  // "adam" | "sgd"
  virtual void step(double lr) = 0;
  int64_t steps() const { return t_; }
  void set_steps(int64_t t) { t_ = t; }

  // One tensor per parameter, same order as the params given at construction.
  struct Slot {
    std::string name;
    std::vector<Tensor>* tensors;
  };
  virtual std::vector<Slot> slots() = 0;

 protected:
  int64_t t_ = 0;  // updates done: Adam's bias correction needs it, resume restores it
};

struct OptimizerSpec {
  std::string name = "adam";  // adam | sgd
  double momentum = 0.9;      // sgd only
};

// Throws UsageError for an unknown name or a momentum outside [0, 1).
std::unique_ptr<Optimizer> make_optimizer(const OptimizerSpec& spec, std::vector<Param> params, Backend& backend);

}  // namespace ds::model
