#include "gguf/file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "gguf/split.h"
#include "util/error.h"

namespace pagoda {
namespace {

constexpr uint32_t kMaxDims = 4;
constexpr int kMaxArrayDepth = 4;
// Real files hold well under a million metadata values (the largest
// vocabularies have ~256k tokens), but a decoded Value takes 48 bytes, so
// without a cap each byte of a hostile or corrupt file could cost 48 bytes of
// memory (a 1 GiB file, 48 GiB).
constexpr uint64_t kMaxMetadataValues = uint64_t(1) << 24;
// Counts come from the file: reserve at most this many entries up front and
// grow past it only as entries really decode, so a flipped bit in a count
// cannot ask for a huge allocation.
constexpr uint64_t kMaxReserve = uint64_t(1) << 16;

// Bounds-checked little-endian cursor over the file's bytes.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& source) : data_(data), size_(size), source_(source) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > remaining())
      fail<FormatError>("{}: {} of {} bytes at offset {} runs past the end of the file", source_, what, len, pos_);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(len));
    pos_ += size_t(len);
    return s;
  }

  void need(size_t n, const char* what) const {
    if (n > remaining())
      fail<FormatError>("{}: truncated file: {} at offset {} needs {} bytes", source_, what, pos_, n);
  }

  [[noreturn]] void bad(const std::string& msg) const {
    fail<FormatError>("{}: {} (at offset {})", source_, msg, pos_);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& source_;
};

bool valid_value_type(uint32_t t) { return t <= uint32_t(ValueType::F64); }

// Smallest encoded size of one value of type t, to bound element counts by the bytes left.
size_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
    case ValueType::STRING: return 8;
    case ValueType::ARRAY: return 12;
  }
  return 1;
}

// Reads one value of type t; values_left is the metadata's remaining budget.
Value read_value(Cursor& c, ValueType t, int depth, uint64_t& values_left) {
  if (values_left == 0) c.bad(fmt::format("more than {} metadata values", kMaxMetadataValues));
  --values_left;
  switch (t) {
    case ValueType::U8: return Value::u8(c.read<uint8_t>("uint8 value"));
    case ValueType::I8: return Value::i8(c.read<int8_t>("int8 value"));
    case ValueType::U16: return Value::u16(c.read<uint16_t>("uint16 value"));
    case ValueType::I16: return Value::i16(c.read<int16_t>("int16 value"));
    case ValueType::U32: return Value::u32(c.read<uint32_t>("uint32 value"));
    case ValueType::I32: return Value::i32(c.read<int32_t>("int32 value"));
    case ValueType::U64: return Value::u64(c.read<uint64_t>("uint64 value"));
    case ValueType::I64: return Value::i64(c.read<int64_t>("int64 value"));
    case ValueType::F32: return Value::f32(c.read<float>("float32 value"));
    case ValueType::F64: return Value::f64(c.read<double>("float64 value"));
    case ValueType::BOOL: {
      const uint8_t b = c.read<uint8_t>("bool value");
      if (b > 1) c.bad(fmt::format("bool value {} is neither 0 nor 1", b));
      return Value::boolean(b != 0);
    }
    case ValueType::STRING: return Value::string(c.read_string("string value"));
    case ValueType::ARRAY: {
      if (depth >= kMaxArrayDepth) c.bad("arrays nested too deeply");
      const uint32_t elem = c.read<uint32_t>("array element type");
      if (!valid_value_type(elem)) c.bad(fmt::format("unknown array element type {}", elem));
      const uint64_t n = c.read<uint64_t>("array length");
      const ValueType et = ValueType(elem);
      if (n > c.remaining() / min_encoded_size(et))
        c.bad(fmt::format("array of {} elements cannot fit in the file", n));
      if (n > values_left)
        c.bad(fmt::format("array of {} elements exceeds the limit of {} metadata values", n, kMaxMetadataValues));
      std::vector<Value> items;
      items.reserve(size_t(std::min(n, kMaxReserve)));
      for (uint64_t i = 0; i < n; ++i) items.push_back(read_value(c, et, depth + 1, values_left));
      return Value::array(et, std::move(items));
    }
  }
  c.bad(fmt::format("unknown value type {}", uint32_t(t)));
}

}  // namespace

