// Lanes: the layers the Net marks as independent (MNN's five branches, 15 small convolutions that
// on one stream took 6.4 ms of a 27.8 ms TF32 step on an H100, each too small to fill the GPU)
// queued on streams of their own, so their kernels can run side by side: N streams besides the
// main one (lane k > 0 goes to stream (k - 1) % N + 1), DOWNSCALE_CUDA_LANES=N, 5 by default (one
// per branch; measured faster on an H200), 0 for everything on the main stream.
//
// Deferred weight passes (DOWNSCALE_CUDA_DEFER_WEIGHTS=1, BF16's default since it ran on
// an H200, 2026-11-30: the BF16 step 1938 samples/s with it against 1797): MNN's backward is a serial chain (head, the four decoder
// convolutions: 10.6 of an 18.6 ms BF16 step on an H200) then the five branches, whose small
// kernels leave much of the GPU idle (their BF16 weight gradients ran at 0.5 TFLOP/s). The weight
// and bias gradients of the chain's layers (about 4 ms in BF16) are on nobody's critical path
// until the optimizer: queued on one more lane, each after an event recorded on the main stream
// when its inputs are ready, they can run while the chain goes on and beside the branches; the
// region's join (join_lanes) waits for them, and the Net holds those layers' hooks until then.
// The cache holds releases from the first deferred pass to the join, as in a region.
//
// What each lane needs of its own: a stream, a cuDNN handle on it, a cuBLAS handle (made on its
// first use: a handle's workspace must not serve two streams at once), and the grow-only scratch
// buffers every op on one stream could share (the convolution workspace, the padding copy). The
// backend's members stream_, cudnn_, cublas_, ws_, ws_bytes_, pad_ and pad_n_ are the current lane's;
// switch_lane stores them and loads another's, so every op queues on the current lane unchanged.
// Ordering: fork_lanes records an event on the main stream that each lane waits on at its first
// use; join_lanes makes the main stream wait on an event recorded on each lane used. Memory: a
// block released between fork and join may still be read by its lane when another lane asks for
// memory, so the caching allocator holds such releases until the join (hold_releases).
#include <cstdio>
#include <string>

#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"

namespace ds::model {

namespace {
// The device's stream priorities {least, greatest} (lower numbers are higher priorities), or the
// default's {0, 0} where they cannot be read.
std::pair<int, int> priority_range() {
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) {
    cudaGetLastError();
    return {0, 0};
  }
  return {least, greatest};
}
}  // namespace

int CudaBackend::compute_priority() {
  const auto [least, greatest] = priority_range();
  return greatest < least - 1 ? least - 1 : least;
}

void CudaBackend::switch_lane(int to) {
  if (to == cur_lane_) return;
  if (lanes_.empty()) lanes_.resize(size_t(n_lanes_) + 2);  // the lanes, then the weights lane
  Lane& from = lanes_[size_t(cur_lane_)];
  from.stream = stream_;
  from.cudnn = cudnn_;
  from.cublas = cublas_;
  from.ws = ws_;
  from.ws_bytes = ws_bytes_;
  from.pad = pad_;
  from.pad_n = pad_n_;
  Lane& l = lanes_[size_t(to)];
  if (!l.stream || !l.cudnn) {  // first use: made once, kept until the backend ends
    // The weights lane at the least priority: its passes (only the optimizer needs them) fill
    // the SMs the critical chain leaves idle rather than delay it; every other lane at the main
    // stream's (compute_priority).
    if (!l.stream)
      DS_CUDA(cudaStreamCreateWithPriority(&l.stream, cudaStreamNonBlocking,
                                           to == weights_lane() ? priority_range().first : compute_priority()));
    if (!l.cudnn) {
      cudnnHandle_t h = nullptr;
      DS_CUDNN(cudnnCreate(&h));
      l.cudnn = h;
    }
    DS_CUDNN(cudnnSetStream(l.cudnn, l.stream));
  }
  stream_ = l.stream;
  cudnn_ = l.cudnn;
  cublas_ = l.cublas;  // null until the lane's first cuBLAS call makes one on its stream
  ws_ = l.ws;
  ws_bytes_ = l.ws_bytes;
  pad_ = l.pad;
  pad_n_ = l.pad_n;
  cur_lane_ = to;
}

void CudaBackend::fork_lanes() {
  if (n_lanes_ == 0) return;
  if (forked_) throw Error("internal: fork_lanes twice without join_lanes");
  if (cur_lane_ != 0) switch_lane(0);
  if (!fork_event_) DS_CUDA(cudaEventCreateWithFlags(&fork_event_, cudaEventDisableTiming));
  DS_CUDA(cudaEventRecord(fork_event_, stream_));
  // Not the weights lane: passes deferred before the fork are still to be joined.
  for (size_t k = 0; k < lanes_.size(); ++k)
    if (int(k) != weights_lane()) lanes_[k].used = false;
  cache_.hold_releases(true);
  forked_ = true;
}

