// SHA-256 through OpenSSL's libcrypto (EVP): the digest the hub publishes for
// LFS files (X-Linked-Etag), computed while a download streams and over the
// part of a file already on disk when a download resumes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace pagoda::hub {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void reset();
  void update(const void* data, size_t n);
  std::string hex();  // the digest of everything since reset, lower-case hex; resets

  // Adds the first `bytes` bytes of the file at path (Error if shorter or unreadable).
  void update_from_file(const std::string& path, uint64_t bytes);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace pagoda::hub
