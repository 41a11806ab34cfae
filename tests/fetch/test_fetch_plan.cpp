// Planning without a server: seasons across the new year, longitudes across a 0..360 seam,
// dataset definitions, credentials kept out of what is printed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/error.h"
#include "fetch/dataset.h"
#include "fetch/plan.h"
#include "io/netcdf_file.h"
#include "support/test_support.h"

using namespace ds;

TEST(FetchPlan, RedactsCredentials) {
  EXPECT_EQ(redact_credentials("https://user:secret@host/dods/x"), "https://host/dods/x");
  EXPECT_EQ(redact_credentials("/data/x@500.nc"), "/data/x@500.nc");
}

TEST(FetchPlan, SeasonCrossingTheYearTakesDecemberFromTheYearBefore) {
  const auto djf = season_months(2001, {12, 1, 2});
  const std::vector<std::pair<int, int>> want{{2000, 12}, {2001, 1}, {2001, 2}};
  EXPECT_EQ(djf, want);
  const auto ndjfm = season_months(2001, {11, 12, 1, 2, 3});
  EXPECT_EQ(ndjfm.front(), (std::pair<int, int>{2000, 11}));
  EXPECT_EQ(ndjfm[1], (std::pair<int, int>{2000, 12}));
  EXPECT_EQ(ndjfm.back(), (std::pair<int, int>{2001, 3}));
  const auto jja = season_months(2001, {6, 7, 8});
  EXPECT_EQ(jja, (std::vector<std::pair<int, int>>{{2001, 6}, {2001, 7}, {2001, 8}}));
}

TEST(FetchPlan, LongitudesAcrossTheSeamOfA0To360SourceComeInTwoRunsInOrder) {
  std::vector<double> lon;
  for (int i = 0; i < 72; ++i) lon.push_back(5.0 * i);  // 0..355
  std::vector<double> sel;
  const auto runs = lon_selection(lon, -10, 10, "src", sel);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].start, 70u);  // 350, 355
  EXPECT_EQ(runs[0].count, 2u);
  EXPECT_EQ(runs[1].start, 0u);   // 0..10
  EXPECT_EQ(runs[1].count, 3u);
  EXPECT_EQ(sel, (std::vector<double>{-10, -5, 0, 5, 10}));

  // Entirely west of Greenwich in a 0..360 source: one run, shifted.
  const auto west = lon_selection(lon, -120, -100, "src", sel);
  ASSERT_EQ(west.size(), 1u);
  EXPECT_EQ(west[0].start, 48u);  // 240 = -120
  EXPECT_EQ(sel.front(), -120);
  EXPECT_EQ(sel.back(), -100);

  // A domain that ends at 180: the source's 180 column is its last (it normalizes to -180), in
  // a 0..360 source and in a -180..175 one; and a domain of that meridian alone.
  const auto east = lon_selection(lon, 170, 180, "src", sel);
  EXPECT_EQ(sel, (std::vector<double>{170, 175, 180}));
  ASSERT_EQ(east.size(), 1u);
  EXPECT_EQ(east[0].start, 34u);
  EXPECT_EQ(east[0].count, 3u);
  lon_selection(lon, 180, 180, "src", sel);
  EXPECT_EQ(sel, (std::vector<double>{180}));

  // A cyclic grid that repeats its first column one turn on (0..360, -180..180 both inclusive):
  // the copy is left out, not refused (the fetch fuzz of 2026-12-01: every box reaching 0 was).
  std::vector<double> cyclic = lon;
  cyclic.push_back(360);
  const auto c360 = lon_selection(cyclic, -10, 10, "src", sel);
  EXPECT_EQ(sel, (std::vector<double>{-10, -5, 0, 5, 10}));
  ASSERT_EQ(c360.size(), 2u);
  EXPECT_EQ(c360[1].start, 0u);
  std::vector<double> cyclic180;
  for (int i = 0; i <= 72; ++i) cyclic180.push_back(-180.0 + 5.0 * i);  // -180..180
  lon_selection(cyclic180, 170, 180, "src", sel);
  EXPECT_EQ(sel, (std::vector<double>{170, 175, 180}));
  std::vector<double> twice = lon;
  twice.insert(twice.begin() + 1, 0.0);  // 0 at two columns side by side: refused
  const std::string msg = test::message_of<InputError>([&] { lon_selection(twice, -10, 10, "src", sel); });
  EXPECT_NE(msg.find("src: longitude 0 appears twice (at 0 and 0)"), std::string::npos) << msg;

  // A -180..180 source needs no seam.
  std::vector<double> lon180;
  for (int i = 0; i < 72; ++i) lon180.push_back(-180.0 + 5.0 * i);
  EXPECT_EQ(lon_selection(lon180, -10, 10, "src", sel).size(), 1u);
  const auto edge = lon_selection(lon180, 170, 180, "src", sel);  // -180 read as 180, after 175
  EXPECT_EQ(sel, (std::vector<double>{170, 175, 180}));
  ASSERT_EQ(edge.size(), 2u);
  EXPECT_EQ(edge[0].start, 70u);
  EXPECT_EQ(edge[1].start, 0u);

  // A box across the antimeridian ([170, 190]): the columns east of it with longitudes past 180,
  // in one run of a 0..360 source and two of a -180..180 one.
  const auto across = lon_selection(lon, 170, 190, "src", sel);
  EXPECT_EQ(sel, (std::vector<double>{170, 175, 180, 185, 190}));
  ASSERT_EQ(across.size(), 1u);
  EXPECT_EQ(across[0].start, 34u);
  EXPECT_EQ(across[0].count, 5u);
  const auto across180 = lon_selection(lon180, 170, 190, "src", sel);
  EXPECT_EQ(sel, (std::vector<double>{170, 175, 180, 185, 190}));
  ASSERT_EQ(across180.size(), 2u);
  EXPECT_EQ(across180[1].start, 0u);
  EXPECT_EQ(across180[1].count, 3u);
  // A global grid widened past both ends (more than a turn): the columns it reaches are taken
  // twice, one turn apart, so the cells at the seam see both sides; exactly a turn takes each once.
  lon_selection(lon, -185, 181, "src", sel);
  ASSERT_EQ(sel.size(), 74u);
  EXPECT_EQ(sel.front(), -185);  // the 175 column
  EXPECT_EQ(sel[1], -180);
  EXPECT_EQ(sel.back(), 180);    // the -180 column again
  EXPECT_EQ(lon_selection(lon, -180, 180, "src", sel).size(), 2u);
  EXPECT_EQ(sel.size(), 72u);
  EXPECT_EQ(sel.back(), 175);

  // Nothing inside: the error names the source and what it covers.
  try {
    lon_selection(std::vector<double>{0, 1, 2}, 100, 110, "http://h/era.nc: variable 'Z500'", sel);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("http://h/era.nc: variable 'Z500': no longitudes inside [100, 110]"),
              std::string::npos)
        << e.what();
  }
}

