// The Gated DeltaNet kernels (cuda/delta_net_kernels.cuh) compiled for the
// CPU and run there (host_emulation.h), with their launchers' launch shapes,
// against the CPU model's own recurrence and plain loops (delta_net_case.h).
#include "host_emulation.h"
// The emulation's definitions first: the kernels' source uses them.
#include <cstdint>
#include <vector>

#include "cuda/delta_net_kernels.cuh"
#include "delta_net_case.h"

namespace pagoda::cuda {
namespace {

using testing::DeltaCase;

unsigned blocks(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

struct OnHost {
  void ranges(const std::vector<int32_t>& seq_of, std::vector<int32_t>& first, std::vector<int32_t>& end) {
    emulation::launch(dim3(blocks(int64_t(seq_of.size()), detail::kDeltaThreads)), dim3(detail::kDeltaThreads),
                      detail::sequence_ranges_kernel, seq_of.data(), int(seq_of.size()), first.data(), end.data());
  }
  void conv(const std::vector<float>& mixed, const std::vector<float>& w, int K, int C, const DeltaCase& c,
            std::vector<float>& pool, std::vector<float>& out) {
    emulation::launch(dim3(unsigned(c.n_tokens()), blocks(C, detail::kDeltaThreads)), dim3(detail::kDeltaThreads),
                      detail::delta_conv_kernel, mixed.data(), w.data(), K, C, c.states(pool), out.data());
  }
  void prepare(std::vector<float>& conv, int C, int hk, int dk, float eps, std::vector<float>& decay,
               std::vector<float>& beta, const std::vector<float>& a, const std::vector<float>& dt_bias, int hv,
               int T) {
    emulation::launch(dim3(unsigned(T)), dim3(detail::kDeltaThreads), detail::delta_prepare_kernel, conv.data(), C, hk,
                      dk, eps, decay.data(), beta.data(), a.data(), dt_bias.data(), hv);
  }
  void rule(const std::vector<float>& conv, int C, int hk, int hv, int dk, int dv, const std::vector<float>& decay,
            const std::vector<float>& beta, float scale, const DeltaCase& c, std::vector<float>& pool,
            int64_t conv_floats, std::vector<float>& core) {
    emulation::launch(dim3(unsigned(c.n_seqs()), unsigned(hv), blocks(dv, detail::kRuleWarps)),
                      dim3(detail::kRuleWarps * 32), detail::delta_rule_kernel, conv.data(), C, hk, hv, dk, dv,
                      decay.data(), beta.data(), scale, c.states(pool), conv_floats, core.data());
  }
  void gates(const std::vector<float>& qg, int T, int n_head, int hd, std::vector<float>& q, std::vector<float>& gate,
             std::vector<float>& x) {
    const int64_t n = int64_t(T) * n_head * hd;
    emulation::launch(dim3(2), dim3(detail::kDeltaThreads), detail::split_query_gate_kernel, qg.data(), n, hd, q.data(),
                      gate.data());
    emulation::launch(dim3(3), dim3(detail::kDeltaThreads), detail::sigmoid_gate_kernel, x.data(), gate.data(), n);
  }
};

TEST(CudaDeltaNetOnHost, SequenceRanges) {
  OnHost run;
  testing::expect_sequence_ranges(run);
}

TEST(CudaDeltaNetOnHost, ConvolutionReadsAndLeavesEachSequencesState) {
  OnHost run;
  testing::expect_conv_matches(run);
}

TEST(CudaDeltaNetOnHost, PrepareNormalizesAndGates) {
  OnHost run;
  testing::expect_prepare_matches(run);
}

TEST(CudaDeltaNetOnHost, RecurrenceIsTheCpusStep) {
  OnHost run;
  testing::expect_rule_matches(run);
}

TEST(CudaDeltaNetOnHost, AttentionOutputGate) {
  OnHost run;
  testing::expect_gates_match(run);
}

}  // namespace
}  // namespace pagoda::cuda
