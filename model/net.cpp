// Net: runs the layer DAG of models.cpp forward in list order and backward in reverse.
// A node read by several layers (the input of a ResNet block) gets the sum of their gradients.
// Memory reuse (buffer_plan.h): gradients share a few slots by liveness, since a node's gradient
// lives only from its first consumer's backward to its own; in inference (no backward follows)
// activations share slots too, each freed after its last reader. Training keeps every activation:
// the layers' backward reads their inputs and outputs.
// Lanes: a run of consecutive nodes with lanes (MNN's branches, models.cpp) is a region the
// backend may run side by side (Backend::fork_lanes, set_lane, join_lanes) when it has lanes and
// set_lanes is on: forward forks before the region and joins after it; backward likewise in
// reverse, and the layer_done hooks of the region's layers run after the join (their gradients
// are final only then). The layers before the first region in backward order may defer their
// weight passes to run beside it (Backend::defer_weight_passes); their hooks wait for its join.
// Any buffer live during a region keeps its slot for the whole region, and no region node may
// need its gradient accumulated from several readers (both checked in plan()).
// 16-bit activations (set_activations16, on by default): when the backend computes its
// convolutions in a 16-bit type it can also read and write (Backend::activation_dtype), a node's
// output is stored in that type if its layer writes it and every reader reads it (Layer::
// reads_16bit/writes_16bit; same_16bit: a Concat's inputs and output share one type), so MNN's
// activations from the first convolution to the head's input are BF16 on the CPU (on the GPU
// with NHWC activations to the head's input only: its narrow kernels read FP32 NCHW, Backend::
// conv_activations16). The network
// input and output and every gradient stay FP32. Planned again whenever the backend's type changes.
// Blocked activations (set_blocked_activations, on by default): on a backend whose convolutions,
// batch norms and poolings run in a channel-blocked layout (Backend::activation_block: oneDNN's
// nChw16c on AVX-512), a node's output, and its gradient, are stored blocked if its layer writes
// that, every reader reads it (Layer::reads_blocked/writes_blocked; same_block: an elementwise
// layer's inputs and output share one layout) and its channels are a multiple of the block. So
// ResNet's and Inception's activations stay blocked from the first convolution to the global
// pooling, and no op reorders them to NCHW and back (two memory passes per operand: 11 % of a
// ResNet50 step on the CPU before, and batch norm's slow NCHW loop another 22 %). The network
// input and output are plain, and so is every node next to a layer that reads only NCHW (MNN's
// upsampling convolutions, Flatten, Dense).
#include "model/net.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <sstream>

#include "io/error.h"
#include "model/buffer_plan.h"
#include "model/env_switch.h"
#include "model/loss.h"
#include "model/imagenet_models.h"
#include "model/models.h"

namespace ds::model {

struct Net::Impl {
  ModelSpec spec;
  Backend& be;
  std::vector<Node> nodes;
  std::vector<int64_t> chw;       // by node: floats per sample of its output
  std::vector<bool> reached;      // by node: backward runs its layer (something downstream needs it)
  std::vector<int> in_place;      // by node: the node whose output buffer this ReLU overwrites, or -1
  // Without reuse (memory_reuse off, and activations in training): one buffer a node.
  std::vector<Tensor> out, grad;  // by node; out[0] and grad[0] unused (the input is the caller's)
  // A layer's input gradients that must be added, not written: storage, and views of it in the
  // node's shape and block. Deques: a step may add entries while holding pointers to earlier ones.
  std::deque<Tensor> scratch, scratch_view;
  // With reuse: views into shared slots, assigned once per forward/backward (no allocation).
  bool reuse = true;
  BufferPlan grad_plan, act_plan;  // gradients in backward; activations in inference forwards
  std::vector<Tensor> grad_slots, act_slots;
  std::vector<Tensor> out_view, grad_view;
  std::vector<Tensor*> cur_out, cur_grad;  // by node: the buffers this step uses
  bool training = true;
  bool acts_reused = false;       // the last forward reused activations: backward cannot run
  const Tensor* input = nullptr;  // forward's x, needed again by backward
  std::string backward_layer;     // the layer whose backward ran last (backward_layer())
  bool lanes_on = true;           // set_lanes
  bool act16_on = true;           // set_activations16
  std::vector<DType> dtype;       // by node: its output's type (dtype[0]: the caller's FP32 input)
  DType planned16 = DType::kF32;  // the 16-bit type `dtype` was planned for (kF32: none)
  bool blocked_on = true;         // set_blocked_activations
  std::vector<int> block;         // by node: its output's and gradient's channel block (0: NCHW)

