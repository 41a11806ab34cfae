// train.device_check (train/device_check.h): the comparison, its tolerances measured on a real
// reduced-precision step (oneDNN's BF16 on this CPU), and that it finds a wrong kernel: a CPU
// backend with one convolution pass made wrong, as a GPU kernel with a bad tap or edge would be.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "model/cpu/dnnl_backend.h"
#include "model/kernels/half_cast.h"
#include "model/math_mode.h"
#include "model/model_test_util.h"
#include "support/scoped_env.h"
#include "support/stderr_capture.h"
#include "support/test_support.h"
#include "train/device_check.h"

namespace ds {
namespace {

using model::Backend;
using model::ConvDesc;
using model::MathMode;
using model::ModelSpec;
using model::Net;
using model::Shape;
using model::Tensor;

TEST(DeviceCheck, RelativeL2ClosedForms) {
  EXPECT_EQ(relative_l2({}, {}), 0.0);
  EXPECT_EQ(relative_l2({0, 0}, {0, 0}), 0.0);
  EXPECT_EQ(relative_l2({1, 2, 3}, {1, 2, 3}), 0.0);
  // ||(3,4) - (0,0)|| against a zero reference: infinitely far.
  EXPECT_TRUE(std::isinf(relative_l2({3, 4}, {0, 0})));
  // (3, 4) against (3, 4.5): 0.5 / 5.5220...
  EXPECT_NEAR(relative_l2({3, 4}, {3, 4.5f}), 0.5 / std::sqrt(9.0 + 20.25), 1e-12);
  // Scale invariance: the same relative error at 1e-20 and 1e20.
  EXPECT_NEAR(relative_l2({1e-20f, 2e-20f}, {1.1e-20f, 2e-20f}), relative_l2({1e20f, 2e20f}, {1.1e20f, 2e20f}), 1e-6);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(relative_l2({nan, 1}, {1, 1})));  // NaN where the CPU has a number
  EXPECT_TRUE(std::isinf(relative_l2({inf, 1}, {1, 1})));
  EXPECT_TRUE(std::isinf(relative_l2({-inf, 1}, {inf, 1})));
  EXPECT_TRUE(std::isinf(relative_l2({1, 1}, {nan, 1})));  // a number where the CPU has NaN
  EXPECT_EQ(relative_l2({nan, 1}, {nan, 1}), 0.0);         // both NaN (a masked point): nothing
  EXPECT_EQ(relative_l2({inf, 2}, {inf, 2}), 0.0);
  EXPECT_THROW(relative_l2({1}, {1, 2}), Error);
}

TEST(DeviceCheck, BorderRingIsEachPlanesOnePixelEdge) {
  // Two planes of 3 x 4: each plane's border is all but its 1 x 2 interior.
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  const std::vector<float> ring = border_ring(v, Shape{1, 2, 3, 4});
  const std::vector<float> want = {0, 1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 19, 20, 21, 22, 23};
  EXPECT_EQ(ring, want);
  EXPECT_EQ(border_ring(std::vector<float>(6), Shape{1, 1, 2, 3}).size(), 6u);  // no interior
  EXPECT_THROW(border_ring(v, Shape{1, 1, 3, 4}), Error);
}

TEST(DeviceCheck, TolerancesOrderedByUnitRoundoff) {
  // FP32 differs in summation order only; TF32 and FP16 round to 11 significant bits, BF16 to 8.
  EXPECT_LT(device_check_tolerance(MathMode::kFp32), device_check_tolerance(MathMode::kTf32));
  EXPECT_EQ(device_check_tolerance(MathMode::kTf32), device_check_tolerance(MathMode::kFp16));
  EXPECT_LT(device_check_tolerance(MathMode::kFp16), device_check_tolerance(MathMode::kBf16));
  // All well under a wrong border, which the border entries score at about 1 on any grid.
  EXPECT_LT(device_check_tolerance(MathMode::kBf16), 0.5);
  EXPECT_LT(device_check_tolerance(MathMode::kFp32), 0.33 / 10);  // and a wrong edge of 30 x 53 overall
}

// A batch of `n` for spec: x from a fixed generator, targets 0 on a third of the points, a coast
// for the mask (the loss counts land only).
struct CheckBatch {
  Batch batch;
  Tensor mask;
};
CheckBatch make_batch(Backend& be, const ModelSpec& spec, int n) {
  Net probe(spec, be);
  const Shape os = probe.output_shape(n);
  const size_t hw = size_t(os.h) * os.w;
  std::vector<float> y(size_t(n) * hw);
  for (size_t i = 0; i < y.size(); ++i) y[i] = i % 3 == 0 ? 0.0f : float(0.3 + (i % 11) * 0.4);
  const std::vector<uint8_t> coast = model::test::coast_mask(os.h, os.w);
  std::vector<float> mask(coast.begin(), coast.end());
  Tensor x = model::test::make_tensor(be, Shape{n, spec.in_channels, spec.in_h, spec.in_w},
                                      model::test::random_values(size_t(n) * spec.in_channels * spec.in_h * spec.in_w, 11));
  Tensor yt = model::test::make_tensor(be, Shape{n, 1, os.h, os.w}, y);
  Tensor mt = model::test::make_tensor(be, Shape{1, 1, os.h, os.w}, mask);
  return CheckBatch{Batch{std::move(x), std::move(yt), 0}, std::move(mt)};
}

ModelSpec demo_spec() {
  ModelSpec s;
  s.name = "demo";
  s.in_channels = 6;
  s.in_h = 10;
  s.in_w = 12;
  s.filters = {8, 12, 10};
  return s;
}

ModelSpec mnn_na_spec() {  // the reference experiment's shapes: 20 predictors on 30 x 53
  ModelSpec s;
  s.name = "mnn";
  s.in_channels = 20;
  s.in_h = 30;
  s.in_w = 53;
  return s;
}

DeviceCheck run_check(Backend& be, MathMode mode, const ModelSpec& spec, int n) {
  Net run(spec, be);
  run.init(5);
  const CheckBatch b = make_batch(be, spec, n);
  return check_step_against_cpu(run, be, mode, b.batch, b.mask, model::LossKind::kBernoulliGamma, 2, 9);
}

// host_values reads a 16-bit activation stored channel-blocked (Tensor::block: the CPU's
// nChw16c, nChw8c) into NCHW order: element (n, c, h, w) of the blocked storage lands at its NCHW
// place. The values are small integers, exact in BF16 (its bits are a float's upper half).
TEST(DeviceCheck, HostValuesOfABlockedBf16TensorAreNchw) {
  auto be = model::make_cpu_backend(1);
  for (int b : {8, 16}) {
    const Shape s{2, 2 * b, 3, 5};
    const int64_t n = s.size(), hw = int64_t(s.h) * s.w;
    std::vector<float> expected_nchw(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) expected_nchw[size_t(i)] = float(i % 97) - 48.0f;
    std::vector<uint16_t> bits(static_cast<size_t>(n + 1));
    for (int64_t in = 0; in < s.n; ++in)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t p = 0; p < hw; ++p) {
          const float v = expected_nchw[size_t((in * s.c + c) * hw + p)];
          uint32_t u;
          std::memcpy(&u, &v, sizeof u);
          bits[size_t(((in * (s.c / b) + c / b) * hw + p) * b + c % b)] = uint16_t(u >> 16);
        }
    Tensor t(*be, s, model::DType::kBf16, b);
    std::vector<float> raw(static_cast<size_t>(model::storage_floats(n, model::DType::kBf16)));
    std::memcpy(raw.data(), bits.data(), raw.size() * sizeof(float));
    be->copy_from_host(t.storage(), raw.data(), int64_t(raw.size()));
    EXPECT_EQ(host_values(t), expected_nchw) << "block " << b;
  }
}

