// Real archives' layouts, on generated local files: units however spelled (udunits2), url
// templates resolved against a base or the run's source, the level from a dimension, a scalar
// coordinate, an attribute or the file name (and a contradiction refused), CF calendars
// (noleap, 360_day) through the plan and a fetched chunk, one file per year, and a manifest
// without a predictand.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>

#include "fetch/chunk.h"
#include "fetch/dataset.h"
#include "fetch/ledger.h"
#include "fetch/plan.h"
#include "io/units.h"
#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/netcdf_file.h"
#include "support/fetch_support.h"
#include "support/test_support.h"

using namespace ds;
using test::Field;
using test::read_field;

namespace {

constexpr size_t kPiece = 64 << 20;

// How a generated file states its level (if at all).
enum class LevelBy { none, dimension, scalar_coordinate, attribute };

struct SourceSpec {
  std::string var = "ta", units = "K", calendar = "standard", time_units = "days since 2000-01-01";
  std::string standard_name;  // none when empty
  int ndays = 731;          // from the reference date, in the calendar
  LevelBy level_by = LevelBy::none;
  double level = 850;       // in level_units
  std::string level_units = "hPa";
  // Each day's mean stamped at the end of its interval (day i at i + 1, 00:00) with CF bounds
  // [i, i + 1] saying so, as some models write daily means.
  bool end_stamped_with_bounds = false;
};

// A 3 x 4 grid (lat 30..40 step 5, lon 0..15 step 5); value = 1000 * level_index + day number
// since the reference + lat/100 (so values identify their day and point).
void write_source(const std::string& path, const SourceSpec& s) {
  NcFile nc = NcFile::create(path);
  const int dt = nc.def_dim("time", 0), dy = nc.def_dim("lat", 3), dx = nc.def_dim("lon", 4);
  int dz = -1, z = -1;
  if (s.level_by == LevelBy::dimension) {
    dz = nc.def_dim("plev", 2);
    z = nc.def_var("plev", NC_DOUBLE, {dz});
    nc.put_att(z, "units", s.level_units);
  }
  if (s.level_by == LevelBy::scalar_coordinate) {
    z = nc.def_var("height_level", NC_DOUBLE, {});
    nc.put_att(z, "units", s.level_units);
  }
  const int t = nc.def_var("time", NC_DOUBLE, {dt});
  nc.put_att(t, "units", s.time_units);
  nc.put_att(t, "calendar", s.calendar);
  int tb = -1;
  if (s.end_stamped_with_bounds) {
    nc.put_att(t, "bounds", "time_bnds");
    tb = nc.def_var("time_bnds", NC_DOUBLE, {dt, nc.def_dim("bnds", 2)});
  }
  const int y = nc.def_var("lat", NC_DOUBLE, {dy}), x = nc.def_var("lon", NC_DOUBLE, {dx});
  const int v = nc.def_var(s.var, NC_FLOAT, dz >= 0 ? std::vector<int>{dt, dz, dy, dx} : std::vector<int>{dt, dy, dx});
  nc.put_att(v, "units", s.units);
  if (!s.standard_name.empty()) nc.put_att(v, "standard_name", s.standard_name);
  if (s.level_by == LevelBy::scalar_coordinate) nc.put_att(v, "coordinates", "height_level");
  if (s.level_by == LevelBy::attribute) {
    nc.put_att(v, "level", s.level);
    nc.put_att(v, "level_units", s.level_units);
  }
  nc.end_define();
  const std::vector<double> lat{30, 35, 40}, lon{0, 5, 10, 15};
  nc.write(y, lat.data());
  nc.write(x, lon.data());
  if (s.level_by == LevelBy::dimension) {
    const std::vector<double> plev{s.level / 2, s.level};
    nc.write(z, plev.data());
  }
  if (s.level_by == LevelBy::scalar_coordinate) nc.write(z, &s.level);
  const size_t nz = s.level_by == LevelBy::dimension ? 2 : 1;
  std::vector<float> day(nz * 12);
  for (size_t i = 0; i < static_cast<size_t>(s.ndays); ++i) {
    const double ti = static_cast<double>(i);
    const double stamp = s.end_stamped_with_bounds ? ti + 1 : ti, cell[2] = {ti, ti + 1};
    nc.write(t, {i}, {1}, &stamp);
    if (tb >= 0) nc.write(tb, {i, 0}, {1, 2}, cell);
    for (size_t k = 0; k < nz; ++k)
      for (size_t j = 0; j < 3; ++j)
        for (size_t l = 0; l < 4; ++l) day[(k * 3 + j) * 4 + l] = static_cast<float>(1000.0 * k + ti + lat[j] / 100);
    if (nz == 2) nc.write(v, {i, 0, 0, 0}, {1, 2, 3, 4}, day.data());
    else nc.write(v, {i, 0, 0}, {1, 3, 4}, day.data());
  }
}

// One file per year, <var>.<year>.nc, each with its own reference date (as NCEP's yearly files).
void write_yearly(const std::string& dir, const std::string& var, const std::string& units, const std::vector<int>& years) {
  for (int y : years) {
    SourceSpec s;
    s.var = var;
    s.units = units;
    s.time_units = "days since " + std::to_string(y) + "-01-01";
    s.ndays = days_in_year(y);
    write_source(dir + "/" + var + "." + std::to_string(y) + ".nc", s);
  }
}

Config::Fetch request(int y0, int y1, std::vector<int> season) {
  Config::Fetch f;
  f.lon_min = 0, f.lon_max = 15, f.lat_min = 30, f.lat_max = 40;
  f.years = {y0, y1};
  f.season = std::move(season);
  return f;
}

Dataset one_variable(const std::string& var, const std::string& native, const std::string& url,
                     const std::string& units) {
  Dataset d;
  d.name = "test";
  d.file = "test.yaml";
  d.variables[var].native = native;
  d.variables[var].url = url;
  if (!units.empty()) d.variables[var].units = {units};
  d.variables[var].std_units = units;
  return d;
}

// Plans through an opener that counts the opens per URL.
FetchPlan plan(const std::string& base, const Dataset& d, const FieldWanted& w, const Config::Fetch& req,
               std::map<std::string, int>* opens = nullptr) {
  std::map<std::string, NcFile> open;
  const SourceOpener opener = [&](const std::string& url) -> const NcFile& {
    if (opens) ++(*opens)[url];
    auto it = open.find(url);
    if (it == open.end()) it = open.emplace(url, open_source(url)).first;
    return it->second;
  };
  FetchPlan p;
  plan_field(opener, base, d, w, req, p);
  return p;
}


}  // namespace

