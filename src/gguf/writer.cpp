#include "gguf/writer.h"

#include <cstring>
#include <fstream>

#include "gguf/split.h"
#include "util/error.h"

namespace pagoda {
namespace {

class Out {
 public:
  template <class T>
  void put(T v) {
    const size_t n = buf.size();
    buf.resize(n + sizeof(T));
    std::memcpy(buf.data() + n, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    buf.insert(buf.end(), s.begin(), s.end());
  }
  void pad_to(uint32_t alignment) { buf.resize((buf.size() + alignment - 1) / alignment * alignment, 0); }

  void put_value(const Value& v) {
    const std::string what = "gguf writer";
    switch (v.type()) {
      case ValueType::U8: put<uint8_t>(uint8_t(v.as_u64(what))); break;
      case ValueType::I8: put<int8_t>(int8_t(v.as_i64(what))); break;
      case ValueType::U16: put<uint16_t>(uint16_t(v.as_u64(what))); break;
      case ValueType::I16: put<int16_t>(int16_t(v.as_i64(what))); break;
      case ValueType::U32: put<uint32_t>(uint32_t(v.as_u64(what))); break;
      case ValueType::I32: put<int32_t>(int32_t(v.as_i64(what))); break;
      case ValueType::U64: put<uint64_t>(v.as_u64(what)); break;
      case ValueType::I64: put<int64_t>(v.as_i64(what)); break;
      case ValueType::F32: put<float>(float(v.as_f64(what))); break;
      case ValueType::F64: put<double>(v.as_f64(what)); break;
      case ValueType::BOOL: put<uint8_t>(v.as_bool(what) ? 1 : 0); break;
      case ValueType::STRING: put_string(v.as_string(what)); break;
      case ValueType::ARRAY: {
        const auto& items = v.as_array(what);
        put<uint32_t>(uint32_t(v.elem_type()));
        put<uint64_t>(items.size());
        for (const auto& item : items) {
          if (item.type() != v.elem_type())
            fail<InvalidArgument>("gguf writer: array of {} holds a {}", value_type_name(v.elem_type()),
                                  value_type_name(item.type()));
          put_value(item);
        }
        break;
      }
    }
  }

  std::vector<uint8_t> buf;
};

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail<InvalidArgument>("gguf writer: alignment {} is not a power of two", alignment);
  if (alignment != 32) set("general.alignment", Value::u32(alignment));
}

void GgufWriter::set(const std::string& key, Value v) {
  for (auto& [k, old] : metadata_)
    if (k == key) {
      old = std::move(v);
      return;
    }
  metadata_.emplace_back(key, std::move(v));
}

uint64_t GgufWriter::checked_size(const std::string& name, TensorType type, const std::vector<uint64_t>& shape) const {
  const auto info = tensor_type_info(uint32_t(type));
  if (!info) fail<InvalidArgument>("gguf writer: tensor '{}' has an unknown type", name);
  if (shape.empty() || shape.size() > 4)
    fail<InvalidArgument>("gguf writer: tensor '{}' needs 1 to 4 dimensions", name);
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  if (shape[0] % info->block_elems != 0)
    fail<InvalidArgument>("gguf writer: tensor '{}' row length {} is not a multiple of {}", name, shape[0],
                          info->block_elems);
  for (const auto& t : tensors_)
    if (t.name == name) fail<InvalidArgument>("gguf writer: duplicate tensor '{}'", name);
  return n / info->block_elems * info->block_bytes;
}

void GgufWriter::add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> shape,
                            std::vector<uint8_t> bytes) {
  const uint64_t size = checked_size(name, type, shape);
  if (bytes.size() != size)
    fail<InvalidArgument>("gguf writer: tensor '{}' has {} bytes, its shape needs {}", name, bytes.size(), size);
  tensors_.push_back({name, type, std::move(shape), size, std::move(bytes), nullptr});
}

void GgufWriter::add_tensor(const std::string& name, TensorType type, std::vector<uint64_t> shape, Producer produce) {
  const uint64_t size = checked_size(name, type, shape);
  tensors_.push_back({name, type, std::move(shape), size, {}, std::move(produce)});
}

void GgufWriter::each_data(const std::function<void(std::span<const uint8_t>, uint64_t)>& f) const {
  for (const auto& t : tensors_) {
    const uint64_t padding = padded(t.size) - t.size;
    if (!t.produce) {
      f(t.bytes, padding);
      continue;
    }
    const std::vector<uint8_t> made = t.produce();
    if (made.size() != t.size)
      fail<InvalidArgument>("gguf writer: tensor '{}' was made with {} bytes, its shape needs {}", t.name, made.size(),
                            t.size);
    f(made, padding);
  }
}

void GgufWriter::add_f32_tensor(const std::string& name, std::vector<uint64_t> shape,
                                const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  add_tensor(name, TensorType::F32, std::move(shape), std::move(bytes));
}

// Everything before the tensor data: header, metadata, tensor infos, padding.
std::vector<uint8_t> GgufWriter::header_bytes() const {
  Out o;
  for (char ch : {'G', 'G', 'U', 'F'}) o.put<char>(ch);
  o.put<uint32_t>(3);
  o.put<uint64_t>(tensors_.size());
  o.put<uint64_t>(metadata_.size());
  for (const auto& [k, v] : metadata_) {
    o.put_string(k);
    o.put<uint32_t>(uint32_t(v.type()));
    o.put_value(v);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    o.put_string(t.name);
    o.put<uint32_t>(uint32_t(t.shape.size()));
    for (uint64_t d : t.shape) o.put<uint64_t>(d);
    o.put<uint32_t>(uint32_t(t.type));
    o.put<uint64_t>(offset);
    offset += padded(t.size);
  }
  o.pad_to(alignment_);
  return o.buf;
}

std::vector<GgufWriter> GgufWriter::split(int parts) const {
  if (parts < 1 || size_t(parts) > tensors_.size())
    fail<InvalidArgument>("gguf writer: cannot split {} tensors into {} parts", tensors_.size(), parts);
  std::vector<GgufWriter> out(size_t(parts), GgufWriter{alignment_});
  for (const auto& [k, v] : metadata_) out[0].set(k, v);
  for (int i = 0; i < parts; ++i) {
    out[size_t(i)].set(kSplitNo, Value::u16(uint16_t(i)));
    out[size_t(i)].set(kSplitCount, Value::u16(uint16_t(parts)));
    out[size_t(i)].set(kSplitTensorsCount, Value::i32(int32_t(tensors_.size())));
  }
  for (size_t t = 0; t < tensors_.size(); ++t) out[t * size_t(parts) / tensors_.size()].tensors_.push_back(tensors_[t]);
  return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out = header_bytes();
  each_data([&](std::span<const uint8_t> bytes, uint64_t padding) {
    out.insert(out.end(), bytes.begin(), bytes.end());
    out.resize(out.size() + padding, 0);
  });
  return out;
}

// Streams the tensors straight from their buffers (or producers, one at a
// time): a model's weights are not copied into one file-sized buffer first
// (a 1B-parameter F16 model is 2.2 GB).
void GgufWriter::write(const std::string& path) const {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail("cannot write {}", path);
  auto put = [&](const uint8_t* p, size_t n) { f.write(reinterpret_cast<const char*>(p), std::streamsize(n)); };
  const auto header = header_bytes();
  put(header.data(), header.size());
  const std::vector<uint8_t> zeros(alignment_, 0);
  each_data([&](std::span<const uint8_t> bytes, uint64_t padding) {
    put(bytes.data(), bytes.size());
    put(zeros.data(), padding);
  });
  f.flush();
  if (!f) fail("error writing {}", path);
}

}  // namespace pagoda
