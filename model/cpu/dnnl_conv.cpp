// DnnlBackend's convolutions.
//
// Layouts: oneDNN chooses every operand's memory layout (format_tag::any). On AVX2 it picks
// nChw8c activations and 8i8o-blocked weights, on AVX-512 16c/16i16o, for which its direct JIT
// kernels run much faster than on plain NCHW/OIHW (bench/README.md has the figures). Tensors stay
// NCHW and weights OIHW at the Backend interface, so each call reorders its operands into the
// chosen layouts and its result back, with reorder primitives built once per geometry and the
// blocked copies in workspaces shared by every layer (ops run one at a time). The reorders are
// memory-bound passes over data the convolution reads dozens of times, a few percent of its time;
// weights are reordered on every call because the optimizer updates them in place in OIHW, and
// at a few MB per layer (5 MB for MNN's largest) that costs less than tracking when they changed.
//
// BF16 (set_math(kBf16)): the operands a convolution multiplies (forward: src, weights; backward
// data: diff_dst, weights; backward weights: src, diff_dst) are bfloat16 in the primitive's
// layout, and what it writes (dst, diff_src, diff_weights, diff_bias) is FP32, accumulated in
// FP32. The reorders above do the f32 -> bf16 conversion along with the blocking, so the
// Backend's FP32 buffers are untouched and the conversion costs no extra pass.
// 16-bit activations (ConvDesc::x16/y16, activation_dtype() bf16 under BF16 math): x is already
// bfloat16 (its reorder only blocks it) and the forward writes y as bfloat16, rounded once by the
// primitive after bias and ReLU; the gradients stay FP32. Rounding relu(acc + b) when it is
// written, or when the next convolution's reorder reads it, gives the same bits (both round to
// nearest even), so a step is the same with and without 16-bit activations (Model tests).
// Blocked activations (ConvDesc::x_block/y_block, Net's plan): x and dx, or y and dy, already sit
// in nChw{b}c, the layout oneDNN's direct kernels take, and the primitives are built for exactly
// that layout, so those operands need no reorder at all; only the weights still do.
#include <cstdlib>
#include <cstring>

#include "io/error.h"
#include "model/cpu/dnnl_backend.h"
#include "model/cpu/dnnl_util.h"