  Impl(const ModelSpec& s, Backend& b) : spec(s), be(b), nodes(build_model(s, b)) {
    // DOWNSCALE_ACTIVATIONS16=0: FP32 activations whatever the math, for A/B runs of the same
    // binary (bench_train_step, train, predict); set_activations16 overrides it.
    act16_on = on_off_switch("DOWNSCALE_ACTIVATIONS16", true,
                             "0 (FP32 activations whatever the math) or 1 or unset (16 bits where the math has them)");
    // DOWNSCALE_BLOCKED_ACTIVATIONS=0: NCHW activations between every layer, for A/B runs.
    blocked_on = on_off_switch("DOWNSCALE_BLOCKED_ACTIVATIONS", true,
                               "0 (NCHW between every layer) or 1 or unset (the backend's blocked layout where it fits)");
    const size_t count = nodes.size();
    for (size_t i = 0; i < count; ++i) {
      out.emplace_back(be, Shape{0, 0, 0, 0});
      grad.emplace_back(be, Shape{0, 0, 0, 0});
      out_view.emplace_back();
      grad_view.emplace_back();
      chw.push_back(batch_shape(i, 1).size());
    }
    cur_out.assign(count, nullptr);
    cur_grad.assign(count, nullptr);
    dtype.assign(count, DType::kF32);
    block = plan_blocks();
    for (size_t i = 1; i < count; ++i)
      if (block[i] > 0) {
        out[i] = Tensor(be, Shape{0, 0, 0, 0}, DType::kF32, block[i]);
        grad[i] = Tensor(be, Shape{0, 0, 0, 0}, DType::kF32, block[i]);
      }
    plan();
  }

  // Each node's channel block: the backend's activation_block() where the layer writes it, every
  // reader reads it, the channels divide by it, and a same_block layer's inputs and readers agree
  // (settle); 0 (NCHW) elsewhere, the network input and output always.
  std::vector<int> plan_blocks() const {
    const int b = blocked_on ? be.activation_block() : 0;
    std::vector<int> k(nodes.size(), 0);
    if (b <= 0) return k;
    for (size_t i = 1; i + 1 < nodes.size(); ++i)
      if (nodes[i].layer->writes_blocked() && nodes[i].shape.c % b == 0) k[i] = b;
    return settle(std::move(k), 0, [](const Layer& l) { return l.reads_blocked(); },
                  [](const Layer& l) { return l.same_block(); });
  }

