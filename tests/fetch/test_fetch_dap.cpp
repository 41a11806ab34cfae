// Fetching through netCDF-C's DAP client from the test OPeNDAP server: values equal the
// source's formulas (across the 0..360 seam, with packing, levels in Pa and unit conversion),
// only hyperslabs cross the network, failures are classified, nothing partial is left, and
// credentials never show.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fetch/dap_fixture.h"
#include "io/calendar.h"
#include "io/error.h"
#include "fetch/chunk.h"
#include "fetch/plan.h"
#include "support/fetch_support.h"
#include "support/test_support.h"

using namespace ds;
using test::Field;
using test::read_field;
namespace fs = std::filesystem;

namespace {

Dataset udg_dataset() {
  Dataset d;
  d.name = "udg-like";
  d.variables["z"].native = "Z{level}";
  d.variables["z"].units = {"m2 s-2"};
  d.variables["z"].std_units = "m2 s-2";
  d.variables["ta"].native = "T{level}";
  d.variables["ta"].units = {"K"};
  d.variables["ta"].std_units = "K";
  return d;
}

Config::Fetch box(double lon0, double lon1, double lat0, double lat1, int y0, int y1, std::vector<int> season) {
  Config::Fetch f;
  f.lon_min = lon0, f.lon_max = lon1, f.lat_min = lat0, f.lat_max = lat1;
  f.years = {y0, y1};
  f.season = std::move(season);
  return f;
}

FetchPlan plan_for(const std::string& url, const Dataset& d, const std::vector<FieldWanted>& w, const Config::Fetch& req) {
  FetchPlan p;
  NcFile src = open_source(url);
  plan_source(src, url, d, w, req, p);
  return p;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

constexpr size_t kPiece = 64 << 20;

}  // namespace

TEST(FetchDap, NetcdfTalksToTheTestServer) {
  const auto& srv = test::dap_server();
  NcFile f = open_source(srv.url("udg_like.nc"));
  EXPECT_TRUE(f.has_var("Z500"));
  EXPECT_EQ(f.dim_len("lon"), 72u);
}

TEST(FetchDap, ValuesAcrossTheSeamInADjfSeasonEqualTheSource) {
  const auto& srv = test::dap_server();
  const FetchPlan p = plan_for(srv.url("udg_like.nc"), udg_dataset(), {{"z@500", "z", 500}, {"ta@850", "ta", 850}},
                               box(-20, 20, -10, 10, 2001, 2001, {12, 1, 2}));
  ASSERT_EQ(p.fields.size(), 2u);
  ASSERT_EQ(p.chunks.size(), 2u);
  const FieldPlan& z = p.fields[0];
  EXPECT_EQ(z.native, "Z500");
  EXPECT_EQ(z.lon_runs.size(), 2u);  // 340..355, then 0..20
  EXPECT_TRUE(z.lat_descending);
  const ChunkPlan& c = p.chunks[0];
  EXPECT_EQ(c.days.size(), 31u + 31u + 28u);  // Dec 2000, Jan and Feb 2001

  test::TempDir out;
  uint64_t reported = 0;
  const ChunkResult r = fetch_chunk(z, c, out / "z.nc", kPiece, [&](uint64_t n) { reported += n; });
  EXPECT_EQ(r.ntime, 90u);
  EXPECT_EQ(reported, c.bytes(z));
  EXPECT_EQ(r.crc32, file_crc32(out / "z.nc"));
  const Field f = read_field(out / "z.nc", "z");
  EXPECT_EQ(f.units, "m2 s-2");
  EXPECT_EQ(f.level, 500);
  EXPECT_EQ(f.lon, (std::vector<double>{-20, -15, -10, -5, 0, 5, 10, 15, 20}));
  EXPECT_EQ(f.lat, (std::vector<double>{-10, -5, 0, 5, 10}));
  EXPECT_EQ(civil_from_days(f.days.front()), (Date{2000, 12, 1}));
  EXPECT_EQ(civil_from_days(f.days.back()), (Date{2001, 2, 28}));
  for (size_t t = 0; t < f.days.size(); ++t) {
    if (t) {
      ASSERT_EQ(f.days[t], f.days[t - 1] + 1);
    }
    for (size_t j = 0; j < f.lat.size(); ++j)
      for (size_t i = 0; i < f.lon.size(); ++i) {
        const double src_lon = f.lon[i] < 0 ? f.lon[i] + 360 : f.lon[i];
        const double want = 50000 + 10 * f.lat[j] + 0.5 * src_lon + 0.01 * static_cast<double>(f.days[t]);
        // Packed as int16 with scale 0.5: within half a step, plus float rounding.
        ASSERT_NEAR(f.values[(t * f.lat.size() + j) * f.lon.size() + i], want, 0.26) << "t " << t << " lat " << f.lat[j] << " lon " << f.lon[i];
      }
  }

  const ChunkResult rt = fetch_chunk(p.fields[1], p.chunks[1], out / "ta.nc", kPiece);
  const Field ta = read_field(out / "ta.nc", "ta");
  for (size_t t = 0; t < ta.days.size(); ++t)
    for (size_t j = 0; j < ta.lat.size(); ++j)
      for (size_t i = 0; i < ta.lon.size(); ++i) {
        const double src_lon = ta.lon[i] < 0 ? ta.lon[i] + 360 : ta.lon[i];
        const double want = 250 + 0.1 * ta.lat[j] - 0.01 * src_lon + 0.001 * static_cast<double>(ta.days[t]);
        ASSERT_NEAR(ta.values[(t * ta.lat.size() + j) * ta.lon.size() + i], want, 1e-3);
      }
  EXPECT_EQ(rt.missing_share, 0.0);

  // Only the hyperslabs crossed the network: every data request for Z500 names the latitude rows
  // 16..20 (10N..10S) and never the whole longitude axis.
  const std::string log = slurp(srv.log());
  size_t n_data = 0;
  for (size_t at = log.find(".dods?Z500"); at != std::string::npos; at = log.find(".dods?Z500", at + 1)) {
    const std::string line = log.substr(at, log.find('\n', at) - at);
    EXPECT_NE(line.find("%5b16:20%5d"), std::string::npos) << line;
    EXPECT_EQ(line.find("%5b0:71%5d"), std::string::npos) << line;
    ++n_data;
  }
  EXPECT_GE(n_data, 2u);  // one per side of the seam
}

TEST(FetchDap, ReadsInBoundedPiecesGiveTheSameFile) {
  const auto& srv = test::dap_server();
  const FetchPlan p = plan_for(srv.url("udg_like.nc"), udg_dataset(), {{"ta@850", "ta", 850}},
                               box(-20, 20, -10, 10, 2001, 2001, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  test::TempDir out;
  fetch_chunk(p.fields[0], p.chunks[0], out / "whole.nc", kPiece);
  // 9 x 5 floats a day: 1000 bytes is 5 days per read.
  fetch_chunk(p.fields[0], p.chunks[0], out / "pieces.nc", 1000);
  const Field a = read_field(out / "whole.nc", "ta"), b = read_field(out / "pieces.nc", "ta");
  EXPECT_EQ(a.days.size(), 365u);
  EXPECT_EQ(a.values, b.values);
}

TEST(FetchDap, LevelDimensionInPaAndUnitConversionWithMissingValues) {
  const auto& srv = test::dap_server();
  Dataset d;
  d.name = "plev-like";
  d.variables["ta"].native = "ta";
  d.variables["ta"].units = {"K"};
  d.variables["ta"].std_units = "K";
  const FetchPlan p = plan_for(srv.url("plev_like.nc"), d, {{"ta@850", "ta", 850}}, box(-30, 30, 20, 30, 2000, 2000, {6, 7, 8}));
  EXPECT_EQ(p.fields[0].encodings.at(0).level_index, 1u);
  test::TempDir out;
  fetch_chunk(p.fields[0], p.chunks[0], out / "ta.nc", kPiece);
  const Field ta = read_field(out / "ta.nc", "ta");
  EXPECT_EQ(ta.days.size(), 92u);
  for (size_t t = 0; t < ta.days.size(); ++t)
    for (size_t j = 0; j < ta.lat.size(); ++j)
      for (size_t i = 0; i < ta.lon.size(); ++i)
        ASSERT_NEAR(ta.values[(t * ta.lat.size() + j) * ta.lon.size() + i],
                    200 + 85 + 0.1 * ta.lat[j] + 0.01 * ta.lon[i] + 0.001 * static_cast<double>(ta.days[t]), 1e-3);

  // Precipitation: kg m-2 s-1 -> mm/day, the ocean (lon < -100) missing.
  Dataset e;
  e.name = "pr-like";
  e.variables["pr"] = DatasetVariable{"pr", "", {"kg m-2 s-1"}, 86400, 0, "mm/day", 0.6};
  const FetchPlan q = plan_for(srv.url("pr_like.nc"), e, {{"pr", "pr", 0}}, box(-110, -90, 30, 40, 2001, 2001, {1}));
  const ChunkResult r = fetch_chunk(q.fields[0], q.chunks[0], out / "pr.nc", kPiece);
  const Field pr = read_field(out / "pr.nc", "pr");
  EXPECT_EQ(pr.units, "mm/day");
  EXPECT_NEAR(r.missing_share, 20.0 / 40.0, 1e-9);  // -109.75..-100.25 of -109.75..-90.25
  for (size_t t = 0; t < pr.days.size(); ++t)
    for (size_t j = 0; j < pr.lat.size(); ++j)
      for (size_t i = 0; i < pr.lon.size(); ++i) {
        const float v = pr.values[(t * pr.lat.size() + j) * pr.lon.size() + i];
        if (pr.lon[i] < -100) {
          ASSERT_TRUE(std::isnan(v));
          continue;
        }
        const double want = 86400 * 1e-5 * (1 + (pr.lat[j] - 30) + 0.1 * (pr.lon[i] + 110)) *
                            (1 + static_cast<double>(pr.days[t] % 7));
        ASSERT_NEAR(v, want, 1e-5 * want);
      }

  // The same chunk with a stricter max_missing fails validation, naming the chunk and the check,
  // and leaves nothing behind.
  FieldPlan strict = q.fields[0];
  strict.def.max_missing = 0.1;
  test::TempDir out2;
  try {
    fetch_chunk(strict, q.chunks[0], out2 / "pr.nc", kPiece);
    FAIL() << "no error";
  } catch (const InputError& e) {
    // The chunk's own name (not its temporary one) and its source, how many values of how many,
    // and where the first one is.
    const std::string msg = e.what();
    EXPECT_EQ(msg.find(out2 / "pr.nc" + " (chunk pr 2001 of "), 0u) << msg;
    EXPECT_NE(msg.find("check failed: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(" values are missing (50%), more than the 10% allowed (max_missing); the first on 2001-"),
              std::string::npos)
        << msg;
  }
  EXPECT_TRUE(files_in(out2.path()).empty());
}

TEST(FetchDap, UnitsAreConvertedThroughUdunitsAndAnInconvertibleUnitIsRefused) {
  const auto& srv = test::dap_server();
  // K in the source, degC asked for: converted (udunits2), the written unit says so.
  Dataset c = udg_dataset();
  c.variables["ta"].units = {"degC"};
  c.variables["ta"].std_units = "degC";
  const FetchPlan p = plan_for(srv.url("udg_like.nc"), c, {{"ta@850", "ta", 850}}, box(0, 10, 0, 10, 2001, 2001, {1}));
  EXPECT_DOUBLE_EQ(p.fields[0].convert.scale, 1);
  EXPECT_DOUBLE_EQ(p.fields[0].convert.offset, -273.15);
  const FetchPlan k = plan_for(srv.url("udg_like.nc"), udg_dataset(), {{"ta@850", "ta", 850}}, box(0, 10, 0, 10, 2001, 2001, {1}));
  EXPECT_TRUE(k.fields[0].convert.identity());
  test::TempDir out;
  fetch_chunk(p.fields[0], p.chunks[0], out / "c.nc", kPiece);
  fetch_chunk(k.fields[0], k.chunks[0], out / "k.nc", kPiece);
  const Field tc = read_field(out / "c.nc", "ta"), tk = read_field(out / "k.nc", "ta");
  EXPECT_EQ(tc.units, "degC");
  EXPECT_EQ(tk.units, "K");
  ASSERT_EQ(tc.values.size(), tk.values.size());
  for (size_t i = 0; i < tc.values.size(); ++i) ASSERT_NEAR(tc.values[i], tk.values[i] - 273.15, 1e-3);

  // Metres for a temperature: no conversion; the error names file, variable and both units.
  Dataset d = udg_dataset();
  d.file = "udg.yaml";
  d.variables["ta"].units = {"m"};
  try {
    plan_for(srv.url("udg_like.nc"), d, {{"ta@850", "ta", 850}}, box(0, 10, 0, 10, 2001, 2001, {1}));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(srv.url("udg_like.nc") +
                                         ": variable 'T850' (dataset definition udg.yaml): units 'K' cannot be converted to 'm'"),
              std::string::npos)
        << e.what();
  }
}

TEST(FetchDap, DroppedConnectionsAndServerErrorsAreTransientAndLeaveNothing) {
  const auto& srv = test::dap_server();
  for (const std::string fault : {"drop=1+id=t1", "e500=1+id=t2"}) {
    const FetchPlan p = plan_for(srv.url("udg_like.nc", fault), udg_dataset(), {{"z@500", "z", 500}},
                                 box(-20, 20, -10, 10, 2001, 2001, {1}));
    test::TempDir out;
    EXPECT_THROW(fetch_chunk(p.fields[0], p.chunks[0], out / "z.nc", kPiece), TransientError) << fault;
    EXPECT_TRUE(files_in(out.path()).empty()) << fault;
    // The fault was for the first data request only: the retry succeeds.
    EXPECT_EQ(fetch_chunk(p.fields[0], p.chunks[0], out / "z.nc", kPiece).ntime, 31u) << fault;
  }
}

TEST(FetchDap, PermanentErrorsFailAtOnceNamingUrlAndVariable) {
  const auto& srv = test::dap_server();
  const auto t0 = std::chrono::steady_clock::now();
  // No such dataset (404).
  try {
    open_source(srv.url("no_such.nc"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(srv.url("no_such.nc")), std::string::npos) << e.what();
  }
  // A variable the server lists but does not serve (404 on the data request).
  const FetchPlan p = plan_for(srv.url("udg_like.nc", "gone=Z500"), udg_dataset(), {{"z@500", "z", 500}},
                               box(-20, 20, -10, 10, 2001, 2001, {1}));
  test::TempDir out;
  try {
    fetch_chunk(p.fields[0], p.chunks[0], out / "z.nc", kPiece);
    FAIL() << "no error";
  } catch (const TransientError& e) {
    FAIL() << "classified as transient: " << e.what();
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(srv.url("udg_like.nc", "gone=Z500") + ": variable 'Z500'"), std::string::npos) << m;
    EXPECT_NE(m.find("404"), std::string::npos) << m;
  }
  EXPECT_TRUE(files_in(out.path()).empty());
  // An unknown variable: no such name in the source.
  EXPECT_THROW(plan_for(srv.url("udg_like.nc"), udg_dataset(), {{"z@300", "z", 300}}, box(0, 10, 0, 10, 2001, 2001, {1})),
               InputError);
  // A server that wants credentials we do not have (401).
  try {
    open_source(srv.url("udg_like.nc", "auth=1"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("401"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(FetchDap, CredentialsInTheUrlWorkAndNeverShow) {
  const auto& srv = test::dap_server();
  std::string url = srv.url("udg_like.nc", "auth=1");
  url.insert(url.find("://") + 3, "tester:s3cret-pw@");
  const FetchPlan p = plan_for(url, udg_dataset(), {{"z@500", "z", 500}}, box(-20, 20, -10, 10, 2001, 2001, {1}));
  EXPECT_EQ(p.fields[0].redacted().find("s3cret"), std::string::npos);
  EXPECT_EQ(p.chunks[0].request(p.fields[0]).find("s3cret"), std::string::npos);
  test::TempDir out;
  fetch_chunk(p.fields[0], p.chunks[0], out / "z.nc", kPiece);
  EXPECT_EQ(slurp(out / "z.nc").find("s3cret"), std::string::npos);

  // The wrong password: the error names the URL without it.
  std::string bad = srv.url("udg_like.nc", "auth=1");
  bad.insert(bad.find("://") + 3, "tester:wr0ng-pw@");
  try {
    open_source(bad);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find("wr0ng-pw"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(srv.url("udg_like.nc", "auth=1")), std::string::npos) << e.what();
  }
}

TEST(FetchDap, ChunksFromOneOpenSourceJoinAsTheyComeAndTheFileAppearsOnlyWhenComplete) {
  const auto& srv = test::dap_server();
  const std::string url = srv.url("udg_like.nc");
  const FetchPlan p = plan_for(url, udg_dataset(), {{"ta@850", "ta", 850}},
                               box(-20, 20, -10, 10, 2000, 2001, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  ASSERT_EQ(p.chunks.size(), 2u);
  const FieldPlan& f = p.fields[0];
  test::TempDir out;
  // Both years through one open source, as a worker does: the second costs no open requests.
  NcFile src = open_source(url);
  const size_t opens_before = occurrences(slurp(srv.log()), "/udg_like.nc.das");
  fetch_chunk(f, p.chunks[0], src, out / "2000.nc", kPiece);
  fetch_chunk(f, p.chunks[1], src, out / "2001.nc", kPiece);
  const size_t opens_after = occurrences(slurp(srv.log()), "/udg_like.nc.das");
  EXPECT_EQ(opens_after, opens_before);

  const size_t n0 = p.chunks[0].days.size(), n1 = p.chunks[1].days.size();
  {
    FieldJoiner j(f, n0 + n1, out / "joined.nc", "test", kPiece);
    j.append(out / "2000.nc", n0);
    EXPECT_FALSE(fs::exists(out / "joined.nc"));  // not before finish()
    EXPECT_THROW(j.finish(), Error);               // a year is missing
    j.append(out / "2001.nc", n1);
    j.finish();
  }
  const Field a = read_field(out / "2000.nc", "ta"), b = read_field(out / "2001.nc", "ta");
  const Field joined = read_field(out / "joined.nc", "ta");
  EXPECT_EQ(joined.days.size(), 366u + 365u);
  std::vector<float> both = a.values;
  both.insert(both.end(), b.values.begin(), b.values.end());
  EXPECT_EQ(joined.values, both);
  EXPECT_EQ(civil_from_days(joined.days.front()), (Date{2000, 1, 1}));
  EXPECT_EQ(civil_from_days(joined.days.back()), (Date{2001, 12, 31}));

  // A chunk of other than the planned length is refused; a joiner dropped early leaves nothing.
  {
    FieldJoiner j(f, n0 + n1, out / "partial.nc", "test", kPiece);
    EXPECT_THROW(j.append(out / "2001.nc", n0), InputError);
  }
  for (const auto& name : files_in(out.path())) EXPECT_EQ(name.find("partial"), std::string::npos) << name;
}
