// DnnlBackend's upsample_conv2d_*: nearest upsampling by f followed by a 'same' convolution, run
// as one convolution on the small input (the polyphase or sub-pixel form).
//
// Output row Y = f*h + py of the upsampled conv reads upsampled row Y + a - pad_top through tap a,
// which is small-input row h + floor((py + a - pad_top) / f). So for each output phase (py, px)
// the result is an ordinary convolution of the small input whose kernel sums the taps that land
// on the same small pixel; zero padding maps to zero padding because f*H is a multiple of f.
// Stacking the f*f phases as output channels gives one convolution with O*f*f channels and a
// ceil-ish(k/f)+1 kernel, and a pixel shuffle puts its channels back on the big grid. For MNN's
// 8x8 conv after x2 upsampling that is a 5x5 kernel: 2*528*100*25 instead of 2*132*100*64 FLOP
// per pixel of the small grid, 2.56x less, and its backward-data lands on the small grid directly
// (the upsampling's backward, summing each f x f block, is part of it). The folded weights and
// the small-grid output live in the backend's shared workspaces, so callers pass no scratch.
#include <cstring>
#include <vector>

#include "model/cpu/dnnl_backend.h"
#include "model/kernels/half_cast.h"

namespace ds::model {

namespace {

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One axis of the polyphase kernel: its size, padding, and where tap a goes for each phase.
struct PhaseAxis {
  int k = 0, pad_before = 0, pad_after = 0;
  std::vector<int> tap;  // tap[phase * k_original + a]: the small kernel's index of tap a
};

PhaseAxis phase_axis(int k, int pad_before, int f) {
  auto offset = [&](int phase, int a) { return floor_div(phase + a - pad_before, f); };
  const int lo = offset(0, 0), hi = offset(f - 1, k - 1);
  PhaseAxis ax;
  ax.k = hi - lo + 1;
  ax.pad_before = -lo;  // >= 0 and pad_after >= 0 because 'same' pads at most k - 1
  ax.pad_after = hi;
  ax.tap.resize(size_t(f) * k);
  for (int p = 0; p < f; ++p)
    for (int a = 0; a < k; ++a) ax.tap[size_t(p) * k + a] = offset(p, a) - lo;
  return ax;
}

struct Polyphase {
  int f;
  ConvDesc d;      // the upsampled convolution
  ConvDesc small;  // the equivalent one on the small input, O*f*f output channels
  PhaseAxis rows, cols;
};

Polyphase polyphase(const ConvDesc& d, int f) {
  Polyphase p{f, d, d, phase_axis(d.kh, d.pad_top, f), phase_axis(d.kw, d.pad_left, f)};
  p.small.in = Shape{d.in.n, d.in.c, d.in.h / f, d.in.w / f};
  p.small.out_c = d.out_c * f * f;
  p.small.kh = p.rows.k;
  p.small.kw = p.cols.k;
  p.small.pad_top = p.rows.pad_before;
  p.small.pad_bottom = p.rows.pad_after;
  p.small.pad_left = p.cols.pad_before;
  p.small.pad_right = p.cols.pad_after;
  return p;
}

// The polyphase form needs stride 1, an input that really is f times upsampled, and 'same'
// padding (output = upsampled size); anything else takes Backend's plain composition.
bool applies(const ConvDesc& d, int f) {
  return f > 1 && d.stride == 1 && d.in.h % f == 0 && d.in.w % f == 0 && d.pad_top + d.pad_bottom == d.kh - 1 &&
         d.pad_left + d.pad_right == d.kw - 1;
}

// Small-kernel channel of output channel o in phase (py, px).
int64_t phase_channel(const Polyphase& p, int o, int py, int px) { return (int64_t(o) * p.f + py) * p.f + px; }

// w (O, C, kh, kw) -> ws (O*f*f, C, K, K'): each phase's kernel sums the taps it folds together.
void fold_weights(const Polyphase& p, const float* w, float* ws) {
  const ConvDesc &d = p.d, &s = p.small;
  const int64_t c = d.in.c, big = int64_t(d.kh) * d.kw, small = int64_t(s.kh) * s.kw;
  std::memset(ws, 0, size_t(s.out_c * c * small) * sizeof(float));
#pragma omp parallel for schedule(static)
  for (int o = 0; o < d.out_c; ++o)
    for (int py = 0; py < p.f; ++py)
      for (int px = 0; px < p.f; ++px) {
        float* dst = ws + phase_channel(p, o, py, px) * c * small;
        const float* src = w + int64_t(o) * c * big;
        for (int64_t ic = 0; ic < c; ++ic)
          for (int a = 0; a < d.kh; ++a)
            for (int b = 0; b < d.kw; ++b)
              dst[ic * small + p.rows.tap[size_t(py) * d.kh + a] * s.kw + p.cols.tap[size_t(px) * d.kw + b]] +=
                  src[ic * big + a * d.kw + b];
      }
}

// The adjoint of fold_weights: each original tap's gradient sums the folded taps it went into.
void unfold_weight_grads(const Polyphase& p, const float* dws, float* dw) {
  const ConvDesc &d = p.d, &s = p.small;
  const int64_t c = d.in.c, big = int64_t(d.kh) * d.kw, small = int64_t(s.kh) * s.kw;
#pragma omp parallel for schedule(static)
  for (int o = 0; o < d.out_c; ++o)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int a = 0; a < d.kh; ++a)
        for (int b = 0; b < d.kw; ++b) {
          float sum = 0;
          for (int py = 0; py < p.f; ++py)
            for (int px = 0; px < p.f; ++px)
              sum += dws[(phase_channel(p, o, py, px) * c + ic) * small + p.rows.tap[size_t(py) * d.kh + a] * s.kw +
                         p.cols.tap[size_t(px) * d.kw + b]];
          dw[(int64_t(o) * c + ic) * big + a * d.kw + b] = sum;
        }
}

// Pixel shuffle between the small conv's (N, O*f*f, H, W) and the big (N, O, f*H, f*W):
// big[n, o, f*h + py, f*w + px] = small[n, phase_channel(o, py, px), h, w]. to_big picks the way.
// T: float, or uint16_t for a 16-bit activation (forward only: values are moved, not converted).
// relu_y (only for the way back): the forward output on the big grid, FP32 or 16-bit (M); the
// gradient is masked by the ReLU's [y > 0] on its way (0 where y <= 0, as relu_backward; a 16-bit
// y is read as the CPU's one 16-bit type, BF16).

template <typename T, typename M = float>
void shuffle(const Polyphase& p, bool to_big, T* small, T* big, const M* relu_y = nullptr) {
  const int f = p.f, O = p.d.out_c, N = p.d.in.n, H = p.small.in.h, W = p.small.in.w;
  const int64_t hw = int64_t(H) * W, big_w = int64_t(f) * W;
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int py = 0; py < f; ++py)
        for (int px = 0; px < f; ++px) {
          T* s = small + (int64_t(n) * O * f * f + phase_channel(p, o, py, px)) * hw;
          const int64_t at = (int64_t(n) * O + o) * hw * f * f + int64_t(py) * big_w + px;
          T* b = big + at;
          const M* m = relu_y ? relu_y + at : nullptr;
          for (int h = 0; h < H; ++h)
            for (int w = 0; w < W; ++w) {
              const int64_t k = int64_t(h) * f * big_w + int64_t(w) * f;
              T& sv = s[int64_t(h) * W + w];
              if (to_big)
                b[k] = sv;
              else
                sv = (!m || kernels::load_act(kernels::Half16::kBf16, m, k) > 0.0f) ? b[k] : T(0);
            }
        }
}

}  // namespace

