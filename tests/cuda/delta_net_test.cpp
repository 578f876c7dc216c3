// The Gated DeltaNet launchers (cuda/delta_net.h) on the GPU, against the CPU
// model's own recurrence and plain loops (delta_net_case.h).
#include <cstdint>
#include <vector>

#include "cuda/delta_net.h"
#include "cuda_test_util.h"
#include "delta_net_case.h"

namespace pagoda::cuda {
namespace {

using testing::DeltaCase;
using testing::DeviceBuffer;

void sync(const char* what) { testing::check_cuda(cudaDeviceSynchronize(), what); }

// The case's buffer ids and ranges on the device, with the pool's copy.
struct StatesOnDevice {
  DeviceBuffer<int32_t> in, out, seq_of, first, end;
  DeviceBuffer<float> pool;
  StatesOnDevice(const DeltaCase& c, const std::vector<float>& host_pool)
      : in(c.in), out(c.out), seq_of(c.seq_of), first(c.first), end(c.end), pool(host_pool) {}
  DeltaStates states() const {
    return {.layer = pool.get() + DeltaCase::kLayerFloats,
            .buffer_floats = DeltaCase::kBufferFloats,
            .in = in.get(),
            .out = out.get(),
            .seq_of = seq_of.get(),
            .first = first.get(),
            .end = end.get()};
  }
};

struct OnDevice {
  void ranges(const std::vector<int32_t>& seq_of, std::vector<int32_t>& first, std::vector<int32_t>& end) {
    DeviceBuffer<int32_t> s_d(seq_of), f_d(first), e_d(end);
    testing::check_cuda(sequence_ranges(s_d.get(), int(seq_of.size()), f_d.get(), e_d.get(), nullptr), "ranges");
    sync("sequence_ranges");
    first = f_d.download(), end = e_d.download();
  }
  void conv(const std::vector<float>& mixed, const std::vector<float>& w, int K, int C, const DeltaCase& c,
            std::vector<float>& pool, std::vector<float>& out) {
    StatesOnDevice st(c, pool);
    DeviceBuffer<float> m_d(mixed), w_d(w), out_d(out);
    testing::check_cuda(delta_conv(m_d.get(), w_d.get(), K, C, c.n_tokens(), st.states(), out_d.get(), nullptr),
                        "delta_conv");
    sync("delta_conv");
    pool = st.pool.download(), out = out_d.download();
  }
  void prepare(std::vector<float>& conv, int C, int hk, int dk, float eps, std::vector<float>& decay,
               std::vector<float>& beta, const std::vector<float>& a, const std::vector<float>& dt_bias, int hv,
               int T) {
    DeviceBuffer<float> c_d(conv), g_d(decay), b_d(beta), a_d(a), dt_d(dt_bias);
    testing::check_cuda(
        delta_prepare(c_d.get(), C, hk, dk, eps, g_d.get(), b_d.get(), a_d.get(), dt_d.get(), hv, T, nullptr),
        "delta_prepare");
    sync("delta_prepare");
    conv = c_d.download(), decay = g_d.download(), beta = b_d.download();
  }
  void rule(const std::vector<float>& conv, int C, int hk, int hv, int dk, int dv, const std::vector<float>& decay,
            const std::vector<float>& beta, float scale, const DeltaCase& c, std::vector<float>& pool,
            int64_t conv_floats, std::vector<float>& core) {
    StatesOnDevice st(c, pool);
    DeviceBuffer<float> c_d(conv), g_d(decay), b_d(beta), core_d(core);
    testing::check_cuda(delta_rule(c_d.get(), C, hk, hv, dk, dv, g_d.get(), b_d.get(), scale, c.n_seqs(), st.states(),
                                   conv_floats, core_d.get(), nullptr),
                        "delta_rule");
    sync("delta_rule");
    pool = st.pool.download(), core = core_d.download();
  }
  void gates(const std::vector<float>& qg, int T, int n_head, int hd, std::vector<float>& q, std::vector<float>& gate,
             std::vector<float>& x) {
    DeviceBuffer<float> qg_d(qg), q_d(q), g_d(gate), x_d(x);
    testing::check_cuda(split_query_gate(qg_d.get(), T, n_head, hd, q_d.get(), g_d.get(), nullptr), "split");
    testing::check_cuda(sigmoid_gate(x_d.get(), g_d.get(), int64_t(x.size()), nullptr), "sigmoid_gate");
    sync("the gates");
    q = q_d.download(), gate = g_d.download(), x = x_d.download();
  }
};

TEST(CudaDeltaNet, SequenceRanges) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_sequence_ranges(run);
}

TEST(CudaDeltaNet, ConvolutionReadsAndLeavesEachSequencesState) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_conv_matches(run);
}

TEST(CudaDeltaNet, PrepareNormalizesAndGates) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_prepare_matches(run);
}

TEST(CudaDeltaNet, RecurrenceIsTheCpusStep) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_rule_matches(run);
}

TEST(CudaDeltaNet, AttentionOutputGate) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_gates_match(run);
}

}  // namespace
}  // namespace pagoda::cuda