TEST(FetchUnits, ArchiveSpellingsConvertThroughUdunits) {
  const auto same = [](const char* a, const char* b) {
    const UnitConversion c = unit_conversion(a, b, "f.nc: variable 'x'");
    EXPECT_TRUE(c.identity()) << a << " -> " << b << ": x" << c.scale << " + " << c.offset;
  };
  same("Kg/m^2/s", "kg m-2 s-1");
  same("kg.kg-1", "kg kg-1");
  same("1", "kg kg-1");
  same("Pascals", "Pa");
  same("m**2 s**-2", "m2 s-2");
  same("Celsius", "degC");
  same("millibars", "hPa");
  same("k", "K");
  const UnitConversion c = unit_conversion("Celsius", "K", "w");
  EXPECT_DOUBLE_EQ(c.scale, 1);
  EXPECT_DOUBLE_EQ(c.offset, 273.15);
  EXPECT_DOUBLE_EQ(unit_conversion("Pa", "hPa", "w").scale, 0.01);
  EXPECT_DOUBLE_EQ(unit_conversion("K", "degC", "w").offset, -273.15);
  // Spelled out with a space, udunits multiplies an angle in degrees by the scale: a factor
  // pi/180 (CRU TS's "degrees Celsius" came out at -273 degC). Each is the scale itself.
  for (const char* spelled : {"degrees Celsius", "degree Celsius", "Degrees C", "deg C", "degrees centigrade"}) {
    const UnitConversion d = unit_conversion(spelled, "K", "w");
    EXPECT_DOUBLE_EQ(d.scale, 1) << spelled;
    EXPECT_DOUBLE_EQ(d.offset, 273.15) << spelled;
  }
  same("degrees Kelvin", "K");
  EXPECT_NEAR(unit_conversion("degrees Fahrenheit", "degC", "w").scale, 5.0 / 9, 1e-12);
  EXPECT_TRUE(units_known("kg m**-2 s**-1"));
  EXPECT_FALSE(units_known("furlongs of bogus"));
  // Metres are no temperature: the error names where and both units.
  EXPECT_NE(test::message_of<InputError>([] { unit_conversion("m", "K", "f.nc: variable 'tas'"); })
                .find("f.nc: variable 'tas': units 'm' cannot be converted to 'K'"),
            std::string::npos);
  EXPECT_NE(test::message_of<InputError>([] { unit_conversion("bogus", "K", "f.nc: variable 'tas'"); }).find("'bogus'"), std::string::npos);
}

TEST(FetchArchives, UrlTemplatesResolveAgainstTheBaseWithOrWithoutASlash) {
  DatasetVariable v;
  v.url = "pressure/{var}.{year}.nc";
  EXPECT_EQ(v.url_for("https://psl.noaa.gov/thredds/dodsC/Datasets/ncep", "ta", 850, 1983),
            "https://psl.noaa.gov/thredds/dodsC/Datasets/ncep/pressure/ta.1983.nc");
  EXPECT_EQ(v.url_for("http://127.0.0.1:8080/", "ta", 850, 1983), "http://127.0.0.1:8080/pressure/ta.1983.nc");
  EXPECT_EQ(v.url_for("", "ta", 850, 1983), "pressure/ta.1983.nc");  // relative to the working folder
  EXPECT_TRUE(v.year_in_url());
  EXPECT_FALSE(v.level_in_url());
  v.url = "NCEP_Iberia_{var}{level}.nc";
  EXPECT_EQ(v.url_for("tests/data/iberia", "hus", 850, 0), "tests/data/iberia/NCEP_Iberia_hus850.nc");
  EXPECT_TRUE(v.level_in_url());
  v.url = "https://elsewhere.org/x/{var}.nc";  // absolute: the base does not apply
  EXPECT_EQ(v.url_for("tests/data", "psl", 0, 0), "https://elsewhere.org/x/psl.nc");
  v.url = "";  // no url of its own: the dataset's (or the source's) file
  EXPECT_EQ(v.url_for("http://h/era.nc", "z", 500, 2000), "http://h/era.nc");
}

TEST(FetchArchives, TheShippedDefinitionsForRealArchivesLoad) {
  const std::string cfg = test::source_dir() + "/configs/demo.yaml";
  for (const char* name : {"ncep_reanalysis1", "era5", "cmip5", "cmip6", "eobs", "iberia_ncep", "iberia_eobs",
                           "iberia_cnrm_cm5_historical", "iberia_cnrm_cm5_rcp85"})
    EXPECT_NO_THROW(load_dataset(name, cfg)) << name;
  const Dataset ncep = load_dataset("iberia_ncep", cfg);
  // {definition_dir}/../../tests/data/iberia: the source tree's folder, whatever the working folder.
  const std::string iberia = test::source_dir() + "/tests/data/iberia";
  EXPECT_EQ(ncep.url, iberia);
  EXPECT_EQ(ncep.variable("hus").url_for(ncep.url, "hus", 850, 0), iberia + "/NCEP_Iberia_hus850.nc");
  EXPECT_EQ(ncep.variable("tas").std_units, "K");  // Celsius in the file, K written
  const Dataset eobs = load_dataset("iberia_eobs", cfg);
  EXPECT_EQ(eobs.variable("tas").native, "tg");
  EXPECT_EQ(eobs.variable("tas").std_units, "degC");  // E-OBS temperatures stay in Celsius
  const Dataset noaa = load_dataset("ncep_reanalysis1", cfg);
  EXPECT_EQ(noaa.variable("ta").url_for(noaa.url, "ta", 850, 1983),
            "https://psl.noaa.gov/thredds/dodsC/Datasets/ncep.reanalysis.dailyavgs/pressure/air.1983.nc");
  EXPECT_DOUBLE_EQ(noaa.variable("z").scale, 9.80665);
  EXPECT_EQ(noaa.variable("z").std_units, "m2 s-2");
  const Dataset rr = load_dataset("eobs", cfg);
  EXPECT_EQ(rr.variable("pr").std_units, "mm/day");
  EXPECT_EQ(load_dataset("cmip6", cfg).variable("pr").std_units, "mm/day");
  // The definitions shipped before keep their meaning.
  EXPECT_EQ(load_dataset("ewembi", cfg).variable("pr").target_units(), "kg m-2 s-1");
  EXPECT_EQ(load_dataset("synth_era_interim", cfg).variable("ta").std_units, "K");
  // A unit udunits does not know is a definition error.
  test::TempDir d;
  std::ofstream(d / "bad.yaml") << "name: x\nurl: a\nvariables:\n  ta: {native: ta, units: degrees of bogus}\n";
  EXPECT_THROW(load_dataset(d / "bad.yaml", d / "run.yaml"), UsageError);
}

