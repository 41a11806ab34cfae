#include "pipeline/stages.h"

#include <algorithm>
#include <filesystem>
#include <vector>

namespace ds {

std::string RunPaths::other_models_hint(const std::string& stage, const std::string& file,
                                        const std::string& what) const {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(root) / stage;
  std::vector<std::string> names;  // "": the unnamed model, whose folder is <stage>/ itself
  std::error_code ec;
  if (!name.empty() && fs::exists(dir / file, ec)) names.push_back("");
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n != name && it->is_directory(ec) && fs::exists(it->path() / file, ec)) names.push_back(n);
  }
  if (names.empty()) return "";
  std::sort(names.begin(), names.end());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + (n.empty() ? "train.name unset" : n);
  return "; " + what + " here: " + list +
         (names.back().empty() ? " (run without train.name)" : " (--set train.name=" + names.back() + ")");
}

}  // namespace ds
