// The tiled NHWC transposes of the 16-bit scratch (model/kernels/nhwc_tile.h), run on the host as
// the GPU runs them: for every tile of the grid, every thread's load phase, then (after what is
// the barrier there) every thread's store phase, into a tile poisoned with NaN so an entry no
// load wrote shows up. Each is compared bit for bit with the flat bodies it replaces
// (half_cast.h's cast_to_half16_at / cast_from_half16_at with nhwc, the forward epilogue
// cast_from_half16_bias_relu_at, the ReLU gradient's rounding relu_grad_to_half16_at), on shapes
// whose channels and pixels are not multiples of the tile (3, 50, 33 channels; 1,590 = MNN's
// 30 x 53 pixels, 7) so the cut edges are read and written, and with NaN, +-0, +-inf and a BF16
// tie in the data. Every output starts NaN (FP32) or 0xffff (16-bit): an element no store wrote fails.
// The polyphase path's NHWC interleave and de-interleave (model/kernels/polyphase_nhwc.h) are held
// the same way to the NCHW row-form bodies of polyphase.h, on geometries with several w and r
// tiles, f = 2, 3 and 4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "bitwise_probe.h"
#include "model/kernels/copy.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/nhwc_tile.h"
#include "model/kernels/polyphase.h"
#include "model/kernels/polyphase_nhwc.h"

