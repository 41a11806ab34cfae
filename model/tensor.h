// A float buffer with an explicit NCHW shape (Caffe's blob), allocated by a Backend: host memory
// for the CPU backend, device memory for the CUDA one. Move-only; freed by its backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds::model {

class Backend;

struct Shape {
  int n = 0, c = 0, h = 0, w = 0;
  int64_t size() const { return int64_t(n) * c * h * w; }
  bool operator==(const Shape& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "(n, c, h, w)"
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(Backend& backend, Shape shape);  // zero-filled
  // A tensor that borrows `data` (at least shape.size() floats another tensor owns) and never
  // frees it: the Net's reused activation and gradient buffers (net.cpp). It cannot grow.
  static Tensor view(Backend& backend, Shape shape, float* data);
  Tensor(Tensor&& o) noexcept;
  Tensor& operator=(Tensor&& o) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor();

  // Changes the shape, reallocating only when the new size exceeds the capacity.
  void reshape(Shape shape);
  const Shape& shape() const { return shape_; }
  int64_t size() const { return shape_.size(); }
  float* data() { return data_; }
  const float* data() const { return data_; }
  Backend* backend() const { return backend_; }

  void upload(const float* host);           // size() floats from host memory
  void download(float* host) const;         // size() floats to host memory
  std::vector<float> to_host() const;

 private:
  Backend* backend_ = nullptr;
  Shape shape_;
  float* data_ = nullptr;
  int64_t capacity_ = 0;
  bool owns_ = true;  // false for a view
};

}  // namespace ds::model
