#include "evaluate/domain_table.h"

#include <cmath>
#include <sstream>

namespace ds {

nlohmann::json json_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

void add_domain_methods(nlohmann::json& j, const std::vector<DomainRow>& rows) {
  for (const DomainRow& r : rows) {
    nlohmann::json mj;
    mj["members"] = r.members;
    for (const auto& [k, v] : *r.domain) mj[k] = json_number(v);
    for (const auto& [k, v] : *r.median) mj["median"][k] = json_number(v);
    j["methods"][r.name] = mj;
  }
}

std::string domain_scores_csv(const std::vector<std::string>& names, const std::vector<DomainRow>& rows) {
  std::ostringstream s;
  s << "method,members";
  for (const auto& k : names) s << "," << k;
  for (const auto& k : names) s << "," << k << "_median";
  s << "\n";
  for (const DomainRow& r : rows) {
    s << r.name << "," << r.members;
    for (const auto& k : names) s << "," << r.domain->at(k);
    for (const auto& k : names) s << "," << r.median->at(k);
    s << "\n";
  }
  return s.str();
}

std::string csv_with_season_column(const std::vector<std::pair<std::string, std::string>>& csv_by_season) {
  std::ostringstream out;
  for (size_t i = 0; i < csv_by_season.size(); ++i) {
    std::istringstream lines(csv_by_season[i].second);
    std::string line;
    for (bool header = true; std::getline(lines, line); header = false) {
      if (header && i == 0) out << "season," << line << "\n";
      if (!header && !line.empty()) out << csv_by_season[i].first << "," << line << "\n";
    }
  }
  return out.str();
}

}  // namespace ds
