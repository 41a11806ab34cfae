// Predictors from another fetch (a GCM run, a later period) prepared as the training store's
// inputs were: each channel regridded onto the model grid by the method the store records,
// missing values handled by the store's fill policy, and standardized either with the store's
// training statistics (`training`) or against the new data's own climatology over reference
// years (`own`: each field's mean and sd per box, or per field, as the store's `standardize`),
// the two options of climate4R's scaleGrid. `predict` reads them in blocks of days, so memory
// stays bounded by a block whatever the length of the run.
//
// A GCM grid seldom matches the reanalysis grid the store was built from: nearest and
// conservative regridding accept any source grid that has data in every target cell (a coarser
// or shifted grid; conservative means are normalized by the covered part of the cell), bilinear
// needs every target point inside the source centres. Otherwise InputError naming the field and
// the target cells not covered.
#pragma once
#include <cmath>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/training_store.h"
#include "preprocess/data_terms.h"
#include "preprocess/regrid.h"
#include "preprocess/regrid_covering.h"
#include "preprocess/sample_dates.h"

namespace ds {

class FetchedField;

struct NewPredictorOptions {
  std::string standardize = "training";  // training | own
  YearRange reference_years;             // own: the years of the new predictors the climatology spans
                                         // (season-years when the fetch's season crosses the new
                                         // year, as the store's splits: DJF 1983 is Dec 1982 to Feb 1983)
  std::string reference_dir{};           // own: another fetch folder holding those years (the
                                         // historical run of a scenario's model); empty: this one
  std::string fill{};                    // none | nearest_time | climatology (predict.fill); empty:
                                         // the store's preprocess.fill
  // What these predictors are in messages, and the key that names their folder.
  std::string role = "the new predictors (predict.predictors)";
  // A channel fetched in other units than the training data's (the store's channel_units: psl in
  // hPa against Pa) is converted with what this returns for (from, to, where): {scale, offset},
  // to = from * scale + offset; it throws InputError when they do not convert (geopotential
  // height in m against geopotential in m2 s-2). Unset: other units are refused. The pipeline
  // passes udunits2's conversion (io/units.h).
  std::function<std::pair<double, double>(const std::string&, const std::string&, const std::string&)> convert_units{};
};

class NewPredictors {
 public:
  // Reads <fetch_dir>/manifest.json (a predictors-only fetch is fine: its predictand is empty);
  // every channel of the store must be there, by name ("z@500", or "psl" for a surface field),
  // all on one calendar. Units agree by construction: fetch converts every field to its
  // dataset's standard units. Throws InputError naming what is missing.
  NewPredictors(const std::string& fetch_dir, const StoreMeta& meta, const NewPredictorOptions& opt = {});
  ~NewPredictors();

