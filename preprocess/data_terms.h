// Whom to cite and on what terms, for a product made from fetched data: each fetched file's
// original_references and original_license (or original_licence), which fetch copies from the
// source (fetch/plan.h: provenance_globals), each text once with the fields that carry it (a
// dataset's fields share their source's terms). The store keeps them and predict
// writes them into every prediction, so that a file shared on its own still carries the data
// providers' terms ("terms of the original data providers apply") and where to cite them.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace ds {

class FetchedField;

class DataTerms {
 public:
  // The terms of the fetched file of `field` (its name in the manifest: "z@500", "pr").
  void add(const std::string& field, const FetchedField& file);
  void add(const std::string& field, const std::string& references, const std::string& license);

  // One line per distinct text (its white space runs, newlines included, made one space; blank
  // texts left out), naming the fields that carry it in the order they were added:
  // "z@500, ta@850: https://…"; "" when no field carries any.
  std::string references() const { return text(references_); }
  std::string license() const { return text(licenses_); }

 private:
  using Texts = std::vector<std::pair<std::string, std::vector<std::string>>>;  // text, its fields
  static void note(Texts& texts, const std::string& field, const std::string& raw);
  static std::string text(const Texts& texts);
  Texts references_, licenses_;
};

}  // namespace ds