  // What plan_dtypes and plan_blocks share: from each node's wanted storage v[i] (`plain` where
  // its layer cannot write another), a node keeps it only while every reader reads it and, for a
  // same-storage layer (`same`: its inputs and output alike), its inputs and its same-storage
  // readers have it too; demoting one node can break its neighbours' rules, so it repeats until
  // nothing changes. The network input and output are plain (the caller's and the loss's).
  template <class T, class Reads, class Same>
  std::vector<T> settle(std::vector<T> v, T plain, Reads reads, Same same) const {
    const size_t last = nodes.size() - 1;
    v.front() = v.back() = plain;
    std::vector<std::vector<int>> readers(nodes.size());
    for (size_t i = 1; i <= last; ++i)
      for (int j : nodes[i].inputs) readers[size_t(j)].push_back(int(i));
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 1; i < last; ++i) {
        if (v[i] == plain) continue;
        bool ok = true;
        if (same(*nodes[i].layer))
          for (int j : nodes[i].inputs) ok = ok && v[size_t(j)] == v[i];
        for (int r : readers[i]) {
          const Layer& reader = *nodes[size_t(r)].layer;
          ok = ok && reads(reader) && (!same(reader) || v[size_t(r)] == v[i]);
        }
        if (!ok) {
          v[i] = plain;
          changed = true;
        }
      }
    }
    return v;
  }

  // A layer that reads or writes NCHW only never gets a blocked tensor (the plan's promise; a
  // misread would be silent, so it is checked where it would happen, a few compares a layer).
  void check_blocks(size_t i, const std::vector<const Tensor*>& in) const {
    const Layer& l = *nodes[i].layer;
    bool ok = l.writes_blocked() || cur_out[i]->block() == 0;
    for (const Tensor* t : in) ok = ok && (l.reads_blocked() || t->block() == 0);
    if (!ok)
      throw Error("internal: model '" + spec.name + "': layer " + l.name() + " (" + l.type() +
                  ") takes NCHW only but was planned a channel-blocked tensor");
  }

  // Re-plans the blocks (set_blocked_activations) and remakes the buffers whose block changed.
  void ensure_blocks() {
    const std::vector<int> want = plan_blocks();
    if (want == block) return;
    block = want;
    for (size_t i = 1; i < nodes.size(); ++i) {
      if (out[i].block() != block[i]) out[i] = Tensor(be, Shape{0, 0, 0, 0}, dtype[i], block[i]);
      if (grad[i].block() != block[i]) grad[i] = Tensor(be, Shape{0, 0, 0, 0}, DType::kF32, block[i]);
    }
  }

  // Each node's output type when the backend's 16-bit activation type is t: t where the layer
  // writes it and every reader reads it (a Concat's inputs and output alike: settle), FP32
  // elsewhere.
  std::vector<DType> plan_dtypes(DType t) const {
    std::vector<DType> d(nodes.size(), DType::kF32);
    if (t == DType::kF32) return d;
    for (size_t i = 1; i + 1 < nodes.size(); ++i)
      if (nodes[i].layer->writes_16bit(be)) d[i] = t;
    return settle(std::move(d), DType::kF32, [this](const Layer& l) { return l.reads_16bit(be); },
                  [](const Layer& l) { return l.same_16bit(); });
  }

  // The 16-bit type activations take now: the backend's, unless switched off (kF32: none).
  DType wanted16() const { return act16_on ? be.activation_dtype() : DType::kF32; }

  // Plans the types for the backend's current math (forward calls it; cheap when unchanged).
  void ensure_dtypes() {
    const DType t = wanted16();
    if (t == planned16) return;
    dtype = plan_dtypes(t);
    planned16 = t;
    for (size_t i = 1; i < nodes.size(); ++i)
      if (out[i].dtype() != dtype[i]) out[i] = Tensor(be, Shape{0, 0, 0, 0}, dtype[i], block[i]);
    plan();  // the inference plan's slot sizes depend on the types
  }
  Shape batch_shape(size_t node, int n) const {
    Shape s = nodes[node].shape;
    s.n = n;
    return s;
  }
  const Tensor& value(int node) const { return node == 0 ? *input : *cur_out[size_t(node)]; }

  // The two liveness plans. Backward step k runs node last-k; a node's gradient is written by its
  // first consumer's backward (the highest-numbered one) and read last by its own. In an inference
  // forward, step i runs node i; its output is read last by its highest-numbered consumer; the
  // net's output outlives the step.
  void plan() {
    const size_t last = nodes.size() - 1;
    reached.assign(nodes.size(), false);
    reached[last] = true;
    std::vector<int> last_reader(nodes.size(), -1);
    for (size_t i = last; i >= 1; --i)
      for (int j : nodes[i].inputs) {
        last_reader[size_t(j)] = std::max(last_reader[size_t(j)], int(i));
        if (reached[i] && j != 0) reached[size_t(j)] = true;
      }
    std::vector<int> readers(nodes.size(), 0);
    for (size_t i = 1; i <= last; ++i)
      for (int j : nodes[i].inputs) ++readers[size_t(j)];
    plan_in_place_relus(readers);
    const std::vector<std::pair<int, int>> regions = lane_regions(readers);
    std::vector<Lifetime> grads(nodes.size()), acts(nodes.size());
    for (size_t j = 1; j < last; ++j) {
      int first_consumer = -1;
      for (size_t i = j + 1; i <= last; ++i)
        if (reached[i])
          for (int k : nodes[i].inputs)
            if (size_t(k) == j) first_consumer = std::max(first_consumer, int(i));
      if (reached[j] && first_consumer > 0) grads[j] = Lifetime{chw[j], int(last) - first_consumer, int(last - j)};
    }
    for (size_t i = 1; i <= last; ++i)
      acts[i] = Lifetime{storage_floats(chw[i], dtype[i]), int(i),
                         i == last ? int(last) + 1 : std::max(last_reader[i], int(i))};
    // A buffer live at any step of a region is kept for the whole region: its steps run side by
    // side, in any order. Backward step k runs node last - k.
    for (const auto& [f, l] : regions) {
      widen_over(acts, f, l);
      widen_over(grads, int(last) - l, int(last) - f);
    }
    grad_plan = plan_buffers(grads);
    act_plan = plan_buffers(acts);
    grad_slots.clear();
    act_slots.clear();
    for (size_t k = 0; k < grad_plan.slot_floats.size(); ++k) grad_slots.emplace_back(be, Shape{0, 0, 0, 0});
    for (size_t k = 0; k < act_plan.slot_floats.size(); ++k) act_slots.emplace_back(be, Shape{0, 0, 0, 0});
  }

  // In place (training with reuse): a ReLU overwrites its input when it is that input's only
  // reader and the input's layer never reads its own output in backward (batch norm, Add, a
  // conv without fused ReLU). ReLU's backward reads its input only for the sign, and relu(x) > 0
  // exactly where x > 0, so the gradients are the same bit for bit. Saves conv-BN-ReLU's third.
  void plan_in_place_relus(const std::vector<int>& readers) {
    const size_t last = nodes.size() - 1;
    in_place.assign(nodes.size(), -1);
    for (size_t i = 1; i <= last; ++i) {
      if (nodes[i].layer->type() != "ReLU" || nodes[i].inputs.size() != 1) continue;
      const int j = nodes[i].inputs[0];
      if (j == 0 || readers[size_t(j)] != 1) continue;
      const std::string& t = nodes[size_t(j)].layer->type();
      // (The host is FP32: a ReLU reads no 16-bit input, so a node it reads is never planned 16-bit.)
      if ((t == "BatchNormalization" || t == "Add" || t == "Conv2D") && dtype[size_t(j)] == DType::kF32)
        in_place[i] = in_place[size_t(j)] >= 0 ? in_place[size_t(j)] : j;
    }
  }

  // The runs of lane nodes (first, last), each checked for what it may contain: inputs from the
  // network input, the same lane or nodes before the region; no gradient summed from several
  // readers inside it.
  std::vector<std::pair<int, int>> lane_regions(const std::vector<int>& readers) const {
    const size_t last = nodes.size() - 1;
    std::vector<std::pair<int, int>> regions;
    for (size_t i = 1; i <= last;) {
      if (nodes[i].lane <= 0) {
        ++i;
        continue;
      }
      size_t e = i;
      while (e + 1 <= last && nodes[e + 1].lane > 0) ++e;
      regions.emplace_back(int(i), int(e));
      for (size_t k = i; k <= e; ++k) {
        for (int j : nodes[k].inputs) {
          const bool ok = j == 0 || size_t(j) < i || nodes[size_t(j)].lane == nodes[k].lane;
          if (!ok)
            throw Error("model '" + spec.name + "': layer " + nodes[k].layer->name() + " (lane " +
                        std::to_string(nodes[k].lane) + ") reads " + nodes[size_t(j)].layer->name() +
                        " of another lane");
          if (j != 0 && readers[size_t(j)] > 1)
            throw Error("model '" + spec.name + "': " + nodes[size_t(j)].layer->name() + ", read by " +
                        std::to_string(readers[size_t(j)]) + " layers, feeds lane " + std::to_string(nodes[k].lane) +
                        ": its gradient would be summed across lanes");
        }
      }
      i = e + 1;
    }
    return regions;
  }

  static void widen_over(std::vector<Lifetime>& ls, int first, int last) {
    for (Lifetime& t : ls)
      if (t.first >= 0 && t.first <= last && t.last >= first) {
        t.first = std::min(t.first, first);
        t.last = std::max(t.last, last);
      }
  }

  // Joins the lanes if a layer throws between fork and join, so the backend is not left forked
  // (holding every release) for whatever runs next; the error goes on.
  // The same for deferred weight passes (Backend::defer_weight_passes): joined and turned off.
  struct LaneGuard {
    Backend& be;
    const bool& forked;
    const bool* deferring = nullptr;
    ~LaneGuard() {
      const bool deferred = deferring && *deferring;
      if (!forked && !deferred) return;
      try {
        be.join_lanes();
      } catch (...) {
      }
      try {  // even if the join failed: nothing may stay deferred for the next backward
        if (deferred) be.defer_weight_passes(false);
      } catch (...) {
      }
    }
  };

  // Whether a lane region will run in this backward: the layers before it (in backward order)
  // may then defer their weight passes to run beside it.
  bool has_lane_region() const {
    for (size_t i = 1; i < nodes.size(); ++i)
      if (nodes[i].lane > 0 && reached[i]) return true;
    return false;
  }

  // The lane node i runs on (0 when lanes are off for this pass).
  int lane_of(size_t i, bool use) const { return use ? nodes[i].lane : 0; }

  // Views of `slots` (grown for batch n) for each node `plan` gives a slot, of type types[node]
  // (activations: `dtype`), or FP32 when types is null (gradients), in the node's block.
  void bind(const BufferPlan& p, std::vector<Tensor>& slots, std::vector<Tensor>& views, std::vector<Tensor*>& cur,
            int n, const std::vector<DType>* types) {
    for (size_t k = 0; k < slots.size(); ++k) slots[k].reshape(Shape{n, int(p.slot_floats[k]), 1, 1});
    for (size_t i = 1; i < nodes.size(); ++i) {
      const int s = p.slot[i];
      if (s < 0) continue;
      views[i] = Tensor::view(be, batch_shape(i, n), slots[size_t(s)].data(), types ? (*types)[i] : DType::kF32,
                              block[i]);
      cur[i] = &views[i];
    }
  }

  // The scratch buffers' floats per sample: the k-th holds the k-th extra contribution of a step.
  std::vector<int64_t> scratch_floats() const {
    std::vector<int64_t> sizes;
    std::vector<bool> written(nodes.size(), false);
    for (size_t i = nodes.size() - 1; i >= 1; --i) {
      if (!reached[i]) continue;
      size_t extra = 0;
      for (int j : nodes[i].inputs) {
        if (j == 0) continue;
        if (!written[size_t(j)]) {
          written[size_t(j)] = true;
          continue;
        }
        if (sizes.size() <= extra) sizes.push_back(0);
        sizes[extra] = std::max(sizes[extra], chw[size_t(j)]);
        ++extra;
      }
    }
    return sizes;
  }
};