TEST(DeviceCheck, CpuFp32AgainstItselfAgreesToRounding) {
  auto be = model::make_cpu_backend(2);
  const DeviceCheck c = run_check(*be, MathMode::kFp32, demo_spec(), 4);
  EXPECT_TRUE(c.passed()) << device_check_line(c, be->name(), "fp32");
  for (const auto& e : c.entries) EXPECT_LT(e.error, 1e-5) << e.what;  // the same arithmetic
  // One step (fp32 is the run's mode): every layer's output and its border (each layer's grid is
  // at least 3 x 3 here), the loss, W and b of every convolution.
  Net n(demo_spec(), *be);
  ASSERT_EQ(c.entries.size(), 2 * n.layer_names().size() + 1 + n.params().size());
  EXPECT_EQ(c.entries.front().what, "fp32: layer 'conv1' output");
  EXPECT_EQ(c.entries.back().what, "fp32: gradient of conv1/W");
}

// The figures device_check.cpp's BF16 tolerance rests on: oneDNN's BF16 convolutions (inputs and
// weights rounded to 8 significant bits, FP32 sums, BF16 activations between layers) against
// FP32, on MNN at the North America shapes, batch 8. Printed for the record; the worst must stay
// under half the tolerance (the GPU's BF16 rounds the same operands, its sums in other orders).
TEST(DeviceCheck, Bf16CpuStepIsWithinTolerance) {
  REQUIRE_CPU_BF16(be);
  const DeviceCheck c = run_check(*be, MathMode::kBf16, mnn_na_spec(), 8);
  std::printf("%s\n", device_check_line(c, be->name(), "bf16").c_str());
  double worst_bf16 = 0, worst_fp32 = 0;
  for (const auto& e : c.entries) {
    std::printf("  %-48s %.2e\n", e.what.c_str(), e.error);
    (e.what.rfind("bf16:", 0) == 0 ? worst_bf16 : worst_fp32) =
        std::max(e.what.rfind("bf16:", 0) == 0 ? worst_bf16 : worst_fp32, e.error);
  }
  EXPECT_TRUE(c.passed());
  // Both steps ran, bf16 first, then the FP32 one, which on the CPU is the reference's arithmetic.
  Net n(mnn_na_spec(), *be);
  ASSERT_EQ(c.entries.size(), 2 * (2 * n.layer_names().size() + 1 + n.params().size()));
  EXPECT_LT(worst_bf16, device_check_tolerance(MathMode::kBf16) / 2);
  EXPECT_GT(worst_bf16, 1e-3) << "bf16 really ran";
  EXPECT_LT(worst_fp32, 1e-5);
  EXPECT_EQ(be->activation_dtype(), model::DType::kBf16) << "the backend is back in the run's mode";
}

