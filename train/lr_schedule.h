// The learning-rate schedule hook: the trainer asks it for the rate of every optimizer step, so a
// schedule (decay, the warmup distributed training needs) is one function and the loop does not
// change. epoch counts from 1; step is the optimizer's update count so far (0 for the first
// update, continued across --resume), i.e. the global step.
#pragma once
#include <cstdint>
#include <functional>

namespace ds {

using LearningRateSchedule = std::function<double(int epoch, int64_t step)>;

// The config's train.learning_rate at every step.
inline LearningRateSchedule constant_learning_rate(double lr) {
  return [lr](int, int64_t) { return lr; };
}

}  // namespace ds