Net::Net(const ModelSpec& spec, Backend& backend) : impl_(std::make_unique<Impl>(spec, backend)) {}
Net::~Net() = default;

void Net::init(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (Node& n : impl_->nodes)
    if (n.layer) n.layer->init(rng);
}

const Tensor& Net::forward(const Tensor& x, const std::function<void(const std::string& layer)>& layer_done) {
  Impl& m = *impl_;
  const Shape& want = m.nodes[0].shape;
  const Shape& got = x.shape();
  if (got.n < 1 || got.c != want.c || got.h != want.h || got.w != want.w)
    throw Error("model '" + m.spec.name + "' expects input (N, " + std::to_string(want.c) + ", " +
                std::to_string(want.h) + ", " + std::to_string(want.w) + "), got " + got.str());
  m.input = &x;
  m.ensure_blocks();
  m.ensure_dtypes();
  m.acts_reused = m.reuse && !m.training;
  if (m.acts_reused) {
    m.bind(m.act_plan, m.act_slots, m.out_view, m.cur_out, got.n, &m.dtype);
  } else {
    for (size_t i = 1; i < m.nodes.size(); ++i) {
      const int host = m.reuse ? m.in_place[i] : -1;
      if (host >= 0) {
        m.out_view[i] = Tensor::view(m.be, m.batch_shape(i, got.n), m.out[size_t(host)].data(), DType::kF32,
                                     m.block[i]);
        m.cur_out[i] = &m.out_view[i];
        continue;
      }
      m.out[i].reshape(m.batch_shape(i, got.n));
      m.cur_out[i] = &m.out[i];
    }
  }
  std::vector<const Tensor*> in;
  // A per-layer hook (the layer profiler) times layers one after another: no lanes then.
  const bool lanes = m.lanes_on && !layer_done && m.be.lanes() > 0;
  bool forked = false;
  const Impl::LaneGuard guard{m.be, forked};
  for (size_t i = 1; i < m.nodes.size(); ++i) {
    const int lane = m.lane_of(i, lanes);
    if (lane > 0 && !forked) m.be.fork_lanes();
    if (lane == 0 && forked) m.be.join_lanes();
    forked = lane > 0;
    if (forked) m.be.set_lane(lane);
    in.clear();
    for (int j : m.nodes[i].inputs) in.push_back(&m.value(j));
    m.check_blocks(i, in);
    m.nodes[i].layer->forward(m.be, in, *m.cur_out[i]);
    if (layer_done) layer_done(m.nodes[i].layer->name());
  }
  if (forked) m.be.join_lanes();
  forked = false;
  return *m.cur_out.back();
}

