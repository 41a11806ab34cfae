// Net: runs the layer DAG of models.cpp forward in list order and backward in reverse.
// Each node owns its output and its output's gradient; a node read by several layers (the input
// of the MNN branches would be one, if it needed a gradient) gets the sum of their gradients.
#include "model/net.h"

#include <cstdio>
#include <random>
#include <sstream>

#include "io/error.h"
#include "model/loss.h"
#include "model/models.h"

namespace ds::model {

struct Net::Impl {
  ModelSpec spec;
  Backend& be;
  std::vector<Node> nodes;
  std::vector<Tensor> out, grad;  // by node; out[0] and grad[0] unused (the input is the caller's)
  std::vector<Tensor> scratch;    // a layer's input gradients that must be added, not written
  const Tensor* input = nullptr;  // forward's x, needed again by backward
  std::string backward_layer;     // the layer whose backward ran last (backward_layer())

  Impl(const ModelSpec& s, Backend& b) : spec(s), be(b), nodes(build_model(s, b)) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      out.emplace_back(be, Shape{0, 0, 0, 0});
      grad.emplace_back(be, Shape{0, 0, 0, 0});
    }
  }
  Shape batch_shape(size_t node, int n) const {
    Shape s = nodes[node].shape;
    s.n = n;
    return s;
  }
  const Tensor& value(int node) const { return node == 0 ? *input : out[size_t(node)]; }
};

Net::Net(const ModelSpec& spec, Backend& backend) : impl_(std::make_unique<Impl>(spec, backend)) {}
Net::~Net() = default;

void Net::init(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (Node& n : impl_->nodes)
    if (n.layer) n.layer->init(rng);
}

const Tensor& Net::forward(const Tensor& x) {
  Impl& m = *impl_;
  const Shape& want = m.nodes[0].shape;
  const Shape& got = x.shape();
  if (got.n < 1 || got.c != want.c || got.h != want.h || got.w != want.w)
    throw Error("model '" + m.spec.name + "' expects input (N, " + std::to_string(want.c) + ", " +
                std::to_string(want.h) + ", " + std::to_string(want.w) + "), got " + got.str());
  m.input = &x;
  std::vector<const Tensor*> in;
  for (size_t i = 1; i < m.nodes.size(); ++i) {
    in.clear();
    for (int j : m.nodes[i].inputs) in.push_back(&m.value(j));
    m.out[i].reshape(m.batch_shape(i, got.n));
    m.nodes[i].layer->forward(m.be, in, m.out[i]);
  }
  return m.out.back();
}

void Net::backward(const Tensor& d_out, const std::function<void(const std::vector<Param>&)>& layer_done) {
  Impl& m = *impl_;
  if (!m.input) throw Error("Net::backward called before forward");
  const int n = m.input->shape().n;
  const size_t last = m.nodes.size() - 1;
  if (d_out.shape() != m.batch_shape(last, n))
    throw Error("Net::backward: gradient shape " + d_out.shape().str() + " does not match output " +
                m.batch_shape(last, n).str());

  // written[j]: grad[j] already holds one consumer's contribution, so the next one accumulates.
  std::vector<bool> written(m.nodes.size(), false);
  std::vector<const Tensor*> in;
  std::vector<Tensor*> din;
  for (size_t i = last; i >= 1; --i) {
    const Node& node = m.nodes[i];
    if (i != last && !written[i]) continue;  // nothing downstream reads this node
    const Tensor& dy = i == last ? d_out : m.grad[i];
    in.clear();
    din.clear();
    std::vector<std::pair<Tensor*, int>> to_add;  // (scratch, node) pairs to accumulate after
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int j = node.inputs[k];
      in.push_back(&m.value(j));
      if (j == 0) {
        din.push_back(nullptr);  // nobody needs the gradient w.r.t. the data
      } else if (!written[size_t(j)]) {
        m.grad[size_t(j)].reshape(m.batch_shape(size_t(j), n));
        din.push_back(&m.grad[size_t(j)]);
        written[size_t(j)] = true;
      } else {
        while (m.scratch.size() <= to_add.size()) m.scratch.emplace_back(m.be, Shape{0, 0, 0, 0});
        Tensor& s = m.scratch[to_add.size()];
        s.reshape(m.batch_shape(size_t(j), n));
        din.push_back(&s);
        to_add.emplace_back(&s, j);
      }
    }
    node.layer->backward(m.be, in, m.out[i], dy, din);
    for (auto& [s, j] : to_add) m.be.accumulate(s->size(), s->data(), m.grad[size_t(j)].data());
    m.backward_layer = node.layer->name();
    if (layer_done) layer_done(node.layer->params());
  }
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
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %-15s %-20s %10s  %s\n", "Layer", "Type", "Output shape", "Params",
                "Inputs");
  os << "Model '" << m.spec.name << "'\n" << line;
  auto chw = [](const Shape& s) {
    return "(" + std::to_string(s.c) + ", " + std::to_string(s.h) + ", " + std::to_string(s.w) + ")";
  };
  std::snprintf(line, sizeof line, "%-20s %-15s %-20s %10d\n", "input", "Input", chw(m.nodes[0].shape).c_str(), 0);
  os << line;
  for (size_t i = 1; i < m.nodes.size(); ++i) {
    const Node& n = m.nodes[i];
    std::string inputs;
    for (int j : n.inputs) inputs += (inputs.empty() ? "" : ", ") + (j == 0 ? std::string("input") : m.nodes[size_t(j)].layer->name());
    std::snprintf(line, sizeof line, "%-20s %-15s %-20s %10lld  %s\n", n.layer->name().c_str(), n.layer->type().c_str(),
                  chw(n.shape).c_str(), static_cast<long long>(n.layer->parameter_count()), inputs.c_str());
    os << line;
  }
  os << "Total params: " << parameter_count() << "\n";
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

const ModelSpec& Net::spec() const { return impl_->spec; }

}  // namespace ds::model