namespace ds::model {

using dnnl_util::act_tag;
using dnnl_util::mut;
using dnnl_util::nchw;

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

// The layout oneDNN may choose for an operand: any, or plain when asked. `user` is the plain tag.
memory::desc chosen(const memory::dims& dims, dt type, tag user, bool plain) {
  return memory::desc(dims, type, plain ? user : tag::any);
}


dnnl::primitive_attr user_scratchpad() {
  // The scratchpad comes from our shared workspace rather than a per-primitive allocation.
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

}  // namespace

// One operand of one primitive: our plain layout and the one the primitive chose, with the
// reorders between them (absent when they are the same, e.g. the bias).
struct DnnlBackend::ConvOperand {
  memory::desc user, prim;
  std::unique_ptr<dnnl::reorder> to_prim, to_user;
  ConvOperand() = default;
  ConvOperand(const dnnl::engine& e, const memory::desc& u, const memory::desc& p) : user(u), prim(p) {
    if (u == p) return;
    to_prim = std::make_unique<dnnl::reorder>(dnnl::reorder::primitive_desc(e, u, e, p));
    to_user = std::make_unique<dnnl::reorder>(dnnl::reorder::primitive_desc(e, p, e, u));
  }
};

struct DnnlBackend::ConvPrims {
  // What oneDNN may choose from (any, or plain: plain_layouts_), for the operands the
  // primitives read (`in`: bf16 under BF16 math) and those they write (`out`: always f32).
  memory::desc src_in, wei_in, dst_in, src_out, wei_out, dst_out;
  memory::desc dst_fwd;        // the forward's dst: dst_out, or bf16 for a 16-bit activation
  memory::desc src_grad_user, dst_grad_user;  // plain FP32 dx and dy
  memory::desc bias;           // plain (x): every implementation takes it as is
  memory::dims strides, pad_l, pad_r;
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  ConvOperand fwd_src, fwd_wei, fwd_dst;
  // Forward with the ReLU as a oneDNN post-op (conv2d_relu_forward): built the first time a
  // Conv2D+ReLU layer runs; its own operands, since it may pick other layouts.
  std::unique_ptr<dnnl::convolution_forward::primitive_desc> fwd_relu_pd;
  std::unique_ptr<dnnl::convolution_forward> fwd_relu;
  ConvOperand fr_src, fr_wei, fr_dst;
  // Built the first time they are needed (the network's first convs never need backward-data).
  std::unique_ptr<dnnl::convolution_backward_data::primitive_desc> bwd_data_pd;
  std::unique_ptr<dnnl::convolution_backward_data> bwd_data;
  ConvOperand bd_ddst, bd_wei, bd_dsrc;
  std::unique_ptr<dnnl::convolution_backward_weights::primitive_desc> bwd_w_pd;
  std::unique_ptr<dnnl::convolution_backward_weights> bwd_w;
  ConvOperand bw_src, bw_ddst, bw_dwei;
};

DnnlBackend::ConvPrims& DnnlBackend::conv_prims(const ConvDesc& d) {
  if ((d.x16 || d.y16) && !bf16_)
    throw Error("cpu backend: a 16-bit activation reached a convolution outside BF16 math");
  expect_block(d.x_block, "a convolution's input");
  expect_block(d.y_block, "a convolution's output");
  ConvKey key{d.in.n, d.in.c, d.in.h, d.in.w, d.out_c, d.kh, d.kw, d.stride,
              d.pad_top, d.pad_bottom, d.pad_left, d.pad_right, bf16_, d.x16, d.y16, d.x_block, d.y_block};
  auto it = conv_cache_.find(key);
  if (it != conv_cache_.end()) return *it->second;

  const Shape o = d.out();
  auto p = std::make_shared<ConvPrims>();
  const memory::dims src{d.in.n, d.in.c, d.in.h, d.in.w}, wei{d.out_c, d.in.c, d.kh, d.kw}, dst{o.n, o.c, o.h, o.w};
  const bool plain = plain_layouts_;
  const dt in = bf16_ ? dt::bf16 : dt::f32;
  // A blocked side is pinned to its block (the tensors are already so); a plain one may be any.
  const auto side = [&](const memory::dims& dims, dt type, int block) {
    return block ? memory::desc(dims, type, act_tag(block)) : chosen(dims, type, tag::nchw, plain);
  };
  p->src_in = side(src, in, d.x_block);
  p->wei_in = chosen(wei, in, tag::oihw, plain);
  p->dst_in = side(dst, in, d.y_block);
  p->src_out = side(src, dt::f32, d.x_block);
  p->wei_out = chosen(wei, dt::f32, tag::oihw, plain);
  p->dst_out = side(dst, dt::f32, d.y_block);
  p->dst_fwd = side(dst, d.y16 ? dt::bf16 : dt::f32, d.y_block);
  p->bias = memory::desc({d.out_c}, dt::f32, tag::x);
  p->strides = {d.stride, d.stride};
  // Explicit per-side padding is what lets oneDNN do Keras' asymmetric 'same' directly.
  p->pad_l = {d.pad_top, d.pad_left};
  p->pad_r = {d.pad_bottom, d.pad_right};
  dnnl::convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, p->src_in,
                                     p->wei_in, p->bias, p->dst_fwd, p->strides, p->pad_l, p->pad_r);
  p->fwd_pd = dnnl::convolution_forward::primitive_desc(fd, user_scratchpad(), engine_);
  p->fwd = dnnl::convolution_forward(p->fwd_pd);
  p->fwd_src = ConvOperand(engine_, memory::desc(src, d.x16 ? dt::bf16 : dt::f32, act_tag(d.x_block)),
                           p->fwd_pd.src_desc());
  p->fwd_wei = ConvOperand(engine_, memory::desc(wei, dt::f32, tag::oihw), p->fwd_pd.weights_desc());
  p->fwd_dst = ConvOperand(engine_, memory::desc(dst, d.y16 ? dt::bf16 : dt::f32, act_tag(d.y_block)),
                           p->fwd_pd.dst_desc());
  // The gradients' own layouts (their activation's block): FP32 whatever the activations are.
  p->src_grad_user = memory::desc(src, dt::f32, act_tag(d.x_block));
  p->dst_grad_user = memory::desc(dst, dt::f32, act_tag(d.y_block));
  auto& ref = *p;
  conv_cache_.emplace(key, std::move(p));
  return ref;
}

