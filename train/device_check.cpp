#include "train/device_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "io/error.h"
#include "model/kernels/half_cast.h"
#include "model/math_mode.h"

namespace ds {

double relative_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  if (got.size() != ref.size())
    throw Error("internal: comparing " + std::to_string(got.size()) + " values with " + std::to_string(ref.size()));
  const double inf = std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = got[i], r = ref[i];
    if (!std::isfinite(r) || !std::isfinite(g)) {
      const bool same = (std::isnan(r) && std::isnan(g)) || (std::isinf(r) && g == r);
      if (!same) return inf;
      continue;
    }
    diff += (double(g) - r) * (double(g) - r);
    norm += double(r) * r;
  }
  if (norm == 0) return diff == 0 ? 0 : inf;
  return std::sqrt(diff / norm);
}

std::vector<float> border_ring(const std::vector<float>& values, const model::Shape& s) {
  if (values.size() != size_t(s.size())) throw Error("internal: border of " + std::to_string(values.size()) + " values");
  std::vector<float> ring;
  if (s.h < 1 || s.w < 1) return ring;
  for (int64_t plane = 0; plane < int64_t(s.n) * s.c; ++plane) {
    const float* p = values.data() + plane * s.h * s.w;
    for (int y = 0; y < s.h; ++y)
      for (int x = 0; x < s.w; ++x)
        if (y == 0 || y == s.h - 1 || x == 0 || x == s.w - 1) ring.push_back(p[int64_t(y) * s.w + x]);
  }
  return ring;
}

// Relative L2 of a whole tensor, not the largest element's error: rounding spreads over the
// elements and shrinks in the norm, while a wrong kernel (a tap, a layout, a padding, a race)
// moves a share of the tensor by its own size: the whole tensor (about 1) or, wrong at the edges
// only, the edge's share, which on a large grid is small (a one-pixel border: 11 % of MNN's 30 x
// 53 points, sqrt(0.11) = 0.33; 2.6 % of 120 x 212, 0.16). Hence each layer output's border
// is also compared on its own, where an edge fault is about 1 whatever the grid
// (tests/train/test_device_check.cpp zeroes one column).
// What rounding alone gives, measured against the CPU's FP32 step on MNN at the North America
// shapes (`DeviceCheck.Bf16CpuStepIsWithinTolerance` prints every tensor): oneDNN's BF16 step
// (inputs and weights rounded to 8 significant bits, FP32 sums, as cuDNN's BF16 passes) differs
// by 3e-3 to 7e-3 in every layer's output and in most gradients, but by 0.02 to 0.084 in the
// weight gradients of the five first convolutions (0.055 at batch 32): sums over the batch and
// grid of input x gradient, terms of both signs that mostly cancel, so each term's rounding
// weighs more against the small sum (about 40x BF16's unit roundoff, 2^-9). TF32 and FP16 round
// to 11 significant bits, 8x finer. FP32 differs in summation order, and where cudnnFind picks
// an FFT or Winograd algorithm, by those transforms' own rounding (1e-6 to 1e-5 relative per
// convolution), times that 40 in the first layers' weight gradients: up to about 4e-4.
// Measured on an H100 (cuDNN 9.19, 2026-11-24, DeviceCheckCuda at the North America shapes):
// FP32 differed by up to 2.24e-3 (the weight gradient of branch9_conv1), more than that estimate
// (cancellation in those sums is stronger than 40x), and by 1.24e-2 while FP32 mode still let
// cudnnFind pick FFT and Winograd algorithms: every GPU run's device check then stopped a correct
// run at its start. FP32 mode now runs no transform algorithm (model/cuda/cuda_conv_plan.cu).
// TF32 in `downscale train` differed by at most 1.5e-3 there.
// A false alarm stops a correct run, so the tolerances sit well above those figures and rely on
// the borders for edge faults: FP32 1e-2 (4.5x over the H100's 2.24e-3), TF32 and FP16 0.1 (BF16's 0.084 scaled to
// 11 bits is 0.011, 0.021 if the conversion truncates), BF16 0.3 (3.5x over). A non-FP32 run is
// also checked in FP32, where no 16-bit rounding hides a small fault.
double device_check_tolerance(model::MathMode mode) {
  switch (mode) {
    case model::MathMode::kFp32: return 1e-2;
    case model::MathMode::kTf32: return 0.1;
    case model::MathMode::kFp16: return 0.1;
    case model::MathMode::kBf16: return 0.3;
  }
  return 0.3;
}