GgufFile GgufFile::open(const std::string& path, Residency residency, const LoadProgress& progress) {
  auto mapping = std::make_shared<MappedFile>(path, residency, progress);
  GgufFile f = parse(mapping->data(), mapping->size(), path);
  f.mappings_.push_back(std::move(mapping));
  if (f.get_u64(kSplitCount, 1) > 1) f.open_other_parts(residency, progress);
  return f;
}

void GgufFile::open_other_parts(Residency residency, const LoadProgress& progress) {
  const uint64_t count = get_u64(kSplitCount);
  if (count > 99999) fail<FormatError>("{}: {} {} is not a part count", source_, kSplitCount, count);
  if (get_u64(kSplitNo, 0) != 0)
    fail<FormatError>("{}: part {} of a split model; open the first part (-00001-of-{:05d}.gguf)", source_,
                      get_u64(kSplitNo) + 1, count);
  const auto name = parse_split_name(source_);
  if (!name || uint64_t(name->count) != count || name->no != 1)
    fail<FormatError>("{}: a split model of {} parts must be named NAME-00001-of-{:05d}.gguf", source_, count, count);
  for (int no = 2; no <= name->count; ++no) {
    const std::string path = split_name(name->prefix, no, name->count);
    auto mapping = std::make_shared<MappedFile>(path, residency, progress);
    GgufFile part = parse(mapping->data(), mapping->size(), path);
    if (part.get_u64(kSplitCount, 1) != count || part.get_u64(kSplitNo, 0) != uint64_t(no - 1))
      fail<FormatError>("{}: says it is part {} of {}, expected part {} of {}", path, part.get_u64(kSplitNo, 0) + 1,
                        part.get_u64(kSplitCount, 1), no, count);
    for (auto& t : part.tensors_) {
      if (!tensor_index_.emplace(t.name, tensors_.size()).second)
        fail<FormatError>("{}: tensor '{}' is also in an earlier part", path, t.name);
      tensors_.push_back(std::move(t));
    }
    mappings_.push_back(std::move(mapping));
  }
  const uint64_t want = get_u64(kSplitTensorsCount, tensors_.size());
  if (want != tensors_.size())
    fail<FormatError>("{}: {} says {} tensors, the {} parts hold {}", source_, kSplitTensorsCount, want, count,
                      tensors_.size());
}

Residency GgufFile::residency() const {
  for (const auto& m : mappings_)
    if (m->residency() == Residency::kMapped) return Residency::kMapped;
  return mappings_.empty() ? Residency::kMapped : Residency::kInMemory;
}

GgufFile GgufFile::parse_writable(uint8_t* data, size_t size, std::string source) {
  GgufFile f = parse(data, size, std::move(source));
  f.writable_ = true;
  return f;
}

bool GgufFile::edit(const std::function<void()>& fn) const {
  if (!writable_ && !(!mappings_.empty() && residency() == Residency::kInMemory)) return false;
  if (edited_)
    fail<InvalidArgument>("{}: its tensors were rearranged for a model already; open the file again for another",
                          source_);
  edited_ = true;  // before fn: a throw half way leaves the bytes neither layout
  // Every part writable at once (nested), fn inside the innermost.
  std::function<bool(size_t)> nest = [&](size_t i) {
    if (i == mappings_.size()) {
      fn();
      return true;
    }
    bool ok = true;
    if (!mappings_[i]->edit([&](uint8_t*) { ok = nest(i + 1); })) return false;
    return ok;
  };
  return nest(0);
}

