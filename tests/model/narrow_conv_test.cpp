// The narrow convolution's bodies (model/kernels/narrow_conv.h: out_c <= 4, stride 1, the CUDA
// backend's fast path for MNN's head) run on the CPU as the GPU kernels run them (every index;
// the weight and bias partials through the warp's shuffle tree, then the chunks in order),
// against the CPU backend's conv2d_forward / backward_data / backward_weights.
//
// Tolerance: 1e-5 of the largest magnitude of the reference. Both sides are FP32 sums in
// different orders of at most C * kh * kw = 288 products (forward), O * kh * kw (data gradient)
// or N * OH * OW = 1,200 products (weight gradient) of values in [-1, 1]: rounding grows like
// sqrt(terms) * 6e-8 relative to the sum's magnitude, ~2e-6 at most; an index mistake (a wrong
// tap, padding side or chunk) is O(1) off.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "conv_reference.h"
#include "model/kernels/narrow_conv.h"
#include "model_test_util.h"

namespace ds::model {
namespace {

using test::random_values;
namespace k = kernels;

using test::expect_close;

// The three passes as cuda_narrow_conv.cu launches them, one "thread" at a time.
template <int O>
struct NarrowHost {
  const k::NarrowConv& g;

  std::vector<float> pack(const std::vector<float>& w) const {
    std::vector<float> wp(size_t(k::narrow_packed_weights(g)));
    for (int64_t i = 0; i < int64_t(wp.size()); ++i) k::narrow_pack_weights_at(i, g, w.data(), wp.data());
    return wp;
  }
  template <typename X>
  void forward(const X* x, const float* w, const float* b, float* y) const {
    const auto wp = pack(std::vector<float>(w, w + int64_t(g.o) * g.c * g.kh * g.kw));
    if (g.window) {
      for (int64_t t = 0; t < int64_t(g.n) * k::narrow_strips(g) * g.ow; ++t)
        k::narrow_conv_forward_window_at<O>(t, g, x, wp.data(), b, y);
      return;
    }
    for (int64_t p = 0; p < int64_t(g.n) * g.oh * g.ow; ++p) k::narrow_conv_forward_at<O>(p, g, x, wp.data(), b, y);
  }
  void backward_data(const float* dy, const float* w, float* dx) const {
    const auto wp = pack(std::vector<float>(w, w + int64_t(g.o) * g.c * g.kh * g.kw));
    if (g.window) {
      for (int64_t t = 0; t < int64_t(g.n) * g.groups * k::narrow_input_strips(g) * g.w; ++t)
        k::narrow_conv_backward_data_window_at<O>(t, g, dy, wp.data(), dx);
      return;
    }
    for (int64_t t = 0; t < int64_t(g.n) * g.groups * g.h * g.w; ++t)
      k::narrow_conv_backward_data_at<O>(t, g, dy, wp.data(), dx);
  }
  template <typename X>
  void backward_weights(const X* x, const float* dy, float* dw, float* db) const {
    // The window path's partials (64 slots) or the per-tap path's (8 channels x 4 outputs).
    const int slots = g.window ? k::kNarrowWindowSlots : k::kNarrowChannelGroup * k::kNarrowConvMaxOut;
    std::vector<float> partial(size_t(k::narrow_weight_partials(g)), std::nanf(""));
    const int64_t warps = k::narrow_weight_warps(g);
    ASSERT_EQ(int64_t(partial.size()), warps * slots);
    std::vector<float> lanes(size_t(k::kNarrowLanes) * slots), v(k::kNarrowLanes);
    for (int64_t u = 0; u < warps; ++u) {
      for (int l = 0; l < k::kNarrowLanes; ++l) {
        float* acc = &lanes[size_t(l) * slots];
        const int64_t t = u * k::kNarrowLanes + l;
        if (g.window)
          k::narrow_conv_weight_window_lane<O>(t, g, x, dy, acc);
        else
          k::narrow_conv_weight_lane<O>(t, g, x, dy, acc);
      }
      for (int s = 0; s < slots; ++s) {
        // The window kernel writes only the slots of real taps and output channels; the others
        // stay NaN here, so a finish that read one would fail.
        if (g.window && !k::narrow_window_slot_used(s, g)) continue;
        for (int l = 0; l < k::kNarrowLanes; ++l) v[l] = lanes[size_t(l) * slots + s];
        partial[size_t(u * slots + s)] = k::narrow_lane_tree_sum(v.data());
      }
    }
    for (int64_t i = 0; i < int64_t(g.o) * g.c * g.kh * g.kw; ++i) {
      if (g.window)
        k::narrow_conv_weight_window_finish_at(i, g, partial.data(), dw);
      else
        k::narrow_conv_weight_finish_at(i, g, partial.data(), dw);
    }
    std::vector<float> bias_partial(size_t(k::narrow_bias_partials(g)));
    std::vector<float> acc(size_t(k::kNarrowLanes) * k::kNarrowConvMaxOut);
    for (int64_t chunk = 0; chunk < g.bias_chunks; ++chunk) {
      for (int l = 0; l < k::kNarrowLanes; ++l)
        k::narrow_conv_bias_lane<O>(chunk * k::kNarrowLanes + l, g, dy, &acc[size_t(l) * k::kNarrowConvMaxOut]);
      for (int oc = 0; oc < k::kNarrowConvMaxOut; ++oc) {
        for (int l = 0; l < k::kNarrowLanes; ++l) v[l] = acc[size_t(l) * k::kNarrowConvMaxOut + oc];
        bias_partial[size_t(chunk * k::kNarrowConvMaxOut + oc)] = k::narrow_lane_tree_sum(v.data());
      }
    }
    for (int oc = 0; oc < g.o; ++oc) k::narrow_conv_bias_finish_at(oc, g, bias_partial.data(), db);
  }
};

struct Case {
  const char* name;
  int n, c, h, w, o, kh, kw, pt, pb, pl, pr;
  ConvDesc desc() const { return test::conv_desc({n, c, h, w}, o, kh, kw, 1, pt, pb, pl, pr); }
};

class NarrowConvBodies : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> cpu_ = make_cpu_backend(1);