TEST(FetchPlan, ShippedDatasetDefinitionsLoad) {
  const std::string cfg = test::source_dir() + "/configs/demo.yaml";
  const Dataset era = load_dataset("era_interim", cfg);
  EXPECT_EQ(era.variable("z").native_name(500), "Z500");
  EXPECT_TRUE(era.variable("ta").level_in_name());
  EXPECT_EQ(era.variable("z").target_units(), "m2 s-2");
  EXPECT_EQ(era.variable("z").std_units, "m2 s-2");
  EXPECT_EQ(era.url.rfind("https://", 0), 0u);
  const Dataset ewembi = load_dataset("ewembi", cfg);
  EXPECT_DOUBLE_EQ(ewembi.variable("pr").scale, 86400);
  EXPECT_EQ(ewembi.variable("pr").std_units, "mm/day");
  const Dataset synth = load_dataset("synth_era_interim", cfg);
  EXPECT_EQ(synth.variable("hus").native_name(850), "hus");
  EXPECT_FALSE(synth.variable("hus").level_in_name());
  // The synthetic sources are where the run config's synth.dir says `downscale synth` wrote them.
  EXPECT_EQ(load_dataset("synth_ewembi", cfg).url, "data/synth/ewembi_synth.nc");
  EXPECT_TRUE(load_dataset("synth_ewembi", cfg).synthetic);
  EXPECT_EQ(load_dataset("synth_ewembi", cfg, "/scratch/synth").url, "/scratch/synth/ewembi_synth.nc");
  EXPECT_FALSE(ewembi.synthetic);
  // A variable the dataset does not define: the error names the definition file.
  try {
    era.variable("tas");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("era_interim.yaml: dataset 'ERA-Interim (UDG, daily)' defines no variable 'tas'"),
              std::string::npos)
        << e.what();
  }
}