std::vector<float> host_values(const model::Tensor& t) {
  if (!t.is_16bit()) return t.to_host();
  const int64_t n = t.size();
  std::vector<float> raw(size_t(model::storage_floats(n, t.dtype())));
  if (!raw.empty()) t.backend()->copy_to_host(raw.data(), t.storage(), int64_t(raw.size()));
  std::vector<uint16_t> bits(raw.size() * 2);
  if (!raw.empty()) std::memcpy(bits.data(), raw.data(), raw.size() * sizeof(float));
  const auto kind = t.dtype() == model::DType::kBf16 ? model::kernels::Half16::kBf16 : model::kernels::Half16::kFp16;
  // Stored NHWC on a backend that keeps them so, or channel-blocked (Tensor::block): element i
  // goes to its NCHW place.
  const model::Shape s = t.shape();
  const bool nhwc = t.backend()->activations16_nhwc();
  const int64_t b = t.block(), hw = int64_t(s.h) * s.w;
  std::vector<float> out(static_cast<size_t>(n));
  if (b > 0) {
    for (int64_t in = 0; in < s.n; ++in)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t p = 0; p < hw; ++p)
          out[size_t((in * s.c + c) * hw + p)] =
              model::kernels::from_half16(kind, bits[size_t(model::blocked_index(s, int(b), in, c, p))]);
    return out;
  }
  for (int64_t i = 0; i < n; ++i)
    out[size_t(model::kernels::nchw_index_of(i, s.c, s.h, s.w, nhwc))] = model::kernels::from_half16(kind, bits[i]);
  return out;
}

