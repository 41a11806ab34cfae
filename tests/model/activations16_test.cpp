// 16-bit activations between layers (Net::set_activations16, Backend::activation_dtype): which
// nodes the Net stores in BF16, what that saves, and that the training step is the same bit for
// bit as with FP32 activations on the CPU under BF16 math.
//
// Why bit for bit and not a tolerance: with FP32 activations every BF16 convolution rounds its
// FP32 input to BF16 (round to nearest even) as oneDNN's reorder reads it; with 16-bit
// activations the producing convolution rounds relu(acc + b) to BF16 (nearest even) as it writes
// it. The same value is rounded the same way once, only earlier, and the ReLU mask [y > 0] is the
// same for every output of normal magnitude (>= 2^-126; avx512_bf16's conversion flushes
// subnormals, which these random weights and inputs do not produce). Concat moves values. So forward output, loss, every
// parameter gradient and the next step after Adam must be identical; any difference is a wrong
// operand type, layout or mask. Skipped, with the reason, on CPUs without avx512_bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "io/error.h"
#include "model/backend.h"
#include "model/cpu/dnnl_backend.h"
#include "model/kernels/copy.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"
#include "model/layers/concat.h"
#include "model/layers/upsample_conv2d.h"
#include "model/net.h"
#include "model_test_util.h"
#include "training_record.h"