dnnl::memory DnnlBackend::conv_in(const ConvOperand& op, const float* user, HostBuffer& ws) {
  memory u(op.user, engine_, mut(user));
  if (!op.to_prim) return u;
  memory m(op.prim, engine_, ws.reserve(op.prim.get_size()));
  op.to_prim->execute(stream_, u, m);
  return m;
}

dnnl::memory DnnlBackend::conv_out(const ConvOperand& op, float* user, HostBuffer& ws) {
  if (!op.to_prim) return memory(op.user, engine_, user);
  return memory(op.prim, engine_, ws.reserve(op.prim.get_size()));
}

void DnnlBackend::conv_out_done(const ConvOperand& op, dnnl::memory m, float* user) {
  if (!op.to_user) return;
  memory u(op.user, engine_, user);
  op.to_user->execute(stream_, m, u);
}

dnnl::memory DnnlBackend::scratchpad(const memory::desc& md) {
  return memory(md, engine_, conv_ws_[kScratch].reserve(md.get_size()));
}

void DnnlBackend::conv2d_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  ConvPrims& p = conv_prims(d);
  run_conv_forward(d, p, p.fwd_pd, p.fwd, p.fwd_src, p.fwd_wei, p.fwd_dst, x, w, b, y);
}

// The ReLU applied by the convolution as it writes its output: one pass over the (large) output
// less than a convolution followed by a separate eltwise primitive.
void DnnlBackend::conv2d_relu_forward(const ConvDesc& d, const float* x, const float* w, const float* b, float* y) {
  ConvPrims& p = conv_prims(d);
  if (!p.fwd_relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr = user_scratchpad();
    attr.set_post_ops(ops);
    dnnl::convolution_forward::desc fd(prop_kind::forward_training, algorithm::convolution_direct, p.src_in, p.wei_in,
                                       p.bias, p.dst_fwd, p.strides, p.pad_l, p.pad_r);
    p.fwd_relu_pd = std::make_unique<dnnl::convolution_forward::primitive_desc>(fd, attr, engine_);
    p.fwd_relu = std::make_unique<dnnl::convolution_forward>(*p.fwd_relu_pd);
    p.fr_src = ConvOperand(engine_, p.fwd_src.user, p.fwd_relu_pd->src_desc());
    p.fr_wei = ConvOperand(engine_, p.fwd_wei.user, p.fwd_relu_pd->weights_desc());
    p.fr_dst = ConvOperand(engine_, p.fwd_dst.user, p.fwd_relu_pd->dst_desc());
  }
  run_conv_forward(d, p, *p.fwd_relu_pd, *p.fwd_relu, p.fr_src, p.fr_wei, p.fr_dst, x, w, b, y);
}

void DnnlBackend::run_conv_forward(const ConvDesc& d, const ConvPrims& p,
                                   const dnnl::convolution_forward::primitive_desc& pd,
                                   const dnnl::convolution_forward& fwd, const ConvOperand& src_op,
                                   const ConvOperand& wei_op, const ConvOperand& dst_op, const float* x,
                                   const float* w, const float* b, float* y) {
  if (!b) {  // no bias: a zero one (a few floats) rather than a second primitive
    float* z = static_cast<float*>(conv_ws_[kBias].reserve(size_t(d.out_c) * sizeof(float)));
    std::memset(z, 0, size_t(d.out_c) * sizeof(float));
    b = z;
  }
  memory src = conv_in(src_op, x, conv_ws_[kA]), wei = conv_in(wei_op, w, conv_ws_[kB]);
  memory dst = conv_out(dst_op, y, conv_ws_[kC]);
  fwd.execute(stream_, {{DNNL_ARG_SRC, src},
                        {DNNL_ARG_WEIGHTS, wei},
                        {DNNL_ARG_BIAS, memory(p.bias, engine_, mut(b))},
                        {DNNL_ARG_DST, dst},
                        {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}});
  conv_out_done(dst_op, dst, y);
  stream_.wait();
}

