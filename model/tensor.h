// A float buffer with an explicit NCHW shape (Caffe's blob), allocated by a Backend: host memory
// for the CPU backend, device memory for the CUDA one. Move-only; freed by its backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds::model {

class Backend;

// What a tensor's elements are. FP32 everywhere but for the activations the Net stores in 16 bits
// between the layers that read and write them directly (Backend::activation_dtype: a backend
// computing its convolutions in BF16 or FP16). Storage is always allocated in floats: a 16-bit
// tensor packs two elements a float (the last float half used when the size is odd).
enum class DType : uint8_t { kF32, kBf16, kF16 };
const char* dtype_name(DType t);  // "fp32", "bf16", "fp16"
// Floats of storage that `n` elements of type t take.
inline int64_t storage_floats(int64_t n, DType t) { return t == DType::kF32 ? n : (n + 1) / 2; }

struct Shape {
  int n = 0, c = 0, h = 0, w = 0;
  int64_t size() const { return int64_t(n) * c * h * w; }
  bool operator==(const Shape& o) const { return n == o.n && c == o.c && h == o.h && w == o.w; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "(n, c, h, w)"
};

// Where NCHW element (n, c, p = h*W + w) of shape s sits in channel block b's order (nChw{b}c,
// Tensor::block): ((n*C/b + c/b)*H*W + p)*b + c%b. The one index map of the blocked layout.
inline int64_t blocked_index(const Shape& s, int b, int64_t n, int64_t c, int64_t p) {
  return ((n * (s.c / b) + c / b) * int64_t(s.h) * s.w + p) * b + c % b;
}

class Tensor {
 public:
  Tensor() = default;
  // block: the channel block of the element order (Backend::activation_block): 0 is plain NCHW,
  // b > 0 oneDNN's nChw{b}c, element (n, c, h, w) at ((n*C/b + c/b)*H*W + h*W + w)*b + c%b,
  // which needs C % b == 0. The Net stores activations so between the layers that read them so
  // (net.cpp); upload and download convert, so the host always sees NCHW.
  Tensor(Backend& backend, Shape shape, DType dtype = DType::kF32, int block = 0);  // zero-filled
  // A tensor that borrows `data` (at least storage_floats(shape.size(), dtype) floats another
  // tensor owns) and never frees it: the Net's reused activation and gradient buffers (net.cpp).
  // It cannot grow.
  static Tensor view(Backend& backend, Shape shape, float* data, DType dtype = DType::kF32, int block = 0);
  Tensor(Tensor&& o) noexcept;
  Tensor& operator=(Tensor&& o) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor();

  // Changes the shape, reallocating only when the new size exceeds the capacity.
  void reshape(Shape shape);
  const Shape& shape() const { return shape_; }
  int64_t size() const { return shape_.size(); }
  DType dtype() const { return dtype_; }
  bool is_16bit() const { return dtype_ != DType::kF32; }
  int block() const { return block_; }
  // The FP32 elements. Throws for a 16-bit tensor, so that no op written for floats reads one by
  // mistake: ops that take 16-bit data are told so (ConvDesc::x16, copy_channels16) and get
  // storage().
  float* data() {
    if (dtype_ != DType::kF32) refuse_16bit("data()");
    return data_;
  }
  const float* data() const {
    if (dtype_ != DType::kF32) refuse_16bit("data()");
    return data_;
  }
  // The buffer whatever the element type (16-bit elements packed two a float).
  float* storage() { return data_; }
  const float* storage() const { return data_; }
  Backend* backend() const { return backend_; }

  // FP32 tensors only (a 16-bit one throws): size() floats from / to host memory, in NCHW order
  // whatever block() is.
  void upload(const float* host);
  void download(float* host) const;
  std::vector<float> to_host() const;

 private:
  Backend* backend_ = nullptr;
  Shape shape_;
  float* data_ = nullptr;
  int64_t capacity_ = 0;
  bool owns_ = true;  // false for a view
  DType dtype_ = DType::kF32;
  int block_ = 0;
  void check_block(const Shape& s) const;  // throws unless block_ divides s's channels
  [[noreturn]] void refuse_16bit(const char* what) const;
};

}  // namespace ds::model
