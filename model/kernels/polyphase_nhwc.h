// The polyphase path's two big-grid passes when the small convolution's 16-bit scratch is NHWC
// (DOWNSCALE_CUDA_LAYOUT=nhwc, the fused casts on): the interleave widens the small output
// straight from NHWC, and the de-interleave writes the rounded gradient straight into NHWC, as
// polyphase.h's *_half16_row_at bodies do for NCHW (bit for bit the same values).
//
// For one small row (sample n, row h) the NHWC small output is a (W, R * f) matrix, R = O * f
// rows of the big grid (r = oc * f + py) and f phases px each; the big grid holds, for each r,
// the row big[n, oc, f * h + py, :] of f * W columns (w * f + px). So the interleave is a
// transpose of (w, r) with the f phases riding along: a block moves a tile of kTile w by kTile
// r (by f phases) through shared memory, reading along (r, px) and writing along (w, px), both
// in order, as nhwc_tile.h does for the plain casts. The tile holds (w - w0, (r - r0) * f + px)
// at phase_tile_index.
// Each kernel is two phases of every thread (tx 0..kTile-1, ty 0..kTileRows-1) around a barrier;
// tests/model/nhwc_tile_test.cpp runs them on the host against the row-form bodies. Each body
// takes F as polyphase.h's row bodies do (phase_f: F = 2 makes f's divisions shifts).
#pragma once
#include <cstdint>

#include "model/host_device.h"
#include "model/kernels/elementwise.h"
#include "model/kernels/half_cast.h"
#include "model/kernels/nhwc_tile.h"
#include "model/kernels/polyphase.h"

