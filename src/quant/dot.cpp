#include "quant/dot.h"

#include <cstring>

#include "util/error.h"
#include "util/half.h"

namespace pagoda {

bool has_quantized_dot(TensorType t) {
  switch (t) {
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::IQ4_NL:
    case TensorType::MXFP4:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_XS: return true;
    default: return false;
  }
}

TensorType activation_type(TensorType t) {
  switch (t) {
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::IQ4_NL:
    case TensorType::MXFP4: return TensorType::Q8_0;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ4_XS: return TensorType::Q8_K;
    default: fail<Unsupported>("no quantized dot product for {}", tensor_type_name(t));
  }
}

float vec_dot_scalar(TensorType t, const void* w, const void* x, size_t n) {
  const auto* x0 = static_cast<const BlockQ8_0*>(x);
  const auto* xk = static_cast<const BlockQ8_K*>(x);
  const size_t nb = n / kQK, nbk = n / kQKK;
  switch (t) {
    case TensorType::Q8_0: return vec_dot_q8_0_q8_0(static_cast<const BlockQ8_0*>(w), x0, nb);
    case TensorType::Q4_0: return vec_dot_q4_0_q8_0(static_cast<const BlockQ4_0*>(w), x0, nb);
    case TensorType::Q5_0: return vec_dot_q5_0_q8_0(static_cast<const BlockQ5_0*>(w), x0, nb);
    case TensorType::Q5_1: return vec_dot_q5_1_q8_0(static_cast<const BlockQ5_1*>(w), x0, nb);
    case TensorType::IQ4_NL: return vec_dot_iq4_nl_q8_0(static_cast<const BlockIQ4_NL*>(w), x0, nb);
    case TensorType::MXFP4: return vec_dot_mxfp4_q8_0(static_cast<const BlockMXFP4*>(w), x0, nb);
    case TensorType::Q2_K: return vec_dot_q2_k_q8_k(static_cast<const BlockQ2_K*>(w), xk, nbk);
    case TensorType::Q3_K: return vec_dot_q3_k_q8_k(static_cast<const BlockQ3_K*>(w), xk, nbk);
    case TensorType::Q4_K: return vec_dot_q4_k_q8_k(static_cast<const BlockQ4_K*>(w), xk, nbk);
    case TensorType::Q5_K: return vec_dot_q5_k_q8_k(static_cast<const BlockQ5_K*>(w), xk, nbk);
    case TensorType::Q6_K: return vec_dot_q6_k_q8_k(static_cast<const BlockQ6_K*>(w), xk, nbk);
    case TensorType::IQ4_XS: return vec_dot_iq4_xs_q8_k(static_cast<const BlockIQ4_XS*>(w), xk, nbk);
    default: fail<Unsupported>("no quantized dot product for {}", tensor_type_name(t));
  }
}

// Each block: an exact int32 sum of code products, then one float multiply
// by the two scales. (Largest sums: Q8_0 32*127*127 ~ 516k; MXFP4
// 32*12*127 ~ 49k; Q4_K 8*63*32*15*127 ~ 31M; Q5_K 8*63*32*31*127 ~ 64M;
// Q6_K 16*128*16*32*127 ~ 133M; IQ4_XS 8*32*32*127*127 ~ 132M; all fit in
// int32.)

int32_t block_dot_q8_0(const BlockQ8_0& w, const BlockQ8_0& x) {
  int32_t s = 0;
  for (int i = 0; i < kQK; ++i) s += int32_t(w.qs[i]) * x.qs[i];
  return s;
}

int32_t block_dot_q4_0(const BlockQ4_0& w, const BlockQ8_0& x) {
  int32_t s = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    s += ((w.qs[i] & 0xF) - 8) * int32_t(x.qs[i]);
    s += ((w.qs[i] >> 4) - 8) * int32_t(x.qs[i + kQK / 2]);
  }
  return s;
}

int32_t block_dot_q5_0(const BlockQ5_0& w, const BlockQ8_0& x) {
  uint32_t qh;
  std::memcpy(&qh, w.qh, 4);
  int32_t s = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    const int lo = ((w.qs[i] & 0xF) | int((qh >> i) & 1) << 4) - 16;
    const int hi = ((w.qs[i] >> 4) | int((qh >> (i + kQK / 2)) & 1) << 4) - 16;
    s += lo * int32_t(x.qs[i]) + hi * int32_t(x.qs[i + kQK / 2]);
  }
  return s;
}

