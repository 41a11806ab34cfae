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

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "fp32";
    case DType::kBf16: return "bf16";
    case DType::kF16: return "fp16";
  }
  return "?";
}

Tensor::Tensor(Backend& backend, Shape shape, DType dtype, int block)
    : backend_(&backend), dtype_(dtype), block_(block) {
  reshape(shape);
  backend_->fill(data_, storage_floats(size(), dtype_), 0.0f);  // zero bits are 0 in every type
}

Tensor Tensor::view(Backend& backend, Shape shape, float* data, DType dtype, int block) {
  Tensor t;
  t.backend_ = &backend;
  t.shape_ = shape;
  t.data_ = data;
  t.dtype_ = dtype;
  t.block_ = block;
  t.check_block(shape);
  t.capacity_ = storage_floats(shape.size(), dtype);
  t.owns_ = false;
  return t;
}

void Tensor::check_block(const Shape& s) const {
  if (block_ < 0 || (block_ > 0 && s.c % block_ != 0))
    throw Error("tensor " + s.str() + ": channel block " + std::to_string(block_) + " does not divide its channels");
}

void Tensor::refuse_16bit(const char* what) const {
  throw Error(std::string("tensor ") + shape_.str() + " holds " + dtype_name(dtype_) + " values: " + what +
              " is for FP32 tensors (a 16-bit activation is read only by ops told its type)");
}

Tensor::Tensor(Tensor&& o) noexcept
    : backend_(o.backend_),
      shape_(o.shape_),
      data_(o.data_),
      capacity_(o.capacity_),
      owns_(o.owns_),
      dtype_(o.dtype_),
      block_(o.block_) {
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
    dtype_ = o.dtype_;
    block_ = o.block_;
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
  check_block(shape);  // before anything changes: a refused shape leaves the tensor as it was
  // Growing only: the last, smaller batch of an epoch reuses the big buffer instead of
  // reallocating twice per epoch. Contents are not preserved (every op overwrites its output).
  const int64_t floats = storage_floats(shape.size(), dtype_);
  if (floats > capacity_) {
    if (!owns_) throw Error("a tensor view cannot grow to " + shape.str());
    if (data_) backend_->release(data_);
    data_ = nullptr;
    capacity_ = 0;
    data_ = backend_->allocate(floats);
    capacity_ = floats;
  }
  shape_ = shape;
}

void Tensor::upload(const float* host) {
  if (is_16bit()) refuse_16bit("upload()");
  if (size() <= 0) return;
  if (block_ == 0) {
    backend_->copy_from_host(data_, host, size());
    return;
  }
  std::vector<float> b(static_cast<size_t>(size()));
  const int64_t hw = int64_t(shape_.h) * shape_.w;
  for (int64_t n = 0; n < shape_.n; ++n)
    for (int64_t c = 0; c < shape_.c; ++c)
      for (int64_t p = 0; p < hw; ++p)
        b[size_t(blocked_index(shape_, block_, n, c, p))] = host[(n * shape_.c + c) * hw + p];
  backend_->copy_from_host(data_, b.data(), size());
}

void Tensor::download(float* host) const {
  if (is_16bit()) refuse_16bit("download()");
  if (size() <= 0) return;
  if (block_ == 0) {
    backend_->copy_to_host(host, data_, size());
    return;
  }
  std::vector<float> b(static_cast<size_t>(size()));
  backend_->copy_to_host(b.data(), data_, size());
  const int64_t hw = int64_t(shape_.h) * shape_.w;
  for (int64_t n = 0; n < shape_.n; ++n)
    for (int64_t c = 0; c < shape_.c; ++c)
      for (int64_t p = 0; p < hw; ++p)
        host[(n * shape_.c + c) * hw + p] = b[size_t(blocked_index(shape_, block_, n, c, p))];
}

std::vector<float> Tensor::to_host() const {
  std::vector<float> v(static_cast<size_t>(size()));
  download(v.data());
  return v;
}

}  // namespace ds::model