float* DnnlBackend::workspace(int slot, int64_t floats) {
  return static_cast<float*>(conv_ws_[slot].reserve(size_t(floats) * sizeof(float)));
}

int64_t DnnlBackend::upsample_conv2d_scratch(const ConvDesc& d, int f) const {
  return applies(d, f) ? 0 : Backend::upsample_conv2d_scratch(d, f);
}

void DnnlBackend::upsample_conv2d_forward(const ConvDesc& d, int f, const float* x, const float* w, const float* b,
                                          float* y, float* scratch) {
  if (!applies(d, f)) return Backend::upsample_conv2d_forward(d, f, x, w, b, y, scratch);
  polyphase_forward(d, f, x, w, b, y, false);
}

// ReLU is elementwise and comes after the bias, and the pixel shuffle only moves values, so the
// small convolution's ReLU post-op (conv2d_relu_forward) gives exactly relu(y).
void DnnlBackend::upsample_conv2d_relu_forward(const ConvDesc& d, int f, const float* x, const float* w,
                                               const float* b, float* y, float* scratch) {
  if (!applies(d, f)) return Backend::upsample_conv2d_relu_forward(d, f, x, w, b, y, scratch);
  polyphase_forward(d, f, x, w, b, y, true);
}

void DnnlBackend::polyphase_forward(const ConvDesc& d, int f, const float* x, const float* w, const float* b,
                                    float* y, bool relu) {
  const Polyphase p = polyphase(d, f);
  float* ws = workspace(kUpW, p.small.out_c * int64_t(d.in.c) * p.small.kh * p.small.kw);
  fold_weights(p, w, ws);
  float* bs = nullptr;
  if (b) {
    bs = workspace(kUpB, p.small.out_c);
    for (int o = 0; o < d.out_c; ++o)
      for (int k = 0; k < f * f; ++k) bs[int64_t(o) * f * f + k] = b[o];
  }
  // With a 16-bit output (d.y16, copied into p.small) the small convolution writes bfloat16,
  // rounded once after bias and ReLU, and the shuffle moves those values.
  float* ys = workspace(kUpY, p.small.out().size());
  if (relu)
    conv2d_relu_forward(p.small, x, ws, bs, ys);
  else
    conv2d_forward(p.small, x, ws, bs, ys);
  if (d.y16)
    shuffle(p, true, reinterpret_cast<uint16_t*>(ys), reinterpret_cast<uint16_t*>(y));
  else
    shuffle(p, true, ys, y);
}

