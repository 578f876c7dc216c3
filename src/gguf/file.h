// A parsed GGUF file (v2 or v3): metadata, tensor infos, and tensor data that
// points into the file's memory map (never copied). Parsing checks every
// count, length and offset against the bytes that exist, so a truncated or
// hostile file gets a FormatError, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf/types.h"
#include "gguf/value.h"
#include "util/mapped_file.h"

namespace pagoda {

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::F32;
  std::vector<uint64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
  uint64_t offset = 0;          // from the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;

  uint64_t rows() const { return shape.empty() ? 0 : n_elements / shape[0]; }
};

class GgufFile {
 public:
  static constexpr uint32_t kDefaultAlignment = 32;

  // Maps (or reads, see Residency) and parses the file at path. The first
  // part of a split model (gguf/split.h: split.count > 1) opens every part
  // from the same folder as one file: the first part's metadata, all parts'
  // tensors; a missing, foreign or duplicated part is a FormatError.
  // progress: each part's bytes as they are read (see util/progress.h).
  static GgufFile open(const std::string& path, Residency residency = Residency::kMapped,
                       const LoadProgress& progress = {});
  // Parses bytes the caller keeps alive (tests, the fuzzer). Tensor data
  // pointers point into `data`.
  static GgufFile parse(const uint8_t* data, size_t size, std::string source = "<memory>");
  // The same over bytes the caller lets this file rearrange (see edit).
  static GgufFile parse_writable(uint8_t* data, size_t size, std::string source = "<memory>");

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& source() const { return source_; }
  // How open() holds the bytes (kMapped for parse(), or if any part is mapped).
  Residency residency() const;
  // How many files the tensors come from (split.count; 1 for a whole file).
  size_t parts() const { return mappings_.empty() ? 1 : mappings_.size(); }
  const std::map<std::string, Value>& metadata() const { return metadata_; }

  // Runs fn() and returns true where the tensors' bytes are this file's own
  // copy (open() with kInMemory) or the caller's to rearrange
  // (parse_writable): inside fn the tensors' data may be written through
  // const_cast. A mapped file is never written: false, fn not called. Once
  // only: a second call throws InvalidArgument (the bytes already serve the
  // model that rearranged them; tensors() then describes the stored layout
  // no more). Model loading uses it to lay weight matrices out for the kernels.
  bool edit(const std::function<void()>& fn) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // Drops the mapped parts' pages from this process (MappedFile::release_pages).
  void release_pages() const {
    for (const auto& m : mappings_) m->release_pages();
  }

  const Value* find(const std::string& key) const;
  const Value& get(const std::string& key) const;  // FormatError if missing
  const TensorInfo* find_tensor(const std::string& name) const;

  // Typed metadata reads with a default for absent keys; present keys of the
  // wrong type are a FormatError.
  uint64_t get_u64(const std::string& key, std::optional<uint64_t> dflt = std::nullopt) const;
  double get_f64(const std::string& key, std::optional<double> dflt = std::nullopt) const;
  std::string get_string(const std::string& key, std::optional<std::string> dflt = std::nullopt) const;
  bool get_bool(const std::string& key, std::optional<bool> dflt = std::nullopt) const;

 private:
  GgufFile() = default;
  // Adds the other parts of a split model whose first part this is.
  void open_other_parts(Residency residency, const LoadProgress& progress);
  std::vector<std::shared_ptr<MappedFile>> mappings_;  // one per part; empty for parse()
  bool writable_ = false;                              // parse_writable
  mutable bool edited_ = false;                        // edit() ran
  std::string source_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  std::map<std::string, Value> metadata_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

}  // namespace pagoda