TEST(FetchArchives, TheLevelComesFromADimensionAScalarCoordinateAnAttributeOrTheFileName) {
  test::TempDir d;
  const auto req = request(2000, 2000, {1});
  SourceSpec s;
  s.level_by = LevelBy::dimension;
  s.level = 85000;
  s.level_units = "Pa";
  write_source(d / "dim.nc", s);
  const FetchPlan dim = plan(d.path(), one_variable("ta", "ta", "dim.nc", "K"), {"ta@850", "ta", 850}, req);
  EXPECT_EQ(dim.fields[0].z_ax, 1);
  EXPECT_EQ(dim.fields[0].encodings.at(0).level_index, 1u);
  s.level = 850;
  s.level_units = "millibars";
  write_source(d / "dim_mbar.nc", s);
  EXPECT_EQ(plan(d.path(), one_variable("ta", "ta", "dim_mbar.nc", "K"), {"ta@425", "ta", 425}, req).fields[0].encodings.at(0).level_index,
            0u);

  s.level_by = LevelBy::scalar_coordinate;
  s.level = 85000;
  s.level_units = "Pa";
  write_source(d / "scalar.nc", s);
  EXPECT_EQ(plan(d.path(), one_variable("ta", "ta", "scalar.nc", "K"), {"ta@850", "ta", 850}, req).fields[0].z_ax, -1);
  EXPECT_NE(test::message_of<InputError>([&] { plan(d.path(), one_variable("ta", "ta", "scalar.nc", "K"), {"ta@500", "ta", 500}, req); })
                .find("scalar.nc: variable 'ta': holds level 850 hPa (scalar coordinate 'height_level') but level 500 "
                      "hPa was requested"),
            std::string::npos);

  s.level_by = LevelBy::attribute;
  s.level = 850;
  s.level_units = "hPa";
  write_source(d / "attr.nc", s);
  EXPECT_NO_THROW(plan(d.path(), one_variable("ta", "ta", "attr.nc", "K"), {"ta@850", "ta", 850}, req));
  EXPECT_NE(test::message_of<InputError>([&] { plan(d.path(), one_variable("ta", "ta", "attr.nc", "K"), {"ta@700", "ta", 700}, req); })
                .find("attr.nc: variable 'ta': holds level 850 hPa (attribute 'level') but level 700 hPa was requested"),
            std::string::npos);
  // A bare variable for a file that holds one level: asked as var@level instead.
  EXPECT_NE(test::message_of<InputError>([&] { plan(d.path(), one_variable("ta", "ta", "attr.nc", "K"), {"ta", "ta", 0}, req); })
                .find("request it as ta@850"),
            std::string::npos);

  // Nothing in the file: the level is the file's name ({level} in the url), else an error.
  s.level_by = LevelBy::none;
  write_source(d / "ta500.nc", s);
  const FetchPlan named = plan(d.path(), one_variable("ta", "ta", "{var}{level}.nc", "K"), {"ta@500", "ta", 500}, req);
  EXPECT_EQ(named.fields[0].url, d / "ta500.nc");
  // The same without a level: a usage error saying how to write it, not a missing "ta0.nc".
  EXPECT_NE(test::message_of<UsageError>([&] { plan(d.path(), one_variable("ta", "ta", "{var}{level}.nc", "K"), {"ta", "ta", 0}, req); })
                .find("holds ta on pressure levels: name one, e.g. ta@850"),
            std::string::npos);
  // As the predictand, which takes no level, it is refused as such.
  const std::string as_predictand = test::message_of<UsageError>([&] {
    plan(d.path(), one_variable("ta", "ta", "{var}{level}.nc", "K"), FieldWanted::predictand("ta"), req);
  });
  EXPECT_EQ(as_predictand.rfind("fetch.predictand.variable: 'ta': dataset", 0), 0u) << as_predictand;
  EXPECT_NE(as_predictand.find("on pressure levels, and the predictand is a single-level field"), std::string::npos)
      << as_predictand;
  EXPECT_NE(test::message_of<InputError>([&] { plan(d.path(), one_variable("ta", "ta", "ta500.nc", "K"), {"ta@500", "ta", 500}, req); })
                .find("has no level dimension, scalar level coordinate or level attribute, but level 500 hPa was requested"),
            std::string::npos);
  // A surface field needs no level at all.
  SourceSpec psl;
  psl.var = "psl";
  psl.units = "Pascals";
  write_source(d / "psl.nc", psl);
  const FetchPlan p = plan(d.path(), one_variable("psl", "psl", "psl.nc", "Pa"), {"psl", "psl", 0}, req);
  EXPECT_EQ(p.fields[0].name, "psl");
  EXPECT_TRUE(p.fields[0].convert.identity());
}

