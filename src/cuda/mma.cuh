// The int8 tensor-core product mma.sync.m16n8k32 (sm_80+), and dp4a's
// four-byte dot, as functions that both compilers read: inline PTX on the device; under
// tests/cuda/host_emulation.h a warp-collective plain version of the same
// fragment layout, so a CPU run checks a kernel's fragment indexing too.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/portable.cuh"

// The int8 m16n8k32 shape is Ampere's; the build targets sm_89 and sm_90.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "cuda/mma.cuh: mma.sync m16n8k32 with s8 operands needs sm_80 or newer"
#endif

namespace pagoda::cuda::detail {

// Which element of the tiles each lane holds (PTX ISA, "Matrix Fragments for
// mma.m16n8k32" with .s8): lane = 4 * group + thread_in_group, group 0..7.
//   A [16][32] s8: 4 registers of 4 bytes, a[0..15] (byte i % 4 of register i / 4)
//   B [32][8] s8 (k by n, held by columns): 2 registers, b[0..7]
//   C, D [16][8] s32: c[0..3]
// Byte 0 of a register is its lowest-addressed element.
PAGODA_HD int mma_a_row(int lane, int i) { return lane / 4 + 8 * ((i / 4) % 2); }
PAGODA_HD int mma_a_col(int lane, int i) { return 4 * (lane % 4) + i % 4 + 16 * (i / 8); }
PAGODA_HD int mma_b_row(int lane, int i) { return 4 * (lane % 4) + i % 4 + 16 * (i / 4); }
PAGODA_HD int mma_b_col(int lane, int /*i*/) { return lane / 4; }
PAGODA_HD int mma_c_row(int lane, int i) { return lane / 4 + 8 * (i / 2); }
PAGODA_HD int mma_c_col(int lane, int i) { return 2 * (lane % 4) + i % 2; }

// One lane's operands, as the host version trades them.
struct MmaFragments {
  uint32_t a[4];
  uint32_t b[2];
};

// Lane `lane`'s D = A B + C from every lane's fragments: the tiles rebuilt by
// the layout above, then a plain integer product.
inline void mma_lane_reference(const MmaFragments* all, int lane, int c[4]) {
  int8_t a[16][32], b[32][8];
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < 16; ++i)
      a[mma_a_row(l, i)][mma_a_col(l, i)] = int8_t(uint8_t(all[l].a[i / 4] >> (8 * (i % 4))));
    for (int i = 0; i < 8; ++i) b[mma_b_row(l, i)][mma_b_col(l, i)] = int8_t(uint8_t(all[l].b[i / 4] >> (8 * (i % 4))));
  }
  for (int i = 0; i < 4; ++i) {
    const int r = mma_c_row(lane, i), n = mma_c_col(lane, i);
    int s = 0;
    for (int kk = 0; kk < 32; ++kk) s += int(a[r][kk]) * int(b[kk][n]);
    c[i] += s;
  }
}

// c + the dot product of a's and b's four signed bytes (dp4a, sm_61+).
PAGODA_HD int dot4_s8(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
  return __dp4a(int(a), int(b), c);
#else
  for (int i = 0; i < 4; ++i) c += int(int8_t(uint8_t(a >> (8 * i)))) * int(int8_t(uint8_t(b >> (8 * i))));
  return c;
#endif
}

// c += A B for this warp's tiles, every lane of the warp calling it together.
__device__ __forceinline__ void mma_s8_m16n8k32(const uint32_t a[4], const uint32_t b[2], int c[4]) {
#ifdef __CUDA_ARCH__
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(PAGODA_HOST_EMULATION)
  // Each lane deposits its fragments at the warp's barrier and computes its own D.
  MmaFragments all[32];
  emulation::warp_exchange(MmaFragments{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}}, all);
  mma_lane_reference(all, int(threadIdx.x % 32), c);
#else
  // nvcc's host pass: device code never runs there.
  (void)a;
  (void)b;
  (void)c;
#endif
}

}  // namespace pagoda::cuda::detail
