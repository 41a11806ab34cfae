// Write-then-rename, so a reader never sees a half-written output: a stage writes to a temporary
// name beside the final one and renames only after the file is complete and closed. If the stage
// fails (or throws) first, the destructor removes the temporary file.
#pragma once
#include <string>

namespace ds {

class AtomicFile {
 public:
  explicit AtomicFile(std::string final_path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // The name to write to until commit().
  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  // Renames the temporary file to the final name (atomic on one file system).
  void commit();

 private:
  std::string final_, temp_;
  bool committed_ = false;
};

// Creates a directory and its parents; an error names the directory.
void make_dirs(const std::string& dir);
// True if the path exists (file or directory).
bool path_exists(const std::string& path);

}  // namespace ds