namespace ds::model {
namespace {

using test::random_values;

#define REQUIRE_BF16(be) REQUIRE_CPU_BF16(be)

ModelSpec spec_for(const std::string& name) {
  ModelSpec s;
  s.name = name;
  s.in_channels = 6;
  s.in_h = 6;
  s.in_w = 8;
  if (name == "demo") s.filters = {8, 12, 10};
  if (name == "deepesd") {
    s.out_h = 9;
    s.out_w = 11;
    s.land_mask = test::coast_mask(9, 11);
  }
  return s;
}

// Two training steps and an inference forward (training_record.h), with 16-bit activations on
// or off; each forward really held the 16-bit tensor (or, off or under FP32 math, the FP32 one).
std::vector<float> two_steps(const ModelSpec& spec, Backend& be, bool act16) {
  const std::string first_conv = spec.name == "mnn" ? "branch2_conv1" : "conv1";
  return test::two_adam_steps(
      spec, be, [&](Net& net) { net.set_activations16(act16); },
      [&](Net& net) {
        EXPECT_EQ(net.activation_dtype(first_conv), act16 ? be.activation_dtype() : DType::kF32) << spec.name;
      });
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t differ = 0, first = a.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << a.size() << " values differ, first at " << first
                        << " (" << a[first] << " against " << b[first] << ")";
}

class Activations16Step : public ::testing::TestWithParam<std::string> {};

TEST_P(Activations16Step, IsTheSameBitForBitAsFp32Activations) {
  REQUIRE_BF16(be);
  const ModelSpec spec = spec_for(GetParam());
  const std::vector<float> with16 = two_steps(spec, *be, true), without = two_steps(spec, *be, false);
  expect_same_bits(with16, without, GetParam());
  // And BF16 math really ran (an FP32 backend's step differs).
  auto fp32 = make_cpu_backend(2);
  EXPECT_NE(two_steps(spec, *fp32, true), without) << "the bf16 path did not run";
}

INSTANTIATE_TEST_SUITE_P(Models, Activations16Step, ::testing::Values("demo", "mnn", "deepesd"));

// Which nodes are 16-bit: MNN's every convolution and the concat up to the head's input; the
// head writes FP32 for the sigmoid and the loss. DeepESD's last conv feeds Flatten (an FP32
// layer): FP32, the two before it BF16. Off, or under FP32 math: nothing.
TEST(Activations16, TheNetStoresBf16BetweenLayersThatTakeIt) {
  REQUIRE_BF16(be);
  Net mnn(spec_for("mnn"), *be);
  for (const char* layer : {"branch2_conv1", "branch9_conv3", "concat", "up1_conv1", "up1_conv3", "up2_conv1"})
    EXPECT_EQ(mnn.activation_dtype(layer), DType::kBf16) << layer;
  EXPECT_EQ(mnn.activation_dtype("head"), DType::kF32);
  EXPECT_EQ(mnn.activation_dtype("head_p_sigmoid"), DType::kF32);
  EXPECT_THROW(mnn.activation_dtype("no_such_layer"), Error);
  Net esd(spec_for("deepesd"), *be);
  EXPECT_EQ(esd.activation_dtype("conv1"), DType::kBf16);
  EXPECT_EQ(esd.activation_dtype("conv2"), DType::kBf16);
  EXPECT_EQ(esd.activation_dtype("conv3"), DType::kF32);
  // 15 branch convolutions, the concat and the 4 upsampling-path convolutions; not the head or sigmoid.
  EXPECT_EQ(mnn.activations16_summary(),
            "activations of 20 of 22 layers stored in bf16 between the layers that read and write it "
            "(DOWNSCALE_ACTIVATIONS16=0: FP32)");
  mnn.set_activations16(false);
  EXPECT_EQ(mnn.activation_dtype("up2_conv1"), DType::kF32);
  // 15 branch convolutions, the concat and the 4 upsampling-path convolutions; not the head or sigmoid.
  EXPECT_EQ(mnn.activations16_summary(), "");
  auto fp32 = make_cpu_backend(1);
  Net plain(spec_for("mnn"), *fp32);
  EXPECT_EQ(plain.activation_dtype("up2_conv1"), DType::kF32);
}

// A backend with 16-bit activations that its narrow convolutions (stride 1, out_c <= 4) cannot
// read, as the CUDA backend's under NHWC activations (its narrow kernels read FP32 NCHW): only
// the Net's planning is asked of it, so no BF16 hardware is needed.
class NarrowConvsRefuse16Bit : public DnnlBackend {
 public:
  NarrowConvsRefuse16Bit() : DnnlBackend(1) {}
  DType activation_dtype() const override { return DType::kBf16; }
  bool conv_activations16(int out_c, int stride) const override { return !(stride == 1 && out_c <= 4); }
};

// There the head (132 -> 3) reads FP32, so up2_conv1 writes FP32; everything before stays 16-bit.
TEST(Activations16, ConvolutionsTheBackendRefusesThemToReadTakeFp32Inputs) {
  NarrowConvsRefuse16Bit be;
  Net mnn(spec_for("mnn"), be);
  for (const char* layer : {"branch2_conv1", "branch9_conv3", "concat", "up1_conv1", "up1_conv3"})
    EXPECT_EQ(mnn.activation_dtype(layer), DType::kBf16) << layer;
  EXPECT_EQ(mnn.activation_dtype("up2_conv1"), DType::kF32);
  EXPECT_EQ(mnn.activation_dtype("head"), DType::kF32);
  EXPECT_EQ(mnn.activations16_summary(),
            "activations of 19 of 22 layers stored in bf16 between the layers that read and write it "
            "(DOWNSCALE_ACTIVATIONS16=0: FP32)");
}

// A backend with NHWC 16-bit activations (the CUDA backend's under DOWNSCALE_CUDA_LAYOUT=nhwc),
// asked of the planning only: an upsample+conv of a factor beyond the fused polyphase tile
// (kMaxPhaseF a side) reads and writes FP32 there, which the CUDA backend would otherwise refuse
// at its first forward; factor 2 (MNN's) stays 16-bit, and in NCHW any factor does.
class Nhwc16Bit : public DnnlBackend {
 public:
  explicit Nhwc16Bit(bool nhwc) : DnnlBackend(1), nhwc_(nhwc) {}
  DType activation_dtype() const override { return DType::kBf16; }
  bool activations16_nhwc() const override { return nhwc_; }