void Net::backward(const Tensor& d_out, const std::function<void(const std::vector<Param>&)>& layer_done) {
  Impl& m = *impl_;
  if (!m.input) throw Error("Net::backward called before forward");
  if (m.acts_reused)
    throw Error("Net::backward after an inference-mode forward (its activations were reused; set the net to "
                "training)");
  const int n = m.input->shape().n;
  const size_t last = m.nodes.size() - 1;
  if (d_out.shape() != m.batch_shape(last, n))
    throw Error("Net::backward: gradient shape " + d_out.shape().str() + " does not match output " +
                m.batch_shape(last, n).str());
  if (m.reuse) m.bind(m.grad_plan, m.grad_slots, m.grad_view, m.cur_grad, n, nullptr);

  // written[j]: grad[j] already holds one consumer's contribution, so the next one accumulates.
  std::vector<bool> written(m.nodes.size(), false);
  std::vector<const Tensor*> in;
  std::vector<Tensor*> din;
  const bool lanes = m.lanes_on && m.be.lanes() > 0;
  bool forked = false;
  // Deferred weight passes (Backend::defer_weight_passes): the layers before the first lane
  // region queue their weight gradients to run beside it (MNN: the head's and the decoder's
  // beside the five branches); its join waits for them, and their hooks wait for the join.
  bool deferring = lanes && m.has_lane_region() && m.be.defer_weight_passes(true);
  const Impl::LaneGuard guard{m.be, forked, &deferring};
  // The hooks of a region's layers (and of the layers that deferred their weight passes),
  // called after its join, in the order their backward ran.
  std::vector<std::pair<std::string, std::vector<Param>>> deferred;
  const auto join = [&] {
    m.be.join_lanes();
    forked = false;
    if (deferring) {
      deferring = false;
      m.be.defer_weight_passes(false);
    }
    for (auto& [name, ps] : deferred) {
      m.backward_layer = name;
      if (layer_done) layer_done(ps);
    }
    deferred.clear();
  };
  for (size_t i = last; i >= 1; --i) {
    const Node& node = m.nodes[i];
    const int lane = m.lane_of(i, lanes);
    // A region ends at any lane-0 node, reached or not (an unreached one must still part two
    // regions: their buffers were planned apart).
    if (lane == 0 && forked) join();
    if (!m.reached[i]) continue;  // nothing downstream reads this node
    if (lane > 0 && !forked) {
      m.be.fork_lanes();
      forked = true;
    }
    if (forked) m.be.set_lane(lane);
    const Tensor& dy = i == last ? d_out : *m.cur_grad[i];
    in.clear();
    din.clear();
    std::vector<std::pair<Tensor*, int>> to_add;  // (scratch, node) pairs to accumulate after
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int j = node.inputs[k];
      in.push_back(&m.value(j));
      if (j == 0) {
        din.push_back(nullptr);  // nobody needs the gradient w.r.t. the data
      } else if (!written[size_t(j)]) {
        if (!m.reuse) {
          m.grad[size_t(j)].reshape(m.batch_shape(size_t(j), n));
          m.cur_grad[size_t(j)] = &m.grad[size_t(j)];
        }
        din.push_back(m.cur_grad[size_t(j)]);
        written[size_t(j)] = true;
      } else {
        while (m.scratch.size() <= to_add.size()) {
          m.scratch.emplace_back(m.be, Shape{0, 0, 0, 0});
          m.scratch_view.emplace_back();
        }
        Tensor& store = m.scratch[to_add.size()];
        store.reshape(Shape{n, int(m.chw[size_t(j)]), 1, 1});
        Tensor& s = m.scratch_view[to_add.size()];
        s = Tensor::view(m.be, m.batch_shape(size_t(j), n), store.data(), DType::kF32, m.block[size_t(j)]);
        din.push_back(&s);
        to_add.emplace_back(&s, j);
      }
    }
    node.layer->backward(m.be, in, *m.cur_out[i], dy, din);
    for (auto& [s, j] : to_add) m.be.accumulate(s->size(), s->data(), m.cur_grad[size_t(j)]->data());
    if (forked || deferring) {
      deferred.emplace_back(node.layer->name(), node.layer->params());
      continue;
    }
    m.backward_layer = node.layer->name();
    if (layer_done) layer_done(node.layer->params());
  }
  if (forked || deferring) join();
  // Layers whose output no loss reads (InceptionV3's auxiliary head): zero gradients, so every
  // parameter gradient is still overwritten and reported.
  for (size_t i = last; i >= 1; --i) {
    if (m.reached[i]) continue;
    std::vector<Param> ps = m.nodes[i].layer->params();
    if (ps.empty()) continue;
    for (Param& p : ps) m.be.fill(p.grad->data(), p.grad->size(), 0.0f);
    m.backward_layer = m.nodes[i].layer->name();
    if (layer_done) layer_done(ps);
  }
}

