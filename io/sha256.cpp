#include "io/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "io/error.h"

namespace ds {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw Error("SHA-256: OpenSSL could not start a digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256& Sha256::update(const void* data, size_t bytes) {
  if (bytes && EVP_DigestUpdate(ctx_, data, bytes) != 1) throw Error("SHA-256: OpenSSL digest update failed");
  return *this;
}

Sha256& Sha256::update(const std::string& s) {
  const size_t n = s.size();
  update(&n, sizeof n);
  return update(s.data(), n);
}

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, md, &len) != 1) throw Error("SHA-256: OpenSSL digest final failed");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += digits[md[i] >> 4], out += digits[md[i] & 15];
  return out;
}

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read");
  Sha256 h;
  std::vector<char> buf(size_t(1) << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    if (in.gcount() > 0) h.update(buf.data(), size_t(in.gcount()));
  }
  if (in.bad()) throw InputError(path + ": read error");
  return h.hex();
}

}  // namespace ds
