// SHA-256 through OpenSSL's libcrypto (Debian's libssl-dev): the store's identity and content
// hashes. Fed piece by piece, so a store's splits are hashed while they are written.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

struct evp_md_ctx_st;

namespace ds {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256& update(const void* data, size_t bytes);
  Sha256& update(const std::string& s);  // the length first, so "ab"+"c" and "a"+"bc" differ
  template <class T>
  Sha256& update(const std::vector<T>& v) {
    const size_t n = v.size();
    update(&n, sizeof n);
    return update(v.data(), n * sizeof(T));
  }
  std::string hex();  // the digest in lower-case hex; the hasher is spent afterwards

 private:
  evp_md_ctx_st* ctx_ = nullptr;
};

// The SHA-256 of a file's bytes (hex); throws InputError naming the file when it cannot be read.
std::string file_sha256(const std::string& path);

}  // namespace ds
