// Gradient averaging across ranks, overlapped with backward (Horovod's tensor fusion, PyTorch
// DDP's buckets): the parameters are cut, in the reverse of the network's order (the order
// backward finishes them), into buckets of about `bucket_bytes`; as soon as backward has
// written every gradient of a bucket, the bucket is packed into one host buffer and its
// allreduce starts while backward goes on with the layers below. finish() waits for the rest
// and writes the averaged gradients back. The buckets depend only on the network, so every rank
// starts the same allreduces in the same order.
//
// With a communicator on device memory (NCCL: comm.device_memory()) the buckets live on the
// gradients' backend: packed and unpacked with device-to-device copies, the rank's weight applied
// with Backend::scale, no host round trip. `wire` carries the sums in 16 bits between ranks
// (train.allreduce_dtype).
#pragma once
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/net.h"
#include "train/distributed.h"

namespace ds {

class GradientBuckets {
 public:
  // bucket_bytes 0: one bucket holding every gradient, reduced after backward (no overlap).
  GradientBuckets(const std::vector<model::Param>& params, size_t bucket_bytes, Communicator& comm,
                  Communicator::WireType wire = Communicator::WireType::kFp32);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // A new step. weight: this rank's share of the global batch (rows here / rows in all), so
  // that the sum over ranks of weight x (this rank's mean gradient) is the global mean.
  // weight 0 (no rows here): this rank contributes zeros and need not run backward.
  void begin(float weight);
  // From Net::backward after each layer: these gradients are final for this step.
  void ready(const std::vector<model::Param>& params);
  // Starts the buckets not yet started, waits for all and writes the sums into the gradients.
  // Returns the spans of the bucket allreduces (timeline). `what` names the step in warnings.
  std::vector<Communicator::OpSpan> finish(const std::string& what);

  size_t bucket_count() const { return buckets_.size(); }
  size_t started() const { return next_; }  // buckets whose allreduce started this step
  size_t bucket_floats(size_t b) const { return buckets_[b].size; }
  bool on_device() const { return device_ != nullptr; }

 private:
  struct Slot {
    model::Tensor* grad;
    size_t offset;  // in its bucket's buffer
  };
  struct Bucket {
    std::vector<Slot> slots;
    size_t size = 0;             // floats
    std::vector<float> buffer;   // host memory, or
    float* device = nullptr;     // memory of the backend (device_memory communicators)
    size_t waiting = 0;  // gradients not yet ready this step
  };
  void start(Bucket& b);

  Communicator& comm_;
  Communicator::WireType wire_;
  model::Backend* device_ = nullptr;  // the gradients' backend when the buckets live there
  std::vector<Bucket> buckets_;
  std::unordered_map<const model::Tensor*, size_t> bucket_of_;  // by the gradient tensor
  size_t next_ = 0;  // the first bucket not yet started this step
  float weight_ = 1;
};

}  // namespace ds