void block_dot_q4_k(const BlockQ4_K& w, const BlockQ8_K& x, int32_t& scaled, int32_t& mins) {
  scaled = 0;
  mins = 0;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    unpack_q4_k_scale(w.scales, j, sc, m);
    const uint8_t* qs = w.qs + 32 * (j / 2);
    const int8_t* xs = x.qs + 32 * j;
    const int shift = 4 * (j % 2);
    int32_t s = 0;
    for (int l = 0; l < 32; ++l) s += int32_t((qs[l] >> shift) & 0xF) * xs[l];
    scaled += sc * s;
    mins += m * (int32_t(x.bsums[2 * j]) + x.bsums[2 * j + 1]);
  }
}

// Walks Q6_K's storage order: per 128 elements, byte l of ql/qh feeds the
// elements l, l+32, l+64 and l+96 (see q6_k_code), whose 16-element
// sub-blocks are 2k + l/16 for k = 0..3.
int32_t block_dot_q6_k(const BlockQ6_K& w, const BlockQ8_K& x) {
  int32_t scaled = 0;
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = w.ql + 64 * h;
    const uint8_t* qh = w.qh + 32 * h;
    const int8_t* xs = x.qs + 128 * h;
    for (int j = 0; j < 2; ++j) {  // l in 16j..16j+15: sub-blocks j, 2+j, 4+j, 6+j
      int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int l = 16 * j; l < 16 * j + 16; ++l) {
        s0 += (((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32) * int32_t(xs[l]);
        s1 += (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32) * int32_t(xs[l + 32]);
        s2 += (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * int32_t(xs[l + 64]);
        s3 += (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * int32_t(xs[l + 96]);
      }
      const int8_t* sc = w.scales + 8 * h + j;
      scaled += sc[0] * s0 + sc[2] * s1 + sc[4] * s2 + sc[6] * s3;
    }
  }
  return scaled;
}

float vec_dot_q8_0_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += f16_to_f32(w[b].d) * f16_to_f32(x[b].d) * float(block_dot_q8_0(w[b], x[b]));
  return sum;
}

float vec_dot_q4_0_q8_0(const BlockQ4_0* w, const BlockQ8_0* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += f16_to_f32(w[b].d) * f16_to_f32(x[b].d) * float(block_dot_q4_0(w[b], x[b]));
  return sum;
}

float vec_dot_q5_0_q8_0(const BlockQ5_0* w, const BlockQ8_0* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += f16_to_f32(w[b].d) * f16_to_f32(x[b].d) * float(block_dot_q5_0(w[b], x[b]));
  return sum;
}

// sum_i (d*sc*q_i - dmin*m) * dx*x_i = dx * (d * sum_j sc_j <q, x>_j - dmin * sum_j m_j sum(x)_j):
// the min term needs only the sums of the activations, which Q8_K carries.
float vec_dot_q4_k_q8_k(const BlockQ4_K* w, const BlockQ8_K* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) {
    int32_t scaled, mins;
    block_dot_q4_k(w[b], x[b], scaled, mins);
    sum += x[b].d * (f16_to_f32(w[b].d) * float(scaled) - f16_to_f32(w[b].dmin) * float(mins));
  }
  return sum;
}

float vec_dot_q6_k_q8_k(const BlockQ6_K* w, const BlockQ8_K* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += x[b].d * f16_to_f32(w[b].d) * float(block_dot_q6_k(w[b], x[b]));
  return sum;
}

// ------------------------------------------------ Q5_1, IQ4_NL, MXFP4, Q2_K, Q3_K, Q5_K, IQ4_XS
// Float halves: Q5_1 is d_x * (d_w * codes + m_w * sum x) (the min against
// the activations' sum), IQ4_NL and MXFP4 as Q4_0, Q2_K and Q5_K as Q4_K,
// Q3_K and IQ4_XS as Q6_K.

void block_dot_q5_1(const BlockQ5_1& w, const BlockQ8_0& x, int32_t& codes, int32_t& x_sum) {
  uint32_t qh;
  std::memcpy(&qh, w.qh, 4);
  codes = 0;
  x_sum = 0;
  for (int i = 0; i < kQK / 2; ++i) {
    const int lo = (w.qs[i] & 0xF) | int((qh >> i) & 1) << 4;
    const int hi = (w.qs[i] >> 4) | int((qh >> (i + kQK / 2)) & 1) << 4;
    codes += lo * int32_t(x.qs[i]) + hi * int32_t(x.qs[i + kQK / 2]);
    x_sum += int32_t(x.qs[i]) + x.qs[i + kQK / 2];
  }
}

int32_t block_dot_iq4_nl(const BlockIQ4_NL& w, const BlockQ8_0& x) {
  int32_t s = 0;
  for (int i = 0; i < kQK / 2; ++i)
    s += kIQ4NLValues[w.qs[i] & 0xF] * int32_t(x.qs[i]) + kIQ4NLValues[w.qs[i] >> 4] * int32_t(x.qs[i + kQK / 2]);
  return s;
}