namespace ds::model::kernels {

// The tile: kTile rows (w) of kTile * f columns ((r, px)), each row (kTile + 1) * f floats apart:
// that stride is f modulo 32 banks, so both phases' warps (columns in order; or rows, f columns
// at a time) touch 32 different banks. Larger f than kMaxPhaseF: the unfused path.
constexpr int kMaxPhaseF = 4;
using PhaseTile = float[kTile * (kTile + 1) * kMaxPhaseF];
DS_HOST_DEVICE inline int phase_tile_index(int wl, int col, int f) { return wl * (kTile + 1) * f + col; }

// The tile's place: small row (n, h), first column w0, first big row index r0 (of R = O * f).
struct PhaseTileAt {
  int64_t n;
  int h, w0, r0;
};

// The launch geometry (cuda_upsample_conv.cu), here so the host tests walk the same grid: blocks
// (x: w tiles, y: big-row tiles, z: the small rows z = n * H + h, a grid-stride loop over them
// beyond the grid's 65,535: a batch of over 1,092 at MNN's 60 rows), kTile x kTileRows threads.
// Block (bx, by) at small row z holds this tile:
DS_HOST_DEVICE inline PhaseTileAt phase_tile_at(const Polyphase& p, unsigned bx, unsigned by, int64_t z) {
  return {z / p.h, int(z % p.h), int(bx) * kTile, int(by) * kTile};
}
DS_HOST_DEVICE inline int64_t phase_rows(const Polyphase& p) { return int64_t(p.n) * p.h; }
DS_HOST_DEVICE inline unsigned phase_blocks_x(const Polyphase& p) { return unsigned((p.w + kTile - 1) / kTile); }
DS_HOST_DEVICE inline unsigned phase_blocks_y(const Polyphase& p) { return unsigned((p.o * p.f + kTile - 1) / kTile); }
DS_HOST_DEVICE inline unsigned phase_blocks_z(const Polyphase& p) {
  return unsigned(phase_rows(p) < 65535 ? phase_rows(p) : 65535);
}

// NHWC index of small channel ch at (n, h, w); the small output has O * f * f channels.
template <int F = 0>
DS_HOST_DEVICE inline int64_t small_nhwc_index(const Polyphase& p, int64_t n, int h, int w, int64_t ch) {
  const int f = phase_f<F>(p);
  return ((n * p.h + h) * p.w + w) * (int64_t(p.o) * f * f) + ch;
}

// Big NCHW index of row r = oc * f + py of small row (n, h), column w * f + px.
template <int F = 0>
DS_HOST_DEVICE inline int64_t big_index(const Polyphase& p, int64_t n, int h, int r, int w, int px) {
  const int f = phase_f<F>(p);
  const int oc = r / f, py = r % f;
  return ((n * p.o + oc) * f * p.h + int64_t(f) * h + py) * int64_t(f) * p.w + int64_t(w) * f + px;
}

// Big NHWC index of row r = oc * f + py of small row (n, h), column w * f + px: the big output
// as a 16-bit NHWC activation (DOWNSCALE_CUDA_LAYOUT=nhwc with DOWNSCALE_CUDA_ACTIVATIONS16=1).
template <int F = 0>
DS_HOST_DEVICE inline int64_t big_nhwc_index(const Polyphase& p, int64_t n, int h, int r, int w, int px) {
  const int f = phase_f<F>(p);
  const int oc = r / f, py = r % f;
  return ((n * f * p.h + int64_t(f) * h + py) * int64_t(f) * p.w + int64_t(w) * f + px) * p.o + oc;
}

// 16-bit NHWC activations, forward: small element i (NHWC, read in order) onto the big 16-bit
// NHWC output with + b[oc] and the ReLU, rounded: no transpose between the two layouts, only the
// f x f phases of each small pixel spread over f x f big pixels. The value of polyphase.h's
// phase_interleave_half16_bias_relu_row_at with a 16-bit big output. I: the index type the
// element's decode divides in, int where the small output has fewer than 2^30 elements (the
// kernel's choice; MNN's up1_conv1: 10 M), int64_t beyond: four 64-bit divisions an element cost
// about as much as its memory traffic.
template <int F = 0, typename I = int64_t>
DS_HOST_DEVICE inline void phase_interleave_nhwc16_to_nhwc16_at(I i, const Polyphase& p, Half16 k,
                                                                const uint16_t* small, const float* b, bool relu,
                                                                uint16_t* big) {
  const int f = phase_f<F>(p);
  const int ff = f * f;
  const I channels = I(p.o) * ff, pix = i / channels;
  const int ch = int(i % channels), w = int(pix % p.w), h = int(pix / p.w % p.h);
  const int64_t n = int64_t(pix / (I(p.w) * p.h));
  const int oc = ch / ff, py = ch / f % f, px = ch % f;
  big[big_nhwc_index<F>(p, n, h, oc * f + py, w, px)] =
      to_half16(k, bias_relu_value(from_half16(k, small[i]), b, oc, relu));
}

// Forward, phase 1: the 16-bit NHWC small output, widened, into the tile (reads along (r, px)).
// Small channel r * f + px is phase_channel(oc, py, px) for r = oc * f + py.
template <int F = 0>
DS_HOST_DEVICE inline void load_phase_nhwc16_tile(const PhaseTileAt& a, int tx, int ty, const Polyphase& p, Half16 k,
                                                  const uint16_t* small, PhaseTile t) {
  const int f = phase_f<F>(p);
  const int span = kTile * f, rows = p.o * f;
  for (int wl = ty; wl < kTile && a.w0 + wl < p.w; wl += kTileRows)
    for (int j = tx; j < span && a.r0 + j / f < rows; j += kTile)
      t[phase_tile_index(wl, j, f)] =
          from_half16(k, small[small_nhwc_index<F>(p, a.n, a.h, a.w0 + wl, int64_t(a.r0) * f + j)]);
}

// Forward, phase 2: the tile onto the big FP32 NCHW grid with + b[oc] and the ReLU (writes
// along (w, px)): polyphase.h's phase_interleave_half16_bias_relu_row_at's value.
template <int F = 0>
DS_HOST_DEVICE inline void store_phase_big_tile(const PhaseTileAt& a, int tx, int ty, const Polyphase& p,
                                                const PhaseTile t, const float* b, bool relu, float* big) {
  const int f = phase_f<F>(p);
  const int span = kTile * f, rows = p.o * f;
  for (int rl = ty; rl < kTile && a.r0 + rl < rows; rl += kTileRows) {
    const int r = a.r0 + rl;
    for (int j = tx; j < span && a.w0 + j / f < p.w; j += kTile) {
      const int wl = j / f, px = j % f;
      big[big_index<F>(p, a.n, a.h, r, a.w0 + wl, px)] =
          bias_relu_value(t[phase_tile_index(wl, rl * f + px, f)], b, r / f, relu);
    }
  }
}

// Backward, phase 1: the big output gradient masked by the ReLU (keep(i, at): whether big
// element i, at tile entry at, passes) into the tile and into the FP32 NCHW small gradient dys
// (the bias gradient's and the narrow passes' input), reading dy along (w, px).
template <int F = 0, class Keep>
DS_HOST_DEVICE inline void load_big_grad_tile(const PhaseTileAt& a, int tx, int ty, const Polyphase& p, Keep keep,
                                              const float* dy, float* dys, PhaseTile t) {
  const int f = phase_f<F>(p);
  const int span = kTile * f, rows = p.o * f;
  const int64_t channels = int64_t(p.o) * f * f;
  for (int rl = ty; rl < kTile && a.r0 + rl < rows; rl += kTileRows) {
    const int r = a.r0 + rl;
    for (int j = tx; j < span && a.w0 + j / f < p.w; j += kTile) {
      const int wl = j / f, px = j % f, at = phase_tile_index(wl, rl * f + px, f);
      const int64_t i = big_index<F>(p, a.n, a.h, r, a.w0 + wl, px);
      const float v = keep(i, at) ? dy[i] : 0.0f;
      dys[((a.n * channels + int64_t(r) * f + px) * p.h + a.h) * p.w + a.w0 + wl] = v;
      t[at] = v;
    }
  }
}

// The mask [y > 0] of the FP32 NCHW big output y, read along (w, px) with dy (y null: none).
struct KeepWhereYPositive {
  const float* y;
  DS_HOST_DEVICE bool operator()(int64_t i, int) const { return !y || y[i] > 0.0f; }
};

template <int F = 0>
DS_HOST_DEVICE inline void load_big_relu_grad_tile(const PhaseTileAt& a, int tx, int ty, const Polyphase& p,
                                                   const float* y, const float* dy, float* dys, PhaseTile t) {
  load_big_grad_tile<F>(a, tx, ty, p, KeepWhereYPositive{y}, dy, dys, t);
}

// 16-bit NHWC activations, backward: the ReLU's output y is the 16-bit NHWC big output. Phase 0
// loads it, widened, into a second tile m at the entries phase 1 fills, reading as phase 2
// writes (along (r, px), each pixel's channels oc in order); after a barrier phase 1 is
// load_big_relu_grad_tile with the mask [m > 0] (relu_grad's 16-bit mask), then phase 2 as before.
template <int F = 0>
DS_HOST_DEVICE inline void load_phase_mask_nhwc16_tile(const PhaseTileAt& a, int tx, int ty, const Polyphase& p, Half16 k,
                                                       const uint16_t* y, PhaseTile m) {
  const int f = phase_f<F>(p);
  const int span = kTile * f, rows = p.o * f;
  for (int wl = ty; wl < kTile && a.w0 + wl < p.w; wl += kTileRows)
    for (int j = tx; j < span && a.r0 + j / f < rows; j += kTile)
      m[phase_tile_index(wl, j, f)] = from_half16(k, y[big_nhwc_index<F>(p, a.n, a.h, a.r0 + j / f, a.w0 + wl, j % f)]);
}

// The mask from the tile phase 0 loaded (the same entry as the value's).
struct KeepWhereTilePositive {
  const float* m;
  DS_HOST_DEVICE bool operator()(int64_t, int at) const { return m[at] > 0.0f; }
};

template <int F = 0>
DS_HOST_DEVICE inline void load_big_relu_grad_tile_masked(const PhaseTileAt& a, int tx, int ty, const Polyphase& p,
                                                          const PhaseTile m, const float* dy, float* dys, PhaseTile t) {
  load_big_grad_tile<F>(a, tx, ty, p, KeepWhereTilePositive{m}, dy, dys, t);
}

// Backward, phase 2: the tile rounded into the 16-bit NHWC small gradient (writes along (r, px)).
template <int F = 0>
DS_HOST_DEVICE inline void store_phase_nhwc16_tile(const PhaseTileAt& a, int tx, int ty, const Polyphase& p, Half16 k,
                                                   const PhaseTile t, uint16_t* dysh) {
  const int f = phase_f<F>(p);
  const int span = kTile * f, rows = p.o * f;
  for (int wl = ty; wl < kTile && a.w0 + wl < p.w; wl += kTileRows)
    for (int j = tx; j < span && a.r0 + j / f < rows; j += kTile)
      dysh[small_nhwc_index<F>(p, a.n, a.h, a.w0 + wl, int64_t(a.r0) * f + j)] =
          to_half16(k, t[phase_tile_index(wl, j, f)]);
}

}  // namespace ds::model::kernels