void DnnlBackend::upsample_conv2d_backward_data(const ConvDesc& d, int f, const float* dy, const float* w, float* dx,
                                                float* scratch) {
  if (!applies(d, f)) return Backend::upsample_conv2d_backward_data(d, f, dy, w, dx, scratch);
  polyphase_backward(d, f, nullptr, nullptr, dy, w, dx, nullptr, nullptr);
}

void DnnlBackend::upsample_conv2d_backward_weights(const ConvDesc& d, int f, const float* x, const float* dy,
                                                   float* dw, float* db, float* scratch) {
  if (!applies(d, f)) return Backend::upsample_conv2d_backward_weights(d, f, x, dy, dw, db, scratch);
  polyphase_backward(d, f, x, nullptr, dy, nullptr, nullptr, dw, db);
}

int64_t DnnlBackend::upsample_conv2d_backward_scratch(const ConvDesc& d, int f, bool relu) const {
  return applies(d, f) ? 0 : Backend::upsample_conv2d_backward_scratch(d, f, relu);
}

void DnnlBackend::upsample_conv2d_backward(const ConvDesc& d, int f, const float* x, const float* y,
                                           const float* dy, const float* w, float* dx, float* dw, float* db,
                                           float* scratch) {
  if (!applies(d, f)) return Backend::upsample_conv2d_backward(d, f, x, y, dy, w, dx, dw, db, scratch);
  polyphase_backward(d, f, x, y, dy, w, dx, dw, db);
}

// The three backward ops through one shuffle: the gradient is masked (y non-null: the ReLU's
// [y > 0]) and shuffled onto the small grid once, for both gradients (the default would run
// relu_backward into scratch and shuffle twice). Masking commutes with the shuffle, which only
// moves values, so the floats are those of the default. dw null skips the weight and bias
// gradients, dx null the data gradient.
void DnnlBackend::polyphase_backward(const ConvDesc& d, int f, const float* x, const float* y, const float* dy,
                                     const float* w, float* dx, float* dw, float* db) {
  const Polyphase p = polyphase(d, f);
  const int64_t n_ws = p.small.out_c * int64_t(d.in.c) * p.small.kh * p.small.kw;
  float* dys = workspace(kUpY, p.small.out().size());
  if (y && d.y16)  // reads dy and y only
    shuffle(p, false, dys, const_cast<float*>(dy), reinterpret_cast<const uint16_t*>(y));
  else
    shuffle(p, false, dys, const_cast<float*>(dy), y);
  if (dw) {
    float* dws = workspace(kUpW, n_ws);
    float* dbs = workspace(kUpB, p.small.out_c);
    conv2d_backward_weights(p.small, x, dys, dws, dbs);
    unfold_weight_grads(p, dws, dw);
    if (db)
      for (int o = 0; o < d.out_c; ++o) {
        float sum = 0;
        for (int k = 0; k < f * f; ++k) sum += dbs[int64_t(o) * f * f + k];
        db[o] = sum;
      }
  }
  if (dx) {
    float* ws = workspace(kUpW, n_ws);  // the weight gradient is already unfolded: the slot is free
    fold_weights(p, w, ws);
    conv2d_backward_data(p.small, dys, ws, dx);
  }
}

}  // namespace ds::model
