// Write-then-rename, so a reader never sees a half-written output: a stage writes to a temporary
// name beside the final one and renames only after the file is complete and closed. If the stage
// fails (or throws) first, the destructor removes the temporary file.
//
// commit() is durable: the temporary file is fsynced before the rename and the folder after it,
// so a crash or power loss leaves either the previous file or the complete new one, never a
// renamed file whose blocks never reached the disk. A write-back error (a full disk, EIO) shows
// up at that fsync at the latest: commit() then throws Error naming the file and the cause
// ("No space left on device") and the temporary file is removed.
#pragma once
#include <string>

namespace ds {

class AtomicFile {
 public:
  explicit AtomicFile(std::string final_path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // The name to write to until commit(): "<final>.tmp-<pid>".
  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  // fsync the temporary file, rename it to the final name (atomic on one file system), fsync
  // the folder. Throws Error (exit 1) naming the final file and strerror on failure.
  void commit();
  // commit(), unless the final file exists with the same bytes: then the temporary file is
  // removed and the final one kept as it was, its modification time too (fetch compares it to
  // find a changed source: the synthetic sources rewritten alike by every demo run would
  // otherwise be fetched again each time). Returns whether the final file was replaced.
  bool commit_unless_unchanged();

 private:
  std::string final_, temp_;
  bool committed_ = false;
};

// Writes `text` to a new file at `path` (truncating), checking every write and the close; an
// error names the file and the cause.
void write_text_file(const std::string& path, const std::string& text);
// The whole text under `path` through an AtomicFile: written, fsynced, renamed.
void write_file_atomically(const std::string& path, const std::string& text);

// An output appended to while a stage runs (metrics.csv, TensorBoard events), which cannot be
// renamed into place at the end. Each append() is written whole and checked, so a full disk stops
// the run with the file's name and the cause instead of silently dropping lines.
class AppendFile {
 public:
  AppendFile() = default;
  // Opens (creating) `path`; `truncate` starts it empty, else appends.
  AppendFile(const std::string& path, bool truncate);
  AppendFile(AppendFile&& o) noexcept;
  AppendFile& operator=(AppendFile&& o) noexcept;
  ~AppendFile();
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  void append(const std::string& data);
  // fsync and close; throws on failure (the destructor only closes).
  void close();

 private:
  int fd_ = -1;
  std::string path_;
};

// For an output written only at the end of long work (a timeline, a benchmark's JSON): throws
// Error naming `path`, `option` and the cause now if it could not be written then, as that write
// will write it: kReplace (AtomicFile: the folders made, a temporary file renamed over the old)
// needs the nearest existing folder on its way writable; kAppend (AppendFile) an existing file
// writable, or a new one creatable in its existing folder. A folder at `path` is refused either
// way. Creates nothing it leaves behind.
enum class WriteMode { kReplace, kAppend };
void check_can_write(const std::string& path, const std::string& option, WriteMode mode = WriteMode::kReplace);
// Creates a directory and its parents; an error names the directory.
void make_dirs(const std::string& dir);
// True if the path exists (file or directory).
bool path_exists(const std::string& path);

}  // namespace ds