namespace ds::model::kernels {
namespace {

using test::same_bits;
using test::special_probe;

struct Geo {
  int n, c, h, w;
  int64_t size() const { return int64_t(n) * c * h * w; }
  int64_t hw() const { return int64_t(h) * w; }
};
const Geo kGeos[] = {{2, 3, 4, 5}, {2, 50, 30, 53}, {1, 33, 1, 7}, {3, 32, 8, 4}, {1, 1, 1, 1}};


// The kernels' grid (nhwc_tile.h's tile_blocks_* and tile_at, as cuda_half16.cu launches them),
// each block's two phases in turn.
// cs: the NHWC side's channel stride (0: g.c), as the plans with padded channels launch them.
template <class Load, class Store>
void run_tiles(const Geo& g, Load load, Store store, int cs = 0) {
  for (int64_t n = 0; n < g.n; ++n)
    for (unsigned by = 0; by < tile_blocks_y(g.c); ++by)
      for (unsigned bx = 0; bx < tile_blocks_x(g.hw()); ++bx) {
        const TileAt a = tile_at(g.c, g.hw(), n, bx, by, cs);
        Tile t;
        for (auto& row : t)
          for (float& v : row) v = std::nanf("");
        for (int ty = 0; ty < kTileRows; ++ty)
          for (int tx = 0; tx < kTile; ++tx) load(a, tx, ty, t);
        for (int ty = 0; ty < kTileRows; ++ty)
          for (int tx = 0; tx < kTile; ++tx) store(a, tx, ty, t);
      }
}

TEST(NhwcTile, RoundingIntoNhwcIsTheFlatCast) {
  for (const Geo& g : kGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const std::vector<float> x = special_probe(g.size(), 1);
      std::vector<uint16_t> want(size_t(g.size())), got(size_t(g.size()), 0xffffu);
      for (int64_t i = 0; i < g.size(); ++i) cast_to_half16_at(i, k, g.c, g.h, g.w, true, x.data(), want.data());
      run_tiles(
          g, [&](const TileAt& a, int tx, int ty, Tile t) { load_nchw_tile(a, tx, ty, x.data(), nullptr, nullptr, t); },
          [&](const TileAt& a, int tx, int ty, Tile t) { store_nhwc16_tile(a, tx, ty, k, t, got.data()); });
      for (int64_t i = 0; i < g.size(); ++i)
        ASSERT_EQ(want[size_t(i)], got[size_t(i)]) << "NHWC element " << i << " of " << g.n << "x" << g.c << "x" << g.h
                                                   << "x" << g.w;
    }
}

TEST(NhwcTile, WideningFromNhwcIsTheFlatCastThenBiasThenRelu) {
  for (const Geo& g : kGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const std::vector<float> x = special_probe(g.size(), 2), bias = special_probe(g.c, 3);
      std::vector<uint16_t> xh(size_t(g.size()));
      for (int64_t i = 0; i < g.size(); ++i) cast_to_half16_at(i, k, g.c, g.h, g.w, true, x.data(), xh.data());
      for (const float* b : {bias.data(), static_cast<const float*>(nullptr)})
        for (bool relu : {false, true}) {
          // The flat path: widen into NCHW, then the epilogue of the NCHW fused kernel on it.
          std::vector<float> widened(size_t(g.size())), want(size_t(g.size())),
              got(size_t(g.size()), std::nanf(""));
          for (int64_t i = 0; i < g.size(); ++i)
            cast_from_half16_at(i, k, g.c, g.h, g.w, true, xh.data(), widened.data());
          for (int64_t i = 0; i < g.size(); ++i)
            want[size_t(i)] = bias_relu_value(widened[size_t(i)], b, int(i / g.hw() % g.c), relu);
          run_tiles(
              g, [&](const TileAt& a, int tx, int ty, Tile t) { load_nhwc16_tile(a, tx, ty, k, xh.data(), t); },
              [&](const TileAt& a, int tx, int ty, Tile t) { store_nchw_tile(a, tx, ty, t, b, relu, got.data()); });
          for (int64_t i = 0; i < g.size(); ++i)
            ASSERT_TRUE(same_bits(want[size_t(i)], got[size_t(i)]))
                << "NCHW element " << i << " bias " << (b != nullptr) << " relu " << relu << ": want "
                << want[size_t(i)] << " got " << got[size_t(i)];
        }
    }
}

TEST(NhwcTile, ReluGradientRoundingIntoNhwcIsTheFlatOneTransposed) {
  for (const Geo& g : kGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const std::vector<float> y = special_probe(g.size(), 4), dy = special_probe(g.size(), 5);
      for (const float* mask : {y.data(), static_cast<const float*>(nullptr)})
        for (bool keep_g : {true, false}) {
          if (!mask && keep_g) continue;  // without a ReLU there is no masked copy to keep
          // The flat body writes NCHW; its rounding of element i belongs at i's NHWC offset.
          std::vector<float> g_want(size_t(g.size())), g_got(size_t(g.size()), std::nanf(""));
          std::vector<uint16_t> gh_nchw(size_t(g.size())), gh_got(size_t(g.size()), 0xffffu);
          for (int64_t i = 0; i < g.size(); ++i)
            relu_grad_to_half16_at(i, k, mask, dy.data(), g_want.data(), gh_nchw.data());
          float* g_out = keep_g ? g_got.data() : nullptr;
          run_tiles(
              g, [&](const TileAt& a, int tx, int ty, Tile t) { load_nchw_tile(a, tx, ty, dy.data(), mask, g_out, t); },
              [&](const TileAt& a, int tx, int ty, Tile t) { store_nhwc16_tile(a, tx, ty, k, t, gh_got.data()); });
          for (int64_t i = 0; i < g.size(); ++i) {  // i: the NHWC offset
            const int64_t src = nchw_index_of(i, g.c, g.h, g.w, true);
            ASSERT_EQ(gh_nchw[size_t(src)], gh_got[size_t(i)]) << "NHWC element " << i;
            if (keep_g) {
              ASSERT_TRUE(same_bits(g_want[size_t(src)], g_got[size_t(src)])) << "FP32 element " << src;
            }
          }
          if (!keep_g) {  // nothing was written to a g it was not given
            for (float v : g_got) ASSERT_TRUE(std::isnan(v));
          }
        }
    }
}

// --- 16-bit NHWC activations (the ReLU's output y itself 16-bit NHWC) ---

// Every thread of one block through the three phases of a masked kernel (mask tile m, masked
// load into t, store), each phase for all threads before the next: the kernels' barriers.
template <class At, class M, class T, class Mask, class Load, class Store>
void block_three_phases(const At& a, M& m, T& t, Mask& mask, Load& load, Store& store) {
  for (int ty = 0; ty < kTileRows; ++ty)
    for (int tx = 0; tx < kTile; ++tx) mask(a, tx, ty, m);
  for (int ty = 0; ty < kTileRows; ++ty)
    for (int tx = 0; tx < kTile; ++tx) load(a, tx, ty, m, t);
  for (int ty = 0; ty < kTileRows; ++ty)
    for (int tx = 0; tx < kTile; ++tx) store(a, tx, ty, t);
}

// The three-phase form: the mask tile from y16, then dy masked by it, then the store.
template <class Mask, class Load, class Store>
void run_tiles3(const Geo& g, Mask mask, Load load, Store store) {
  for (int64_t n = 0; n < g.n; ++n)
    for (unsigned by = 0; by < tile_blocks_y(g.c); ++by)
      for (unsigned bx = 0; bx < tile_blocks_x(g.hw()); ++bx) {
        const TileAt a = tile_at(g.c, g.hw(), n, bx, by);
        Tile m, t;
        for (auto* tile : {&m, &t})
          for (auto& row : *tile)
            for (float& v : row) v = std::nanf("");
        block_three_phases(a, m, t, mask, load, store);
      }
}

// The same masked rounding as the flat body on the NCHW 16-bit y, bit for bit: the mask tile is
// read transposed (a wrong index masks other elements, and the probe's zeros, NaN and negative
// values make masks differ from element to element).
TEST(NhwcTile, ReluGradientMaskedByA16BitNhwcOutputIsTheFlatOne) {
  for (const Geo& g : kGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const std::vector<float> y = special_probe(g.size(), 4), dy = special_probe(g.size(), 5);
      std::vector<uint16_t> y_nchw(size_t(g.size())), y_nhwc(size_t(g.size()));
      for (int64_t i = 0; i < g.size(); ++i) {
        cast_to_half16_at(i, k, g.c, g.h, g.w, false, y.data(), y_nchw.data());
        cast_to_half16_at(i, k, g.c, g.h, g.w, true, y.data(), y_nhwc.data());
      }
      for (bool keep_g : {true, false}) {
        std::vector<float> g_want(size_t(g.size())), g_got(size_t(g.size()), std::nanf(""));
        std::vector<uint16_t> gh_nchw(size_t(g.size())), gh_got(size_t(g.size()), 0xffffu);
        for (int64_t i = 0; i < g.size(); ++i)
          relu_grad_to_half16_at(i, k, y_nchw.data(), dy.data(), g_want.data(), gh_nchw.data());
        float* g_out = keep_g ? g_got.data() : nullptr;
        run_tiles3(
            g, [&](const TileAt& a, int tx, int ty, Tile m) { load_nhwc16_tile(a, tx, ty, k, y_nhwc.data(), m); },
            [&](const TileAt& a, int tx, int ty, const Tile m, Tile t) {
              load_nchw_tile_masked(a, tx, ty, dy.data(), m, g_out, t);
            },
            [&](const TileAt& a, int tx, int ty, Tile t) { store_nhwc16_tile(a, tx, ty, k, t, gh_got.data()); });
        for (int64_t i = 0; i < g.size(); ++i) {  // i: the NHWC offset
          const int64_t src = nchw_index_of(i, g.c, g.h, g.w, true);
          ASSERT_EQ(gh_nchw[size_t(src)], gh_got[size_t(i)]) << "NHWC element " << i;
          if (keep_g) {
            ASSERT_TRUE(same_bits(g_want[size_t(src)], g_got[size_t(src)])) << "FP32 element " << src;
          }
        }
        if (!keep_g) {  // nothing was written to a g it was not given
          for (float v : g_got) ASSERT_TRUE(std::isnan(v));
        }
      }
    }
}

// Zero padding of a 16-bit NHWC activation (the asymmetric 'same' of even kernels): the NCHW
// padding's elements, each at its NHWC place, for both element types.
TEST(NhwcTile, PaddingNhwcIsTheNchwPaddingTransposed) {
  for (const Geo& g : kGeos)
    for (const auto& [top, bottom, left, right] : {std::tuple{0, 1, 0, 1}, std::tuple{1, 2, 2, 1}, std::tuple{0, 0, 3, 0}}) {
      const Geo padded{g.n, g.c, g.h + top + bottom, g.w + left + right};
      std::vector<uint16_t> x_nchw(size_t(g.size())), x_nhwc(size_t(g.size()));
      for (int64_t i = 0; i < g.size(); ++i) x_nchw[size_t(i)] = uint16_t(1 + i % 65000);
      for (int64_t i = 0; i < g.size(); ++i) x_nhwc[size_t(i)] = x_nchw[size_t(nchw_index_of(i, g.c, g.h, g.w, true))];
      std::vector<uint16_t> want(size_t(padded.size())), got(size_t(padded.size()), 0xffffu);
      for (int64_t i = 0; i < padded.size(); ++i)
        pad_at(i, g.h, g.w, top, left, padded.h, padded.w, x_nchw.data(), want.data());
      for (int64_t i = 0; i < padded.size(); ++i)
        pad_nhwc_at(i, g.c, g.c, g.h, g.w, top, left, padded.h, padded.w, x_nhwc.data(), got.data());
      for (int64_t i = 0; i < padded.size(); ++i)
        ASSERT_EQ(want[size_t(nchw_index_of(i, padded.c, padded.h, padded.w, true))], got[size_t(i)])
            << "padded NHWC element " << i << " of " << g.n << "x" << g.c << "x" << g.h << "x" << g.w;
    }
}

// --- channels padded to 8 (DOWNSCALE_CUDA_PAD_CHANNELS): the same values at each pixel's first c
// channels, zeros (or, for the tiles, nothing written) in the rest ---

// The channel count rounded up to 8, as CudaBackend::padded_input_channels pads it (9 for 1: a
// stride that is not a multiple of 8 must work as well).
int padded_c(int c) { return c == 1 ? 9 : (c + 7) / 8 * 8 == c ? c + 8 : (c + 7) / 8 * 8; }

// pad_nhwc_at with cs > c: element (pixel, ch) of the padded tensor is the dense padding's
// (pixel, ch) for ch < c and zero beyond, with and without rows and columns of padding too.
TEST(NhwcTile, PaddedChannelsAreZerosBesideTheDensePadding) {
  for (const Geo& g : kGeos)
    for (const auto& [top, bottom, left, right] : {std::tuple{0, 0, 0, 0}, std::tuple{1, 2, 2, 1}}) {
      const int cs = padded_c(g.c);
      const Geo padded{g.n, g.c, g.h + top + bottom, g.w + left + right};
      const int64_t pixels = int64_t(padded.n) * padded.h * padded.w;
      std::vector<uint16_t> x(size_t(g.size()));
      for (int64_t i = 0; i < g.size(); ++i) x[size_t(i)] = uint16_t(1 + i % 65000);  // no zeros
      std::vector<uint16_t> dense(size_t(padded.size()), 0xffffu), got(size_t(pixels * cs), 0xffffu);
      for (int64_t i = 0; i < padded.size(); ++i)
        pad_nhwc_at(i, g.c, g.c, g.h, g.w, top, left, padded.h, padded.w, x.data(), dense.data());
      for (int64_t i = 0; i < pixels * cs; ++i)
        pad_nhwc_at(i, g.c, cs, g.h, g.w, top, left, padded.h, padded.w, x.data(), got.data());
      for (int64_t pix = 0; pix < pixels; ++pix)
        for (int ch = 0; ch < cs; ++ch)
          ASSERT_EQ(ch < g.c ? dense[size_t(pix * g.c + ch)] : uint16_t(0), got[size_t(pix * cs + ch)])
              << "pixel " << pix << " channel " << ch << " of " << cs << ", " << g.n << "x" << g.c << "x" << g.h << "x"
              << g.w << " padded " << top << "/" << bottom << "/" << left << "/" << right;
    }
}

// The transposes with a channel stride cs > c: rounding into NHWC writes each pixel's first c
// channels as the dense cast does and never the others (to_half16 zeroes them first); widening
// reads only those (whatever the others hold: NaN's bits here) and gives the dense result bit for bit.
TEST(NhwcTile, PaddedChannelStrideCastsAreTheDenseOnes) {
  for (const Geo& g : kGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const int cs = padded_c(g.c);
      const int64_t pixels = int64_t(g.n) * g.h * g.w;
      const std::vector<float> x = special_probe(g.size(), 4);
      std::vector<uint16_t> dense(size_t(g.size())), got(size_t(pixels * cs), 0xabcdu);
      for (int64_t i = 0; i < g.size(); ++i) cast_to_half16_at(i, k, g.c, g.h, g.w, true, x.data(), dense.data());
      run_tiles(
          g, [&](const TileAt& a, int tx, int ty, Tile t) { load_nchw_tile(a, tx, ty, x.data(), nullptr, nullptr, t); },
          [&](const TileAt& a, int tx, int ty, Tile t) { store_nhwc16_tile(a, tx, ty, k, t, got.data()); }, cs);
      for (int64_t pix = 0; pix < pixels; ++pix)
        for (int ch = 0; ch < cs; ++ch)
          ASSERT_EQ(ch < g.c ? dense[size_t(pix * g.c + ch)] : uint16_t(0xabcdu), got[size_t(pix * cs + ch)])
              << "pixel " << pix << " channel " << ch << " of " << cs << ", " << g.n << "x" << g.c << "x" << g.h
              << "x" << g.w;
      // Back: the padded buffer with NaN in its extra channels widens to the dense widening.
      std::vector<uint16_t> padded(size_t(pixels * cs), 0x7fc1u);
      for (int64_t pix = 0; pix < pixels; ++pix)
        for (int ch = 0; ch < g.c; ++ch) padded[size_t(pix * cs + ch)] = dense[size_t(pix * g.c + ch)];
      std::vector<float> want(size_t(g.size())), back(size_t(g.size()), std::nanf(""));
      for (int64_t i = 0; i < g.size(); ++i) cast_from_half16_at(i, k, g.c, g.h, g.w, true, dense.data(), want.data());
      run_tiles(
          g, [&](const TileAt& a, int tx, int ty, Tile t) { load_nhwc16_tile(a, tx, ty, k, padded.data(), t); },
          [&](const TileAt& a, int tx, int ty, Tile t) { store_nchw_tile(a, tx, ty, t, nullptr, false, back.data()); },
          cs);
      for (int64_t i = 0; i < g.size(); ++i)
        ASSERT_TRUE(same_bits(want[size_t(i)], back[size_t(i)]))
            << "NCHW element " << i << ": want " << want[size_t(i)] << " got " << back[size_t(i)];
    }
}

// --- the polyphase interleave from / de-interleave into the 16-bit NHWC small grid ---
struct PolyGeo {
  int n, o, f, h, w;
};
const PolyGeo kPolyGeos[] = {{2, 5, 2, 3, 35}, {1, 20, 2, 2, 7}, {2, 4, 3, 2, 5}, {1, 3, 4, 1, 40},
                             {1, 12, 3, 2, 33}, {1, 9, 4, 1, 3}, {1, 1, 2, 1, 1}};

Polyphase poly(const PolyGeo& g) {
  ConvDesc d;
  d.in = Shape{g.n, 3, g.h * g.f, g.w * g.f};
  d.out_c = g.o;
  d.kh = d.kw = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  ConvDesc small;
  return make_polyphase(d, g.f, small);
}

// The kernels' grid (polyphase_nhwc.h's phase_blocks_* and phase_tile_at, as cuda_upsample_conv.cu
// launches them), each block's two phases in turn.
template <class Load, class Store>
void run_phase_tiles(const Polyphase& p, Load load, Store store) {
  for (int64_t z = 0; z < phase_rows(p); ++z)  // the kernels' loop over the small rows
    for (unsigned by = 0; by < phase_blocks_y(p); ++by)
      for (unsigned bx = 0; bx < phase_blocks_x(p); ++bx) {
        const PhaseTileAt a = phase_tile_at(p, bx, by, z);
        PhaseTile t;
        for (float& v : t) v = std::nanf("");
        for (int ty = 0; ty < kTileRows; ++ty)
          for (int tx = 0; tx < kTile; ++tx) load(a, tx, ty, t);
        for (int ty = 0; ty < kTileRows; ++ty)
          for (int tx = 0; tx < kTile; ++tx) store(a, tx, ty, t);
      }
}

// The same with the three phases of the masked de-interleave (a mask tile m, then the masked
// load into t, then the store).
template <class Mask, class Load, class Store>
void run_masked_phase_tiles(const Polyphase& p, Mask mask, Load load, Store store) {
  for (int64_t z = 0; z < phase_rows(p); ++z)
    for (unsigned by = 0; by < phase_blocks_y(p); ++by)
      for (unsigned bx = 0; bx < phase_blocks_x(p); ++bx) {
        const PhaseTileAt a = phase_tile_at(p, bx, by, z);
        PhaseTile m, t;
        for (float& v : m) v = std::nanf("");
        for (float& v : t) v = std::nanf("");
        block_three_phases(a, m, t, mask, load, store);
      }
}

// NCHW offset of the small element at NHWC offset i (channels O * f * f).
int64_t small_nchw_of_nhwc(const Polyphase& p, int64_t i) {
  return nchw_index_of(i, p.o * p.f * p.f, p.h, p.w, true);
}

TEST(NhwcTile, PolyphaseInterleaveFromNhwcIsTheRowFormOne) {
  for (const PolyGeo& g : kPolyGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const Polyphase p = poly(g);
      const int64_t n_small = int64_t(p.n) * p.o * p.f * p.f * p.h * p.w, rows = int64_t(p.n) * p.o * p.f * p.h;
      const std::vector<float> v = special_probe(n_small, 7), bias = special_probe(p.o, 8);
      std::vector<uint16_t> small_nchw(static_cast<size_t>(n_small)), small_nhwc(static_cast<size_t>(n_small));
      for (int64_t i = 0; i < n_small; ++i) small_nchw[size_t(i)] = to_half16(k, v[size_t(i)]);
      for (int64_t i = 0; i < n_small; ++i) small_nhwc[size_t(i)] = small_nchw[size_t(small_nchw_of_nhwc(p, i))];
      for (const float* b : {bias.data(), static_cast<const float*>(nullptr)})
        for (bool relu : {false, true}) {
          std::vector<float> want(size_t(n_small), std::nanf("")), got(size_t(n_small), std::nanf(""));
          for (int64_t r = 0; r < rows; ++r) {
            const PhaseRow row = phase_row(r, p);
            for (int x = 0; x < p.f * p.w; ++x)
              phase_interleave_half16_bias_relu_row_at(r, x, row, p, k, small_nchw.data(), b, relu, want.data());
          }
          run_phase_tiles(
              p, [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) {
                load_phase_nhwc16_tile(a, tx, ty, p, k, small_nhwc.data(), t);
              },
              [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) {
                store_phase_big_tile(a, tx, ty, p, t, b, relu, got.data());
              });
          for (int64_t i = 0; i < n_small; ++i)
            ASSERT_TRUE(same_bits(want[size_t(i)], got[size_t(i)]))
                << "big element " << i << " f " << p.f << " o " << p.o << " bias " << (b != nullptr) << " relu "
                << relu << ": want " << want[size_t(i)] << " got " << got[size_t(i)];
        }
    }
}

TEST(NhwcTile, PolyphaseDeinterleaveIntoNhwcIsTheRowFormOne) {
  for (const PolyGeo& g : kPolyGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const Polyphase p = poly(g);
      const int64_t n = int64_t(p.n) * p.o * p.f * p.f * p.h * p.w, rows = int64_t(p.n) * p.o * p.f * p.h;
      const std::vector<float> y = special_probe(n, 9), dy = special_probe(n, 10);
      for (const float* mask : {y.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> dys_want(size_t(n), std::nanf("")), dys_got(size_t(n), std::nanf(""));
        std::vector<uint16_t> dysh_nchw(size_t(n), 0xffffu), dysh_got(size_t(n), 0xffffu);
        for (int64_t r = 0; r < rows; ++r) {
          const PhaseRow row = phase_row(r, p);
          for (int x = 0; x < p.f * p.w; ++x)
            phase_deinterleave_relu_grad_half16_row_at(r, x, row, p, k, mask, dy.data(), dys_want.data(),
                                                       dysh_nchw.data());
        }
        run_phase_tiles(
            p, [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) {
              load_big_relu_grad_tile(a, tx, ty, p, mask, dy.data(), dys_got.data(), t);
            },
            [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) {
              store_phase_nhwc16_tile(a, tx, ty, p, k, t, dysh_got.data());
            });
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_TRUE(same_bits(dys_want[size_t(i)], dys_got[size_t(i)])) << "FP32 small element " << i << " f " << p.f;
          ASSERT_EQ(dysh_nchw[size_t(small_nchw_of_nhwc(p, i))], dysh_got[size_t(i)])
              << "NHWC small element " << i << " f " << p.f << " o " << p.o;
        }
      }
    }
}

// The phase kernels' grid: at most 65,535 blocks in z, each looping over the small rows z,
// z + grid, ...: every small row of a large batch (2,000 samples of MNN's 60 rows) exactly once.
TEST(NhwcTile, PhaseGridCoversEverySmallRowOnce) {
  for (const int n : {1, 1092, 1093, 2000}) {
    Polyphase p;
    p.n = n, p.h = 60, p.w = 106, p.o = 132, p.f = 2;
    const unsigned grid = phase_blocks_z(p);
    ASSERT_LE(grid, 65535u);
    std::vector<int> seen(size_t(phase_rows(p)), 0);
    for (unsigned bz = 0; bz < grid; ++bz)
      for (int64_t z = bz; z < phase_rows(p); z += grid) {
        const PhaseTileAt a = phase_tile_at(p, 0, 0, z);
        ASSERT_EQ(a.n * p.h + a.h, z);
        ++seen[size_t(z)];
      }
    for (int v : seen) ASSERT_EQ(v, 1) << "batch " << n;
  }
}

// 16-bit NHWC activations: the interleave from the NHWC small output straight onto the 16-bit
// NHWC big output is the row form's 16-bit big output, element by element at its NHWC place.
TEST(NhwcTile, PolyphaseInterleaveNhwcToNhwcIsTheRowFormOne) {
  for (const PolyGeo& g : kPolyGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const Polyphase p = poly(g);
      const int64_t n = int64_t(p.n) * p.o * p.f * p.f * p.h * p.w, rows = int64_t(p.n) * p.o * p.f * p.h;
      const std::vector<float> v = special_probe(n, 7), bias = special_probe(p.o, 8);
      std::vector<uint16_t> small_nchw(static_cast<size_t>(n)), small_nhwc(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) small_nchw[size_t(i)] = to_half16(k, v[size_t(i)]);
      for (int64_t i = 0; i < n; ++i) small_nhwc[size_t(i)] = small_nchw[size_t(small_nchw_of_nhwc(p, i))];
      for (const float* b : {bias.data(), static_cast<const float*>(nullptr)})
        for (bool relu : {false, true}) {
          std::vector<uint16_t> want(size_t(n), 0xffffu), got(size_t(n), 0xffffu);
          for (int64_t r = 0; r < rows; ++r) {
            const PhaseRow row = phase_row(r, p);
            for (int x = 0; x < p.f * p.w; ++x)
              phase_interleave_half16_bias_relu_row_at(r, x, row, p, k, small_nchw.data(), b, relu, want.data());
          }
          for (int64_t i = 0; i < n; ++i)
            phase_interleave_nhwc16_to_nhwc16_at(i, p, k, small_nhwc.data(), b, relu, got.data());
          for (int64_t i = 0; i < n; ++i)  // i: the big NHWC offset
            ASSERT_EQ(want[size_t(nchw_index_of(i, p.o, p.f * p.h, p.f * p.w, true))], got[size_t(i)])
                << "big NHWC element " << i << " f " << p.f << " o " << p.o << " bias " << (b != nullptr) << " relu "
                << relu;
        }
    }
}

// 16-bit NHWC activations: the de-interleave masked by the 16-bit NHWC big output (three phases)
// is the row form masked by the same values laid out NCHW.
TEST(NhwcTile, PolyphaseDeinterleaveMaskedByA16BitNhwcOutputIsTheRowFormOne) {
  for (const PolyGeo& g : kPolyGeos)
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const Polyphase p = poly(g);
      const int64_t n = int64_t(p.n) * p.o * p.f * p.f * p.h * p.w, rows = int64_t(p.n) * p.o * p.f * p.h;
      const std::vector<float> y = special_probe(n, 9), dy = special_probe(n, 10);
      std::vector<uint16_t> y_nchw(static_cast<size_t>(n)), y_nhwc(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) y_nchw[size_t(i)] = to_half16(k, y[size_t(i)]);
      for (int64_t i = 0; i < n; ++i)
        y_nhwc[size_t(i)] = y_nchw[size_t(nchw_index_of(i, p.o, p.f * p.h, p.f * p.w, true))];
      std::vector<float> dys_want(size_t(n), std::nanf("")), dys_got(size_t(n), std::nanf(""));
      std::vector<uint16_t> dysh_nchw(size_t(n), 0xffffu), dysh_got(size_t(n), 0xffffu);
      for (int64_t r = 0; r < rows; ++r) {
        const PhaseRow row = phase_row(r, p);
        for (int x = 0; x < p.f * p.w; ++x)
          phase_deinterleave_relu_grad_half16_row_at(r, x, row, p, k, y_nchw.data(), dy.data(), dys_want.data(),
                                                     dysh_nchw.data());
      }
      run_masked_phase_tiles(
          p, [&](const PhaseTileAt& a, int tx, int ty, PhaseTile m) { load_phase_mask_nhwc16_tile(a, tx, ty, p, k, y_nhwc.data(), m); },
          [&](const PhaseTileAt& a, int tx, int ty, const PhaseTile m, PhaseTile t) {
            load_big_relu_grad_tile_masked(a, tx, ty, p, m, dy.data(), dys_got.data(), t);
          },
          [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) { store_phase_nhwc16_tile(a, tx, ty, p, k, t, dysh_got.data()); });
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(same_bits(dys_want[size_t(i)], dys_got[size_t(i)])) << "FP32 small element " << i << " f " << p.f;
        ASSERT_EQ(dysh_nchw[size_t(small_nchw_of_nhwc(p, i))], dysh_got[size_t(i)])
            << "NHWC small element " << i << " f " << p.f << " o " << p.o;
      }
    }
}