void DnnlBackend::conv2d_backward_data(const ConvDesc& d, const float* dy, const float* w, float* dx) {
  ConvPrims& p = conv_prims(d);
  if (!p.bwd_data) {
    dnnl::convolution_backward_data::desc bd(algorithm::convolution_direct, p.src_out, p.wei_in, p.dst_in, p.strides,
                                             p.pad_l, p.pad_r);
    p.bwd_data_pd = std::make_unique<dnnl::convolution_backward_data::primitive_desc>(bd, user_scratchpad(), engine_,
                                                                                      p.fwd_pd);
    p.bwd_data = std::make_unique<dnnl::convolution_backward_data>(*p.bwd_data_pd);
    p.bd_ddst = ConvOperand(engine_, p.dst_grad_user, p.bwd_data_pd->diff_dst_desc());
    p.bd_wei = ConvOperand(engine_, p.fwd_wei.user, p.bwd_data_pd->weights_desc());
    p.bd_dsrc = ConvOperand(engine_, p.src_grad_user, p.bwd_data_pd->diff_src_desc());
  }
  memory ddst = conv_in(p.bd_ddst, dy, conv_ws_[kA]), wei = conv_in(p.bd_wei, w, conv_ws_[kB]);
  memory dsrc = conv_out(p.bd_dsrc, dx, conv_ws_[kC]);
  p.bwd_data->execute(stream_, {{DNNL_ARG_DIFF_DST, ddst},
                                {DNNL_ARG_WEIGHTS, wei},
                                {DNNL_ARG_DIFF_SRC, dsrc},
                                {DNNL_ARG_SCRATCHPAD, scratchpad(p.bwd_data_pd->scratchpad_desc())}});
  conv_out_done(p.bd_dsrc, dsrc, dx);
  stream_.wait();
}

void DnnlBackend::conv2d_backward_weights(const ConvDesc& d, const float* x, const float* dy, float* dw, float* db) {
  ConvPrims& p = conv_prims(d);
  if (!p.bwd_w) {
    dnnl::convolution_backward_weights::desc wd(algorithm::convolution_direct, p.src_in, p.wei_out, p.bias,
                                                p.dst_in, p.strides, p.pad_l, p.pad_r);
    p.bwd_w_pd = std::make_unique<dnnl::convolution_backward_weights::primitive_desc>(wd, user_scratchpad(), engine_,
                                                                                      p.fwd_pd);
    p.bwd_w = std::make_unique<dnnl::convolution_backward_weights>(*p.bwd_w_pd);
    p.bw_src = ConvOperand(engine_, p.fwd_src.user, p.bwd_w_pd->src_desc());
    p.bw_ddst = ConvOperand(engine_, p.dst_grad_user, p.bwd_w_pd->diff_dst_desc());
    p.bw_dwei = ConvOperand(engine_, p.fwd_wei.user, p.bwd_w_pd->diff_weights_desc());
  }
  // No bias gradient wanted: it goes to a workspace and is dropped.
  if (!db) db = static_cast<float*>(conv_ws_[kBias].reserve(size_t(d.out_c) * sizeof(float)));
  memory src = conv_in(p.bw_src, x, conv_ws_[kA]), ddst = conv_in(p.bw_ddst, dy, conv_ws_[kB]);
  memory dwei = conv_out(p.bw_dwei, dw, conv_ws_[kC]);
  p.bwd_w->execute(stream_, {{DNNL_ARG_SRC, src},
                             {DNNL_ARG_DIFF_DST, ddst},
                             {DNNL_ARG_DIFF_WEIGHTS, dwei},
                             {DNNL_ARG_DIFF_BIAS, memory(p.bias, engine_, db)},
                             {DNNL_ARG_SCRATCHPAD, scratchpad(p.bwd_w_pd->scratchpad_desc())}});
  conv_out_done(p.bw_dwei, dwei, dw);
  stream_.wait();
}

}  // namespace ds::model
