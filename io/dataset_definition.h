// Where a dataset definition (configs/datasets/<name>.yaml) lies, and whether two spellings of
// fetch.<side>.dataset mean the same one. In io/ because two stages need it: fetch reads the
// definition, and preprocess checks that the data fetched are of the dataset the config names
// now ("eobs" and "configs/datasets/eobs.yaml" are one dataset, not an edit).
#pragma once
#include <string>

namespace ds {

// The definition file of a dataset given by name (looked up as <config folder>/datasets/<name>.yaml,
// then configs/datasets/<name>.yaml under the working folder, then a bundle's configs/datasets
// beside its bin/, then the shipped ones) or by path (a value with a '/' or an extension).
// UsageError when there is none, blamed on `origin` (where the name was set; "": config_file).
std::string find_dataset_definition(const std::string& name_or_path, const std::string& config_file,
                                    const std::string& origin = "");

// The definition's path made absolute, its folder free of symlinks (the file's own link is kept:
// a url relative to {definition_dir} reads beside the link), for the fetch manifest to record:
// "" for "" (a run config that names a source, no dataset).
std::string canonical_definition(const std::string& definition_file);

// The canonical definition file `spelling` resolves to from the config at `config_file`; "" when
// there is none.
std::string resolved_definition(const std::string& spelling, const std::string& config_file);

// Whether fetch.<side>.dataset `asked` (as the config at `config_file` spells it now) names the
// dataset recorded as fetched. With the fetched definition file recorded (`fetched_definition`)
// and `asked` resolving to a file, the two files decide, whatever the spellings, while the
// recorded file still exists (it is gone when the project folder moved: then as without a
// record). Otherwise (a manifest from before the record, or `asked` resolves to no file now): the
// same spelling, or two spellings that resolve to the same file from this config.
bool same_dataset(const std::string& fetched_spelling, const std::string& fetched_definition,
                  const std::string& asked, const std::string& config_file);

}  // namespace ds