// A CPU backend with one pass made wrong, the kind of fault a GPU kernel has when a tap, an edge or
// a layout is wrong: the forward's last output column, or the data gradient's first input column,
// zeroed. Everything else is oneDNN's.
class FaultyBackend : public model::DnnlBackend {
 public:
  enum class Fault { kForwardEdge, kDataGradientEdge };
  FaultyBackend(Fault f) : DnnlBackend(2), fault_(f) {}
  void conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) override {
    DnnlBackend::conv2d_forward(d, x, w, b, y);
    if (fault_ == Fault::kForwardEdge) zero_column(d.out(), d.out().w - 1, y);
  }
  void conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) override {
    DnnlBackend::conv2d_relu_forward(d, x, w, b, y);
    if (fault_ == Fault::kForwardEdge) zero_column(d.out(), d.out().w - 1, y);
  }
  void conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) override {
    DnnlBackend::conv2d_backward_data(d, dy, w, dx);
    if (fault_ == Fault::kDataGradientEdge) zero_column(d.in, 0, dx);
  }

 private:
  static void zero_column(const Shape& s, int col, float* p) {
    for (int64_t r = 0; r < int64_t(s.n) * s.c * s.h; ++r) p[r * s.w + col] = 0.0f;
  }
  Fault fault_;
};

TEST(DeviceCheck, AWrongForwardEdgeIsNamedByItsLayer) {
  FaultyBackend be(FaultyBackend::Fault::kForwardEdge);
  const DeviceCheck c = run_check(be, MathMode::kFp32, demo_spec(), 4);
  ASSERT_FALSE(c.passed());
  // The demo's first layer is its first convolution: the first tensor found wrong.
  const auto& bad = c.entries[size_t(c.first_bad)];
  EXPECT_EQ(bad.what, "fp32: layer 'conv1' output");
  EXPECT_GT(bad.error, 0.1);  // one column of 12 zeroed: about sqrt(1/12) = 0.29
  const std::string line = device_check_line(c, be.name(), "fp32");
  EXPECT_NE(line.find("device check failed"), std::string::npos) << line;
  EXPECT_NE(line.find(bad.what), std::string::npos) << line;
  EXPECT_NE(line.find("tensors over their tolerance, the farthest: "), std::string::npos) << line;
  std::printf("%s\n", line.c_str());
}

// On a larger grid an edge fault is a small share of the tensor: under BF16's tolerance the whole
// output passes and its border entry does not.
TEST(DeviceCheck, AWrongEdgeOfALargeGridIsCaughtByTheBorder) {
  FaultyBackend be(FaultyBackend::Fault::kForwardEdge);
  ModelSpec spec = demo_spec();
  spec.in_h = 24;
  spec.in_w = 40;
  const DeviceCheck c = run_check(be, MathMode::kFp32, spec, 2);
  double whole = -1, border = -1;
  for (const auto& e : c.entries) {
    if (e.what == "fp32: layer 'conv1' output") whole = e.error;
    if (e.what == "fp32: layer 'conv1' output's border") border = e.error;
  }
  EXPECT_GT(whole, 0);
  EXPECT_LT(whole, device_check_tolerance(MathMode::kBf16));   // one column of 40: about 0.16
  EXPECT_GT(border, device_check_tolerance(MathMode::kBf16));  // 24 of the 124 border points: about 0.44
}

// The check leaves the run's net as it was: its weights and buffers bit for bit (it steps nets of
// its own), so a checked run trains exactly as an unchecked one.
TEST(DeviceCheck, LeavesTheRunsNetUnchanged) {
  auto be = model::make_cpu_backend(2);
  ModelSpec spec = demo_spec();
  Net run(spec, *be);
  run.init(5);
  std::vector<std::vector<float>> before;
  for (const auto& p : run.params()) before.push_back(p.value->to_host());
  const CheckBatch b = make_batch(*be, spec, 4);
  const DeviceCheck c = check_step_against_cpu(run, *be, MathMode::kTf32, b.batch, b.mask,
                                               model::LossKind::kBernoulliGamma, 2, 9);
  EXPECT_TRUE(c.passed());
  const auto after = run.params();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].value->to_host(), before[i]) << after[i].name;
}

TEST(DeviceCheck, AWrongDataGradientEdgeIsFoundInTheGradients) {
  FaultyBackend be(FaultyBackend::Fault::kDataGradientEdge);
  const DeviceCheck c = run_check(be, MathMode::kFp32, demo_spec(), 4);
  ASSERT_FALSE(c.passed());
  // The forward is right: the first tensor off is a gradient, and the farthest is far.
  const auto& bad = c.entries[size_t(c.first_bad)];
  EXPECT_EQ(bad.what.rfind("fp32: gradient of ", 0), 0u) << bad.what;
  EXPECT_GT(c.entries[size_t(c.worst)].error, 5 * device_check_tolerance(MathMode::kFp32))
      << c.entries[size_t(c.worst)].what;
}

