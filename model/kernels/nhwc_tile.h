// The 16-bit NHWC scratch's casts as tiled transposes (DOWNSCALE_CUDA_LAYOUT=nhwc). One sample
// of an NCHW tensor is a (C, HW) matrix and its NHWC form the (HW, C) transpose: the flat casts
// (half_cast.h's cast_to_half16_at with nhwc) walk one side in order and the other with a stride
// of HW or C elements, so a warp touches 32 memory sectors for 32 elements on that side. Here a
// block moves a kTile x kTile tile through shared memory: it reads the tile along the source's
// rows and writes it along the destination's, both in order (NVIDIA's transpose pattern).
//
// Each kernel is two phases over the block's threads (tx 0..kTile-1, ty 0..kTileRows-1; each
// thread takes the rows ty, ty + kTileRows, ...), with a barrier between them: load_* fills the
// tile from the source, store_* writes it to the destination. The tile is t[row][col] with a
// padding column (kTile + 1) so that reading a column hits kTile banks. Tile (c0, p0) of sample
// n covers channels c0..c0+kTile-1 and pixels p0..p0+kTile-1; the edges are cut to C and HW.
// The host tests (tests/model/nhwc_tile_test.cpp) run both phases for every thread and compare
// with the flat bodies, bit for bit: the values go through the same float operations.
#pragma once
#include <cstdint>

#include "model/host_device.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"

namespace ds::model::kernels {

constexpr int kTile = 32, kTileRows = 8;  // a block of kTile x kTileRows threads
using Tile = float[kTile][kTile + 1];

// The tile's place: sample n, first channel c0, first pixel p0 of a tensor of c channels and hw
// pixels per channel. cs: the NHWC side's channel stride (elements a pixel), c or more: with
// DOWNSCALE_CUDA_PAD_CHANNELS the 16-bit operands have their channels rounded up to 8 (the
// caller zeroes channels c..cs-1; the tiles never touch them). The NCHW side is always dense.
struct TileAt {
  int64_t n;
  int c0;
  int64_t p0;
  int c;
  int64_t hw;
  int cs;
};

// The launch geometry (cuda_half16.cu), here so the host tests walk the same grid: blocks
// (x: pixel tiles, y: channel tiles, z: samples, a grid-stride loop over samples beyond the grid's
// 65,535), kTile x kTileRows threads. Block (bx, by) of sample n holds this tile:
// cs 0: dense (c).
DS_HOST_DEVICE inline TileAt tile_at(int c, int64_t hw, int64_t n, unsigned bx, unsigned by, int cs = 0) {
  return {n, int(by) * kTile, int64_t(bx) * kTile, c, hw, cs > 0 ? cs : c};
}
DS_HOST_DEVICE inline unsigned tile_blocks_x(int64_t hw) { return unsigned((hw + kTile - 1) / kTile); }
DS_HOST_DEVICE inline unsigned tile_blocks_y(int c) { return unsigned((c + kTile - 1) / kTile); }
DS_HOST_DEVICE inline unsigned tile_blocks_z(int64_t n) { return unsigned(n < 65535 ? n : 65535); }

// FP32 NCHW -> tile (channel rows, pixel columns): reads along pixels. With y (the ReLU's output)
// the value is the masked gradient [y > 0] dy (relu_grad_to_half16_at's), written to g too when
// g is non-null; without y, x itself.
DS_HOST_DEVICE inline void load_nchw_tile(const TileAt& a, int tx, int ty, const float* x, const float* y, float* g,
                                          Tile t) {
  const int64_t p = a.p0 + tx;
  if (p >= a.hw) return;
  for (int r = ty; r < kTile && a.c0 + r < a.c; r += kTileRows) {
    const int64_t i = (a.n * a.c + a.c0 + r) * a.hw + p;
    float v = x[i];
    if (y) {
      v = y[i] > 0.0f ? v : 0.0f;
      if (g) g[i] = v;
    }
    t[r][tx] = v;
  }
}

// With 16-bit NHWC activations (DOWNSCALE_CUDA_LAYOUT=nhwc and DOWNSCALE_CUDA_ACTIVATIONS16=1)
// the ReLU's output y is itself 16-bit NHWC: a first phase loads its tile into m with
// load_nhwc16_tile (pixel rows, channel columns, reading along channels as y lies), and after a
// barrier this one reads FP32 NCHW x along pixels, masked by m ([y > 0] of the widened y, as
// relu_grad_to_half16_at's 16-bit mask), into the tile and into g when g is non-null. Then
// store_nhwc16_tile as usual: three phases, two barriers.
DS_HOST_DEVICE inline void load_nchw_tile_masked(const TileAt& a, int tx, int ty, const float* x, const Tile m, float* g,
                                                 Tile t) {
  const int64_t p = a.p0 + tx;
  if (p >= a.hw) return;
  for (int r = ty; r < kTile && a.c0 + r < a.c; r += kTileRows) {
    const int64_t i = (a.n * a.c + a.c0 + r) * a.hw + p;
    const float v = m[tx][r] > 0.0f ? x[i] : 0.0f;
    if (g) g[i] = v;
    t[r][tx] = v;
  }
}

// Tile (as load_nchw_tile left it) -> 16-bit NHWC: writes along channels.
DS_HOST_DEVICE inline void store_nhwc16_tile(const TileAt& a, int tx, int ty, Half16 k, const Tile t, uint16_t* xh) {
  if (a.c0 + tx >= a.c) return;
  for (int r = ty; r < kTile && a.p0 + r < a.hw; r += kTileRows)
    xh[(a.n * a.hw + a.p0 + r) * a.cs + a.c0 + tx] = to_half16(k, t[tx][r]);
}

// 16-bit NHWC -> tile (pixel rows, channel columns), widened: reads along channels.
DS_HOST_DEVICE inline void load_nhwc16_tile(const TileAt& a, int tx, int ty, Half16 k, const uint16_t* xh, Tile t) {
  if (a.c0 + tx >= a.c) return;
  for (int r = ty; r < kTile && a.p0 + r < a.hw; r += kTileRows)
    t[r][tx] = from_half16(k, xh[(a.n * a.hw + a.p0 + r) * a.cs + a.c0 + tx]);
}

// Tile (as load_nhwc16_tile left it) -> FP32 NCHW, + b[channel] (b null: none) and the ReLU when
// relu (bias_relu_value: the forward epilogue of cast_from_half16_bias_relu_at): writes along pixels.
DS_HOST_DEVICE inline void store_nchw_tile(const TileAt& a, int tx, int ty, const Tile t, const float* b, bool relu,
                                           float* y) {
  const int64_t p = a.p0 + tx;
  if (p >= a.hw) return;
  for (int r = ty; r < kTile && a.c0 + r < a.c; r += kTileRows) {
    const int ch = a.c0 + r;
    y[(a.n * a.c + ch) * a.hw + p] = bias_relu_value(t[tx][r], b, ch, relu);
  }
}

}  // namespace ds::model::kernels
