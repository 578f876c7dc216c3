// The paged K/V cache on the device (vLLM's layout, one pair of caches per
// layer) and the row gather for the logits. A cache block holds block_size
// positions; slot s is position s % block_size of block s / block_size.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace pagoda::cuda {

// k_cache[slot][:kv_dim] = k[t][:] and v_cache[slot][:kv_dim] = v[t][:] in F16,
// with slot = slot_mapping[t]; tokens whose slot is negative are skipped (padding).
//   k, v                [n_tokens][kv_dim] F32
//   slot_mapping        [n_tokens] int32 (block * block_size + offset; StepUpload's slots[g])
//   k_cache, v_cache    [num_blocks][block_size][row_stride] F16: one layer's part of the
//                       pool, rows row_stride >= kv_dim apart (a KV page slot's width)
// Slots must lie below num_blocks * block_size (not checked on the device).
cudaError_t store_kv(const float* k, const float* v, const int32_t* slot_mapping, int n_tokens, int kv_dim,
                     int row_stride, __half* k_cache, __half* v_cache, cudaStream_t stream);

// For each pair p: block pairs[p][1] of both caches becomes a copy of block
// pairs[p][0] (copy-on-write of a shared prefix block). One layer a call: the
// host half loops over the layers. A block must not be both a source and a
// destination in one call.
//   k_cache, v_cache  [num_blocks][block_size][kv_dim] F16 (kv_dim: the rows' stride)
//   pairs             [n_pairs][2] int32 (src, dst): kv/types.h's BlockCopy array as it is
cudaError_t copy_blocks(__half* k_cache, __half* v_cache, const int32_t* pairs, int n_pairs, int block_size, int kv_dim,
                        cudaStream_t stream);

// out[i][:] = in[indices[i]][:] (the logits rows a step samples from).
//   in       [n_in][n] F32
//   indices  [n_out] int32 in [0, n_in)
//   out      [n_out][n] F32
cudaError_t gather_rows(const float* in, const int32_t* indices, int n_out, int64_t n, float* out, cudaStream_t stream);

}  // namespace pagoda::cuda