// FP16's range on a CPU backend: it says it computes in fp16, and a convolution's gradients
// beyond FP16's largest finite value (65504) overflow to infinity, as a 16-bit backward pass
// would. Under a loss scale of 2^30 the demo's gradients overflow: the check halves the scale
// until they do not, as the trainer would, and scales them back: then it passes with FP32's
// figures (a wrong factor would leave a relative error of at least 1/2).
class Fp16RangeBackend : public model::DnnlBackend {
 public:
  Fp16RangeBackend() : DnnlBackend(2) {}
  bool set_math(MathMode mode) override {
    DnnlBackend::set_math(MathMode::kFp32);
    fp16_ = mode == MathMode::kFp16;
    return true;
  }
  void conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) override {
    DnnlBackend::conv2d_backward_data(d, dy, w, dx);
    overflow(d.in.size(), dx);
  }
  void conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) override {
    DnnlBackend::conv2d_backward_weights(d, x, dy, dw, db);
    overflow(int64_t(d.out_c) * d.in.c * d.kh * d.kw, dw);
  }
  int overflowed = 0;

 private:
  void overflow(int64_t n, float* p) {
    if (!fp16_) return;
    for (int64_t i = 0; i < n; ++i)
      if (std::abs(p[i]) > 65504.0f) p[i] = std::copysign(std::numeric_limits<float>::infinity(), p[i]), ++overflowed;
  }
  bool fp16_ = false;
};

TEST(DeviceCheck, Fp16OverflowIsRunAgainAtHalfTheScale) {
  Fp16RangeBackend be;
  be.set_math(MathMode::kFp16);
  Net run(demo_spec(), be);
  run.init(5);
  const CheckBatch b = make_batch(be, demo_spec(), 4);
  const DeviceCheck c = check_step_against_cpu(run, be, MathMode::kFp16, b.batch, b.mask,
                                               model::LossKind::kBernoulliGamma, 2, 9, 1073741824.0f);
  EXPECT_GT(be.overflowed, 0) << "the scale of 2^30 did not overflow: the test tests nothing";
  EXPECT_TRUE(c.passed()) << device_check_line(c, be.name(), "fp16");
  for (const auto& e : c.entries) EXPECT_LT(e.error, 1e-5) << e.what;
}

// 16-bit activations read on the host come back in NCHW order, also from a backend that stores
// them NHWC (Backend::activations16_nhwc; the CUDA backend's DOWNSCALE_CUDA_LAYOUT=nhwc): read
// in storage order they would compare every element with another one of the CPU's.
class Nhwc16Storage : public model::DnnlBackend {
 public:
  Nhwc16Storage() : DnnlBackend(1) {}
  bool activations16_nhwc() const override { return true; }
};

TEST(DeviceCheck, HostValuesOf16BitActivationsAreInNchwOrder) {
  const model::Shape s{2, 3, 2, 5};
  for (const bool nhwc : {false, true}) {
    std::unique_ptr<model::Backend> be = nhwc ? std::make_unique<Nhwc16Storage>() : model::make_cpu_backend(1);
    model::Tensor t(*be, s, model::DType::kBf16);
    // Each element holds its NCHW index (0..59, exact in BF16), stored in the backend's order.
    std::vector<uint16_t> bits(size_t(s.size()) + 1);
    for (int64_t i = 0; i < s.size(); ++i) {
      const int64_t nchw = model::kernels::nchw_index_of(i, s.c, s.h, s.w, nhwc);
      bits[size_t(i)] = model::kernels::to_half16(model::kernels::Half16::kBf16, float(nchw));
    }
    be->copy_from_host(t.storage(), reinterpret_cast<const float*>(bits.data()),
                       model::storage_floats(s.size(), model::DType::kBf16));
    const std::vector<float> v = host_values(t);
    ASSERT_EQ(v.size(), size_t(s.size()));
    for (int64_t i = 0; i < s.size(); ++i) ASSERT_EQ(v[size_t(i)], float(i)) << (nhwc ? "NHWC" : "NCHW") << " " << i;
  }
}

struct Variant {
  std::string name;
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<MathMode> modes;
};

// The lines the backend must print (stderr) where a row forces the TF32 passes, defers the weight
// passes or pads channels: they did run.
std::vector<std::string> must_say(const Variant& v) {
  std::vector<std::string> says;
  for (const auto& [name, value] : v.env) {
    if (name == "DOWNSCALE_CUDA_TF32_PASSES" && value == "1")
      says.push_back("backward filter as TF32 (DOWNSCALE_CUDA_TF32_PASSES=1)");
    if (name == "DOWNSCALE_CUDA_DEFER_WEIGHTS" && value == "1")
      says.push_back("weight gradients deferred to a stream of their own");
    if (name == "DOWNSCALE_CUDA_PAD_CHANNELS" && (value == "1" || value == "all"))
      says.push_back("input channels padded to");
    if (name == "DOWNSCALE_CUDA_PAD_CHANNELS" && value == "timed")  // padded or not, said with the times
      says.push_back(" by timing (DOWNSCALE_CUDA_PAD_CHANNELS=timed)");
  }
  return says;
}

