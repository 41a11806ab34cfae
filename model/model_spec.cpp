// ModelSpec <-> JSON, the form stored in checkpoints.
#include <nlohmann/json.hpp>

#include "io/error.h"
#include "model/model_spec.h"

namespace ds::model {

namespace {

// The land mask as run lengths, alternating and starting with ocean: [ocean, land, ocean, ...].
// Land is contiguous in practice, so a 117 x 209 mask is a few hundred numbers instead of 24,453.
std::vector<int64_t> mask_runs(const std::vector<uint8_t>& mask) {
  std::vector<int64_t> runs;
  uint8_t current = 0;
  int64_t length = 0;
  for (uint8_t m : mask) {
    const uint8_t v = m ? 1 : 0;
    if (v != current) {
      runs.push_back(length);
      current = v;
      length = 0;
    }
    ++length;
  }
  runs.push_back(length);
  return runs;
}

std::vector<uint8_t> mask_from_runs(const std::vector<int64_t>& runs, int64_t size) {
  std::vector<uint8_t> mask;
  uint8_t value = 0;
  for (int64_t r : runs) {
    if (r < 0 || int64_t(mask.size()) + r > size) throw InputError("model spec: land_mask runs exceed the grid");
    mask.insert(mask.end(), size_t(r), value);
    value ^= 1;
  }
  if (int64_t(mask.size()) != size)
    throw InputError("model spec: land_mask runs cover " + std::to_string(mask.size()) + " points, the grid has " +
                     std::to_string(size));
  return mask;
}

}  // namespace

std::string ModelSpec::to_json() const {
  nlohmann::json j;
  j["name"] = name;
  j["in_channels"] = in_channels;
  j["in_h"] = in_h;
  j["in_w"] = in_w;
  j["filters"] = filters;
  j["loss"] = loss;
  j["out_h"] = out_h;
  j["out_w"] = out_w;
  if (!land_mask.empty()) j["land_mask_runs"] = mask_runs(land_mask);
  j["classes"] = classes;
  j["aux_head"] = aux_head;
  return j.dump();
}

ModelSpec ModelSpec::from_json(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) throw InputError("model spec: expected a JSON object");
    ModelSpec s;
    s.name = j.at("name").get<std::string>();
    s.in_channels = j.at("in_channels").get<int>();
    s.in_h = j.at("in_h").get<int>();
    s.in_w = j.at("in_w").get<int>();
    // filters is only meaningful for 'demo'; absent is fine for 'mnn'. The fields after it came
    // with deepesd and the Gaussian/MSE heads: older checkpoints lack them and mean their defaults.
    if (j.contains("filters")) s.filters = j.at("filters").get<std::vector<int>>();
    if (j.contains("loss")) s.loss = j.at("loss").get<std::string>();
    if (j.contains("out_h")) s.out_h = j.at("out_h").get<int>();
    if (j.contains("out_w")) s.out_w = j.at("out_w").get<int>();
    if (j.contains("land_mask_runs"))
      s.land_mask = mask_from_runs(j.at("land_mask_runs").get<std::vector<int64_t>>(), int64_t(s.out_h) * s.out_w);
    // The image classifiers came later still.
    if (j.contains("classes")) s.classes = j.at("classes").get<int>();
    if (j.contains("aux_head")) s.aux_head = j.at("aux_head").get<bool>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("model spec: bad JSON: ") + e.what());
  }
}

}  // namespace ds::model
