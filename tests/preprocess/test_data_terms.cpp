// preprocess/data_terms.h: the providers' texts by field, one line each; closed texts.
#include <gtest/gtest.h>

#include "preprocess/data_terms.h"

using namespace ds;

TEST(DataTerms, OneLinePerDistinctTextNamingItsFieldsInOrder) {
  DataTerms t;
  t.add("z@500", "https://era.example", "ERA terms");
  t.add("ta@850", "https://era.example", "ERA terms");
  t.add("pr", "https://eobs.example", "");
  t.add("z@500", "https://era.example", "ERA terms");  // a field added twice is named once
  EXPECT_EQ(t.references(), "z@500, ta@850: https://era.example\npr: https://eobs.example");
  EXPECT_EQ(t.license(), "z@500, ta@850: ERA terms");
}

// A provider's text over several lines is one line here (else its second line would read as an
// entry without fields); a blank one is no text.
TEST(DataTerms, MultiLineTextsAreOneLineAndBlankOnesAreLeftOut) {
  DataTerms t;
  t.add("psl", "  first line\n  second line\r\n", "   \n ");
  t.add("tas", "first line second line", "");
  EXPECT_EQ(t.references(), "psl, tas: first line second line");
  EXPECT_EQ(t.license(), "");
}
