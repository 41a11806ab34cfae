// The history attribute's command line: quoted for a shell where needed, credentials removed.
#include <gtest/gtest.h>

#include "io/command_line.h"

using namespace ds;

TEST(CommandLine, QuotesWhatAShellWouldSplitAndDropsUrlCredentials) {
  const char* argv[] = {"/opt/x/bin/downscale", "fetch", "--config", "configs/na.yaml", "--set",
                        "fetch.years=[1979, 2008]", "--set",
                        "fetch.predictors.source=https://me:s3cret@server/dods/era.nc", "--set", "run.dir=it's"};
  record_command_line(10, argv);
  EXPECT_EQ(command_line(),
            "downscale fetch --config configs/na.yaml --set 'fetch.years=[1979, 2008]' --set "
            "fetch.predictors.source=https://server/dods/era.nc --set 'run.dir=it'\\''s'");
  record_command_line(0, argv);
  EXPECT_EQ(command_line(), "downscale");
}