// The F = 2 instances the CUDA kernels run for x2 upsamplings (phase_f: f's divisions as shifts)
// against the run-time-f ones (F = 0, which the tests above hold to the flat bodies), on every
// f = 2 geometry: every index helper at every argument, then every row-form and tile body's whole
// output, bit for bit.
struct PhaseOutputs {
  std::vector<float> row_big, row_half_big, row_dys, row_dys16, row_dys16m, tile_big, tile_dys, masked_dys;
  std::vector<uint16_t> row_big16, row_half_big16, row_dysh, row_dysh16, tile_dysh, masked_dysh, nhwc_big16;
};

template <int F>
PhaseOutputs phase_outputs(const Polyphase& p, Half16 k) {
  const int64_t n = int64_t(p.n) * p.o * p.f * p.f * p.h * p.w, rows = int64_t(p.n) * p.o * p.f * p.h;
  const std::vector<float> v = special_probe(n, 7), bias = special_probe(p.o, 8), y = special_probe(n, 9),
                           dy = special_probe(n, 10);
  std::vector<uint16_t> small16(static_cast<size_t>(n)), y16(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) small16[size_t(i)] = to_half16(k, v[size_t(i)]);
  for (int64_t i = 0; i < n; ++i) y16[size_t(i)] = to_half16(k, y[size_t(i)]);
  const auto floats = [&] { return std::vector<float>(size_t(n), std::nanf("")); };
  const auto halves = [&] { return std::vector<uint16_t>(size_t(n), 0xffffu); };
  PhaseOutputs o{floats(), floats(), floats(), floats(), floats(), floats(), floats(), floats(),
                 halves(), halves(), halves(), halves(), halves(), halves(), halves()};
  for (int64_t r = 0; r < rows; ++r) {
    const PhaseRow row = phase_row<F>(r, p);
    for (int x = 0; x < p.f * p.w; ++x) {
      phase_interleave_bias_relu_row_at<F>(r, x, row, p, v.data(), bias.data(), true, o.row_big.data());
      phase_interleave_bias_relu_row_at<F>(r, x, row, p, v.data(), bias.data(), true, k, o.row_big16.data());
      phase_interleave_half16_bias_relu_row_at<F>(r, x, row, p, k, small16.data(), bias.data(), true,
                                                  o.row_half_big.data());
      phase_interleave_half16_bias_relu_row_at<F>(r, x, row, p, k, small16.data(), bias.data(), false,
                                                  o.row_half_big16.data());
      phase_deinterleave_relu_grad_row_at<F>(r, x, row, p, y.data(), dy.data(), o.row_dys.data());
      phase_deinterleave_relu_grad_half16_row_at<F>(r, x, row, p, k, y.data(), dy.data(), o.row_dys16.data(),
                                                    o.row_dysh.data());
      phase_deinterleave_relu_grad_half16_row_at<F>(r, x, row, p, k, y16.data(), dy.data(), o.row_dys16m.data(),
                                                    o.row_dysh16.data());
    }
  }
  run_phase_tiles(
      p, [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) { load_phase_nhwc16_tile<F>(a, tx, ty, p, k, small16.data(), t); },
      [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) {
        store_phase_big_tile<F>(a, tx, ty, p, t, bias.data(), true, o.tile_big.data());
      });
  run_phase_tiles(
      p, [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) {
        load_big_relu_grad_tile<F>(a, tx, ty, p, y.data(), dy.data(), o.tile_dys.data(), t);
      },
      [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) { store_phase_nhwc16_tile<F>(a, tx, ty, p, k, t, o.tile_dysh.data()); });
  run_masked_phase_tiles(
      p, [&](const PhaseTileAt& a, int tx, int ty, PhaseTile m) { load_phase_mask_nhwc16_tile<F>(a, tx, ty, p, k, y16.data(), m); },
      [&](const PhaseTileAt& a, int tx, int ty, const PhaseTile m, PhaseTile t) {
        load_big_relu_grad_tile_masked<F>(a, tx, ty, p, m, dy.data(), o.masked_dys.data(), t);
      },
      [&](const PhaseTileAt& a, int tx, int ty, PhaseTile t) { store_phase_nhwc16_tile<F>(a, tx, ty, p, k, t, o.masked_dysh.data()); });
  // F = 2 decodes in 32 bits (the kernel's instance below 2^30 elements), the run-time-f one in
  // 64: the comparison of the two covers both index types.
  for (int64_t i = 0; i < n; ++i) {
    if (F == 2)
      phase_interleave_nhwc16_to_nhwc16_at<F, int>(int(i), p, k, small16.data(), bias.data(), true,
                                                   o.nhwc_big16.data());
    else
      phase_interleave_nhwc16_to_nhwc16_at<F>(i, p, k, small16.data(), bias.data(), true, o.nhwc_big16.data());
  }
  return o;
}