// The device check's rows: MNN's step on the GPU against the CPU under each path's switches.
std::vector<Variant> device_check_variants() {
  return {
      // The default's five lanes pinned, so an exported DOWNSCALE_CUDA_LANES=0 cannot drop them
      // (ModelCuda.FiveLanesByDefaultOneStreamWhenAskedOrTimed checks that they are the default).
      // BF16 here runs its timed paths (ModelCuda.Bf16DefaultsAreTheTimedPaths); no other row does
      // unless it names them (row_env).
      {"defaults", {{"DOWNSCALE_CUDA_LANES", "5"}}, {MathMode::kTf32, MathMode::kFp32, MathMode::kBf16, MathMode::kFp16}},
      {"hand-written kernels forced, one stream",
       {{"DOWNSCALE_CUDA_NARROW", "1"}, {"DOWNSCALE_CUDA_WGRAD_GEMM", "1"}, {"DOWNSCALE_CUDA_LANES", "0"},
        {"DOWNSCALE_CUDA_LAYOUT", "nchw"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "0"}},  // the GEMM reads NCHW
       {MathMode::kTf32, MathMode::kBf16}},
      // The weight gradients by GEMM reading 16-bit activations (x16), NHWC and NCHW.
      {"weight gradients by GEMM, NHWC 16-bit activations",
       {{"DOWNSCALE_CUDA_WGRAD_GEMM", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nhwc"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16}},
      {"weight gradients by GEMM, NCHW 16-bit activations",
       {{"DOWNSCALE_CUDA_WGRAD_GEMM", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nchw"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16, MathMode::kFp16}},
      // BF16's default since 2026-11-29 is NHWC 16-bit activations (the "defaults" row); each
      // other path pinned here.
      {"NCHW 16-bit scratch, FP32 activations",
       {{"DOWNSCALE_CUDA_LAYOUT", "nchw"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "0"}},
       {MathMode::kBf16}},
      {"16-bit activations", {{"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nchw"}},
       {MathMode::kBf16, MathMode::kFp16}},
      {"NHWC 16-bit scratch", {{"DOWNSCALE_CUDA_LAYOUT", "nhwc"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "0"}},
       {MathMode::kBf16}},
      // NHWC in BF16 only: cuDNN refused FP16 backward data in NHWC for MNN's 25 -> 10 convolutions.
      {"NHWC 16-bit activations", {{"DOWNSCALE_CUDA_LAYOUT", "nhwc"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16}},
      {"unfused casts, cuDNN bias gradient",
       {{"DOWNSCALE_CUDA_FUSE16", "0"}, {"DOWNSCALE_CUDA_BIAS_GRAD", "cudnn"}, {"DOWNSCALE_CUDA_LAYOUT", "nchw"}},
       {MathMode::kBf16}},
      // cuDNN's graph API engines on every pass they take (model/cuda/cuda_conv_graph.cu), on the
      // NHWC 16-bit activations they were written for and on NCHW scratch.
      {"graph engines, NHWC 16-bit activations",
       {{"DOWNSCALE_CUDA_GRAPH", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nhwc"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16}},
      // ... and with the engines PyTorch also allows (16-bit reductions): does the step still pass?
      {"graph engines, PyTorch's numerical notes", {{"DOWNSCALE_CUDA_GRAPH", "1"}, {"DOWNSCALE_CUDA_GRAPH_NOTES", "pytorch"}},
       {MathMode::kBf16}},
      // The backward passes as TF32 where forced (model/cuda/cuda_conv_tf32.cu): the weight
      // gradient from a widened 16-bit activation, NHWC and NCHW, the polyphase passes included.
      {"TF32 passes, NHWC 16-bit activations",
       {{"DOWNSCALE_CUDA_TF32_PASSES", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nhwc"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16}},
      {"TF32 passes, NCHW 16-bit activations",
       {{"DOWNSCALE_CUDA_TF32_PASSES", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nchw"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16, MathMode::kFp16}},
      // ... and timed, with the graph engines and the GEMM timed too: the step as it would ship.
      {"TF32 passes, graph engines and GEMM timed",
       {{"DOWNSCALE_CUDA_TF32_PASSES", "timed"}, {"DOWNSCALE_CUDA_GRAPH", "timed"}, {"DOWNSCALE_CUDA_WGRAD_GEMM", "timed"}},
       {MathMode::kBf16}},
      // The decoder's weight gradients on a stream of their own until the branches' join
      // (model/cuda/cuda_lanes.cu): the head's copied dy, the masked copies, the polyphase dys.
      {"deferred weight passes",
       {{"DOWNSCALE_CUDA_DEFER_WEIGHTS", "1"}, {"DOWNSCALE_CUDA_LANES", "5"}},
       {MathMode::kTf32, MathMode::kBf16, MathMode::kFp16}},
      {"deferred weight passes, TF32 passes, graph engines and GEMM timed",
       {{"DOWNSCALE_CUDA_DEFER_WEIGHTS", "1"}, {"DOWNSCALE_CUDA_LANES", "5"}, {"DOWNSCALE_CUDA_TF32_PASSES", "timed"},
        {"DOWNSCALE_CUDA_GRAPH", "timed"}, {"DOWNSCALE_CUDA_WGRAD_GEMM", "timed"}},
       {MathMode::kBf16}},
      // Input channels padded to 8 for cuDNN (cuda_conv_plan.cu): MNN's two polyphase
      // convolutions (50 -> 200, 100 -> 528), the padded copy of their 16-bit NHWC x.
      {"channels padded to 8, NHWC 16-bit activations",
       {{"DOWNSCALE_CUDA_PAD_CHANNELS", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nhwc"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16}},
      {"channels padded to 8 everywhere, NHWC 16-bit activations",
       {{"DOWNSCALE_CUDA_PAD_CHANNELS", "all"}, {"DOWNSCALE_CUDA_LAYOUT", "nhwc"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16}},
      // What would ship if each timed switch pays: every plan's padding chosen by cudnnFind's
      // times, the TF32 passes, graph engines and GEMM timed, the weight passes deferred.
      {"channels padded by timing, every timed switch, deferred weight passes",
       {{"DOWNSCALE_CUDA_PAD_CHANNELS", "timed"}, {"DOWNSCALE_CUDA_DEFER_WEIGHTS", "1"}, {"DOWNSCALE_CUDA_LANES", "5"},
        {"DOWNSCALE_CUDA_TF32_PASSES", "timed"}, {"DOWNSCALE_CUDA_GRAPH", "timed"},
        {"DOWNSCALE_CUDA_WGRAD_GEMM", "timed"}, {"DOWNSCALE_CUDA_LAYOUT", "nhwc"},
        {"DOWNSCALE_CUDA_ACTIVATIONS16", "1"}},
       {MathMode::kBf16}},
      {"graph engines, NCHW 16-bit scratch",
       {{"DOWNSCALE_CUDA_GRAPH", "1"}, {"DOWNSCALE_CUDA_LAYOUT", "nchw"}, {"DOWNSCALE_CUDA_ACTIVATIONS16", "0"}},
       {MathMode::kBf16, MathMode::kFp16}},
  };
}

// A row's switches as it runs them. BF16's timed paths (the graph engines, the TF32 passes, the
// padded channels, the deferred weight passes: BF16's defaults since 2026-11-30,
// model/cuda/cuda_backend.h) are pinned off in every row but "defaults" that does not name them,
// so each row checks the path it names rather than the timings' choice around it. The GEMM weight
// gradient too where every mode of the row is 16-bit in NHWC (LAYOUT=nhwc, or unset with BF16
// alone): there it was never timed before BF16's new defaults (in NCHW it was, on FP32 x).
using RowEnv = std::vector<std::pair<std::string, std::string>>;

// The value `env` gives switch `name`, "" where it gives none (the last, as ScopedEnvs leaves it).
std::string env_value(const RowEnv& env, const std::string& name) {
  std::string v;
  for (const auto& [k, x] : env)
    if (k == name) v = x;
  return v;
}

RowEnv row_env(const Variant& v) {
  RowEnv env = v.env;
  if (v.name == "defaults") return env;
  const auto all_modes = [&](auto is) { return !v.modes.empty() && std::all_of(v.modes.begin(), v.modes.end(), is); };
  const bool half_only = all_modes([](MathMode m) { return m == MathMode::kBf16 || m == MathMode::kFp16; });
  const std::string layout = env_value(v.env, "DOWNSCALE_CUDA_LAYOUT");
  const bool nhwc = layout == "nhwc" || (layout.empty() && all_modes([](MathMode m) { return m == MathMode::kBf16; }));
  for (const char* name : {"DOWNSCALE_CUDA_GRAPH", "DOWNSCALE_CUDA_TF32_PASSES", "DOWNSCALE_CUDA_PAD_CHANNELS",
                           "DOWNSCALE_CUDA_DEFER_WEIGHTS", "DOWNSCALE_CUDA_WGRAD_GEMM"}) {
    if (!env_value(v.env, name).empty()) continue;  // the row names it
    if (std::string(name) == "DOWNSCALE_CUDA_WGRAD_GEMM" && !(half_only && nhwc)) continue;
    env.emplace_back(name, "0");
  }
  return env;
}

// DOWNSCALE_DEVICE_CHECK_ROWS="a|b|=c": whether row `name` runs: its name contains a or b, or is c
// exactly ("=" before a part: a row whose name is also part of others', "16-bit activations");
// only null or empty: every row. A device call too short for all of them runs the paths that
// never ran first (docs/gpu.md, scripts/gpu_session.sh).
// The parts of such a list, empty ones included ("a||b": a, "", b).
std::vector<std::string> row_parts(const std::string& list) {
  std::vector<std::string> parts;
  for (size_t at = 0; at <= list.size();) {
    const size_t bar = std::min(list.find('|', at), list.size());
    parts.push_back(list.substr(at, bar - at));
    at = bar + 1;
  }
  return parts;
}

bool row_wanted(const std::string& name, const char* only) {
  if (!only || !*only) return true;
  for (const std::string& part : row_parts(only)) {
    if (part.size() > 1 && part[0] == '=') {
      if (name == part.substr(1)) return true;
    } else if (!part.empty() && name.find(part) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Every row but "defaults" runs with BF16's timed paths off unless it names them, as it set them.
TEST(DeviceCheck, RowsPinBf16TimedPathsOffButDefaults) {
  const auto value = env_value;  // "" where unset
  int rows = 0;
  for (const Variant& v : device_check_variants()) {
    const auto env = row_env(v);
    // The GEMM's pin: rows of 16-bit modes in NHWC only (the layout named, or BF16's default).
    bool half_only = true, bf16_only = true;
    for (const MathMode m : v.modes) {
      half_only = half_only && (m == MathMode::kBf16 || m == MathMode::kFp16);
      bf16_only = bf16_only && m == MathMode::kBf16;
    }
    const std::string layout = value(v.env, "DOWNSCALE_CUDA_LAYOUT");
    const bool nhwc = layout == "nhwc" || (layout.empty() && bf16_only);
    const std::string gemm = value(v.env, "DOWNSCALE_CUDA_WGRAD_GEMM");
    EXPECT_EQ(value(env, "DOWNSCALE_CUDA_WGRAD_GEMM"),
              v.name != "defaults" && gemm.empty() && half_only && nhwc ? "0" : gemm)
        << v.name << " DOWNSCALE_CUDA_WGRAD_GEMM";
    for (const char* name : {"DOWNSCALE_CUDA_GRAPH", "DOWNSCALE_CUDA_TF32_PASSES", "DOWNSCALE_CUDA_PAD_CHANNELS",
                             "DOWNSCALE_CUDA_DEFER_WEIGHTS"}) {
      const std::string set = value(v.env, name), got = value(env, name);
      if (v.name == "defaults")
        EXPECT_EQ(got, set) << v.name << " " << name;
      else
        EXPECT_EQ(got, set.empty() ? "0" : set) << v.name << " " << name;
    }
    for (const auto& [k, x] : v.env) EXPECT_EQ(value(env, k), x) << v.name << " " << k << " kept";
    ++rows;
  }
  EXPECT_GT(rows, 10);
  // The rule on named rows: NHWC 16-bit activations (BF16) pins the GEMM, the NCHW 16-bit
  // activations row (BF16 and FP16) does not, the TF32 row of the deferred passes does not.
  for (const Variant& v : device_check_variants()) {
    const auto env = row_env(v);
    const std::string gemm = value(env, "DOWNSCALE_CUDA_WGRAD_GEMM");
    if (v.name == "NHWC 16-bit activations") {
      EXPECT_EQ(gemm, "0");
    } else if (v.name == "16-bit activations" || v.name == "deferred weight passes") {
      EXPECT_EQ(gemm, "") << v.name;
    }
  }
}

// The row filter's two forms, and scripts/gpu_session.sh's two calls (their rows="..." lines):
// every row in one call and none in both, so a short device session neither leaves a path out nor
// pays for one twice (until 2026-11-30 call 2's "16-bit activations" ran five of call 1's rows
// again, about 45 s of device time).
TEST(DeviceCheck, GpuSessionCallsRunEachRowOnce) {
  EXPECT_TRUE(row_wanted("defaults", nullptr));
  EXPECT_TRUE(row_wanted("defaults", ""));
  EXPECT_TRUE(row_wanted("NHWC 16-bit activations", "x|16-bit"));
  EXPECT_TRUE(row_wanted("16-bit activations", "x|=16-bit activations"));
  EXPECT_FALSE(row_wanted("NHWC 16-bit activations", "=16-bit activations"));
  EXPECT_FALSE(row_wanted("defaults", "|"));
  EXPECT_FALSE(row_wanted("defaults", "="));

  const std::string script = test::source_dir() + "/scripts/gpu_session.sh";
  std::ifstream in(script);
  if (!in) GTEST_SKIP() << script << " not found: not a source tree (DS_SOURCE_DIR)";
  std::vector<std::string> calls;
  const std::regex rows(R"re(^\s*rows="([^"]*)")re");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, rows)) calls.push_back(m[1]);
  ASSERT_EQ(calls.size(), 2u) << script << ": expected a rows=\"...\" line in each of call 1 and call 2";
  // Each part of each list picks a row: a renamed row would otherwise leave a part picking none.
  for (const std::string& list : calls)
    for (const std::string& part : row_parts(list)) {
      bool picks = false;
      for (const Variant& v : device_check_variants()) picks = picks || row_wanted(v.name, part.c_str());
      EXPECT_TRUE(picks) << "'" << part << "' in " << script << " picks no device-check row";
    }
  for (const Variant& v : device_check_variants()) {
    std::string in_calls;
    for (size_t c = 0; c < calls.size(); ++c)
      if (row_wanted(v.name, calls[c].c_str())) in_calls += " " + std::to_string(c + 1);
    EXPECT_EQ(std::count(in_calls.begin(), in_calls.end(), ' '), 1)
        << "row '" << v.name << "' is in call(s)" << (in_calls.empty() ? " none" : in_calls) << " of " << script;
  }
}

// A device-check row's switches last for the row: a value the whole run was given (a GPU
// session's variant, a user's environment) is back after it, and one the run did not have is
// gone again, also when the row throws.
TEST(DeviceCheck, RowSwitchesPutTheRunsValuesBack) {
  const ds::test::ScopedEnv run("DOWNSCALE_TEST_ROW_A", "run");
  const ds::test::ScopedEnv none("DOWNSCALE_TEST_ROW_B", nullptr);
  try {
    const ds::test::ScopedEnvs row({{"DOWNSCALE_TEST_ROW_A", "row"}, {"DOWNSCALE_TEST_ROW_B", "row"}});
    EXPECT_STREQ(std::getenv("DOWNSCALE_TEST_ROW_A"), "row");
    EXPECT_STREQ(std::getenv("DOWNSCALE_TEST_ROW_B"), "row");
    throw std::runtime_error("a row that throws");
  } catch (const std::runtime_error&) {
  }
  EXPECT_STREQ(std::getenv("DOWNSCALE_TEST_ROW_A"), "run");
  EXPECT_EQ(std::getenv("DOWNSCALE_TEST_ROW_B"), nullptr);
}

// On a GPU (scripts/gpu_check.sh's parity section; skipped here, a failure under
// DOWNSCALE_REQUIRE_GPU=1): MNN's step at the reference batch on the North America shapes passes
// the check in every precision, with the backend's defaults and with each path that has a switch
// forced on: the hand-written kernels for every pass they apply to (narrow head, weight gradient
// by im2col + cuBLAS), the branches on five streams, 16-bit activations, the NHWC 16-bit scratch,
// and the older unfused casts and cuDNN's bias gradient. The same check as a run's first step.
// Each row's switches are set for that row only (test::ScopedEnvs), the run's own values put
// back after it.
TEST(DeviceCheckCuda, MnnStepPassesInEveryPrecisionAndPath) {
  if (!model::cuda_available()) {
    const char* require = std::getenv("DOWNSCALE_REQUIRE_GPU");
    if (require && std::string(require) == "1") FAIL() << "DOWNSCALE_REQUIRE_GPU=1 but " << model::cuda_probe().reason;
    GTEST_SKIP() << "no GPU (" << model::cuda_probe().reason << "): the device check on a GPU skipped";
  }
  // DOWNSCALE_DEVICE_CHECK_ROWS: which rows (row_wanted); unset: every row.
  const char* only = std::getenv("DOWNSCALE_DEVICE_CHECK_ROWS");
  const std::vector<Variant> variants = device_check_variants();
  int ran = 0;
  // Each row's lines are flushed as they are printed, and a row that fails or throws ends only
  // itself: a GPU session runs this test under a timeout, and a row killed there, or one that
  // fails, must leave the verdicts of the rows before it and let the rows after it run.
  for (const Variant& v : variants) {
    if (!row_wanted(v.name, only)) {
      std::printf("%s: not run (DOWNSCALE_DEVICE_CHECK_ROWS=%s)\n", v.name.c_str(), only);
      std::fflush(stdout);
      continue;
    }
    ++ran;
    try {
      const ds::test::ScopedEnvs env(row_env(v));
      auto be = model::make_cuda_backend(0);
      for (const MathMode m : v.modes) {
        if (!be->set_math(m)) {
          ADD_FAILURE() << v.name << ": the backend refused " << model::math_mode_name(m);
          continue;
        }
        Net run(mnn_na_spec(), *be);
        run.init(5);
        const CheckBatch b = make_batch(*be, mnn_na_spec(), 32);
        const std::vector<std::string> says = must_say(v);
        std::optional<test::StderrCapture> capture;  // given back to stderr if the check throws
        if (!says.empty()) capture.emplace();
        // FP16 as the trainer runs it: the loss gradient x 65536 (LossScaler's first scale).
        const DeviceCheck c = check_step_against_cpu(run, *be, m, b.batch, b.mask, model::LossKind::kBernoulliGamma, 0,
                                                     9, m == MathMode::kFp16 ? 65536.0f : 1.0f);
        if (capture) {
          const std::string log = capture->take();
          // Given back to stderr: the backend's lines of the paths these rows force are what a
          // GPU session reads to see which way each went.
          std::fputs(log.c_str(), stderr);
          for (const std::string& say : says) {
            size_t said = 0;
            for (size_t at = log.find(say); at != std::string::npos; at = log.find(say, at + 1)) ++said;
            std::printf("%s: '%s' said %zu times\n", v.name.c_str(), say.c_str(), said);
            EXPECT_GT(said, 0u) << v.name << ": the backend never said '" << say << "'";
          }
        }
        const std::string line = v.name + ": " + device_check_line(c, be->name(), model::math_mode_name(m));
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        EXPECT_TRUE(c.passed()) << line;
      }
    } catch (const std::exception& e) {
      std::printf("%s: device check failed: threw %s\n", v.name.c_str(), e.what());
      std::fflush(stdout);
      ADD_FAILURE() << v.name << ": " << e.what();
    }
  }
  EXPECT_GT(ran, 0) << "DOWNSCALE_DEVICE_CHECK_ROWS=" << (only ? only : "") << " matched no row";
}

}  // namespace
}  // namespace ds
