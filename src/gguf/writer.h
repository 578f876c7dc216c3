// Writes GGUF v3 files: metadata in insertion order, tensor infos, aligned
// tensor data. Tests, tools (quantize) and benchmarks make their models with it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gguf/types.h"
#include "gguf/value.h"

namespace pagoda {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t alignment = 32);

  // Sets (or replaces) a metadata entry.
  void set(const std::string& key, Value v);
  // Adds a tensor; `bytes` must hold exactly the encoded size of `shape` in `type`.
  void add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> shape, std::vector<uint8_t> bytes);
  // A tensor whose bytes `produce` makes when the file is written (each
  // write or to_bytes() calls it again: it must give the same bytes), so a
  // model larger than memory is written one tensor at a time.
  using Producer = std::function<std::vector<uint8_t>()>;
  void add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> shape, Producer produce);
  void add_f32_tensor(const std::string& name, std::vector<uint64_t> shape, const std::vector<float>& values);

  // This model as `parts` split files (gguf/split.h): the tensors in order,
  // dealt out in near-equal runs; part 0 keeps every metadata entry, the
  // others only the alignment; each gets split.no/count/tensors.count.
  // Write part i to split_name(prefix, i + 1, parts).
  std::vector<GgufWriter> split(int parts) const;

  std::vector<uint8_t> to_bytes() const;
  // Writes the same bytes as to_bytes() without holding them all at once.
  void write(const std::string& path) const;  // throws Error on I/O failure

 private:
  std::vector<uint8_t> header_bytes() const;
  uint64_t padded(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> shape;
    uint64_t size = 0;           // bytes
    std::vector<uint8_t> bytes;  // or what produce makes
    Producer produce;
  };
  // f(bytes, padding after them) for each tensor in order; a produced one's
  // bytes live only for its call.
  void each_data(const std::function<void(std::span<const uint8_t>, uint64_t)>& f) const;
  // Checks a tensor's name, type and shape; its size in bytes.
  uint64_t checked_size(const std::string& name, TensorType type, const std::vector<uint64_t>& shape) const;
  uint32_t alignment_;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace pagoda
