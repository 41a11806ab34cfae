#include "model/buffer_plan.h"

#include <algorithm>

namespace ds::model {

int64_t BufferPlan::total_floats() const {
  int64_t t = 0;
  for (int64_t f : slot_floats) t += f;
  return t;
}

BufferPlan plan_buffers(const std::vector<Lifetime>& buffers) {
  BufferPlan plan;
  plan.slot.assign(buffers.size(), -1);
  int steps = 0;
  for (const Lifetime& b : buffers)
    if (b.first >= 0) steps = std::max(steps, std::max(b.first, b.last) + 1);
  std::vector<std::vector<size_t>> starting(static_cast<size_t>(steps)), ending(static_cast<size_t>(steps));
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].first < 0) continue;
    starting[size_t(buffers[i].first)].push_back(i);
    ending[size_t(std::max(buffers[i].first, buffers[i].last))].push_back(i);
  }
  std::vector<int> free_slots;
  for (int s = 0; s < steps; ++s) {
    for (size_t i : starting[size_t(s)]) {
      const int64_t need = buffers[i].floats;
      int best = -1;  // the smallest free slot that fits, else the largest free one
      for (size_t k = 0; k < free_slots.size(); ++k) {
        const int64_t have = plan.slot_floats[size_t(free_slots[k])];
        if (best < 0) {
          best = int(k);
          continue;
        }
        const int64_t best_have = plan.slot_floats[size_t(free_slots[size_t(best)])];
        const bool fits = have >= need, best_fits = best_have >= need;
        if ((fits && (!best_fits || have < best_have)) || (!fits && !best_fits && have > best_have)) best = int(k);
      }
      int slot;
      if (best < 0) {
        slot = int(plan.slot_floats.size());
        plan.slot_floats.push_back(0);
      } else {
        slot = free_slots[size_t(best)];
        free_slots.erase(free_slots.begin() + best);
      }
      plan.slot_floats[size_t(slot)] = std::max(plan.slot_floats[size_t(slot)], need);
      plan.slot[i] = slot;
    }
    for (size_t i : ending[size_t(s)]) free_slots.push_back(plan.slot[i]);
  }
  return plan;
}

}  // namespace ds::model
