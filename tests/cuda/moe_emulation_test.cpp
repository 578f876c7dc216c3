// The mixture-of-experts kernels (cuda/moe_kernels.cuh) compiled for the CPU
// and run there (host_emulation.h), with their launchers' launch shapes,
// against the CPU's routing and plain loops (moe_case.h). Here expf is the
// host's, as route_tokens' is: the weights are equal, not just close.
#include "host_emulation.h"
// The emulation's definitions first: the kernels' source uses them.
#include <cstdint>
#include <vector>

#include "cuda/mmq_kernel.cuh"
#include "cuda/moe_kernels.cuh"
// For swiglu_oai's kernel alone: the file's other kernels go unused here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "cuda/norm_rope_act_kernels.cuh"
#pragma GCC diagnostic pop
#include "moe_case.h"

namespace pagoda::cuda {
namespace {

using testing::Groups;
using testing::Routes;

unsigned blocks(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

struct OnHost {
  Routes route(const std::vector<float>& z, int n_tokens, const MoeRouting& r) {
    Routes out{std::vector<int32_t>(size_t(n_tokens) * size_t(r.n_used), -1),
               testing::nan_floats(size_t(n_tokens) * size_t(r.n_used))};
    emulation::launch(dim3(blocks(n_tokens, detail::kRouteThreads)), dim3(detail::kRouteThreads),
                      detail::moe_route_kernel, z.data(), n_tokens, r.n_expert, r.n_used, r.softmax_first, r.normalize,
                      r.scale, out.experts.data(), out.weights.data());
    return out;
  }
  Groups group(const std::vector<int32_t>& experts, int n_expert, int tile_slots, int max_tiles) {
    Groups out{std::vector<int32_t>(experts.size(), -1), std::vector<ExpertTile>(size_t(max_tiles), {-1, -1, -1})};
    emulation::launch(dim3(1), dim3(detail::kGroupThreads), detail::moe_group_kernel, experts.data(),
                      int(experts.size()), n_expert, tile_slots, out.order.data(), out.tiles.data(), max_tiles);
    return out;
  }
  std::vector<float> matvec_experts(const ExpertStack& s, const std::vector<uint8_t>& w, const std::vector<float>& x,
                                    int x_per_slot, const Groups& g, int n_slots) {
    std::vector<float> out = testing::nan_floats(size_t(n_slots) * size_t(s.rows));
    const size_t row_bytes = weight_row_bytes(s.type, s.cols);
    detail::dispatch_weight_type(s.type, [&](auto decoder) {
      using D = decltype(decoder);
      emulation::launch(dim3(unsigned(detail::matvec_blocks(s.rows)), unsigned(g.tiles.size())),
                        dim3(detail::kMatvecWarps * 32), detail::matvec_experts_kernel<D>, w.data(),
                        size_t(s.rows) * row_bytes, row_bytes, s.rows, s.cols, x.data(), x_per_slot, g.order.data(),
                        g.tiles.data(), out.data());
      return cudaSuccess;
    });
    return out;
  }
  std::vector<float> add_expert_bias(std::vector<float> y, const std::vector<float>& bias,
                                     const std::vector<int32_t>& experts, int n) {
    emulation::launch(dim3(2), dim3(detail::kMoeThreads), detail::add_expert_bias_kernel, y.data(), bias.data(),
                      experts.data(), int(experts.size()), n);
    return y;
  }
  std::vector<float> combine(const std::vector<float>& y, const Routes& r, const std::vector<float>& scale,
                             int n_tokens, int n_used, int n) {
    std::vector<float> out = testing::nan_floats(size_t(n_tokens) * size_t(n));
    emulation::launch(dim3(3), dim3(detail::kMoeThreads), detail::moe_combine_kernel, y.data(), r.experts.data(),
                      r.weights.data(), scale.empty() ? nullptr : scale.data(), n_tokens, n_used, n, out.data());
    return out;
  }
  std::vector<float> swiglu_oai(const std::vector<float>& gate, const std::vector<float>& up) {
    std::vector<float> out = testing::nan_floats(gate.size());
    emulation::launch(dim3(2), dim3(detail::kNormThreads), detail::swiglu_oai_kernel, gate.data(), up.data(),
                      out.data(), int64_t(gate.size()));
    return out;
  }
  // mmq_experts, or (decode) mmvq_experts on tiles of up to 8 slots.
  std::vector<float> mmq_experts(const ExpertStack& s, const std::vector<uint8_t>& w, size_t first,
                                 const std::vector<float>& x, int n_x, int x_per_slot, const Groups& g, int n_slots,
                                 bool decode = false) {
    const int group = detail::mmq_super_blocks(s.type) ? kQKK : kQK;
    const int64_t groups = int64_t(n_x) * (s.cols / group);
    std::vector<uint32_t> scratch(mmq_scratch_bytes(n_x, s.cols) / 4, 0xDEADBEEFu);
    uint32_t* codes = scratch.data();
    auto* scales = reinterpret_cast<float*>(codes + detail::q8_scales_offset(n_x, s.cols));
    auto* sums = reinterpret_cast<int*>(codes + detail::q8_sums_offset(n_x, s.cols));
    emulation::launch(dim3(unsigned((groups + detail::kQuantizeThreads - 1) / detail::kQuantizeThreads)),
                      dim3(detail::kQuantizeThreads), detail::quantize_q8_kernel, x.data(), n_x, s.cols, group, codes,
                      scales, sums);
    std::vector<float> out = testing::nan_floats(size_t(n_slots) * size_t(s.rows));
    const size_t rb = weight_row_bytes(s.type, s.cols);
    detail::dispatch_mmq_type(s.type, [&](auto format) {
      constexpr TensorType kT = decltype(format)::kType;
      const size_t expert_bytes = s.stride > 0 ? size_t(s.stride) : size_t(s.rows) * rb;
      const auto* c = static_cast<const uint32_t*>(codes);
      const auto* sc = static_cast<const float*>(scales);
      const auto* su = static_cast<const int*>(sums);
      if (decode)
        emulation::launch(dim3(unsigned(detail::mmvq_blocks(s.rows)), unsigned(g.tiles.size())),
                          dim3(detail::kMmvqWarps * 32), detail::mmvq_experts_kernel<kT>, w.data() + first,
                          expert_bytes, rb, s.rows, s.cols, c, sc, su, x_per_slot, g.order.data(), g.tiles.data(),
                          out.data());
      else
        emulation::launch(dim3(unsigned(detail::mmq_row_tiles(s.rows)), unsigned(g.tiles.size())),
                          dim3(detail::kMmqWarps * 32), detail::mmq_experts_kernel<kT>, w.data() + first, expert_bytes,
                          rb, s.rows, s.cols, c, sc, su, x_per_slot, g.order.data(), g.tiles.data(), out.data());
      return cudaSuccess;
    });
    return out;
  }
  std::vector<float> row_dot(const std::vector<float>& x, const std::vector<float>& w, int n_tokens, int n) {
    std::vector<float> out = testing::nan_floats(size_t(n_tokens));
    emulation::launch(dim3(unsigned(n_tokens)), dim3(detail::kMoeThreads), detail::row_dot_kernel, x.data(), w.data(),
                      n, out.data());
    return out;
  }
  std::vector<float> add_gated(std::vector<float> out, const std::vector<float>& y, const std::vector<float>& logit,
                               int n) {
    emulation::launch(dim3(2), dim3(detail::kMoeThreads), detail::add_gated_kernel, out.data(), y.data(), logit.data(),
                      int(logit.size()), n);
    return out;
  }
};

TEST(CudaMoeOnHost, RoutesAreTheCpusRoutes) {
  OnHost run;
  testing::expect_routes_match(run, 0.0f);
}

TEST(CudaMoeOnHost, GroupingSortsTheSlotsByExpertIntoTiles) {
  OnHost run;
  testing::expect_groups_match(run);
}

// The tiles' logic is the same for every type (the decoders have their own
// tests): the float formats, a block one, a K-quant and gpt-oss's MXFP4.
TEST(CudaMoeOnHost, ExpertMatvecsMatchADoubleLoop) {
  OnHost run;
  const TensorType types[] = {TensorType::F32, TensorType::Q8_0, TensorType::Q4_K, TensorType::MXFP4};
  testing::expect_expert_matvecs_match(run, types);
}

TEST(CudaMoeOnHost, BiasesTheWeightedSumAndTheClampedSwigluAreTheCpus) {
  OnHost run;
  testing::expect_bias_combine_and_activation_match(run, 1e-6f);
}

// The tensor-core path for batches past matvec's: each slot the CPU's integer dot, to the bit.
TEST(CudaMoeOnHost, MmqExpertsAreTheCpusIntegerDots) {
  OnHost run;
  testing::expect_mmq_experts_match(run);
}

TEST(CudaMoeOnHost, TheSharedExpertsGate) {
  OnHost run;
  testing::expect_shared_expert_gate_matches(run);
}

}  // namespace
}  // namespace pagoda::cuda