int32_t block_dot_mxfp4(const BlockMXFP4& w, const BlockQ8_0& x) {
  int32_t s = 0;
  for (int i = 0; i < kQK / 2; ++i)
    s += kMXFP4Values[w.qs[i] & 0xF] * int32_t(x.qs[i]) + kMXFP4Values[w.qs[i] >> 4] * int32_t(x.qs[i + kQK / 2]);
  return s;
}

void block_dot_q2_k(const BlockQ2_K& w, const BlockQ8_K& x, int32_t& scaled, int32_t& mins) {
  scaled = 0;
  mins = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t s = 0;
    for (int l = 0; l < 16; ++l) s += q2_k_code(w, 16 * j + l) * int32_t(x.qs[16 * j + l]);
    scaled += (w.scales[j] & 0xF) * s;
    mins += (w.scales[j] >> 4) * int32_t(x.bsums[j]);
  }
}

int32_t block_dot_q3_k(const BlockQ3_K& w, const BlockQ8_K& x) {
  int32_t scaled = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t s = 0;
    for (int l = 0; l < 16; ++l) s += q3_k_code(w, 16 * j + l) * int32_t(x.qs[16 * j + l]);
    scaled += q3_k_scale(w.scales, j) * s;
  }
  return scaled;
}

void block_dot_q5_k(const BlockQ5_K& w, const BlockQ8_K& x, int32_t& scaled, int32_t& mins) {
  scaled = 0;
  mins = 0;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    unpack_q4_k_scale(w.scales, j, sc, m);
    int32_t s = 0;
    for (int l = 0; l < 32; ++l) s += q5_k_code(w, 32 * j + l) * int32_t(x.qs[32 * j + l]);
    scaled += sc * s;
    mins += m * (int32_t(x.bsums[2 * j]) + x.bsums[2 * j + 1]);
  }
}

int32_t block_dot_iq4_xs(const BlockIQ4_XS& w, const BlockQ8_K& x) {
  int32_t scaled = 0;
  for (int j = 0; j < 8; ++j) {
    const uint8_t* qs = w.qs + 16 * j;
    const int8_t* xs = x.qs + 32 * j;
    int32_t s = 0;
    for (int l = 0; l < 16; ++l)
      s += kIQ4NLValues[qs[l] & 0xF] * int32_t(xs[l]) + kIQ4NLValues[qs[l] >> 4] * int32_t(xs[l + 16]);
    scaled += iq4_xs_scale(w, j) * s;
  }
  return scaled;
}

float vec_dot_q5_1_q8_0(const BlockQ5_1* w, const BlockQ8_0* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) {
    int32_t codes, x_sum;
    block_dot_q5_1(w[b], x[b], codes, x_sum);
    sum += f16_to_f32(x[b].d) * (f16_to_f32(w[b].d) * float(codes) + f16_to_f32(w[b].m) * float(x_sum));
  }
  return sum;
}

float vec_dot_iq4_nl_q8_0(const BlockIQ4_NL* w, const BlockQ8_0* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += f16_to_f32(w[b].d) * f16_to_f32(x[b].d) * float(block_dot_iq4_nl(w[b], x[b]));
  return sum;
}

// ggml's expression: (d_x * d_w) * s, the scale halved as the values are doubled.
float vec_dot_mxfp4_q8_0(const BlockMXFP4* w, const BlockQ8_0* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += mxfp4_scale(w[b].e) * f16_to_f32(x[b].d) * float(block_dot_mxfp4(w[b], x[b]));
  return sum;
}

float vec_dot_q2_k_q8_k(const BlockQ2_K* w, const BlockQ8_K* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) {
    int32_t scaled, mins;
    block_dot_q2_k(w[b], x[b], scaled, mins);
    sum += x[b].d * (f16_to_f32(w[b].d) * float(scaled) - f16_to_f32(w[b].dmin) * float(mins));
  }
  return sum;
}

float vec_dot_q3_k_q8_k(const BlockQ3_K* w, const BlockQ8_K* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += x[b].d * f16_to_f32(w[b].d) * float(block_dot_q3_k(w[b], x[b]));
  return sum;
}

float vec_dot_q5_k_q8_k(const BlockQ5_K* w, const BlockQ8_K* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) {
    int32_t scaled, mins;
    block_dot_q5_k(w[b], x[b], scaled, mins);
    sum += x[b].d * (f16_to_f32(w[b].d) * float(scaled) - f16_to_f32(w[b].dmin) * float(mins));
  }
  return sum;
}

float vec_dot_iq4_xs_q8_k(const BlockIQ4_XS* w, const BlockQ8_K* x, size_t nb) {
  float sum = 0;
  for (size_t b = 0; b < nb; ++b) sum += x[b].d * f16_to_f32(w[b].d) * float(block_dot_iq4_xs(w[b], x[b]));
  return sum;
}

}  // namespace pagoda
