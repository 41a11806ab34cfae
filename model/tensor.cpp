// Tensor: a shaped float buffer owned by a Backend. All memory traffic goes through the backend so
// the same class holds host memory (oneDNN) or device memory (CUDA).
#include "model/tensor.h"

#include <utility>

#include "io/error.h"
#include "model/backend.h"

namespace ds::model {

std::string Shape::str() const {
  return "(" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) + ")";
}

Tensor::Tensor(Backend& backend, Shape shape) : backend_(&backend) {
  reshape(shape);
  backend_->fill(data_, size(), 0.0f);
}

Tensor Tensor::view(Backend& backend, Shape shape, float* data) {
  Tensor t;
  t.backend_ = &backend;
  t.shape_ = shape;
  t.data_ = data;
  t.capacity_ = shape.size();
  t.owns_ = false;
  return t;
}

Tensor::Tensor(Tensor&& o) noexcept
    : backend_(o.backend_), shape_(o.shape_), data_(o.data_), capacity_(o.capacity_), owns_(o.owns_) {
  o.owns_ = true;
  o.data_ = nullptr;
  o.capacity_ = 0;
  o.shape_ = Shape{};
}

Tensor& Tensor::operator=(Tensor&& o) noexcept {
  if (this != &o) {
    if (data_ && owns_) backend_->release(data_);
    backend_ = o.backend_;
    shape_ = o.shape_;
    data_ = o.data_;
    capacity_ = o.capacity_;
    owns_ = o.owns_;
    o.owns_ = true;
    o.data_ = nullptr;
    o.capacity_ = 0;
    o.shape_ = Shape{};
  }
  return *this;
}

Tensor::~Tensor() {
  if (data_ && owns_) backend_->release(data_);
}

void Tensor::reshape(Shape shape) {
  if (shape.n < 0 || shape.c < 0 || shape.h < 0 || shape.w < 0) throw Error("negative tensor shape " + shape.str());
  if (!backend_) throw Error("reshape of a tensor that has no backend");
  // Growing only: the last, smaller batch of an epoch reuses the big buffer instead of
  // reallocating twice per epoch. Contents are not preserved (every op overwrites its output).
  if (shape.size() > capacity_) {
    if (!owns_) throw Error("a tensor view cannot grow to " + shape.str());
    if (data_) backend_->release(data_);
    data_ = nullptr;
    capacity_ = 0;
    data_ = backend_->allocate(shape.size());
    capacity_ = shape.size();
  }
  shape_ = shape;
}

void Tensor::upload(const float* host) {
  if (size() > 0) backend_->copy_from_host(data_, host, size());
}

void Tensor::download(float* host) const {
  if (size() > 0) backend_->copy_to_host(host, data_, size());
}

std::vector<float> Tensor::to_host() const {
  std::vector<float> v(static_cast<size_t>(size()));
  download(v.data());
  return v;
}

}  // namespace ds::model
