// Tensors in one buffer and back: one broadcast or allreduce instead of one per tensor (the
// initial state from rank 0, the batch-norm running statistics' average). The buffer is host
// memory, or memory of the tensors' backend when the communicator takes device memory (NCCL:
// Communicator::device_memory()), packed with device-to-device copies.
#pragma once
#include <cstddef>
#include <vector>

#include "model/tensor.h"

namespace ds {

class FusedTensors {
 public:
  FusedTensors(std::vector<model::Tensor*> tensors, bool on_device);
  ~FusedTensors();
  FusedTensors(const FusedTensors&) = delete;
  FusedTensors& operator=(const FusedTensors&) = delete;

  float* data() { return device_ ? device_ : host_.data(); }
  size_t size() const { return size_; }
  void pack();              // tensors -> buffer
  void unpack();            // buffer -> tensors
  void scale(float alpha);  // buffer *= alpha

 private:
  std::vector<model::Tensor*> tensors_;
  size_t size_ = 0;
  model::Backend* backend_ = nullptr;  // when on the device
  float* device_ = nullptr;
  std::vector<float> host_;
};

}  // namespace ds
