#include "io/store_splits.h"

namespace ds {

std::string split_years_text(const Config::Preprocess& pp) {
  std::string out;
  const std::pair<const char*, const YearRange*> splits[] = {
      {"train", &pp.train_years}, {"validation", &pp.validation_years}, {"test", &pp.test_years}};
  for (const auto& [name, y] : splits)
    out += (out.empty() ? "" : ", ") + std::string(name) + " " +
           (y->empty() ? "none" : std::to_string(y->first) + ".." + std::to_string(y->last));
  return out;
}

std::string split_years_change(const Config& cfg, const StoreReader& store) {
  const std::string built = store.meta().split_years, now = split_years_text(cfg.preprocess);
  if (built.empty() || built == now) return "";
  return store.path() + " was built with the split years " + built + "; the config now gives " + now +
         ": this stage uses the store's splits; run `downscale preprocess` again (then train) for the config's";
}

}  // namespace ds
