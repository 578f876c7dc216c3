#include "hub/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "util/error.h"

namespace pagoda::hub {

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md) fail<ResourceExhausted>("cannot allocate a SHA-256 context");
  reset();
}

Sha256::~Sha256() = default;

void Sha256::reset() {
  if (EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1) fail("SHA-256: EVP_DigestInit_ex failed");
}

void Sha256::update(const void* data, size_t n) {
  if (n && EVP_DigestUpdate(ctx_->md, data, n) != 1) fail("SHA-256: EVP_DigestUpdate failed");
}

std::string Sha256::hex() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, d, &len) != 1) fail("SHA-256: EVP_DigestFinal_ex failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  reset();
  return out;
}

void Sha256::update_from_file(const std::string& path, uint64_t bytes) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("cannot read {}: {}", path, std::strerror(errno));
  std::vector<unsigned char> buf(1 << 20);
  while (bytes > 0) {
    const size_t n = std::fread(buf.data(), 1, size_t(std::min<uint64_t>(bytes, buf.size())), f);
    if (n == 0) {
      std::fclose(f);
      fail("cannot read {}: it ended early", path);
    }
    update(buf.data(), n);
    bytes -= n;
  }
  std::fclose(f);
}

}  // namespace pagoda::hub