TEST(NhwcTile, PhaseF2InstancesAreTheRunTimeFOnes) {
  int geometries = 0;
  for (const PolyGeo& g : kPolyGeos) {
    const Polyphase p = poly(g);
    if (p.f != 2) continue;
    ++geometries;
    const int64_t rows = int64_t(p.n) * p.o * p.f * p.h;
    for (int64_t r = 0; r < rows; ++r) {
      const PhaseRow a = phase_row<0>(r, p), b = phase_row<2>(r, p);
      ASSERT_EQ(a.base, b.base) << "row " << r;
      ASSERT_EQ(a.oc, b.oc) << "row " << r;
      for (int x = 0; x < p.f * p.w; ++x) ASSERT_EQ(phase_source_in_row<0>(a, x, p), phase_source_in_row<2>(a, x, p));
    }
    for (int64_t n = 0; n < p.n; ++n)
      for (int h = 0; h < p.h; ++h)
        for (int r = 0; r < p.o * p.f; ++r)
          for (int w = 0; w < p.w; ++w)
            for (int px = 0; px < p.f; ++px) {
              ASSERT_EQ((big_index<0>(p, n, h, r, w, px)), (big_index<2>(p, n, h, r, w, px)));
              ASSERT_EQ((big_nhwc_index<0>(p, n, h, r, w, px)), (big_nhwc_index<2>(p, n, h, r, w, px)));
              ASSERT_EQ((small_nhwc_index<0>(p, n, h, w, int64_t(r) * p.f + px)),
                        (small_nhwc_index<2>(p, n, h, w, int64_t(r) * p.f + px)));
            }
    for (Half16 k : {Half16::kBf16, Half16::kFp16}) {
      const PhaseOutputs want = phase_outputs<0>(p, k), got = phase_outputs<2>(p, k);
      const std::pair<const std::vector<float>*, const std::vector<float>*> fl[] = {
          {&want.row_big, &got.row_big},         {&want.row_half_big, &got.row_half_big},
          {&want.row_dys, &got.row_dys},         {&want.row_dys16, &got.row_dys16},
          {&want.row_dys16m, &got.row_dys16m},   {&want.tile_big, &got.tile_big},
          {&want.tile_dys, &got.tile_dys},       {&want.masked_dys, &got.masked_dys}};
      for (size_t o = 0; o < std::size(fl); ++o)
        for (size_t i = 0; i < fl[o].first->size(); ++i)
          ASSERT_TRUE(same_bits((*fl[o].first)[i], (*fl[o].second)[i])) << "FP32 output " << o << " element " << i;
      EXPECT_EQ(want.row_big16, got.row_big16);
      EXPECT_EQ(want.row_half_big16, got.row_half_big16);
      EXPECT_EQ(want.row_dysh, got.row_dysh);
      EXPECT_EQ(want.row_dysh16, got.row_dysh16);
      EXPECT_EQ(want.tile_dysh, got.tile_dysh);
      EXPECT_EQ(want.masked_dysh, got.masked_dysh);
      EXPECT_EQ(want.nhwc_big16, got.nhwc_big16);
      // Every output was written (no NaN or 0xffff left where the run-time-f bodies wrote).
      EXPECT_TRUE(std::none_of(got.tile_big.begin(), got.tile_big.end(), [](float e) { return std::isnan(e); }) ||
                  std::any_of(want.tile_big.begin(), want.tile_big.end(), [](float e) { return std::isnan(e); }));
    }
  }
  EXPECT_EQ(geometries, 3) << "the f = 2 geometries of kPolyGeos";
}

}  // namespace
}  // namespace ds::model::kernels