namespace {

void copy_params(std::vector<model::Param> from, std::vector<model::Param> to, const std::string& what) {
  if (from.size() != to.size()) throw Error("internal: device check " + what + " counts differ");
  for (size_t i = 0; i < from.size(); ++i) {
    model::Tensor& dst = *to[i].value;
    const model::Tensor& src = *from[i].value;
    if (dst.size() != src.size()) throw Error("internal: device check " + what + " " + from[i].name + " sizes differ");
    if (dst.backend() == src.backend())
      dst.backend()->copy(dst.data(), src.data(), src.size());
    else
      dst.upload(src.to_host().data());
  }
}

model::Tensor to_backend(model::Backend& be, const model::Tensor& t) {
  model::Tensor out(be, t.shape());
  out.upload(t.to_host().data());
  return out;
}

// One step's tensors on the host: every layer's output, then, with a target (y non-null), the
// loss and every gradient (backward order).
struct StepValues {
  std::vector<std::string> names;
  std::vector<std::vector<float>> values;
  size_t first_gradient = 0;  // values[first_gradient..] are the gradients
};

StepValues run_step(model::Net& net, model::Backend& be, const model::Tensor& x, const model::Tensor* y,
                    const model::Tensor* mask, model::LossKind kind, float loss_scale) {
  StepValues v;
  const model::Tensor& out = net.forward(x);
  for (const std::string& layer : net.layer_names()) {
    const model::Tensor& t = net.layer_output(layer);
    v.names.push_back("layer '" + layer + "' output");
    v.values.push_back(host_values(t));
    // Its one-pixel border on its own: padding and edge faults live there, a few percent of a
    // large grid's points (tolerances below).
    if (t.shape().h >= 3 && t.shape().w >= 3) {
      v.names.push_back("layer '" + layer + "' output's border");
      v.values.push_back(border_ring(v.values.back(), t.shape()));
    }
  }
  v.first_gradient = v.values.size();
  if (!y) return v;
  model::Tensor d(be, out.shape());
  v.names.push_back("loss");
  v.values.push_back({float(model::masked_loss(be, kind, out, *y, *mask, &d))});
  if (loss_scale != 1.0f) be.scale(d.size(), loss_scale, d.data());
  net.backward(d);
  v.first_gradient = v.values.size();
  const auto ps = net.params();
  for (size_t i = ps.size(); i-- > 0;) {
    v.names.push_back("gradient of " + ps[i].name);
    v.values.push_back(ps[i].grad->to_host());
  }
  return v;
}

bool gradients_finite(const StepValues& v) {
  for (size_t i = v.first_gradient; i < v.values.size(); ++i)
    for (float g : v.values[i])
      if (!std::isfinite(g)) return false;
  return true;
}

void rescale_gradients(StepValues& v, float factor) {
  for (size_t i = v.first_gradient; i < v.values.size(); ++i)
    for (float& g : v.values[i]) g *= factor;
}

// The CPU's FP32 step, then `be`'s under `mode` and (when that is not FP32) under FP32, each on a
// net of its own with run's weights and buffers, compared tensor by tensor. y null: inference
// forward only (predict), with no loss or backward.
DeviceCheck compare_steps(model::Net& run, model::Backend& be, model::MathMode mode, const model::Tensor& x,
                          const model::Tensor* y, const model::Tensor* mask, model::LossKind kind, int cpu_threads,
                          const model::ForwardMode& fm, float loss_scale) {
  const auto t0 = std::chrono::steady_clock::now();
  DeviceCheck c;
  c.what = y ? "a training step" : "an inference forward";
  const auto cpu = model::make_cpu_backend(cpu_threads);
  cpu->set_math(model::MathMode::kFp32);
  const model::ModelSpec& spec = run.spec();
  // Nets of their own: the run's is not stepped (its batch-norm statistics stay). On `be` the
  // convolution plans are the backend's, per shape and math mode: those made here under the
  // run's mode are the run's. Memory reuse off: every layer's output kept apart.
  const auto net_on = [&](model::Backend& on) {
    auto n = std::make_unique<model::Net>(spec, on);
    n->set_memory_reuse(false);
    copy_params(run.params(), n->params(), "parameter");
    copy_params(run.buffers(), n->buffers(), "buffer");
    n->set_mode(fm);
    return n;
  };
  // The loss scale multiplies both sides' gradients: a power of two, exact in FP32, and the
  // relative difference does not see it.
  StepValues want;
  {
    const auto ref = net_on(*cpu);
    const model::Tensor x_ref = to_backend(*cpu, x);
    std::optional<model::Tensor> y_ref, mask_ref;
    if (y) y_ref.emplace(to_backend(*cpu, *y)), mask_ref.emplace(to_backend(*cpu, *mask));
    want = run_step(*ref, *cpu, x_ref, y ? &*y_ref : nullptr, y ? &*mask_ref : nullptr, kind, loss_scale);
  }
  std::vector<model::MathMode> modes{mode};
  if (mode != model::MathMode::kFp32) modes.push_back(model::MathMode::kFp32);
  try {
    for (const model::MathMode m : modes) {
      be.set_math(m);
      // FP16 as the trainer runs it: gradients that overflow FP16's range under the loss scale
      // (non-finite) make the trainer skip the step and halve the scale; here the step is run
      // again at half the scale, and its gradients are scaled back (powers of two: exact).
      float scale = loss_scale;
      StepValues have = run_step(*net_on(be), be, x, y, mask, kind, scale);
      while (m == model::MathMode::kFp16 && y && scale > 1.0f && !gradients_finite(have)) {
        scale /= 2;
        have = run_step(*net_on(be), be, x, y, mask, kind, scale);
      }
      if (scale != loss_scale) rescale_gradients(have, loss_scale / scale);
      const double tol = device_check_tolerance(m);
      for (size_t i = 0; i < have.names.size(); ++i) {
        DeviceCheck::Entry e{std::string(model::math_mode_name(m)) + ": " + have.names[i],
                             relative_l2(have.values[i], want.values[i]), tol};
        const int at = int(c.entries.size());
        if (c.first_bad < 0 && !(e.error <= tol)) c.first_bad = at;
        if (c.worst < 0 || !(e.error / tol <= c.entries[size_t(c.worst)].error / c.entries[size_t(c.worst)].tolerance))
          c.worst = at;
        c.entries.push_back(std::move(e));
      }
    }
  } catch (...) {
    be.set_math(mode);
    throw;
  }
  be.set_math(mode);
  be.synchronize();
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

// An error inside the check (out of memory for its nets, say) names it, and how to skip it.
template <class F>
DeviceCheck in_context(const F& check) {
  try {
    return check();
  } catch (const Error& e) {
    throw Error(std::string("device check (train.device_check; false skips it): ") + e.what(), e.code());
  }
}

}  // namespace

DeviceCheck check_step_against_cpu(model::Net& run, model::Backend& be, model::MathMode mode, const Batch& batch,
                                   const model::Tensor& mask, model::LossKind kind, int cpu_threads, uint64_t seed,
                                   float loss_scale) {
  return in_context([&] {
    return compare_steps(run, be, mode, batch.x, &batch.y, &mask, kind, cpu_threads, model::ForwardMode{true, seed},
                         loss_scale);
  });
}

DeviceCheck check_forward_against_cpu(model::Net& run, model::Backend& be, model::MathMode mode, const model::Tensor& x,
                                      int cpu_threads) {
  return in_context([&] {
    return compare_steps(run, be, mode, x, nullptr, nullptr, model::LossKind::kBernoulliGamma, cpu_threads,
                         model::ForwardMode{false, 0}, 1.0f);
  });
}

bool device_check_applies(const std::string& setting, const model::Backend& be) {
  return setting == "true" || (setting == "auto" && be.name().rfind("cuda", 0) == 0);
}

std::string device_check_line(const DeviceCheck& c, const std::string& backend, const std::string& precision) {
  char buf[768];
  const auto& w = c.entries.at(size_t(c.worst));
  if (c.passed()) {
    std::snprintf(buf, sizeof buf,
                  "device check passed: %s on %s in %s%s against the CPU's FP32 one, %zu tensors, "
                  "nearest its tolerance: %s, %.2e (relative L2; allowed %.0e) (%.1f s)",
                  c.what.c_str(), backend.c_str(), precision.c_str(), precision == "fp32" ? "" : " and in fp32",
                  c.entries.size(),
                  w.what.c_str(), w.error, w.tolerance, c.seconds);
  } else {
    const auto& b = c.entries.at(size_t(c.first_bad));
    // Which tensors are off says which pass is: a forward layer, a border only, a mode only.
    std::vector<const DeviceCheck::Entry*> over;
    for (const auto& e : c.entries)
      if (!(e.error <= e.tolerance)) over.push_back(&e);
    std::stable_sort(over.begin(), over.end(), [](const DeviceCheck::Entry* x, const DeviceCheck::Entry* y) {
      return x->error / x->tolerance > y->error / y->tolerance;  // non-finite errors first
    });
    std::string farthest;
    for (size_t i = 0; i < over.size() && i < 3; ++i) {
      char one[256];
      std::snprintf(one, sizeof one, "%s%s %.3g", i ? "; " : "", over[i]->what.c_str(), over[i]->error);
      farthest += one;
    }
    std::snprintf(buf, sizeof buf,
                  "device check failed: %s on %s against the CPU's FP32 one: %s differs by %.3g (relative L2) "
                  "where %.0e is allowed; %zu of %zu tensors over their tolerance, the farthest: ",
                  c.what.c_str(), backend.c_str(), b.what.c_str(), b.error, b.tolerance, over.size(),
                  c.entries.size());
    return buf + farthest;
  }
  return buf;
}

}  // namespace ds