 private:
  bool nhwc_;
};

TEST(Activations16, UpsampleConvBeyondTheNhwcPhaseTileReadsFp32) {
  Nhwc16Bit nhwc(true), nchw(false);
  for (int f : {2, kernels::kMaxPhaseF, kernels::kMaxPhaseF + 1}) {
    UpsampleConv2D up("up", nhwc, f, 3, 8, 3);
    EXPECT_EQ(up.reads_16bit(nhwc), f <= kernels::kMaxPhaseF) << "factor " << f;
    EXPECT_EQ(up.writes_16bit(nhwc), f <= kernels::kMaxPhaseF) << "factor " << f;
    EXPECT_TRUE(up.reads_16bit(nchw)) << "factor " << f;
  }
}

// The saving is exactly half of each 16-bit activation (rounded up per sample): MNN at batch 32 on
// the North America grid (20 x 30 x 53) with BF16 activations against FP32 ones.
TEST(Activations16, HalveTheBf16ActivationsBytes) {
  REQUIRE_BF16(be);
  Net net(test::mnn_spec(20, 30, 53), *be);
  const int n = 32;
  const int64_t with16 = net.activation_bytes(n);
  net.set_activations16(false);
  const int64_t without = net.activation_bytes(n);
  // By hand: the 16-bit outputs' floats per sample (c h w), each kept whole in FP32 and half in BF16.
  int64_t saved_per_sample = 0;
  const auto half = [&](int64_t chw) { saved_per_sample += chw - (chw + 1) / 2; };
  for (int k : {2, 3, 5, 7, 9}) {
    (void)k;
    half(50 * 30 * 53);
    half(25 * 30 * 53);
    half(10 * 30 * 53);
  }
  half(50 * 30 * 53);                        // concat: 5 x 10 channels
  half(50 * 60 * 106);                       // up1_conv1
  half(75 * 60 * 106);                       // up1_conv2
  half(100 * 60 * 106);                      // up1_conv3
  half(int64_t(132) * 120 * 212);            // up2_conv1
  EXPECT_EQ(without - with16, saved_per_sample * n * int64_t(sizeof(float)));
  std::printf("MNN activations and gradients at batch 32: %.0f MiB with BF16 activations, %.0f MiB with FP32\n",
              with16 / 1048576.0, without / 1048576.0);
}

// The mask body against the FP32 one on the widened value, for every 16-bit pattern of both
// types (NaN, infinities, zeros of both signs, subnormals included).
TEST(Activations16, ReluBackward16IsTheFp32MaskOfTheWidenedValue) {
  for (kernels::Half16 k : {kernels::Half16::kBf16, kernels::Half16::kFp16}) {
    for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
      const uint16_t h = uint16_t(bits);
      const float wide = kernels::from_half16(k, h), dy = -2.5f;
      float got = 7.0f, want = 7.0f;
      kernels::relu_backward16_at(0, k, &h, &dy, &got);
      kernels::relu_backward_at(0, &wide, &dy, &want);
      ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "pattern " << bits << (k == kernels::Half16::kBf16 ? " bf16" : " fp16");
    }
  }
}

// The CUDA kernels' bodies for 16-bit activations (DOWNSCALE_CUDA_ACTIVATIONS16), each against the
// FP32 body it generalises, bit for bit, on values with every special case (NaN, infinities,
// zeros of both signs, subnormals, ties): the fused epilogue writing 16 bits is the FP32 epilogue
// rounded (also in place, yh and y one buffer); the output gradient's mask and rounding from a
// 16-bit y is the FP32 body's given the widened y; the zero padding and the strided copy move
// 16-bit values as the FP32 ones move floats.
TEST(Activations16, CudaBodiesAreTheFp32BodiesOnWidenedValues) {
  std::vector<float> v = random_values(4096, 17, -3.0f, 3.0f);
  const float specials[] = {0.0f, -0.0f, std::nanf(""), INFINITY, -INFINITY, 1e-40f, -1e-40f, 6e-8f, 1.00390625f, 65520.0f};
  for (size_t i = 0; i < sizeof specials / sizeof *specials; ++i) v[i * 37] = specials[i];
  const int c = 8;
  const int64_t n = int64_t(v.size()), hw = n / c / 2;  // 2 samples x 8 channels x 256
  const std::vector<float> bias = random_values(c, 18), dy = random_values(v.size(), 19);
  for (kernels::Half16 k : {kernels::Half16::kBf16, kernels::Half16::kFp16}) {
    const char* name = k == kernels::Half16::kBf16 ? "bf16" : "fp16";
    std::vector<uint16_t> yh(v.size());
    for (size_t i = 0; i < v.size(); ++i) yh[i] = kernels::to_half16(k, v[i]);
    for (bool relu : {false, true}) {
      std::vector<float> want(v.size());
      std::vector<uint16_t> got(v.size()), in_place = yh;
      for (int64_t i = 0; i < n; ++i) {
        const int ch = int(i / hw % c);
        kernels::cast_from_half16_bias_relu_at(i, ch, k, yh.data(), bias.data(), relu, want.data());
        kernels::cast_from_half16_bias_relu_at(i, ch, k, yh.data(), bias.data(), relu, got.data());
        kernels::cast_from_half16_bias_relu_at(i, ch, k, in_place.data(), bias.data(), relu, in_place.data());
      }
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[size_t(i)], kernels::to_half16(k, want[size_t(i)])) << name << " epilogue at " << i;
        ASSERT_EQ(in_place[size_t(i)], got[size_t(i)]) << name << " in-place epilogue at " << i;
      }
    }
    std::vector<float> wide(v.size()), g16(v.size()), gw(v.size());
    std::vector<uint16_t> gh16(v.size()), ghw(v.size());
    for (size_t i = 0; i < v.size(); ++i) wide[i] = kernels::from_half16(k, yh[i]);
    for (int64_t i = 0; i < n; ++i) {
      kernels::relu_grad_to_half16_at(i, k, yh.data(), dy.data(), g16.data(), gh16.data());
      kernels::relu_grad_to_half16_at(i, k, wide.data(), dy.data(), gw.data(), ghw.data());
    }
    EXPECT_EQ(0, std::memcmp(g16.data(), gw.data(), g16.size() * sizeof(float))) << name << " masked gradient";
    EXPECT_EQ(gh16, ghw) << name << " masked gradient, rounded";
    // Padding (1 top, 2 left of 16 x 16 planes into 19 x 20) and the concat's strided copy.
    const int h = 16, w = 16, ph = 19, pw = 20, planes = int(n / (h * w));
    std::vector<uint16_t> padded16(size_t(planes) * ph * pw, 0xffffu);
    std::vector<float> paddedf(padded16.size(), std::nanf(""));
    for (int64_t i = 0; i < int64_t(padded16.size()); ++i) {
      kernels::pad_at(i, h, w, 1, 2, ph, pw, yh.data(), padded16.data());
      kernels::pad_at(i, h, w, 1, 2, ph, pw, wide.data(), paddedf.data());
    }
    for (size_t i = 0; i < padded16.size(); ++i) {
      const float back = kernels::from_half16(k, padded16[i]);
      ASSERT_EQ(0, std::memcmp(&back, &paddedf[i], sizeof back)) << name << " padding at " << i;
    }
    std::vector<uint16_t> cat(v.size() * 2, 0xffffu);
    for (int64_t i = 0; i < n; ++i) kernels::strided_block_copy_at(i, n / 2, yh.data(), n / 2, cat.data() + 5, n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(cat[size_t(i / (n / 2) * n + i % (n / 2) + 5)], yh[size_t(i)]) << name << " strided copy at " << i;
  }
}

