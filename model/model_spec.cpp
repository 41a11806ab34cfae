// ModelSpec <-> JSON, the form stored in checkpoints.
#include <nlohmann/json.hpp>

#include "io/error.h"
#include "model/net.h"

namespace ds::model {

std::string ModelSpec::to_json() const {
  nlohmann::json j;
  j["name"] = name;
  j["in_channels"] = in_channels;
  j["in_h"] = in_h;
  j["in_w"] = in_w;
  j["filters"] = filters;
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
    // filters is only meaningful for 'demo'; absent is fine for 'mnn'.
    if (j.contains("filters")) s.filters = j.at("filters").get<std::vector<int>>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("model spec: bad JSON: ") + e.what());
  }
}

}  // namespace ds::model