  template <int O>
  void check(const Case& cs, const k::NarrowConv& g, const std::string& what) {
    const ConvDesc d = cs.desc();
    const Shape os = d.out(), ws{cs.o, cs.c, cs.kh, cs.kw}, bs{1, cs.o, 1, 1};
    ASSERT_EQ(g.oh, os.h) << what;
    ASSERT_EQ(g.ow, os.w) << what;
    Tensor x = test::random_tensor(*cpu_, d.in, 1), w = test::random_tensor(*cpu_, ws, 2);
    Tensor b = test::random_tensor(*cpu_, bs, 3), dy = test::random_tensor(*cpu_, os, 4);
    const NarrowHost<O> host{g};

    Tensor y(*cpu_, os);
    cpu_->conv2d_forward(d, x.data(), w.data(), b.data(), y.data());
    // NaN-filled outputs: a pixel a body never writes fails the comparison.
    std::vector<float> got(size_t(os.size()), std::nanf(""));
    host.forward(x.to_host().data(), w.to_host().data(), b.to_host().data(), got.data());
    expect_close(y.to_host(), got, 1e-5, what + " forward");
    host.forward(x.to_host().data(), w.to_host().data(), nullptr, got.data());
    cpu_->conv2d_forward(d, x.data(), w.data(), nullptr, y.data());
    expect_close(y.to_host(), got, 1e-5, what + " forward without bias");

    Tensor dx(*cpu_, d.in);
    cpu_->conv2d_backward_data(d, dy.data(), w.data(), dx.data());
    got.assign(size_t(d.in.size()), std::nanf(""));
    host.backward_data(dy.to_host().data(), w.to_host().data(), got.data());
    expect_close(dx.to_host(), got, 1e-5, what + " backward data");

    Tensor dw(*cpu_, ws), db(*cpu_, bs);
    cpu_->conv2d_backward_weights(d, x.data(), dy.data(), dw.data(), db.data());
    got.assign(size_t(ws.size()), std::nanf(""));
    std::vector<float> got_db(size_t(cs.o), std::nanf(""));
    host.backward_weights(x.to_host().data(), dy.to_host().data(), got.data(), got_db.data());
    expect_close(dw.to_host(), got, 1e-5, what + " backward weights");
    expect_close(db.to_host(), got_db, 1e-5, what + " backward bias");

    // A 16-bit activation input (DOWNSCALE_CUDA_ACTIVATIONS16), widened as the bodies load it: the
    // same floats, bit for bit, as the FP32 bodies on the widened x.
    for (k::Half16 h : {k::Half16::kBf16, k::Half16::kFp16}) {
      k::NarrowConv g16 = g;
      g16.xk = h;
      const NarrowHost<O> host16{g16};
      const std::vector<float> xv = x.to_host();
      std::vector<uint16_t> xh(xv.size());
      std::vector<float> xw(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) xh[i] = k::to_half16(h, xv[i]), xw[i] = k::from_half16(h, xh[i]);
      const std::string w16 = what + (h == k::Half16::kBf16 ? ", bf16 x" : ", fp16 x");
      std::vector<float> y16(size_t(os.size()), std::nanf("")), yw(y16.size(), std::nanf(""));
      host16.forward(xh.data(), w.to_host().data(), b.to_host().data(), y16.data());
      host.forward(xw.data(), w.to_host().data(), b.to_host().data(), yw.data());
      EXPECT_EQ(0, std::memcmp(y16.data(), yw.data(), y16.size() * sizeof(float))) << w16 << " forward";
      std::vector<float> dw16(size_t(ws.size()), std::nanf("")), dww(dw16.size(), std::nanf(""));
      std::vector<float> db16(size_t(cs.o)), dbw(size_t(cs.o));
      host16.backward_weights(xh.data(), dy.to_host().data(), dw16.data(), db16.data());
      host.backward_weights(xw.data(), dy.to_host().data(), dww.data(), dbw.data());
      EXPECT_EQ(0, std::memcmp(dw16.data(), dww.data(), dw16.size() * sizeof(float))) << w16 << " backward weights";
    }
  }

