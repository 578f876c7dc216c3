// The mixture-of-experts launchers (cuda/moe.h) on the GPU, against the
// CPU's routing and plain loops (moe_case.h). The device's expf may differ
// from the host's by an ulp or two: the routing weights are compared within
// 1e-6, the experts exactly (the cases keep probabilities a percent apart).
#include <cstdint>
#include <vector>

#include "cuda/moe.h"
#include "cuda/norm_rope_act.h"
#include "cuda_test_util.h"
#include "moe_case.h"

namespace pagoda::cuda {
namespace {

using testing::DeviceBuffer;
using testing::Groups;
using testing::Routes;

struct OnDevice {
  Routes route(const std::vector<float>& z, int n_tokens, const MoeRouting& r) {
    DeviceBuffer<float> z_d(z), w_d(testing::nan_floats(size_t(n_tokens) * size_t(r.n_used)));
    DeviceBuffer<int32_t> e_d(std::vector<int32_t>(size_t(n_tokens) * size_t(r.n_used), -1));
    testing::check_cuda(moe_route(z_d.get(), n_tokens, r, e_d.get(), w_d.get(), nullptr), "moe_route");
    testing::check_cuda(cudaDeviceSynchronize(), "moe_route's run");
    return {e_d.download(), w_d.download()};
  }
  Groups group(const std::vector<int32_t>& experts, int n_expert, int tile_slots, int max_tiles) {
    DeviceBuffer<int32_t> e_d(experts), order_d(std::vector<int32_t>(experts.size(), -1));
    DeviceBuffer<ExpertTile> tiles_d(std::vector<ExpertTile>(size_t(max_tiles), {-1, -1, -1}));
    testing::check_cuda(moe_group(e_d.get(), int(experts.size()), n_expert, tile_slots, order_d.get(), tiles_d.get(),
                                  max_tiles, nullptr),
                        "moe_group");
    testing::check_cuda(cudaDeviceSynchronize(), "moe_group's run");
    return {order_d.download(), tiles_d.download()};
  }
  std::vector<float> matvec_experts(ExpertStack s, const std::vector<uint8_t>& w, const std::vector<float>& x,
                                    int x_per_slot, const Groups& g, int n_slots) {
    DeviceBuffer<uint8_t> w_d(w);
    DeviceBuffer<float> x_d(x), out_d(testing::nan_floats(size_t(n_slots) * size_t(s.rows)));
    DeviceBuffer<int32_t> order_d(g.order);
    DeviceBuffer<ExpertTile> tiles_d(g.tiles);
    s.data = w_d.get();
    testing::check_cuda(cuda::matvec_experts(s, x_d.get(), x_per_slot, order_d.get(), tiles_d.get(),
                                             int(g.tiles.size()), out_d.get(), nullptr),
                        "matvec_experts");
    testing::check_cuda(cudaDeviceSynchronize(), "matvec_experts' run");
    return out_d.download();
  }
  std::vector<float> add_expert_bias(const std::vector<float>& y, const std::vector<float>& bias,
                                     const std::vector<int32_t>& experts, int n) {
    DeviceBuffer<float> y_d(y), b_d(bias);
    DeviceBuffer<int32_t> e_d(experts);
    testing::check_cuda(cuda::add_expert_bias(y_d.get(), b_d.get(), e_d.get(), int(experts.size()), n, nullptr),
                        "add_expert_bias");
    testing::check_cuda(cudaDeviceSynchronize(), "add_expert_bias' run");
    return y_d.download();
  }
  std::vector<float> combine(const std::vector<float>& y, const Routes& r, const std::vector<float>& scale,
                             int n_tokens, int n_used, int n) {
    DeviceBuffer<float> y_d(y), w_d(r.weights), s_d(scale), out_d(testing::nan_floats(size_t(n_tokens) * size_t(n)));
    DeviceBuffer<int32_t> e_d(r.experts);
    testing::check_cuda(moe_combine(y_d.get(), e_d.get(), w_d.get(), scale.empty() ? nullptr : s_d.get(), n_tokens,
                                    n_used, n, out_d.get(), nullptr),
                        "moe_combine");
    testing::check_cuda(cudaDeviceSynchronize(), "moe_combine's run");
    return out_d.download();
  }
  std::vector<float> swiglu_oai(const std::vector<float>& gate, const std::vector<float>& up) {
    DeviceBuffer<float> g_d(gate), u_d(up), out_d(testing::nan_floats(gate.size()));
    testing::check_cuda(cuda::swiglu_oai(g_d.get(), u_d.get(), out_d.get(), int64_t(gate.size()), nullptr),
                        "swiglu_oai");
    testing::check_cuda(cudaDeviceSynchronize(), "swiglu_oai's run");
    return out_d.download();
  }
  // mmq_experts, or (decode) mmvq_experts on tiles of up to 8 slots.
  std::vector<float> mmq_experts(ExpertStack s, const std::vector<uint8_t>& w, size_t first,
                                 const std::vector<float>& x, int n_x, int x_per_slot, const Groups& g, int n_slots,
                                 bool decode = false) {
    DeviceBuffer<uint8_t> w_d(w), scratch_d(mmq_scratch_bytes(n_x, s.cols));
    DeviceBuffer<float> x_d(x), out_d(testing::nan_floats(size_t(n_slots) * size_t(s.rows)));
    DeviceBuffer<int32_t> order_d(g.order);
    DeviceBuffer<ExpertTile> tiles_d(g.tiles);
    s.data = w_d.get() + first;
    testing::check_cuda(mmq_quantize(s.type, x_d.get(), n_x, s.cols, scratch_d.get(), scratch_d.size(), nullptr),
                        "mmq_quantize");
    const auto launch = decode ? cuda::mmvq_experts : cuda::mmq_experts;
    testing::check_cuda(launch(s, scratch_d.get(), scratch_d.size(), n_x, x_per_slot, order_d.get(), tiles_d.get(),
                               int(g.tiles.size()), out_d.get(), nullptr),
                        "mmq_experts");
    testing::check_cuda(cudaDeviceSynchronize(), "mmq_experts' run");
    return out_d.download();
  }
  std::vector<float> row_dot(const std::vector<float>& x, const std::vector<float>& w, int n_tokens, int n) {
    DeviceBuffer<float> x_d(x), w_d(w), out_d(testing::nan_floats(size_t(n_tokens)));
    testing::check_cuda(cuda::row_dot(x_d.get(), w_d.get(), n_tokens, n, out_d.get(), nullptr), "row_dot");
    testing::check_cuda(cudaDeviceSynchronize(), "row_dot's run");
    return out_d.download();
  }
  std::vector<float> add_gated(const std::vector<float>& out, const std::vector<float>& y,
                               const std::vector<float>& logit, int n) {
    DeviceBuffer<float> out_d(out), y_d(y), l_d(logit);
    testing::check_cuda(cuda::add_gated(out_d.get(), y_d.get(), l_d.get(), int(logit.size()), n, nullptr), "add_gated");
    testing::check_cuda(cudaDeviceSynchronize(), "add_gated's run");
    return out_d.download();
  }
};

TEST(CudaMoe, MmqExpertsAreTheCpusIntegerDots) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_mmq_experts_match(run);
}

TEST(CudaMoe, TheSharedExpertsGate) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_shared_expert_gate_matches(run);
}