TEST(FetchArchives, NoleapAnd360DaySourcesGiveTheirOwnCalendarsDays) {
  test::TempDir d;
  for (const char* cal : {"noleap", "360_day", "standard"}) {
    SourceSpec s;
    s.calendar = cal;
    write_source(d / (std::string(cal) + ".nc"), s);
    const Calendar c = parse_calendar(cal, "test");
    // DJF of season-year 2001, and February 2000 (a leap year on the standard calendar).
    const FetchPlan p =
        plan(d.path(), one_variable("ta", "ta", std::string(cal) + ".nc", "K"), {"ta", "ta", 0}, request(2001, 2001, {12, 1, 2}));
    ASSERT_EQ(p.fields[0].calendar, c);
    const ChunkPlan& djf = p.chunks[0];  // Dec 2000, Jan 2001, Feb 2001
    const size_t want = std::string(cal) == "360_day" ? 90u : 31u + 31u + 28u;
    EXPECT_EQ(djf.days.size(), want) << cal;
    EXPECT_EQ(djf.days.front(), days_from_date({2000, 12, 1}, c));
    EXPECT_EQ(djf.days.back(), days_from_date({2001, 2, std::string(cal) == "360_day" ? 30 : 28}, c));

    // Fetched: the days of that calendar, written with its CF name; values are the source's.
    test::TempDir out;
    const FetchPlan feb = plan(d.path(), one_variable("ta", "ta", std::string(cal) + ".nc", "K"), {"ta", "ta", 0},
                               request(2000, 2000, {2}));
    const ChunkPlan& c0 = feb.chunks[0];
    const size_t nfeb = std::string(cal) == "360_day" ? 30u : std::string(cal) == "noleap" ? 28u : 29u;
    ASSERT_EQ(c0.days.size(), nfeb) << cal;
    fetch_chunk(feb.fields[0], c0, out / "feb.nc", kPiece);
    NcFile nc = NcFile::open(out / "feb.nc");
    EXPECT_EQ(nc.att_text(nc.var_id("time"), "calendar"), cf_name(c));
    const Field f = read_field(out / "feb.nc", "ta");
    const int64_t ref = days_from_date({2000, 1, 1}, c);  // the source's reference date
    for (size_t t = 0; t < f.days.size(); ++t) {
      EXPECT_EQ(f.days[t], days_from_date({2000, 2, static_cast<int>(t) + 1}, c)) << cal;
      EXPECT_NEAR(f.values[t * 12], static_cast<double>(f.days[t] - ref) + 0.30, 1e-3) << cal;
    }
    // The joined field (what preprocess reads) keeps the calendar too.
    EXPECT_EQ(join_chunks(feb.fields[0], {out / "feb.nc"}, out / "ta.nc", "test", kPiece), nfeb);
    NcFile joined = NcFile::open(out / "ta.nc");
    EXPECT_EQ(joined.att_text(joined.var_id("time"), "calendar"), cf_name(c));
    EXPECT_EQ(read_field(out / "ta.nc", "ta").days, f.days);
  }
}

// A daily mean stamped at the end of its day (the next day at 00:00) with CF bounds saying so is
// that day's: read from the stamp alone, every value was fetched under the next day's date.
TEST(FetchArchives, DaysComeFromTheTimeBoundsWhereTheFileHasThem) {
  test::TempDir d;
  SourceSpec s;
  s.end_stamped_with_bounds = true;
  write_source(d / "end.nc", s);
  const FetchPlan p = plan(d.path(), one_variable("ta", "ta", "end.nc", "K"), {"ta", "ta", 0}, request(2000, 2000, {2}));
  const ChunkPlan& feb = p.chunks[0];
  ASSERT_EQ(feb.days.size(), 29u);
  test::TempDir out;
  fetch_chunk(p.fields[0], feb, out / "feb.nc", kPiece);
  const Field f = read_field(out / "feb.nc", "ta");
  const int64_t ref = days_from_date({2000, 1, 1}, Calendar::standard);
  ASSERT_EQ(f.days.front(), days_from_date({2000, 2, 1}, Calendar::standard));
  for (size_t t = 0; t < f.days.size(); ++t)  // the value written for day i is day i's
    EXPECT_NEAR(f.values[t * 12], static_cast<double>(f.days[t] - ref) + 0.30, 1e-3) << t;

  // A stamp outside its own bounds is a broken file, named, not a guess.
  int id = -1, tb = -1;
  ASSERT_EQ(nc_open((d / "end.nc").c_str(), NC_WRITE, &id), NC_NOERR);
  ASSERT_EQ(nc_inq_varid(id, "time_bnds", &tb), NC_NOERR);
  const size_t start[2] = {40, 0}, count[2] = {1, 2};
  const double off[2] = {100, 101};
  ASSERT_EQ(nc_put_vara_double(id, tb, start, count, off), NC_NOERR);
  ASSERT_EQ(nc_close(id), NC_NOERR);
  EXPECT_NE(test::message_of<InputError>([&] { plan(d.path(), one_variable("ta", "ta", "end.nc", "K"), {"ta", "ta", 0}, request(2000, 2000, {2})); })
                .find("time step 40 (41) lies outside its bounds [100, 101] ('time_bnds')"),
            std::string::npos);
  // A stamp a rounding error past its bound (5e-4 of the interval, 43 s of a day) is the same day.
  const double near[2] = {40, 40.9995};
  ASSERT_EQ(nc_open((d / "end.nc").c_str(), NC_WRITE, &id), NC_NOERR);
  ASSERT_EQ(nc_put_vara_double(id, tb, start, count, near), NC_NOERR);
  ASSERT_EQ(nc_close(id), NC_NOERR);
  EXPECT_NO_THROW(plan(d.path(), one_variable("ta", "ta", "end.nc", "K"), {"ta", "ta", 0}, request(2000, 2000, {2})));

  // The ledger's request says the days come from the bounds: a chunk fetched under the stamps'
  // reading (one day late, before the bounds were read) is fetched again, not reused beside chunks
  // of the bounds' reading in one folder.
  int t = -1;
  ASSERT_EQ(nc_open((d / "end.nc").c_str(), NC_WRITE, &id), NC_NOERR);
  ASSERT_EQ(nc_inq_varid(id, "time", &t), NC_NOERR);
  ASSERT_EQ(nc_redef(id), NC_NOERR);
  ASSERT_EQ(nc_del_att(id, t, "bounds"), NC_NOERR);
  ASSERT_EQ(nc_close(id), NC_NOERR);
  const FetchPlan stamps = plan(d.path(), one_variable("ta", "ta", "end.nc", "K"), {"ta", "ta", 0}, request(2000, 2000, {2}));
  ASSERT_EQ(stamps.chunks[0].days, feb.days);
  EXPECT_NE(stamps.chunks[0].request(stamps.fields[0]), feb.request(p.fields[0]));
}