  // The days present in every channel, ascending (days since 1970-01-01 in calendar()).
  const std::vector<int64_t>& days() const { return days_; }
  const std::string& calendar() const { return calendar_; }  // CF name of the files' calendar
  // How the inputs were standardized, for the output's attributes.
  const std::string& standardization() const { return description_; }
  // The new predictors' references and licences, each channel's as its fetched file carries them.
  DataTerms terms() const;
  // Standardized samples [first, first + n) of days(): n x C x H x W floats into x. InputError
  // for a value beyond kImpossibleStandardized (io/store_checks.h).
  void read(size_t first, size_t n, float* x) const;
  // Logs a warning with the count and the worst point of the standardized values read so far
  // that sit far outside the training range (|z| > kFarOutside): a GCM far from the training
  // climate, or a unit the ranges did not catch. And one per channel whose values read so far
  // average more than kFarMean training standard deviations from the training mean: a whole
  // field shifted (another variable or level under the channel's name, an offset unit) that
  // stays inside the plausible ranges. CNRM-CM5's RCP8.5 winters of 2081-2100 over Iberia stay
  // below it under the training statistics (tests/cli/iberia_tas.sh), so 3 leaves room for real
  // change. Logs each channel's share of predictor-grid values that take the training mean
  // (predict.fill: climatology) when there are any.
  // Then throws InputError (predict calls it before its output is renamed into place, so nothing
  // is written) for a channel whose values average more than kImpossibleMean standard
  // deviations out and kImpossibleShift of its mean's size, with more than kMostFilled of its
  // predictor-grid values the training mean, that never changed from day to day at any box over
  // two days or more (a constant written in the field's place), or whose mean map runs against
  // the training mean's (pattern_match below; a correlation below kPatternWarned is warned of).
  static constexpr float kFarOutside = 10;
  static constexpr double kFarMean = 3;
  // A domain's mean departure this far, with the field's mean itself off by more than
  // kImpossibleShift of the training mean's size, is a unit, not a climate: psl in hPa read as Pa
  // averages -119 sd and 99 % off. The warmest scenarios move z@500 over a tropical domain, whose
  // daily sd is a few metres, by tens of sd too, but by 2-3 % of its mean: that is warned of, not
  // refused.
  static constexpr double kImpossibleMean = 50;
  static constexpr double kImpossibleShift = 0.2;
  // The pattern of a channel's mean over the days read against the training mean's, box by box:
  // their Pearson correlation over the predictor grid. A field flipped north-south or east-west,
  // or another variable under the channel's name, keeps its domain mean and sd (so the checks
  // above pass) but not its map. It is judged only where the training mean varies across the
  // domain by kPatternStrength of the boxes' average daily sd or more: over a small domain the
  // climatological map is weaker than a GCM's biases (the Iberia predictors' maps stand 0.1-0.4
  // daily sd strong, and CNRM-CM5's RCP8.5 hus@850 map correlates 0.19 with NCEP's), and a
  // correlation there says nothing. NCEP's 2 m temperature over Iberia on the 2-degree grid (its
  // land-sea map 1.5 daily sd strong, tests/predict/test_new_predictors.cpp): CNRM-CM5's
  // historical and RCP8.5 maps correlate 0.97 with it, the NCEP field flipped north-south 0.31
  // and east-west 0.36. Below kPatternRefused, between the two: refused; below kPatternWarned:
  // warned of. Judged over kPatternDays days read or more: a few days' mean is their weather's
  // map (a cold spell over a 1.5 sd map), not the field's. Stores standardized per field
  // (`standardize: field`) hold one mean for every box: no map, never judged.
  static constexpr double kPatternStrength = 1.0;
  static constexpr size_t kPatternDays = 90;
  static constexpr double kPatternRefused = 0.6;
  static constexpr double kPatternWarned = 0.8;
  struct PatternMatch {
    double strength = 0;  // the training mean map's sd over boxes / the boxes' mean training sd
    double correlation = NAN;  // NaN: fewer than three boxes read, or a flat map on either side
    size_t boxes = 0;
    size_t days = 0;  // days read
    bool judged() const { return strength >= kPatternStrength && days >= kPatternDays && !std::isnan(correlation); }
  };
  PatternMatch pattern_match(size_t c) const;
  void check_departures() const;

 private:
  struct Channel;
  // Channel c's regridded, filled but not standardized fields of days_[first, first + n).
  void read_raw(size_t c, size_t first, size_t n, std::vector<float>& out) const;
  // InputError naming channel c's file, variable, day days_[day] and point: standardized value z
  // lies beyond io/store_checks.h's kImpossibleStandardized (the network's output from it means nothing).
  [[noreturn]] void impossible(size_t c, size_t day, size_t point, float z) const;
  // check_departures' two halves: the warnings (and the filled shares), then the refusals.
  void warn_departures() const;
  void refuse_impossible() const;
  // Which year a day counts in: its season-year when the fetch's season crosses the new year
  // (preprocess/sample_dates.h), else its calendar year.
  SplitYears season_rule() const;
  // "1983-2002", with what a season-year is when the years are season-years.
  std::string reference_years_text(const YearRange& years) const;
  struct Outliers {
    size_t count = 0;
    float worst = 0;
    size_t channel = 0, point = 0;
    int64_t day = 0;
  };
  mutable Outliers outliers_;
  mutable std::vector<double> z_sum_;   // per channel: the sum of the finite standardized values read
  mutable std::vector<size_t> z_count_;
  mutable std::vector<size_t> filled_;  // per channel: predictor-grid values left to the training mean (counted once)
  mutable std::vector<double> box_sum_;  // per channel and box: the sum of the finite values before standardization
  mutable std::vector<uint32_t> box_count_;
  // Per channel and box the first finite standardized value read, and per channel whether any box
  // has read another since: a field that never changes from day to day carries no weather.
  mutable std::vector<float> first_z_;
  mutable std::vector<char> changes_;
  mutable size_t days_read_ = 0;        // days_[0, days_read_) read so far (predict reads them in order)
  std::vector<Channel> channels_;
  std::vector<int64_t> days_;
  std::string calendar_ = "standard", description_;
  const StoreMeta& meta_;
  int fill_;
  std::vector<int> season_;  // the months the fetch cut, in its order (empty: an older manifest)
};

}  // namespace ds
