// The subset of ggml's C API the format oracle tests call, declared here by
// hand (the libraries are loaded with dlopen, testing/llama_cpp_libs.h; no
// ggml header is vendored). The layouts and signatures are those of ggml.h in
// llama.cpp v0.5.0: change them only together with kLlamaCppPackage.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pagoda::testing::ggml {

// enum ggml_type: the type ids, the same numbers GGUF files store.
using Type = int;

using ToFloat = void(const void* x, float* y, int64_t k);
using FromFloat = void(const float* x, void* y, int64_t k);

// struct ggml_type_traits, field for field.
struct TypeTraits {
  const char* type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  ToFloat* to_float;
  FromFloat* from_float_ref;
};

// const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type);
using GetTypeTraits = const TypeTraits*(Type type);
// size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst,
//                            int64_t start, int64_t nrows, int64_t n_per_row, const float * imatrix);
using QuantizeChunk = size_t(Type type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row,
                             const float* imatrix);
// bool ggml_quantize_requires_imatrix(enum ggml_type type);
using QuantizeRequiresImatrix = bool(Type type);

// The CPU backend (a libggml-cpu-*.so): ggml_vec_dot_t, the dot product of a
// weight row with an activation row of its vec_dot_type (nrc = 1: one row).
using VecDot = void(int n, float* s, size_t bs, const void* x, size_t bx, const void* y, size_t by, int nrc);

// struct ggml_type_traits_cpu, field for field.
struct TypeTraitsCpu {
  FromFloat* from_float;
  VecDot* vec_dot;
  Type vec_dot_type;
  int64_t nrows;
};

// const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type);
using GetTypeTraitsCpu = const TypeTraitsCpu*(Type type);
// void ggml_cpu_init(void); (its F16 tables, which the dot products read)
using CpuInit = void();

}  // namespace pagoda::testing::ggml