TEST(CudaMoe, RoutesAreTheCpusRoutes) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_routes_match(run, 1e-6f);
}

TEST(CudaMoe, GroupingSortsTheSlotsByExpertIntoTiles) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_groups_match(run);
}

TEST(CudaMoe, ExpertMatvecsMatchADoubleLoopForEveryType) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_expert_matvecs_match(run, testing::kWeightTypes);
}

// The device's expf: the clamped SwiGLU within a few ulps.
TEST(CudaMoe, BiasesTheWeightedSumAndTheClampedSwigluAreTheCpus) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  OnDevice run;
  testing::expect_bias_combine_and_activation_match(run, 1e-6f);
}

// Bad shapes are refused before any launch.
TEST(CudaMoe, RefusesBadShapes) {
  PAGODA_REQUIRE_CUDA_DEVICE();
  EXPECT_EQ(moe_route(nullptr, 1, MoeRouting{.n_expert = kMaxExperts + 1, .n_used = 2}, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(moe_route(nullptr, 1, MoeRouting{.n_expert = 4, .n_used = 5}, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(moe_group(nullptr, 100, 8, kExpertTileSlots, nullptr, nullptr, max_expert_tiles(100, 8) - 1, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(matvec_experts(ExpertStack{TensorType::Q8_0, 4, 33, 2, nullptr}, nullptr, 1, nullptr, nullptr, 1, nullptr,
                           nullptr),
            cudaErrorInvalidValue);  // 33 is no multiple of Q8_0's block
}

}  // namespace
}  // namespace pagoda::cuda