int64_t Net::activation_bytes(int n) const {
  const Impl& m = *impl_;
  const std::vector<DType> types = m.plan_dtypes(m.wanted16());
  int64_t floats = 0;
  // Training keeps every activation, except the outputs of in-place ReLUs (they share their input's).
  for (size_t i = 1; i < m.nodes.size(); ++i)
    if (!m.reuse || m.in_place[i] < 0) floats += storage_floats(m.chw[i], types[i]);
  if (m.reuse) {
    floats += m.grad_plan.total_floats();
  } else {
    for (size_t j = 1; j + 1 < m.nodes.size(); ++j)
      if (m.grad_plan.slot[j] >= 0) floats += m.chw[j];
  }
  for (int64_t f : m.scratch_floats()) floats += f;
  return floats * int64_t(n) * int64_t(sizeof(float));
}

void Net::set_memory_reuse(bool on) { impl_->reuse = on; }

void Net::set_lanes(bool on) { impl_->lanes_on = on; }

void Net::set_activations16(bool on) { impl_->act16_on = on; }

void Net::set_blocked_activations(bool on) { impl_->blocked_on = on; }

int Net::activation_block(const std::string& layer) const {
  const Impl& m = *impl_;
  for (size_t i = 1; i < m.nodes.size(); ++i)
    if (m.nodes[i].layer->name() == layer) return m.cur_out[i] ? m.cur_out[i]->block() : m.plan_blocks()[i];
  throw Error("model '" + m.spec.name + "' has no layer '" + layer + "'");
}