// One time convention (issue 16): a fetched day is stamped at 12:00 with bounds [00:00, next
// 00:00], as predictions and CMIP daily means are, so xarray aligns them. Chunks an earlier
// version fetched at 00:00 still validate and join, into a file at 12:00.
TEST(FetchArchives, FetchedDaysAreStampedAtNoonWithBoundsAndOldMidnightChunksStillJoin) {
  test::TempDir d, out;
  write_source(d / "standard.nc", SourceSpec{});
  const FetchPlan p = plan(d.path(), one_variable("ta", "ta", "standard.nc", "K"), {"ta", "ta", 0}, request(2000, 2000, {2}));
  const ChunkPlan& c = p.chunks[0];
  fetch_chunk(p.fields[0], c, out / "feb.nc", kPiece);
  auto expect_noon = [&](const std::string& path) {
    NcFile nc = NcFile::open(path);
    EXPECT_EQ(nc.att_text(nc.var_id("time"), "bounds"), "time_bnds") << path;
    EXPECT_EQ(nc.att_text(nc.var_id("time"), "axis"), "T") << path;
    const auto t = nc.read_coord("time");
    std::vector<double> b(2 * t.size());
    nc.read(nc.var_id("time_bnds"), {0, 0}, {t.size(), 2}, b.data());
    ASSERT_EQ(t.size(), c.days.size()) << path;
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(t[i], double(c.days[i]) + 0.5) << path;
      EXPECT_EQ(b[2 * i], double(c.days[i])) << path;
      EXPECT_EQ(b[2 * i + 1], double(c.days[i] + 1)) << path;
    }
  };
  expect_noon(out / "feb.nc");
  // Back to 00:00, as an earlier version wrote it.
  {
    int id = -1;
    ASSERT_EQ(nc_open((out / "feb.nc").c_str(), NC_WRITE, &id), NC_NOERR);
    int vt = -1;
    ASSERT_EQ(nc_inq_varid(id, "time", &vt), NC_NOERR);
    const std::vector<double> midnight(c.days.begin(), c.days.end());
    ASSERT_EQ(nc_put_var_double(id, vt, midnight.data()), NC_NOERR);
    ASSERT_EQ(nc_close(id), NC_NOERR);
  }
  EXPECT_NO_THROW(validate_chunk(out / "feb.nc", p.fields[0], c));
  EXPECT_EQ(read_field(out / "feb.nc", "ta").days, c.days);  // readers floor: the same days
  join_chunks(p.fields[0], {out / "feb.nc"}, out / "ta.nc", "test", kPiece);
  expect_noon(out / "ta.nc");
}

// A standard name the units written allow: the source's where the quantity is kept, the
// standard variable's where the definition's scale made another one (kg m-2 s-1 x 86400 is
// mm/day, a depth of water per time: lwe_precipitation_rate, not precipitation_flux) or the
// source has none.
TEST(FetchArchives, TheStandardNameFollowsTheQuantityWritten) {
  EXPECT_EQ(standard_name_for("pr", "mm/day"), "lwe_precipitation_rate");
  EXPECT_EQ(standard_name_for("pr", "kg m-2 s-1"), "precipitation_flux");
  EXPECT_EQ(standard_name_for("ta", "degC"), "air_temperature");
  EXPECT_EQ(standard_name_for("z", "m"), "");  // geopotential height is another quantity
  EXPECT_EQ(standard_name_for("tos", "K"), "");  // outside the vocabulary
  test::TempDir d, out;
  SourceSpec pr;
  pr.var = "pr";
  pr.units = "kg m-2 s-1";
  pr.standard_name = "precipitation_flux";
  write_source(d / "pr.nc", pr);
  SourceSpec bare = pr;
  bare.standard_name.clear();
  write_source(d / "bare.nc", bare);
  const auto standard_name = [&](const std::string& src, double scale, const std::string& written) {
    Dataset def = one_variable("pr", "pr", src, "kg m-2 s-1");
    def.variables["pr"].scale = scale;
    def.variables["pr"].std_units = written;
    const FetchPlan p = plan(d.path(), def, {"pr", "pr", 0}, request(2000, 2000, {2}));
    fetch_chunk(p.fields[0], p.chunks[0], out / "chunk.nc", kPiece);
    join_chunks(p.fields[0], {out / "chunk.nc"}, out / "joined.nc", "test", kPiece);
    NcFile chunk = NcFile::open(out / "chunk.nc"), joined = NcFile::open(out / "joined.nc");
    EXPECT_EQ(chunk.att_text(chunk.var_id("pr"), "units"), written);
    EXPECT_EQ(joined.att_text(joined.var_id("pr"), "standard_name"), chunk.att_text(chunk.var_id("pr"), "standard_name"));
    return chunk.att_text(chunk.var_id("pr"), "standard_name");
  };
  EXPECT_EQ(standard_name("pr.nc", 86400, "mm/day"), "lwe_precipitation_rate");
  EXPECT_EQ(standard_name("pr.nc", 1, "kg m-2 s-1"), "precipitation_flux");
  EXPECT_EQ(standard_name("bare.nc", 86400, "mm/day"), "lwe_precipitation_rate");
}

TEST(FetchArchives, OneFilePerYearReadsDecemberFromTheYearBeforesFileAndOpensEachFileOnce) {
  test::TempDir d;
  write_yearly(d.path(), "air", "degK", {2000, 2001, 2002});
  for (int y : {2000, 2001, 2002}) {  // a NaN missing_value in each, as xarray writes: decoded alike
    int nc = -1, v = -1;
    ASSERT_EQ(nc_open((d / ("air." + std::to_string(y) + ".nc")).c_str(), NC_WRITE, &nc), NC_NOERR);
    nc_inq_varid(nc, "air", &v);
    nc_redef(nc);
    const float nan = NAN;
    nc_put_att_float(nc, v, "missing_value", NC_FLOAT, 1, &nan);
    nc_close(nc);
  }
  std::map<std::string, int> opens;
  const std::string base = d.path() + "/";  // a base with a trailing slash
  const FetchPlan p = plan(base, one_variable("tas", "air", "air.{year}.nc", "K"), {"tas", "tas", 0},
                           request(2001, 2002, {12, 1, 2}), &opens);
  const FieldPlan& f = p.fields[0];
  ASSERT_EQ(f.urls.size(), 3u);  // 2000 (its December), 2001, 2002
  EXPECT_EQ(f.urls[0], base + "air.2000.nc");
  for (const auto& [url, n] : opens) EXPECT_EQ(n, 1) << url;
  EXPECT_EQ(opens.size(), 3u);
  EXPECT_EQ(f.source_units, "degK");
  EXPECT_TRUE(f.convert.identity());
  ASSERT_EQ(p.chunks.size(), 2u);
  const ChunkPlan& c = p.chunks[0];
  ASSERT_EQ(c.time_runs.size(), 2u);
  EXPECT_EQ(c.time_runs[0].source, 0u);
  EXPECT_EQ(c.time_runs[0].start, 335u);  // 1 December of a leap year
  EXPECT_EQ(c.time_runs[0].count, 31u);
  EXPECT_EQ(c.time_runs[1].source, 1u);
  EXPECT_EQ(c.time_runs[1].start, 0u);
  EXPECT_EQ(c.time_runs[1].count, 59u);
  EXPECT_NE(c.request(f).find("air.2000.nc"), std::string::npos);
  EXPECT_NE(c.request(f).find("air.2001.nc"), std::string::npos);
  EXPECT_EQ(c.request(f).find("decoded"), std::string::npos);  // decoded alike: earlier chunks kept

  test::TempDir out;
  fetch_chunk(f, c, out / "2001.nc", kPiece);
  const Field got = read_field(out / "2001.nc", "tas");
  ASSERT_EQ(got.days.size(), 90u);
  EXPECT_EQ(civil_from_days(got.days.front()), (Date{2000, 12, 1}));
  EXPECT_NEAR(got.values[0], 335.30, 1e-3);          // from air.2000.nc
  EXPECT_NEAR(got.values[31 * 12], 0.30, 1e-3);      // 1 January, from air.2001.nc
  EXPECT_NEAR(got.values[89 * 12], 58.30, 1e-3);     // 28 February

  // A year whose file is missing: the error names it, and that the first year's file opened
  // (the dataset's url is right; the source lacks that year).
  std::remove((d / "air.2002.nc").c_str());
  const std::string missing = test::message_of<InputError>([&] {
    plan(base, one_variable("tas", "air", "air.{year}.nc", "K"), {"tas", "tas", 0}, request(2001, 2002, {12, 1, 2}));
  });
  EXPECT_NE(missing.find("air.2002.nc"), std::string::npos) << missing;
  EXPECT_NE(missing.find("(the tas file for 2002; " + base + "air.2000.nc, for 2000, opened: does the source hold "
                         "every year of fetch.years?)"),
            std::string::npos)
      << missing;
}

