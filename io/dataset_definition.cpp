#include "io/dataset_definition.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "io/error.h"
#include "io/executable_dir.h"

namespace ds {

namespace fs = std::filesystem;

std::string find_dataset_definition(const std::string& name_or_path, const std::string& config_file,
                                    const std::string& origin) {
  const std::string& set_by = origin.empty() ? config_file : origin;
  const bool is_path = name_or_path.find('/') != std::string::npos || fs::path(name_or_path).has_extension();
  if (is_path) {
    if (!fs::exists(name_or_path)) throw UsageError(set_by + ": dataset definition " + name_or_path + " does not exist");
    return name_or_path;
  }
  const fs::path cfg_dir = fs::path(config_file).parent_path();
  // Beside the run config, then under the working folder, then the shipped ones (a config
  // copied elsewhere still finds them): the bundle's configs/datasets beside its bin/ (a bundle
  // runs where the build's source folder does not exist), then the source folder's. A config in
  // configs/ makes the first two one folder: each is looked in, and named in the error, once.
  std::vector<fs::path> candidates{cfg_dir / "datasets", fs::path("configs") / "datasets"};
  if (const std::string bin = executable_dir(); !bin.empty()) {
    const fs::path beside = fs::path(bin).parent_path() / "configs" / "datasets";
    std::error_code ec;
    if (fs::is_directory(beside, ec)) candidates.push_back(beside);
  }
  candidates.push_back(fs::path(DOWNSCALE_DATASETS_DIR));
  std::vector<fs::path> folders;
  for (const fs::path& dir : candidates) {
    const auto same = [&](const fs::path& seen) {
      std::error_code ec1, ec2;
      const fs::path a = fs::weakly_canonical(seen, ec1), b = fs::weakly_canonical(dir, ec2);
      return !ec1 && !ec2 && a == b;
    };
    if (std::none_of(folders.begin(), folders.end(), same)) folders.push_back(dir);
  }
  std::string looked;
  for (size_t i = 0; i < folders.size(); ++i) {
    const fs::path p = folders[i] / (name_or_path + ".yaml");
    if (fs::exists(p)) return p.string();
    looked += (i == 0 ? "" : i + 1 == folders.size() ? " and " : ", ") + folders[i].lexically_normal().string();
  }
  throw UsageError(set_by + ": no dataset definition '" + name_or_path + "' (looked for " + name_or_path +
                   ".yaml in " + looked + ")");
}

std::string canonical_definition(const std::string& definition_file) {
  if (definition_file.empty()) return "";
  // The folder's symlinks resolved, not the file's own: a definition's url may be relative to its
  // folder ({definition_dir}, the folder the link lies in), so a link in another folder to the
  // same file can name other data, and is another definition.
  const fs::path p = fs::absolute(definition_file).lexically_normal();
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(p.parent_path(), ec);
  return ec ? p.string() : (folder / p.filename()).string();
}

std::string resolved_definition(const std::string& spelling, const std::string& config_file) {
  try {
    return canonical_definition(find_dataset_definition(spelling, config_file));
  } catch (const UsageError&) {
    return "";
  }
}

bool same_dataset(const std::string& fetched_spelling, const std::string& fetched_definition,
                  const std::string& asked, const std::string& config_file) {
  if (fetched_spelling.empty() || asked.empty()) return fetched_spelling == asked;  // a source alone
  const std::string now = resolved_definition(asked, config_file);
  // The recorded file decides while it exists: the same spelling that resolves to another file
  // now (the config moved, a definition of that name added beside it) is another dataset. Never
  // recorded (an older manifest) or gone (the project folder moved, a cluster mounts it
  // elsewhere): the fetched spelling as it resolves now stands for it.
  std::error_code ec;
  const bool recorded = !fetched_definition.empty() && fs::exists(fetched_definition, ec);
  if (recorded && !now.empty()) return fetched_definition == now;
  // A name that resolves to nothing now is the same only as its own spelling (preprocess does
  // not read the definition; the manifest names what was fetched).
  if (fetched_spelling == asked) return true;
  const std::string was = recorded ? fetched_definition : resolved_definition(fetched_spelling, config_file);
  return !was.empty() && was == now;
}

}  // namespace ds