DType Net::activation_dtype(const std::string& layer) const {
  const Impl& m = *impl_;
  for (size_t i = 1; i < m.nodes.size(); ++i)
    if (m.nodes[i].layer->name() == layer) return m.cur_out[i] ? m.cur_out[i]->dtype() : m.plan_dtypes(m.wanted16())[i];
  throw Error("model '" + m.spec.name + "' has no layer '" + layer + "'");
}

std::string Net::activations16_summary() const {
  const Impl& m = *impl_;
  const DType t = m.wanted16();
  const std::vector<DType> types = m.plan_dtypes(t);
  const auto n16 = std::count(types.begin(), types.end(), t);
  if (t == DType::kF32 || n16 == 0) return {};
  return "activations of " + std::to_string(n16) + " of " + std::to_string(m.nodes.size() - 1) + " layers stored in " +
         dtype_name(t) + " between the layers that read and write it (DOWNSCALE_ACTIVATIONS16=0: FP32)";
}

std::string Net::blocked_summary() const {
  const Impl& m = *impl_;
  const std::vector<int> k = m.plan_blocks();
  const auto n = std::count_if(k.begin(), k.end(), [](int b) { return b > 0; });
  const int block = m.be.activation_block();
  if (block == 0) return {};  // a backend without the layout (CUDA): nothing to say
  // Said too where no layer takes it (MNN: its channel counts are not multiples of the block), so
  // a log tells which layout a run had.
  if (n == 0)
    return std::string("activations kept in NCHW between the layers (") +
           (m.blocked_on ? "no layer's channels fit nChw" + std::to_string(block) + "c"
                         : "DOWNSCALE_BLOCKED_ACTIVATIONS=0") +
           ")";
  return "activations of " + std::to_string(n) + " of " + std::to_string(m.nodes.size() - 1) + " layers kept in nChw" +
         std::to_string(block) + "c, the channel-blocked layout of the backend's kernels (DOWNSCALE_BLOCKED_ACTIVATIONS=0: NCHW)";
}

const std::string& Net::backward_layer() const { return impl_->backward_layer; }

std::vector<Param> Net::params() {
  std::vector<Param> all;
  for (Node& n : impl_->nodes)
    if (n.layer)
      for (Param& p : n.layer->params()) all.push_back(p);
  return all;
}

