// The Gated DeltaNet step on every SIMD target against a double-precision
// scalar reference written from its definition, over many tokens (the state
// carries every rounding forward), in place and from zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/delta_net.h"
#include "simd_targets.h"

namespace pagoda {
namespace {

// S *= decay; d = beta (v - S k); S += d k^T; o = scale S q, one matrix
// operation at a time, in double.
void reference_step(std::vector<double>& S, size_t dv, size_t dk, const float* q, const float* k, const float* v,
                    double decay, double beta, double scale, std::vector<double>& o) {
  for (double& s : S) s *= decay;
  std::vector<double> d(dv);
  for (size_t j = 0; j < dv; ++j) {
    double sk = 0;
    for (size_t i = 0; i < dk; ++i) sk += S[j * dk + i] * k[i];
    d[j] = beta * (v[j] - sk);
  }
  for (size_t j = 0; j < dv; ++j)
    for (size_t i = 0; i < dk; ++i) S[j * dk + i] += d[j] * k[i];
  o.assign(dv, 0);
  for (size_t j = 0; j < dv; ++j)
    for (size_t i = 0; i < dk; ++i) o[j] += scale * S[j * dk + i] * q[i];
}

std::vector<float> unit_vector(std::mt19937& rng, size_t n) {  // Qwen3.5 L2-normalizes q and k
  std::normal_distribution<float> g;
  std::vector<float> x(n);
  double ss = 0;
  for (float& e : x) {
    e = g(rng);
    ss += double(e) * e;
  }
  for (float& e : x) e = float(e / std::sqrt(ss));
  return x;
}

TEST(DeltaNet, StepMatchesTheReferenceOverManyTokensOnEveryTarget) {
  for (auto [dv, dk] : {std::pair<size_t, size_t>{128, 128}, {16, 16}, {19, 23}, {1, 5}}) {
    testing::for_each_simd_target([&](int64_t) {
      std::mt19937 rng(unsigned(dv * 1000 + dk));
      std::uniform_real_distribution<float> u(-1, 1), unit(0, 1);
      std::vector<double> S(dv * dk, 0.0), o_ref;
      std::vector<float> s(dv * dk, 7.0f), o(dv);  // garbage: the first step must not read it
      const double scale = 1 / std::sqrt(double(dk));
      for (int t = 0; t < 64; ++t) {
        const auto q = unit_vector(rng, dk), k = unit_vector(rng, dk);
        std::vector<float> v(dv);
        for (float& e : v) e = u(rng);
        const float decay = std::exp(-unit(rng)), beta = unit(rng);
        reference_step(S, dv, dk, q.data(), k.data(), v.data(), decay, beta, scale, o_ref);
        delta_net_step(t == 0 ? nullptr : s.data(), s.data(), dv, dk, q.data(), k.data(), v.data(), decay, beta,
                       float(scale), o.data());
        for (size_t j = 0; j < dv; ++j) ASSERT_NEAR(o[j], o_ref[j], 2e-5) << dv << "x" << dk << " token " << t;
      }
      for (size_t i = 0; i < S.size(); ++i) ASSERT_NEAR(s[i], S[i], 2e-5) << i;
    });
  }
}

TEST(DeltaNet, StepLeavesItsInputStateAlone) {
  const size_t dv = 8, dk = 32;
  std::mt19937 rng(5);
  const auto q = unit_vector(rng, dk), k = unit_vector(rng, dk), v = unit_vector(rng, dv);
  std::vector<float> in(dv * dk), out(dv * dk), again(dv * dk), o(dv), o2(dv);
  for (float& e : in) e = std::uniform_real_distribution<float>(-1, 1)(rng);
  const auto before = in;
  delta_net_step(in.data(), out.data(), dv, dk, q.data(), k.data(), v.data(), 0.9f, 0.5f, 0.25f, o.data());
  EXPECT_EQ(in, before);
  // In place gives the same bits as from a separate input.
  again = in;
  delta_net_step(again.data(), again.data(), dv, dk, q.data(), k.data(), v.data(), 0.9f, 0.5f, 0.25f, o2.data());
  EXPECT_EQ(again, out);
  EXPECT_EQ(o2, o);
}

}  // namespace
}  // namespace pagoda