TEST(FetchArchives, AManifestWithoutPredictandRoundTripsAndOldManifestsRecordNoCalendar) {
  test::TempDir d;
  FetchManifest m;
  FetchedFile psl;
  psl.name = psl.variable = "psl";
  psl.file = "predictors/psl.nc";
  psl.units = "Pa";
  psl.calendar = "360_day";
  m.predictors.push_back(psl);
  m.write(d / "manifest.json");
  const FetchManifest r = FetchManifest::read(d / "manifest.json");
  EXPECT_FALSE(r.has_predictand());
  EXPECT_EQ(r.predictand.name, "");
  ASSERT_EQ(r.predictors.size(), 1u);
  EXPECT_EQ(r.predictors[0].calendar, "360_day");
  // A manifest from before calendars were recorded: none (the files' calendars are not compared).
  std::ofstream(d / "old.json") << R"({"format": "downscale-fetch-1", "predictors": [{"name": "z@500", "variable": "z",
    "file": "predictors/z@500.nc"}], "predictand": {"name": "pr", "variable": "pr", "file": "predictand/pr.nc"}})";
  const FetchManifest old = FetchManifest::read(d / "old.json");
  EXPECT_TRUE(old.has_predictand());
  EXPECT_EQ(old.predictors[0].calendar, "");
  EXPECT_EQ(old.predictand.calendar, "");
}

// fetch writes its files inside its folder: a manifest entry naming a file outside it (absolute,
// or through '..') is refused, naming the manifest and the entry, not read from where it points.
TEST(FetchArchives, AManifestFileOutsideTheFetchFolderIsRefused) {
  test::TempDir d;
  auto error_of = [&](const std::string& predictor_file, const std::string& predictand_file) -> std::string {
    std::ofstream(d / "manifest.json")
        << R"({"format": "downscale-fetch-1", "predictors": [{"name": "z@500", "variable": "z", "file": ")"
        << predictor_file << R"("}], "predictand": {"name": "pr", "variable": "pr", "file": ")" << predictand_file
        << R"("}})";
    try {
      FetchManifest::read(d / "manifest.json");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of("predictors/z@500.nc", "predictand/pr.nc"), "");
  EXPECT_EQ(error_of("z@500.nc", "pr.nc"), "");  // at the folder's top: inside too
  const std::string tail = "' is outside the fetch folder; fetch writes only inside it, so the manifest was edited or "
                           "is corrupt";
  EXPECT_EQ(error_of("/data/z@500.nc", "predictand/pr.nc"),
            (d / "manifest.json") + ": predictor 'z@500': file '/data/z@500.nc" + tail);
  EXPECT_EQ(error_of("predictors/../../z@500.nc", "predictand/pr.nc"),
            (d / "manifest.json") + ": predictor 'z@500': file 'predictors/../../z@500.nc" + tail);
  EXPECT_EQ(error_of("predictors/z@500.nc", "../pr.nc"),
            (d / "manifest.json") + ": predictand 'pr': file '../pr.nc" + tail);
  // A name merely beginning with dots is no '..' component.
  EXPECT_EQ(error_of("predictors/..z@500.nc", "predictand/pr..nc"), "");
}