GgufFile GgufFile::parse(const uint8_t* data, size_t size, std::string source) {
  GgufFile f;
  f.source_ = std::move(source);
  Cursor c(data, size, f.source_);

  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) fail<FormatError>("{}: not a GGUF file (bad magic)", f.source_);
  c.read<uint32_t>("magic");
  f.version_ = c.read<uint32_t>("version");
  if (f.version_ != 2 && f.version_ != 3)
    fail<FormatError>("{}: GGUF version {} is not supported (only 2 and 3)", f.source_, f.version_);
  const uint64_t n_tensors = c.read<uint64_t>("tensor count");
  const uint64_t n_kv = c.read<uint64_t>("metadata count");
  // Each entry takes at least 8+4+1 (kv) or 8+4+8+4+8 (tensor info) bytes.
  if (n_kv > c.remaining() / 13) c.bad(fmt::format("metadata count {} cannot fit in the file", n_kv));
  if (n_tensors > c.remaining() / 32) c.bad(fmt::format("tensor count {} cannot fit in the file", n_tensors));

  uint64_t values_left = kMaxMetadataValues;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string("metadata key");
    const uint32_t t = c.read<uint32_t>("metadata value type");
    if (!valid_value_type(t)) c.bad(fmt::format("metadata '{}' has unknown value type {}", key, t));
    Value v = read_value(c, ValueType(t), 0, values_left);
    if (!f.metadata_.emplace(key, std::move(v)).second) c.bad(fmt::format("duplicate metadata key '{}'", key));
  }

  if (const Value* a = f.find("general.alignment")) {
    const uint64_t al = a->as_u64("general.alignment");
    if (al == 0 || al > (1u << 20) || (al & (al - 1)) != 0)
      fail<FormatError>("{}: general.alignment {} is not a power of two up to 1 MiB", f.source_, al);
    f.alignment_ = uint32_t(al);
  }

  f.tensors_.reserve(size_t(std::min(n_tensors, kMaxReserve)));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = c.read_string("tensor name");
    const uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      c.bad(fmt::format("tensor '{}' has {} dimensions (1 to 4 allowed)", t.name, n_dims));
    t.n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = c.read<uint64_t>("tensor dimension");
      if (dim == 0 || dim > (uint64_t(1) << 40) || t.n_elements > (uint64_t(1) << 50) / dim)
        c.bad(fmt::format("tensor '{}' has an absurd dimension {}", t.name, dim));
      t.shape.push_back(dim);
      t.n_elements *= dim;
    }
    const uint32_t type = c.read<uint32_t>("tensor type");
    const auto info = tensor_type_info(type);
    if (!info) c.bad(fmt::format("tensor '{}' has unknown type id {}", t.name, type));
    t.type = TensorType(type);
    if (t.shape[0] % info->block_elems != 0)
      c.bad(fmt::format("tensor '{}': row length {} is not a multiple of the {} block size {}", t.name, t.shape[0],
                        info->name, info->block_elems));
    t.n_bytes = t.n_elements / info->block_elems * info->block_bytes;
    t.offset = c.read<uint64_t>("tensor offset");
    if (t.offset % f.alignment_ != 0) c.bad(fmt::format("tensor '{}' offset {} is not aligned", t.name, t.offset));
    if (!f.tensor_index_.emplace(t.name, f.tensors_.size()).second) c.bad(fmt::format("duplicate tensor '{}'", t.name));
    f.tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t data_start = (uint64_t(c.pos()) + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  const uint64_t data_size = data_start <= size ? size - data_start : 0;
  for (auto& t : f.tensors_) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset)
      fail<FormatError>("{}: tensor '{}' ({} bytes at data offset {}) runs past the end of the file", f.source_, t.name,
                        t.n_bytes, t.offset);
    t.data = data + data_start + t.offset;
  }
  return f;
}

const Value* GgufFile::find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const Value& GgufFile::get(const std::string& key) const {
  if (const Value* v = find(key)) return *v;
  fail<FormatError>("{}: metadata key '{}' is missing", source_, key);
}

const TensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t GgufFile::get_u64(const std::string& key, std::optional<uint64_t> dflt) const {
  if (const Value* v = find(key)) return v->as_u64(key);
  if (dflt) return *dflt;
  return get(key).as_u64(key);
}

double GgufFile::get_f64(const std::string& key, std::optional<double> dflt) const {
  if (const Value* v = find(key)) return v->as_f64(key);
  if (dflt) return *dflt;
  return get(key).as_f64(key);
}

std::string GgufFile::get_string(const std::string& key, std::optional<std::string> dflt) const {
  if (const Value* v = find(key)) return v->as_string(key);
  if (dflt) return *dflt;
  return get(key).as_string(key);
}

bool GgufFile::get_bool(const std::string& key, std::optional<bool> dflt) const {
  if (const Value* v = find(key)) return v->as_bool(key);
  if (dflt) return *dflt;
  return get(key).as_bool(key);
}

}  // namespace pagoda
