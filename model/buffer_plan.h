// Memory reuse between layers: buffers whose lifetimes do not overlap share one slot (the
// liveness-based plan of Caffe2's memonger and TensorFlow's BFC "memory planner", done once
// per network, not per step). Sizes are per sample, so one plan serves every batch size.
#pragma once
#include <cstdint>
#include <vector>

namespace ds::model {

// A buffer of `floats` (per sample) live from step `first` to step `last`, both inclusive;
// first < 0: the buffer is not needed (no slot).
struct Lifetime {
  int64_t floats = 0;
  int first = -1, last = -1;
};

struct BufferPlan {
  std::vector<int> slot;              // by buffer; -1 for buffers not needed
  std::vector<int64_t> slot_floats;   // by slot: the largest buffer it holds, per sample
  int64_t total_floats() const;       // per sample, all slots
};

// Steps run in increasing order. At each step the buffers that start there get slots first
// (best fit among the free slots; else the largest free one grows; else a new slot), then the
// buffers that end there give theirs back, so a step's inputs and outputs never share a slot.
BufferPlan plan_buffers(const std::vector<Lifetime>& buffers);

}  // namespace ds::model
