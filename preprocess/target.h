// The predictand as the model sees it, for any observed variable (the manifest's predictand):
//   pr (precipitation): arrives in kg m-2 s-1 (a flux) or mm/day and becomes mm/day; the target
//       is the amount above the wet-day threshold (pr - 0.99 where pr >= 0.99, else 0), so the
//       gamma part of the Bernoulli-Gamma loss models wet-day amounts and the Bernoulli part the
//       occurrence.
//   anything else (tas from E-OBS tg in Celsius, ...): kept in the fetched file's units; the
//       target is the observed value (for the Gaussian or MSE losses).
// Land mask: a box is modelled when it is observed on at least preprocess.min_valid_fraction of
// the training days (E-OBS stations come and go; a box missing a few days is still land). Its
// missing days, and every day of the other boxes (ocean, too sparse, padding), are NaN in the
// target and in the stored observation, and the losses skip them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds {

constexpr double kSecondsPerDay = 86400.0;

// Converts a flux in kg m-2 s-1 to mm/day in place (1 kg m-2 of water is 1 mm). Throws InputError
// naming `where` if the units are neither a flux nor mm/day.
void to_mm_per_day(std::vector<float>& pr, const std::string& units, const std::string& where);

// Counts, per box, the days on which it is observed (finite), block by block.
class ObservedDays {
 public:
  explicit ObservedDays(size_t npoints) : count_(npoints, 0) {}
  void add(const std::vector<float>& fields);  // ntime x npoints, time-major
  size_t days() const { return days_; }
  // 1 where observed on at least `min_fraction` of the days added (and on at least one), else 0.
  std::vector<uint8_t> mask(double min_fraction) const;

 private:
  std::vector<size_t> count_;
  size_t days_ = 0;
};

// The training target of a block of observations (ntime x mask.size(), time-major):
// precipitation (mm/day): amount above `threshold` where >= it, else 0; any other predictand: the
// value. NaN wherever the box is not modelled (mask 0) or the day is not observed.
std::vector<float> training_target(const std::vector<float>& obs, const std::vector<uint8_t>& mask, bool precipitation,
                                   double threshold);

// The observation as stored: NaN where the box is not modelled (mask 0), the value elsewhere
// (NaN on its missing days). In place.
void mask_observation(std::vector<float>& obs, const std::vector<uint8_t>& mask);

}  // namespace ds