TEST(Activations16, TensorsRefuseFloatAccessAndPackTwoAFloat) {
  auto be = make_cpu_backend(1);
  Tensor t(*be, Shape{1, 1, 1, 5}, DType::kBf16);
  EXPECT_EQ(t.dtype(), DType::kBf16);
  EXPECT_THROW(t.data(), Error);
  EXPECT_THROW(t.to_host(), Error);
  std::vector<float> host(5, 1.0f);
  EXPECT_THROW(t.upload(host.data()), Error);
  EXPECT_EQ(storage_floats(5, DType::kBf16), 3);
  EXPECT_EQ(storage_floats(5, DType::kF32), 5);
  // Zero-filled: the five 16-bit zeros, in the three floats' storage.
  const auto* bits = reinterpret_cast<const uint16_t*>(t.storage());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bits[i], 0) << i;
  Tensor storage(*be, Shape{1, 1, 1, 3});
  Tensor v = Tensor::view(*be, Shape{1, 1, 1, 6}, storage.data(), DType::kF16);
  EXPECT_EQ(v.storage(), storage.data());
  EXPECT_THROW(v.reshape(Shape{1, 1, 1, 7}), Error) << "a view of 3 floats holds 6 halves, not 7";
}

// A Concat that writes BF16 refuses an input of another type rather than move its bytes.
TEST(Activations16, ConcatRefusesMixedTypes) {
  REQUIRE_BF16(be);
  // Through the layer directly: the Net never plans this, the layer must still not misread it.
  Tensor a(*be, Shape{1, 2, 3, 4}, DType::kBf16), b(*be, Shape{1, 2, 3, 4}), out(*be, Shape{1, 4, 3, 4}, DType::kBf16);
  Concat concat("c");
  EXPECT_THROW(concat.forward(*be, {&a, &b}, out), Error);
  EXPECT_NO_THROW(concat.forward(*be, {&a, &a}, out));
}

}  // namespace
}  // namespace ds::model