void CudaBackend::set_lane(int lane) {
  if (n_lanes_ == 0 || !forked_) return;
  const int to = lane <= 0 ? 0 : (lane - 1) % n_lanes_ + 1;
  switch_lane(to);
  Lane& l = lanes_[size_t(to)];
  if (to != 0 && !l.used) {
    DS_CUDA(cudaStreamWaitEvent(stream_, fork_event_, 0));
    l.used = true;
  }
}

void CudaBackend::join_lanes() {
  if (n_lanes_ == 0 || (!forked_ && !weights_pending_)) return;
  try {
    switch_lane(0);
    for (size_t k = 1; k < lanes_.size(); ++k) {
      Lane& l = lanes_[k];
      if (!l.used) continue;
      if (!l.done) DS_CUDA(cudaEventCreateWithFlags(&l.done, cudaEventDisableTiming));
      DS_CUDA(cudaEventRecord(l.done, l.stream));
      DS_CUDA(cudaStreamWaitEvent(stream_, l.done, 0));
      l.used = false;
    }
  } catch (...) {
    // A CUDA error mid-join: wait for everything instead (best effort), so the state below is
    // true, then report.
    cudaDeviceSynchronize();
    forked_ = weights_pending_ = false;
    defer_on_ = false;  // nothing deferred after a failed join: the Net's guard may not get to say so
    cache_.hold_releases(false);
    throw;
  }
  forked_ = weights_pending_ = false;
  // Everything the lanes released is now ordered before the main stream's later work.
  cache_.hold_releases(false);
}

bool CudaBackend::defer_weight_passes(bool on) {
  if (!on) {
    if (weights_pending_) join_lanes();  // the Net joins first; this is the safety net
    defer_on_ = false;
    return false;
  }
  defer_on_ = defer_weights_ && n_lanes_ > 0 && !forked_;
  return defer_on_;
}

void CudaBackend::weight_pass(const std::function<void()>& pass) {
  if (!deferring()) return pass();
  if (!defer_said_) {  // once per math mode (set_math resets it), an info line as conv_note's
    defer_said_ = true;
    if (plugin_info_shown())
      std::fprintf(stderr, "cuda: weight gradients deferred to a stream of their own until the lane region's join "
                           "(DOWNSCALE_CUDA_DEFER_WEIGHTS=1)\n");
  }
  if (!defer_event_) DS_CUDA(cudaEventCreateWithFlags(&defer_event_, cudaEventDisableTiming));
  // The pass's inputs are ready once the main stream's work so far is done: a wait captures the
  // event as recorded now, so recording it again for the next pass is safe.
  DS_CUDA(cudaEventRecord(defer_event_, stream_));
  if (!weights_pending_) cache_.hold_releases(true);
  weights_pending_ = true;  // from here on concurrent(): the pass's timings wait for the device
  switch_lane(weights_lane());
  lanes_[size_t(weights_lane())].used = true;
  try {
    DS_CUDA(cudaStreamWaitEvent(stream_, defer_event_, 0));
    pass();
  } catch (...) {
    switch_lane(0);
    throw;
  }
  switch_lane(0);
}

// At the backend's end (no throwing): every lane's work finished, its handle and stream gone, and
// the main stream's state back in the members. Their scratch blocks belong to the cache.
void CudaBackend::destroy_lanes() {
  if (lanes_.empty()) return;
  if (cur_lane_ != 0) {
    try {
      switch_lane(0);  // lane 0 exists: nothing is created, the members come back
    } catch (...) {
    }
  }
  for (size_t k = 1; k < lanes_.size(); ++k) {
    Lane& l = lanes_[k];
    if (l.stream) cudaStreamSynchronize(l.stream);
    if (l.cudnn) cudnnDestroy(l.cudnn);
    if (l.cublas) cublasDestroy(l.cublas);
    if (l.done) cudaEventDestroy(l.done);
    if (l.stream) cudaStreamDestroy(l.stream);
  }
  lanes_.clear();
  if (fork_event_) cudaEventDestroy(fork_event_);
  fork_event_ = nullptr;
  if (defer_event_) cudaEventDestroy(defer_event_);
  defer_event_ = nullptr;
  forked_ = weights_pending_ = defer_on_ = false;
  cache_.hold_releases(false);
}

}  // namespace ds::model
