#include "train/store_splits.h"

namespace ds {

std::string split_years_change(const Config& cfg, const StoreReader& store) {
  const std::string built = store.meta().split_years, now = cfg.preprocess.split_years_text();
  if (built.empty() || now.empty() || built == now) return "";
  return store.path() + " was built with the split years " + built + "; the config now gives " + now +
         ": this stage uses the store's splits; for the config's, run `downscale preprocess` again and the stages "
         "after it";
}

}  // namespace ds
