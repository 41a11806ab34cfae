#include "train/gradient_buckets.h"

#include "io/error.h"

namespace ds {

GradientBuckets::GradientBuckets(const std::vector<model::Param>& params, size_t bucket_bytes, Communicator& comm,
                                 Communicator::WireType wire)
    : comm_(comm), wire_(wire) {
  if (comm.device_memory() && !params.empty()) device_ = params.front().grad->backend();
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const size_t n = size_t(it->grad->size());
    if (buckets_.empty() || (bucket_bytes > 0 && buckets_.back().size * sizeof(float) >= bucket_bytes))
      buckets_.emplace_back();
    Bucket& b = buckets_.back();
    b.slots.push_back({it->grad, b.size});
    b.size += n;
    bucket_of_[it->grad] = buckets_.size() - 1;
  }
  for (auto& b : buckets_) {
    if (device_) b.device = device_->allocate(int64_t(b.size));
    else b.buffer.resize(b.size);
  }
}

GradientBuckets::~GradientBuckets() {
  if (device_)
    for (auto& b : buckets_) device_->release(b.device);
}

void GradientBuckets::begin(float weight) {
  weight_ = weight;
  for (auto& b : buckets_) b.waiting = b.slots.size();
  next_ = 0;
}

void GradientBuckets::ready(const std::vector<model::Param>& params) {
  for (const auto& p : params) {
    const auto it = bucket_of_.find(p.grad);
    if (it == bucket_of_.end()) throw Error("gradient of '" + p.name + "' is not in any allreduce bucket");
    Bucket& b = buckets_[it->second];
    if (b.waiting == 0) throw Error("gradient of '" + p.name + "' reported ready twice in one step");
    --b.waiting;
  }
  // Strictly in bucket order, whatever order the layers finish in: MPI needs every rank to
  // start the same collectives in the same order (a rank with no rows starts them all in finish).
  while (next_ < buckets_.size() && buckets_[next_].waiting == 0) start(buckets_[next_++]);
  comm_.progress();
}

void GradientBuckets::start(Bucket& b) {
  if (device_) {
    if (weight_ == 0.0f) {
      device_->fill(b.device, int64_t(b.size), 0.0f);
    } else {
      for (const auto& s : b.slots) device_->copy(b.device + s.offset, s.grad->data(), s.grad->size());
      if (weight_ != 1.0f) device_->scale(int64_t(b.size), weight_, b.device);
    }
    comm_.start_compressed_allreduce_sum(b.device, b.size, wire_);
    return;
  }
  if (weight_ == 0.0f) {
    std::fill(b.buffer.begin(), b.buffer.end(), 0.0f);  // the gradients may be stale: send zeros
  } else {
    for (const auto& s : b.slots) s.grad->download(b.buffer.data() + s.offset);
    if (weight_ != 1.0f)
      for (auto& g : b.buffer) g *= weight_;
  }
  comm_.start_compressed_allreduce_sum(b.buffer.data(), b.buffer.size(), wire_);
}

std::vector<Communicator::OpSpan> GradientBuckets::finish(const std::string& what) {
  // The rest, in bucket order (with weight 0 none was reported; a layer that got no gradient
  // would leave its bucket waiting).
  while (next_ < buckets_.size()) start(buckets_[next_++]);
  auto spans = comm_.wait_all(what);
  for (auto& b : buckets_)
    for (const auto& s : b.slots) {
      if (device_) device_->copy(s.grad->data(), b.device + s.offset, s.grad->size());
      else s.grad->upload(b.buffer.data() + s.offset);
    }
  return spans;
}

}  // namespace ds
