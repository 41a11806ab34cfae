// Scores of several methods (the CNN's deterministic and stochastic output, the baselines)
// against the observations of the same days: the VALUE indices per grid box, their biases, the
// accuracy scores, and their averages over the domain's land boxes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "evaluate/domain_table.h"
#include "evaluate/indices.h"

namespace ds {

struct Method {
  std::string name;
  std::vector<std::vector<float>> members;  // one or more (time, point) series in mm/day
  std::vector<float> wet_score;             // (time, point) score for the ROC; empty: members[0]
};

// Per-point values of the indices (evaluate/indices.h); NaN where undefined (ocean, no wet day).
// The spells are in days.
struct PointIndices {
  std::vector<double> mean, r01, sdii, p98, p98_wet, wet_spell, dry_spell;
};

struct MethodScores {
  std::string name;
  int members = 1;
  PointIndices indices;                                // averaged over the members where defined
  std::vector<double> rmse, rmse_wet, spearman, rocss;  // per point, the same member mean
  std::map<std::string, double> domain;                // land-box averages, see scores.cpp
  std::map<std::string, double> median;                // land-box medians of the same scores
};

struct Evaluation {
  size_t npoints = 0, ndays = 0;
  PointIndices observed;
  std::map<std::string, double> observed_domain;
  std::vector<MethodScores> methods;
};

// obs: (time, point) mm/day, NaN over the ocean; mask: 1 on land; days: the time steps' days.
Evaluation evaluate_methods(const std::vector<float>& obs, size_t npoints, const std::vector<uint8_t>& mask,
                            const TestDays& days, const std::vector<Method>& methods);

// The names of MethodScores::domain in the order reports show them.
const std::vector<std::string>& score_names();

// The report as JSON, and as CSV with one row per method and one column per domain score.
// With seasons: scores.json gains "seasons": {name: {months, test_days, observed, methods}} next
// to the annual figures (which stay where they are), scores.csv a leading `season` column.
using SeasonEvaluation = SeasonOf<Evaluation>;
// `about`: what was scored against what (prediction, checkpoint, store, test period), as top-level keys.
std::string evaluation_json(const Evaluation& e, const std::vector<SeasonEvaluation>& seasons = {},
                            const std::map<std::string, std::string>& about = {});
std::string evaluation_csv(const Evaluation& e, const std::vector<SeasonEvaluation>& seasons = {});

}  // namespace ds
