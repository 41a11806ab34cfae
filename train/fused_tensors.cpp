#include "train/fused_tensors.h"

#include "model/backend.h"

namespace ds {

FusedTensors::FusedTensors(std::vector<model::Tensor*> tensors, bool on_device) : tensors_(std::move(tensors)) {
  for (auto* t : tensors_) size_ += size_t(t->size());
  if (on_device && !tensors_.empty()) {
    backend_ = tensors_.front()->backend();
    device_ = backend_->allocate(int64_t(size_));
  } else {
    host_.resize(size_);
  }
}

FusedTensors::~FusedTensors() {
  if (device_) backend_->release(device_);
}

void FusedTensors::pack() {
  size_t off = 0;
  for (auto* t : tensors_) {
    if (device_) backend_->copy(device_ + off, t->data(), t->size());
    else t->download(host_.data() + off);
    off += size_t(t->size());
  }
}

void FusedTensors::unpack() {
  size_t off = 0;
  for (auto* t : tensors_) {
    if (device_) backend_->copy(t->data(), device_ + off, t->size());
    else t->upload(host_.data() + off);
    off += size_t(t->size());
  }
}

void FusedTensors::scale(float alpha) {
  if (device_) backend_->scale(int64_t(size_), alpha, device_);
  else
    for (auto& v : host_) v *= alpha;
}

}  // namespace ds