std::vector<Param> Net::buffers() {
  std::vector<Param> all;
  for (Node& n : impl_->nodes)
    if (n.layer)
      for (Param& p : n.layer->buffers()) all.push_back(p);
  return all;
}

void Net::set_mode(const ForwardMode& mode) {
  impl_->training = mode.training;
  for (Node& n : impl_->nodes)
    if (n.layer) n.layer->set_mode(mode);
}

Shape Net::output_shape(int n) const { return impl_->batch_shape(impl_->nodes.size() - 1, n); }

int64_t Net::parameter_count() const {
  int64_t total = 0;
  for (const Node& n : impl_->nodes)
    if (n.layer) total += n.layer->parameter_count();
  return total;
}

std::string Net::summary() const {
  const Impl& m = *impl_;
  // Column widths fit the longest name and type (ResNet101's conv4_block23_3_conv,
  // GlobalAveragePooling2D), never narrower than the classic 20/15.
  size_t name_w = 20, type_w = 15;
  for (size_t i = 1; i < m.nodes.size(); ++i) {
    name_w = std::max(name_w, m.nodes[i].layer->name().size());
    type_w = std::max(type_w, m.nodes[i].layer->type().size());
  }
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %-*s %-20s %10s  %s\n", int(name_w), "Layer", int(type_w), "Type",
                "Output shape", "Params", "Inputs");
  os << "Model '" << m.spec.name << "'\n" << line;
  auto chw = [](const Shape& s) {
    return "(" + std::to_string(s.c) + ", " + std::to_string(s.h) + ", " + std::to_string(s.w) + ")";
  };
  std::snprintf(line, sizeof line, "%-*s %-*s %-20s %10d\n", int(name_w), "input", int(type_w), "Input",
                chw(m.nodes[0].shape).c_str(), 0);
  os << line;
  int64_t buffer_floats = 0;
  for (size_t i = 1; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    std::string inputs;
    for (int j : n.inputs) inputs += (inputs.empty() ? "" : ", ") + (j == 0 ? std::string("input") : m.nodes[size_t(j)].layer->name());
    std::snprintf(line, sizeof line, "%-*s %-*s %-20s %10lld  ", int(name_w), n.layer->name().c_str(), int(type_w),
                  n.layer->type().c_str(), chw(n.shape).c_str(), static_cast<long long>(n.layer->parameter_count()));
    os << line << inputs << "\n";
    for (const Param& b : n.layer->buffers()) buffer_floats += b.value->size();
  }
  os << "Total params: " << parameter_count() << "\n";
  if (buffer_floats > 0)
    os << "Non-trainable state (batch norm moving mean and variance): " << buffer_floats
       << "; with it (Keras' total): " << parameter_count() + buffer_floats << "\n";
  if (is_image_classifier(m.spec.name)) {
    os << "Output: logits over " << m.spec.classes << " classes (softmax cross-entropy)"
       << (m.spec.aux_head ? "; the auxiliary head's logits are computed but read by no loss" : "") << ".\n";
    return os.str();
  }
  const LossKind loss = parse_loss(m.spec.loss, "model spec");
  if (loss == LossKind::kBernoulliGamma)
    os << "Output channels (Bernoulli-Gamma): 0 = p (rain probability), 1 = log(alpha), 2 = log(beta); "
          "head weights are in that order.\n";
  else if (loss == LossKind::kGaussian)
    os << "Output channels (Gaussian): 0 = mean, 1 = log(variance); head weights are in that order.\n";
  else
    os << "Output channel (MSE): 0 = the predicted value.\n";
  return os.str();
}

std::vector<std::string> Net::layer_names() const {
  std::vector<std::string> names;
  for (size_t i = 1; i < impl_->nodes.size(); ++i) names.push_back(impl_->nodes[i].layer->name());
  return names;
}

const Tensor& Net::layer_output(const std::string& layer) const {
  const Impl& m = *impl_;
  for (size_t i = 1; i < m.nodes.size(); ++i)
    if (m.nodes[i].layer->name() == layer) {
      if (!m.cur_out[i]) throw Error("model '" + m.spec.name + "': no forward has written layer '" + layer + "' yet");
      return *m.cur_out[i];
    }
  throw Error("model '" + m.spec.name + "' has no layer '" + layer + "'");
}

const ModelSpec& Net::spec() const { return impl_->spec; }

}  // namespace ds::model