TEST(FetchPlan, DatasetDefinitionErrorsNameFileAndKey) {
  test::TempDir d;
  std::ofstream(d / "bad.yaml") << "name: x\nurl: a.nc\nvariables:\n  z: {native: z, scael: 2}\n";
  try {
    load_dataset(d / "bad.yaml", d / "run.yaml");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml: variables.z: unknown key 'scael'"), std::string::npos) << e.what();
  }
  // A scale on a variable without a standard unit, and no std_units: its values would be labelled
  // with the source's unit (rsds in W m-2 scaled to MJ m-2 day-1). With std_units it loads.
  std::ofstream(d / "rsds.yaml") << "name: x\nurl: a.nc\nvariables:\n  rsds: {native: rsds, units: W m-2, scale: 0.0864}\n";
  const std::string msg = test::message_of<UsageError>([&] { load_dataset(d / "rsds.yaml", d / "run.yaml"); });
  EXPECT_NE(msg.find("rsds.yaml: variables.rsds: key 'scale' converts the values, but 'rsds' has no standard unit"),
            std::string::npos)
      << msg;
  std::ofstream(d / "rsds_mj.yaml")
      << "name: x\nurl: a.nc\nvariables:\n  rsds: {native: rsds, units: W m-2, scale: 0.0864, std_units: MJ m-2 day-1}\n";
  EXPECT_EQ(load_dataset(d / "rsds_mj.yaml", d / "run.yaml").variable("rsds").std_units, "MJ m-2 day-1");
  std::ofstream(d / "hourly.yaml") << "name: x\nurl: a.nc\ntime_step: 6h\nvariables:\n  z: {native: z}\n";
  EXPECT_THROW(load_dataset(d / "hourly.yaml", d / "run.yaml"), UsageError);
  EXPECT_THROW(load_dataset("no_such_dataset", d / "run.yaml"), UsageError);
}

TEST(FetchPlan, DatasetUrlPlaceholders) {
  test::TempDir d;
  std::filesystem::create_directories(d / "defs");
  // {definition_dir}: the definition's own folder, so data shipped beside it is found from any
  // working folder; a plain relative url stays relative to the working folder.
  std::ofstream(d / "defs/here.yaml") << "name: x\nurl: \"{definition_dir}/../data\"\nvariables:\n  z: {native: z}\n";
  EXPECT_EQ(load_dataset(d / "defs/here.yaml", d / "run.yaml").url, d / "data");
  std::ofstream(d / "defs/plain.yaml") << "name: x\nurl: data/a.nc\nvariables:\n  z: {native: z}\n";
  EXPECT_EQ(load_dataset(d / "defs/plain.yaml", d / "run.yaml").url, "data/a.nc");
  std::ofstream(d / "defs/synth.yaml") << "name: x\nurl: \"{synth.dir}/a.nc\"\nvariables:\n  z: {native: z}\n";
  EXPECT_EQ(load_dataset(d / "defs/synth.yaml", d / "run.yaml", "out/synth").url, "out/synth/a.nc");
  // A misspelt placeholder is a definition error naming the file and the placeholder.
  std::ofstream(d / "defs/typo.yaml") << "name: x\nurl: \"{synth_dir}/a.nc\"\nvariables:\n  z: {native: z}\n";
  try {
    load_dataset(d / "defs/typo.yaml", d / "run.yaml");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("typo.yaml: key 'url' has the unknown placeholder '{synth_dir}'"), std::string::npos)
        << e.what();
  }
}

TEST(FetchPlan, MissingDefinitionNamesEachFolderOnce) {
  // A run config in a folder named configs: its datasets/ and the working folder's
  // configs/datasets are one folder when run from the folder above.
  test::TempDir d;
  std::filesystem::create_directories(d / "configs/datasets");
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(d.path());
  std::string what;
  try {
    load_dataset("nope", "configs/run.yaml");
  } catch (const UsageError& e) {
    what = e.what();
  }
  std::filesystem::current_path(cwd);
  EXPECT_NE(what.find("configs/run.yaml: no dataset definition 'nope' (looked for nope.yaml in configs/datasets and "),
            std::string::npos)
      << what;
  EXPECT_EQ(what.find("configs/datasets and configs/datasets"), std::string::npos) << what;
}

// The providers' global attributes whatever their case (E-OBS writes References), a number as
// text (a DOI written as an integer), one name in two cases with both texts, and nothing else.
TEST(FetchPlan, ProvenanceGlobalsInAnyCaseNumbersAsTextAndNoneDropped) {
  test::TempDir d;
  {
    NcFile nc = NcFile::create(d / "src.nc");
    nc.put_att(NC_GLOBAL, "References", "https://a.example");
    nc.put_att(NC_GLOBAL, "references", "https://b.example");
    nc.put_att(NC_GLOBAL, "DOI", 12345, NC_INT);
    nc.put_att(NC_GLOBAL, "LICENCE", "CC-BY 4.0");
    nc.put_att(NC_GLOBAL, "history", "not a provider's term");
    nc.put_att(NC_GLOBAL, "title", "");
    nc.end_define();
    nc.close();
  }
  const auto g = provenance_globals(NcFile::open(d / "src.nc"));
  const std::map<std::string, std::string> want{
      {"references", "https://a.example; https://b.example"}, {"doi", "12345"}, {"licence", "CC-BY 4.0"}};
  EXPECT_EQ(g, want);
}
