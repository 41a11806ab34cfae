// Durable, checked writes: a full disk (/dev/full) is an Error naming the file and the cause, a
// committed file holds exactly what was written and leaves no temporary name behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/atomic_file.h"
#include "io/error.h"

namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The message of the Error `f` throws (empty if it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ds::Error& e) {
    EXPECT_EQ(e.code(), ds::kExitFailure);
    return e.what();
  }
  return "";
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("ds_atomic_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

}  // namespace

TEST(AtomicFile, FullDiskNamesFileAndCause) {
  const std::string msg = error_of([] { ds::write_text_file("/dev/full", std::string(100000, 'x')); });
  EXPECT_NE(msg.find("/dev/full"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No space left on device"), std::string::npos) << msg;
}

TEST(AtomicFile, AppendToFullDiskNamesFileAndCause) {
  ds::AppendFile f("/dev/full", false);
  const std::string msg = error_of([&] { f.append("epoch,loss\n"); });
  EXPECT_NE(msg.find("/dev/full: cannot write: No space left on device"), std::string::npos) << msg;
}

TEST(AtomicFile, CommitWritesWholeFileAndLeavesNoTemporary) {
  TempDir t;
  const std::string path = (t.dir / "sub" / "scores.json").string();
  ds::write_file_atomically(path, "{\"a\": 1}\n");
  ds::write_file_atomically(path, "{\"a\": 2}\n");  // replaces
  EXPECT_EQ(read_all(path), "{\"a\": 2}\n");
  for (const auto& e : fs::recursive_directory_iterator(t.dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(AtomicFile, AppendFileAppendsAndTruncates) {
  TempDir t;
  const std::string path = (t.dir / "metrics.csv").string();
  {
    ds::AppendFile f(path, true);
    f.append("a\n");
    f.close();
  }
  {
    ds::AppendFile f(path, false);  // a resumed run appends
    f.append("b\n");
    f.close();
  }
  EXPECT_EQ(read_all(path), "a\nb\n");
  ds::AppendFile(path, true).close();  // a new run starts empty
  EXPECT_EQ(read_all(path), "");
}

TEST(AtomicFile, UncommittedTemporaryIsRemoved) {
  TempDir t;
  const std::string path = (t.dir / "store.h5").string();
  std::string temp;
  {
    ds::AtomicFile f(path);
    temp = f.temp_path();
    EXPECT_EQ(temp, path + ".tmp-" + std::to_string(::getpid()));
    ds::write_text_file(temp, "partial");
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_FALSE(fs::exists(path));
}

TEST(AtomicFile, CommitOfMissingTemporaryNamesTheFile) {
  TempDir t;
  const std::string path = (t.dir / "checkpoint_last.h5").string();
  ds::AtomicFile f(path);  // nothing written: the fsync cannot open it
  const std::string msg = error_of([&] { f.commit(); });
  EXPECT_NE(msg.find(path + ": cannot write: No such file or directory"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(path));
}

// commit_unless_unchanged keeps a final file with the same bytes as it was (its modification
// time too: fetch compares it to find a changed source) and replaces one that differs; either
// way no temporary file stays.
TEST(AtomicFile, CommitUnlessUnchangedKeepsTheSameBytes) {
  TempDir t;
  const std::string path = (t.dir / "era_interim_synth.nc").string();
  const auto write = [&](const std::string& text) {
    ds::AtomicFile f(path);
    ds::write_text_file(f.temp_path(), text);
    const bool replaced = f.commit_unless_unchanged();
    EXPECT_FALSE(fs::exists(f.temp_path()));
    return replaced;
  };
  EXPECT_TRUE(write("first"));  // no file before
  const auto old_time = fs::last_write_time(path) - std::chrono::hours(1);
  fs::last_write_time(path, old_time);
  EXPECT_FALSE(write("first"));
  EXPECT_EQ(fs::last_write_time(path), old_time);
  EXPECT_TRUE(write("firsT"));  // the same size, other bytes
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "firsT");
  EXPECT_NE(fs::last_write_time(path), old_time);
  EXPECT_TRUE(write("longer text"));
}

// check_can_write (outputs written at the end of long work): as each write writes them.
TEST(CheckCanWrite, FollowsHowTheOutputIsWritten) {
  TempDir t;
  const std::string d = t.dir.string();
  // A replaced file's folders are made by AtomicFile: a missing one is fine, and nothing is left.
  EXPECT_EQ(error_of([&] { ds::check_can_write(d + "/new/sub/t.json", "--out"); }), "");
  EXPECT_FALSE(fs::exists(d + "/new"));
  // An appended file's folder is not made.
  EXPECT_NE(error_of([&] { ds::check_can_write(d + "/new/r.jsonl", "--json", ds::WriteMode::kAppend); })
                .find("No such file"),
            std::string::npos);
  ds::write_file_atomically(d + "/file", "x");
  EXPECT_NE(error_of([&] { ds::check_can_write(d + "/file/t.json", "--out"); }).find("is not a folder"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ds::check_can_write(d, "--timeline"); }).find("(it is a folder)"), std::string::npos);
  EXPECT_EQ(error_of([&] { ds::check_can_write(d + "/file", "--json", ds::WriteMode::kAppend); }), "");
  EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1);  // "file": no probe left
}