// NetCDF-4 text attributes stored as NC_STRING (netCDF4-python's setncattr_string, some CMOR and
// xarray writers) are read as text: a calendar read as absent gave a noleap run standard dates
// (13 days off by 2002), and units read as absent a false "has no units attribute".
// Yearly files each decode by their own attributes (the fetch fuzz of 2026-12-01: the first
// year's packing, fill and level were applied to every year, exit 0): ERA5 from the CDS packs
// each file on its own. CF's valid_range / valid_max and a missing_value of several values mark
// missing values too; a text missing_value is refused, not read as 0.
TEST(FetchArchives, EachYearsFileDecodesByItsOwnAttributes) {
  test::TempDir d;
  const auto edit = [&](int year, const std::function<void(int nc, int v)>& change) {
    int nc = -1, v = -1;
    ASSERT_EQ(nc_open((d / ("air." + std::to_string(year) + ".nc")).c_str(), NC_WRITE, &nc), NC_NOERR);
    ASSERT_EQ(nc_inq_varid(nc, "air", &v), NC_NOERR);
    nc_redef(nc);
    change(nc, v);
    nc_close(nc);
  };
  write_yearly(d.path(), "air", "K", {2000, 2001});
  // 2000: values above 300 (days 300 on) are outside valid_max. 2001: packed as 2 x + 100, with
  // two missing values, days 5 and 6 at lat 30 (raw 5.30 and 6.30).
  edit(2000, [](int nc, int v) {
    const double top = 300;
    nc_put_att_double(nc, v, "valid_max", NC_DOUBLE, 1, &top);
  });
  edit(2001, [](int nc, int v) {
    const double scale = 2, offset = 100, missing[2] = {5.30, 6.30};
    nc_put_att_double(nc, v, "scale_factor", NC_DOUBLE, 1, &scale);
    nc_put_att_double(nc, v, "add_offset", NC_DOUBLE, 1, &offset);
    nc_put_att_double(nc, v, "missing_value", NC_FLOAT, 2, missing);
  });
  Dataset ds = one_variable("tas", "air", "air.{year}.nc", "K");
  ds.variables["tas"].max_missing = 0.5;
  const std::vector<int> all{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const FetchPlan p = plan(d.path() + "/", ds, {"tas", "tas", 0}, request(2000, 2001, all));
  const FieldPlan& f = p.fields[0];
  ASSERT_EQ(f.encodings.size(), 2u);
  // Their requests say so: a chunk an earlier version decoded by the first file's attributes
  // (or without the range, or with one missing value) is fetched again.
  EXPECT_NE(p.chunks[0].request(f).find(" decoded x1+0 fill - missing valid -inf..300"), std::string::npos)
      << p.chunks[0].request(f);
  EXPECT_NE(p.chunks[1].request(f).find(" decoded x2+100 fill - missing 5.3"), std::string::npos)
      << p.chunks[1].request(f);
  test::TempDir out;
  fetch_chunk(f, p.chunks[0], out / "2000.nc", kPiece);
  fetch_chunk(f, p.chunks[1], out / "2001.nc", kPiece);
  const Field a = read_field(out / "2000.nc", "tas"), b = read_field(out / "2001.nc", "tas");
  EXPECT_NEAR(a.values[0], 0.30, 1e-3);
  EXPECT_NEAR(a.values[299 * 12], 299.30, 1e-3);
  EXPECT_TRUE(std::isnan(a.values[300 * 12])) << a.values[300 * 12];  // 300.30 > valid_max
  EXPECT_NEAR(b.values[0], 100.60, 1e-3);                               // 2 x 0.30 + 100, not 0.30
  EXPECT_NEAR(b.values[4 * 12], 108.60, 1e-3);                          // 2 x 4.30 + 100
  for (int day : {5, 6}) {
    for (int lon = 0; lon < 4; ++lon) EXPECT_TRUE(std::isnan(b.values[day * 12 + lon])) << day;  // lat 30
    EXPECT_NEAR(b.values[day * 12 + 4], 2 * (day + 0.35) + 100, 1e-3) << day;                   // lat 35
  }

  // A missing_value written as text: read as its numbers where it is numbers (NcML's untyped
  // attributes), else refused naming the file, the variable and the attribute.
  edit(2001, [](int nc, int v) {
    nc_del_att(nc, v, "missing_value");
    nc_put_att_text(nc, v, "missing_value", 9, "5.3, 6.3 ");
  });
  EXPECT_EQ(plan(d.path() + "/", ds, {"tas", "tas", 0}, request(2000, 2001, all)).fields[0].encodings.at(1).missing_values,
            (std::vector<double>{5.3, 6.3}));
  edit(2001, [](int nc, int v) {
    nc_del_att(nc, v, "missing_value");
    nc_put_att_text(nc, v, "missing_value", 4, "none");
  });
  const std::string msg = test::message_of<InputError>([&] { plan(d.path() + "/", ds, {"tas", "tas", 0}, request(2000, 2001, all)); });
  EXPECT_NE(msg.find("air.2001.nc: variable 'air': attribute missing_value is text ('none')"), std::string::npos) << msg;
}

// valid_range over packed shorts: in the stored numbers when it is of their type (CF), in the
// unpacked ones when written as floats (the NetCDF User Guide's reading; some archives do).
TEST(FetchArchives, AValidRangeIsReadInPackedOrUnpackedNumbersByItsType) {
  test::TempDir d;
  const auto write = [&](const std::string& name, nc_type range_type) {
    int nc = -1, dims[3], t = -1, y = -1, x = -1, v = -1;
    ASSERT_EQ(nc_create((d / name).c_str(), NC_NETCDF4 | NC_CLOBBER, &nc), NC_NOERR);
    nc_def_dim(nc, "time", 31, &dims[0]);
    nc_def_dim(nc, "lat", 3, &dims[1]);
    nc_def_dim(nc, "lon", 4, &dims[2]);
    nc_def_var(nc, "time", NC_DOUBLE, 1, &dims[0], &t);
    nc_put_att_text(nc, t, "units", 21, "days since 2000-01-01");
    nc_def_var(nc, "lat", NC_DOUBLE, 1, &dims[1], &y);
    nc_def_var(nc, "lon", NC_DOUBLE, 1, &dims[2], &x);
    nc_def_var(nc, "air", NC_SHORT, 3, dims, &v);
    nc_put_att_text(nc, v, "units", 1, "K");
    const float scale = 0.01f, offset = 273.15f;
    nc_put_att_float(nc, v, "scale_factor", NC_FLOAT, 1, &scale);
    nc_put_att_float(nc, v, "add_offset", NC_FLOAT, 1, &offset);
    if (range_type == NC_SHORT) {
      const short range[2] = {-5000, 4000};  // 223.15 .. 313.15 K
      nc_put_att_short(nc, v, "valid_range", NC_SHORT, 2, range);
    } else {
      const float range[2] = {223.15f, 313.15f};
      nc_put_att_float(nc, v, "valid_range", NC_FLOAT, 2, range);
    }
    nc_enddef(nc);
    std::vector<double> time(31);
    for (int i = 0; i < 31; ++i) time[size_t(i)] = i;
    const double lat[3] = {30, 35, 40}, lon[4] = {0, 5, 10, 15};
    nc_put_var_double(nc, t, time.data());
    nc_put_var_double(nc, y, lat);
    nc_put_var_double(nc, x, lon);
    std::vector<short> raw(31 * 12, 1000);  // 283.15 K
    raw[12] = 4500;                         // day 1, first box: 318.15 K, outside the range
    raw[24] = -5000;                        // day 2, first box: 223.15 K, the range's end
    nc_put_var_short(nc, v, raw.data());
    nc_close(nc);
  };
  Dataset ds = one_variable("tas", "air", "", "K");
  ds.variables["tas"].max_missing = 0.5;
  for (nc_type type : {NC_SHORT, NC_FLOAT}) {
    const std::string name = type == NC_SHORT ? "packed_range.nc" : "unpacked_range.nc";
    write(name, type);
    ds.variables["tas"].url = name;
    const FetchPlan p = plan(d.path() + "/", ds, {"tas", "tas", 0}, request(2000, 2000, {1}));
    EXPECT_EQ(p.fields[0].encodings.at(0).range_unpacked, type == NC_FLOAT) << name;
    ASSERT_EQ(p.chunks.size(), 1u);
    test::TempDir out;
    fetch_chunk(p.fields[0], p.chunks[0], out / "2000.nc", kPiece);
    const Field got = read_field(out / "2000.nc", "tas");
    EXPECT_NEAR(got.values[0], 283.15, 1e-3) << name;
    EXPECT_TRUE(std::isnan(got.values[12])) << name << ": " << got.values[12];
    EXPECT_NEAR(got.values[24], 223.15, 1e-3) << name;
  }
}

// A level dimension is read in each year's file: another year listing other levels takes its
// own index of the level asked for, and a year without that level is refused.
TEST(FetchArchives, EachYearsFileFindsTheLevelInItsOwnLevels) {
  test::TempDir d;
  for (int y : {2000, 2001}) {
    SourceSpec s;
    s.var = "ta";
    s.units = "K";
    s.level_by = LevelBy::dimension;
    s.level = y == 2000 ? 850 : 1000;  // levels [425, 850] in 2000, [500, 1000] in 2001
    s.time_units = "days since " + std::to_string(y) + "-01-01";
    s.ndays = days_in_year(y);
    write_source(d / ("ta." + std::to_string(y) + ".nc"), s);
  }
  const Dataset ds = one_variable("ta", "ta", "ta.{year}.nc", "K");
  const std::string msg = test::message_of<InputError>(
      [&] { plan(d.path() + "/", ds, {"ta@850", "ta", 850}, request(2000, 2001, {1})); });
  EXPECT_NE(msg.find("ta.2001.nc: variable 'ta': no level 850 hPa (levels: 500, 1000)"), std::string::npos) << msg;
  const FetchPlan p = plan(d.path() + "/", ds, {"ta@500", "ta", 500}, request(2001, 2001, {1}));
  EXPECT_EQ(p.fields[0].encodings.at(0).level_index, 0u);
  SourceSpec s;
  s.var = "ta";
  s.units = "K";
  s.level_by = LevelBy::dimension;
  s.level = 500;  // levels [250, 500] in 2000: 500 at index 1 there, 0 in 2001
  s.time_units = "days since 2000-01-01";
  s.ndays = 366;
  write_source(d / "ta.2000.nc", s);
  const FetchPlan q = plan(d.path() + "/", ds, {"ta@500", "ta", 500}, request(2000, 2001, {1}));
  EXPECT_EQ(q.fields[0].encodings.at(0).level_index, 1u);
  EXPECT_EQ(q.fields[0].encodings.at(1).level_index, 0u);
  test::TempDir out;
  fetch_chunk(q.fields[0], q.chunks[1], out / "2001.nc", kPiece);
  EXPECT_NEAR(read_field(out / "2001.nc", "ta").values[0], 0.30, 1e-3);  // level index 0: 1000 x 0 + day 0
}

TEST(FetchArchives, StringTypedAttributesAreReadAsText) {
  test::TempDir dir;
  const std::string path = dir / "strings.nc";
  {
    NcFile f = NcFile::create(path);
    const int t = f.def_var("time", NC_DOUBLE, {f.def_dim("time", 1)});
    const char* calendar[] = {"noleap"};
    const char* units[] = {"days since 1950-01-01"};
    ASSERT_EQ(nc_put_att_string(f.id(), t, "calendar", 1, calendar), NC_NOERR);
    ASSERT_EQ(nc_put_att_string(f.id(), t, "units", 1, units), NC_NOERR);
    f.put_att(t, "axis", std::string("T"));  // NC_CHAR, as before
    f.close();
  }
  const NcFile f = NcFile::open(path);
  const int t = f.var_id("time");
  EXPECT_EQ(f.att_text(t, "calendar"), "noleap");
  EXPECT_EQ(f.att_text(t, "units"), "days since 1950-01-01");
  EXPECT_EQ(f.att_text(t, "axis"), "T");
  EXPECT_EQ(f.att_text(t, "bounds", "none"), "none");
}

// A server's source version is its provider's version attributes, text or number: a numeric
// `version` that changed was read as "" before, so the change went unnoticed.
TEST(FetchArchives, AServersSourceVersionIsItsVersionAttributesTextOrNumber) {
  test::TempDir d;
  const auto version_of = [&](double version, const std::string& tracking) {
    const std::string path = d / "v.nc";
    {
      NcFile nc = NcFile::create(path);
      nc.put_att(NC_GLOBAL, "version", version, NC_INT);
      nc.put_att(NC_GLOBAL, "tracking_id", tracking);
      nc.put_att(NC_GLOBAL, "title", "not a version");
      nc.close();
    }
    return source_version(NcFile::open(path), "https://server/dods/v.nc");
  };
  EXPECT_EQ(version_of(20, "abc"), "version=20, tracking_id=abc");
  EXPECT_NE(version_of(21, "abc"), version_of(20, "abc"));
  EXPECT_NE(version_of(20, "abd"), version_of(20, "abc"));
}

// A ledger from before numeric version attributes were read recorded "version=" (empty): the
// version as it is now is adopted, not taken for a changed source (every chunk of such a server
// fetched again after an upgrade); any other difference is a change.
TEST(FetchArchives, ALedgersEmptyNumericVersionIsAdoptedNotAChange) {
  EXPECT_TRUE(source_version_adopts("", "version=20"));
  EXPECT_TRUE(source_version_adopts("version=, tracking_id=abc", "version=20, tracking_id=abc"));
  EXPECT_TRUE(source_version_adopts("tracking_id=abc, version=", "tracking_id=abc, version=20"));
  EXPECT_TRUE(source_version_adopts("version=; version=", "version=20; version=21"));  // two source files
  EXPECT_FALSE(source_version_adopts("version=, tracking_id=abc", "version=20, tracking_id=abd"));
  EXPECT_FALSE(source_version_adopts("version=19", "version=20"));
  EXPECT_FALSE(source_version_adopts("version=20", "version=20"));  // the same: nothing to adopt
  EXPECT_FALSE(source_version_adopts("version=20", ""));
  EXPECT_FALSE(source_version_adopts("12 bytes, modified 1.000000000", "13 bytes, modified 1.000000000"));
  EXPECT_FALSE(source_version_adopts("date_created=2020-01-01 (x)", "date_created=2020-01-02 (x)"));
}