  void check_case(const Case& cs) {
    const ConvDesc d = cs.desc();
    ASSERT_TRUE(k::narrow_conv_applies(d)) << cs.name;
    const k::NarrowConv g = k::make_narrow_conv(d);
    // Small shapes get one row per chunk from make_narrow_conv; also run 3-row chunks with a
    // ragged last one, as the head's real shape has (62-row chunks).
    k::NarrowConv g3 = g;
    g3.chunk_rows = 3;
    g3.chunks = (g.n * g.oh + 2) / 3;
    // Kernels up to 4x4 take the window path for all three passes; run the per-pixel and per-tap
    // paths on them too (they stay the paths of larger kernels).
    g3.window = false;
    for (const auto& [geometry, tag] : {std::pair{g, ""}, std::pair{g3, ", 3-row chunks, per-pixel forward and data, per-tap weight gradient"}}) {
      const std::string what = std::string(cs.name) + " out_c " + std::to_string(cs.o) + tag;
      switch (cs.o) {
        case 1: check<1>(cs, geometry, what); break;
        case 2: check<2>(cs, geometry, what); break;
        case 3: check<3>(cs, geometry, what); break;
        default: check<4>(cs, geometry, what); break;
      }
    }
  }
};

TEST_F(NarrowConvBodies, MatchCpuBackend) {
  // Channel counts not a multiple of the 8-channel group (a partial last group); widths above 32
  // (lanes take two columns); the head's 4x4 'valid', odd and even 'same' (Keras puts the even
  // kernel's extra padding at the bottom/right), a 1x7.
  const Case cases[] = {
      {"4x4 valid (the head)", 2, 18, 12, 37, 3, 4, 4, 0, 0, 0, 0},
      {"4x4 valid (the head)", 2, 18, 12, 37, 1, 4, 4, 0, 0, 0, 0},
      {"3x3 same", 3, 5, 9, 11, 4, 3, 3, 1, 1, 1, 1},
      {"3x3 same", 3, 5, 9, 11, 3, 3, 3, 1, 1, 1, 1},
      {"2x2 same", 2, 9, 7, 8, 3, 2, 2, 0, 1, 0, 1},
      {"2x2 same", 2, 9, 7, 8, 4, 2, 2, 0, 1, 0, 1},
      {"1x7 same", 2, 4, 6, 10, 1, 1, 7, 0, 0, 3, 3},
      {"5x3 pads 2,0,1,1", 2, 3, 8, 6, 2, 5, 3, 2, 0, 1, 1},
      // Window path with kh != kw (unused leading window rows, unused columns) and padding.
      {"4x2 pads 1,2,0,1", 2, 5, 9, 40, 3, 4, 2, 1, 2, 0, 1},
      {"1x3 same", 2, 6, 5, 35, 2, 1, 3, 0, 0, 1, 1},
      {"4x4 same (pads 1,2,1,2)", 2, 10, 9, 35, 3, 4, 4, 1, 2, 1, 2},
  };
  for (const Case& cs : cases) check_case(cs);
}

// The window rows' fast path (a row wholly inside x, kw = kNarrowWindow: no per-element tests)
// loads what the element-by-element form does, bit for bit, for every row and column a window
// body asks, inside and around x, FP32 and 16-bit x, 'valid' and padded, kw 4 and 3 (the latter
// never takes the fast path); and the head's shape takes it for every row and column inside.
TEST(NarrowConvWindowRow, FastPathLoadsTheTestedValues) {
  for (const auto& [kw, pl, pr] : {std::tuple{4, 0, 0}, std::tuple{4, 1, 2}, std::tuple{3, 1, 1}}) {
    const Case cs{"window row", 1, 1, 5, 37, 3, 4, kw, 1, 2, pl, pr};
    const k::NarrowConv g = k::make_narrow_conv(cs.desc());
    std::vector<float> x(size_t(cs.h) * cs.w);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f + float(i);
    std::vector<uint16_t> xh(x.size());
    for (size_t i = 0; i < x.size(); ++i) xh[i] = k::to_half16(k::Half16::kBf16, x[i]);
    k::NarrowConv g16 = g;
    g16.xk = k::Half16::kBf16;
    int fast = 0;
    for (int r = -4; r < cs.h + 4; ++r)
      for (int j = 0; j < cs.w + 4; ++j) {
        float want[k::kNarrowWindow], got[k::kNarrowWindow], want16[k::kNarrowWindow], got16[k::kNarrowWindow];
        k::narrow_window_row_tested(x.data(), g, r, j, want);
        k::narrow_window_row(x.data(), g, r, j, got);
        k::narrow_window_row_tested(xh.data(), g16, r, j, want16);
        k::narrow_window_row(xh.data(), g16, r, j, got16);
        ASSERT_EQ(0, std::memcmp(want, got, sizeof want)) << "kw " << kw << " row " << r << " column " << j;
        ASSERT_EQ(0, std::memcmp(want16, got16, sizeof want16)) << "bf16, kw " << kw << " row " << r << " column " << j;
        fast += r >= 0 && r < cs.h && kw == k::kNarrowWindow && j - pl >= 0 && j - pl + k::kNarrowWindow <= cs.w;
      }
    if (kw == k::kNarrowWindow) EXPECT_GT(fast, 0) << "kw " << kw << ": no row took the fast path";
  }
}

// The head's real shape (batch 32, 132 -> 3 channels at 120 x 212, 4x4 'valid'): the chunking
// depends on the shape only (the same summation order on every GPU), gives about
// kNarrowTargetWarps warps, and covers every row exactly once.
TEST_F(NarrowConvBodies, HeadChunking) {
  ConvDesc d;
  d.in = Shape{32, 132, 120, 212};
  d.out_c = 3;
  d.kh = d.kw = 4;
  ASSERT_TRUE(k::narrow_conv_applies(d));
  const k::NarrowConv g = k::make_narrow_conv(d);
  EXPECT_EQ(g.oh, 117);
  EXPECT_EQ(g.ow, 209);
  EXPECT_EQ(g.groups, 17);
  const int64_t rows = int64_t(g.n) * g.oh;
  EXPECT_GE(int64_t(g.chunks) * g.chunk_rows, rows);
  EXPECT_LT(int64_t(g.chunks - 1) * g.chunk_rows, rows);
  const int64_t warps = int64_t(g.chunks) * g.groups * g.kh * g.kw;  // the per-tap path's
  EXPECT_GE(warps, k::kNarrowTargetWarps / 2);
  EXPECT_LE(warps, k::kNarrowTargetWarps * 2);
  EXPECT_EQ(int64_t(g.bias_chunks) * k::kNarrowBiasChunkRows >= rows, true);
  // The weight gradient by sliding window: 32 x 132 x 7 column blocks = 29,568 warps (about 3.5
  // waves of an H100's 132 SMs x 64 warps), 7.6 MB of partials.
  EXPECT_TRUE(g.window);
  EXPECT_EQ(g.col_blocks, 7);
  EXPECT_EQ(k::narrow_weight_warps(g), 29568);
  EXPECT_EQ(k::narrow_weight_partials(g), 29568 * k::kNarrowWindowSlots);
  // Shared-memory packed weights: 132 x 16 taps x 4 floats = 33 KB, under the 48 KB default.
  EXPECT_EQ(k::narrow_packed_weights(g) * 4, 33792);

  ConvDesc strided = d;
  strided.stride = 2;
  EXPECT_FALSE(k::narrow_conv_applies(strided));
  ConvDesc wide = d;
  wide.out_c = k::kNarrowConvMaxOut + 1;
  EXPECT_FALSE(k::narrow_conv_applies(wide));
}

// The host tree is the GPU's shuffle-down order: pairs at distance 16, 8, 4, 2, 1.
TEST(NarrowConvTree, SumsAllLanesInTreeOrder) {
  std::vector<float> v(k::kNarrowLanes);
  for (int l = 0; l < k::kNarrowLanes; ++l) v[l] = float(l + 1);
  EXPECT_EQ(k::narrow_lane_tree_sum(v.data()), 528.0f);
  // Lanes 0, 8, 16 = 2^24, -2^24, 1: left to right the two cancel first and the sum is 1; the
  // tree adds lane 16 to lane 0 first, where the 1 is lost to rounding (ties to even).
  std::vector<float> w(k::kNarrowLanes, 0.0f);
  w[0] = 16777216.0f;
  w[16] = 1.0f;
  w[8] = -16777216.0f;
  EXPECT_EQ(k::narrow_lane_tree_sum(w.data()), 0.0f);
}

// The shared-weight grids run as one wave: capped at the blocks resident at once, never more than
// kNarrowBlocksPerSm per SM, at least one per SM.
TEST(NarrowConvGrid, CapsAtTheBlocksResidentAtOnce) {
  // MNN's head on an H100: 6 blocks of 34 KB per SM, 132 SMs; a fixed 8 per SM gave 1056 (two waves).
  EXPECT_EQ(k::narrow_shared_grid(4000, 132, 6), 792);
  EXPECT_EQ(k::narrow_shared_grid(4000, 132, 16), 132 * k::kNarrowBlocksPerSm);
  EXPECT_EQ(k::narrow_shared_grid(4000, 132, 0), 132);
  EXPECT_EQ(k::narrow_shared_grid(100, 132, 6), 100);  // small passes keep one block per 256 threads
}

}  // namespace
}  // namespace ds::model
