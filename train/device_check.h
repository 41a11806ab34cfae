// The first step of a GPU run checked against the CPU backend (train.device_check). Before
// training, the run's backend computes one training step of the run's model (forward, loss
// gradient, backward) on the run's first batch, from the run's initial weights, and so does the
// CPU backend in plain FP32; every layer's output and every parameter's gradient must agree
// within the precision's tolerance, or the run stops naming the first tensor that does not.
// An error while checking (out of memory for the check's nets, say) says the check was running.
//
// Why: the GPU path is cuDNN plus hand-written kernels chosen per shape by timing (the narrow
// head, the weight gradient by im2col + cuBLAS, the polyphase interleave, the bias gradient,
// 16-bit casts), and the kernels are built for GPUs they have never run on (sm_80, and PTX for
// what comes after sm_90). The CUDA tests check them where someone runs them; a user's job on
// another GPU, driver or cuDNN runs them unchecked. A kernel that computes wrong gradients does
// not crash: the loss goes down more slowly and the run exits 0 with a worse model. One step on
// the CPU costs seconds against the run's minutes to hours, and the check uses the GPU plans
// the run then keeps (a backend's convolution plans are per shape, and the check runs the
// run's batch shape on the run's backend), so what it passes is what trains.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/backend.h"
#include "model/loss.h"
#include "model/net.h"
#include "train/batches.h"

namespace ds {

struct DeviceCheck {
  struct Entry {
    std::string what;   // "tf32: layer 'head' output", "fp32: gradient of head/W", ...
    double error = 0;   // relative L2 difference from the CPU's
    double tolerance = 0;
  };
  std::string what;            // "a training step", "an inference forward"
  std::vector<Entry> entries;  // in order: each step's layer outputs, loss, gradients (backward order)
  int first_bad = -1;          // the first entry over its tolerance; -1 when none
  int worst = -1;              // the entry nearest its tolerance (largest error / tolerance)
  double seconds = 0;
  bool passed() const { return first_bad < 0; }
};

// ||got - ref||_2 / ||ref||_2 over the elements; 0 when both are all zero. A non-finite value in
// got where ref has a finite one (or another non-finite one) is infinitely far; NaN in both, or
// the same infinity in both, adds nothing. Throws on different sizes.
double relative_l2(const std::vector<float>& got, const std::vector<float>& ref);

// The largest relative L2 difference a correct backend may show against the CPU's FP32 step
// under `mode` (device_check.cpp says how each figure was measured and why it holds).
double device_check_tolerance(model::MathMode mode);

// The one-pixel border of each (sample, channel) plane of values shaped s, plane by plane.
std::vector<float> border_ring(const std::vector<float>& values, const model::Shape& s);

// A tensor's values as floats on the host in NCHW order, 16-bit activations widened (and
// reordered from NHWC where the backend stores them so: Backend::activations16_nhwc).
std::vector<float> host_values(const model::Tensor& t);

// One training step of run's model on `be` under the run's math mode `mode`, and, when that is
// not FP32, once more under FP32, each against the CPU backend's FP32 step (`cpu_threads`
// threads), from run's current weights and buffers (copied: run itself is not stepped) on `batch`
// and `mask` (on be), in training mode with dropout seed `seed`. Compares every layer's output in
// forward order (and each one's border), the loss, then every gradient in backward order. The run's
// mode checks the kernels that mode runs, within its rounding; FP32 checks the hand-written FP32
// kernels (narrow head, polyphase interleave, bias gradient, weight gradient by GEMM) and cuDNN's
// FMA algorithms within a tighter tolerance. Plans are per mode, so the FP32 pass may time its
// way to other kernels than the run's mode; the 16-bit-only kernels (fused casts, the 16-bit
// interleave, NHWC tiles) are held to their mode's tolerance, their borders included.
// be's math mode is `mode` again on return.
// loss_scale: the run's (FP16's dynamic scale, else 1), applied to the loss gradient on both
// sides as the run applies it (unscaled, FP16's backward would flush MNN's output gradients of
// about 1e-6 to subnormals); a power of two, so the CPU's FP32 side is scaled exactly. Under FP16,
// gradients that overflow (non-finite) are run again at half the scale, as the trainer's dynamic
// scaling skips such a step and halves, and scaled back before the comparison.
DeviceCheck check_step_against_cpu(model::Net& run, model::Backend& be, model::MathMode mode, const Batch& batch,
                                   const model::Tensor& mask, model::LossKind kind, int cpu_threads, uint64_t seed,
                                   float loss_scale = 1.0f);

// predict's form: an inference forward of x (on be) through run's model, every layer's output
// compared, under `mode` and FP32, against the CPU's. The same tolerances.
DeviceCheck check_forward_against_cpu(model::Net& run, model::Backend& be, model::MathMode mode, const model::Tensor& x,
                                      int cpu_threads);

// Whether train.device_check `setting` (auto | true | false) checks on `be`: true, or auto on a GPU.
bool device_check_applies(const std::string& setting, const model::Backend& be);

// One line: passed or not, the worst tensor, the tolerance, the time.
std::string device_check_line(const DeviceCheck& c, const std::string& backend, const std::string& precision);

}  // namespace ds
