#include "model/layers/scatter_to_grid.h"

#include "io/error.h"

namespace ds::model {

ScatterToGrid::ScatterToGrid(std::string name, Backend& be, int k, int h, int w, const std::vector<uint8_t>& land,
                             float fill)
    : Layer(std::move(name)), k_(k), h_(h), w_(w), fill_(fill) {
  if (k < 1 || h < 1 || w < 1) throw Error("layer " + this->name() + ": bad grid");
  if (land.size() != size_t(h) * size_t(w))
    throw Error("layer " + this->name() + ": land mask has " + std::to_string(land.size()) + " points, grid " +
                std::to_string(h) + " x " + std::to_string(w) + " needs " + std::to_string(int64_t(h) * w));
  if (int64_t(h) * w >= (int64_t(1) << 24))
    throw Error("layer " + this->name() + ": grid too large for float indices");
  std::vector<float> index;
  for (size_t i = 0; i < land.size(); ++i)
    if (land[i]) index.push_back(float(i));
  if (index.empty()) throw Error("layer " + this->name() + ": the land mask has no land point");
  points_ = int(index.size());
  index_ = Tensor(be, Shape{1, 1, 1, points_});
  index_.upload(index.data());
}

Shape ScatterToGrid::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  if (in[0].c != k_ * points_ || in[0].h != 1 || in[0].w != 1)
    throw Error("layer " + name() + " expects (N, " + std::to_string(k_ * points_) + ", 1, 1) (" + std::to_string(k_) +
                " x " + std::to_string(points_) + " land points), got " + in[0].str());
  return Shape{in[0].n, k_, h_, w_};
}

void ScatterToGrid::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  be.scatter_points(in[0]->shape().n, k_, points_, index_.data(), out.shape(), fill_, in[0]->data(), out.data());
}

void ScatterToGrid::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/,
                             const Tensor& dout, const std::vector<Tensor*>& din) {
  if (din[0]) be.gather_points(in[0]->shape().n, k_, points_, index_.data(), dout.shape(), dout.data(), din[0]->data());
}

}  // namespace ds::model
