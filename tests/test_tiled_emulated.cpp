// The tiled CUDA kernels' own source (kernels/cuda/tiled_forward.cuh, tiled_backward.cuh, with
// their launchers) run on the CPU under tests/cuda_emulation.h: each block's 64 threads as
// fibers meeting at __syncthreads. So the kernels run here, where there is no GPU:
//   - against the CPU run of the tile algorithm (tile_simulation.h), in float64 and float32: the
//     same functions in the same order, compiled by the same compiler, so the same bits;
//   - against the float64 reference in float64, float32, bfloat16 and float16 (the inputs
//     rounded to the type, the gate in float), tolerances 1e-10, 2e-5, 2e-2 and 4e-3.
// What it cannot show: anything of nvcc's code generation or of the hardware (see
// cuda_emulation.h); test_tiled_cuda does that on a GPU.
#include "tiled_test_support.h"

#include <gtest/gtest.h>

// After LibTorch's headers: the emulation defines CUDA's keywords as macros.
#include "cuda_emulation.h"
#include "kernels/cuda/tiled_backward.cuh"
#include "kernels/cuda/tiled_backward_wmma.cuh"
#include "kernels/cuda/tiled_forward.cuh"
#include "kernels/cuda/tiled_forward_wmma.cuh"

namespace fpa::testing {
namespace {

namespace tiled = fpa::cuda::tiled;

tiled::Problem make_problem(int64_t batch, int64_t heads, int64_t n, int64_t d, int64_t dv) {
  tiled::Problem p;
  p.batch = batch;
  p.heads = heads;
  p.n = n;
  p.d = d;
  p.dv = dv;
  return p;
}

template <class T> at::ScalarType scalar_of() {
  if constexpr (std::is_same_v<T, double>) return at::kDouble;
  if constexpr (std::is_same_v<T, float>) return at::kFloat;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return at::kBFloat16;
  return at::kHalf;
}
template <class T> tiled::DType dtype_of() {
  if constexpr (std::is_same_v<T, double>) return tiled::DType::Float64;
  if constexpr (std::is_same_v<T, float>) return tiled::DType::Float32;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return tiled::DType::BFloat16;
  return tiled::DType::Float16;
}
template <class T> double tolerance_of() {
  if constexpr (std::is_same_v<T, double>) return 1e-10;
  if constexpr (std::is_same_v<T, float>) return 2e-5;
  return half_precision_tolerance(dtype_of<T>());
}

// A tensor's values as a host array of S (a bf16 / fp16 tensor's bits are those of S).
template <class S> std::vector<S> host(const at::Tensor& t, at::ScalarType dtype) {
  if (!t.defined()) return {};
  const at::Tensor c = t.to(dtype).contiguous();
  std::vector<S> out(c.numel());
  std::memcpy(out.data(), c.data_ptr(), c.nbytes());
  return out;
}
template <class S> at::Tensor tensor(const std::vector<S>& v, at::IntArrayRef sizes,
                                     at::ScalarType dtype) {
  at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(dtype));
  std::memcpy(t.data_ptr(), v.data(), t.nbytes());
  return t.to(at::kDouble);
}

// The inputs rounded to T (the gate stays in the accumulator type), as the kernels see them.
template <class T> Inputs rounded(const Inputs& in) {
  auto r = [](const at::Tensor& t) { return t.to(scalar_of<T>()).to(at::kDouble); };
  Inputs out = in;
  out.q = r(in.q);
  out.k = r(in.k);
  out.v = r(in.v);
  out.dout = r(in.dout);
  return out;
}

// tensor_cores: both passes on (emulated) tensor cores, tiled_*_wmma.cuh (bf16 / fp16).
template <class T> TileResult run_emulated(const Inputs& in, Mode mode, bool tensor_cores = false) {
  using A = typename fpa::tiles::AccOf<T>::type;
  const auto ts = scalar_of<T>(), as = std::is_same_v<A, double> ? at::kDouble : at::kFloat;
  tiled::Problem p;
  p.batch = in.q.size(0);
  p.heads = in.q.size(1);
  p.n = in.q.size(2);
  p.d = in.q.size(3);
  p.dv = in.v.size(3);
  p.mode = tiled_mode_of(mode);
  p.dtype = dtype_of<T>();
  p.scale = 1.0 / std::sqrt(double(p.d));
  p.tau = kTau;
  const auto q = host<T>(in.q, ts), k = host<T>(in.k, ts), v = host<T>(in.v, ts),
             dout = host<T>(in.dout, ts);
  const auto gate = host<A>(in.gate, as);
  const int64_t positions = p.batch * p.heads * p.n;
  std::vector<T> out(positions * p.dv), dq(positions * p.d), dk(positions * p.d),
      dv(positions * p.dv);
  std::vector<A> lse(positions);
  std::vector<double> dgate(positions);
  std::vector<unsigned char> workspace(tiled::BackwardWorkspace(p).total + 256);
  const A* g = gate.empty() ? nullptr : gate.data();
  if constexpr (std::is_same_v<A, float> && !std::is_same_v<T, float>) {
    if (tensor_cores) {
      EXPECT_EQ(tiled::detail::launch_forward_wmma<T>(p, q.data(), k.data(), v.data(), g,
                                                      out.data(), lse.data(), workspace.data(),
                                                      nullptr),
                0);
    }
  }
  if (!tensor_cores) {
    EXPECT_EQ(tiled::detail::launch_forward<T>(p, q.data(), k.data(), v.data(), g, out.data(),
                                               lse.data(), workspace.data(), nullptr),
              0);
  }
  if constexpr (std::is_same_v<A, float> && !std::is_same_v<T, float>) {
    if (tensor_cores) {
      EXPECT_EQ((tiled::detail::launch_backward<T, tiled::detail::WmmaPasses>(
                    p, q.data(), k.data(), v.data(), g, out.data(), lse.data(), dout.data(),
                    dq.data(), dk.data(), dv.data(), dgate.data(), workspace.data(), nullptr)),
                0);
    }
  }
  if (!tensor_cores) {
    EXPECT_EQ(tiled::detail::launch_backward<T>(p, q.data(), k.data(), v.data(), g, out.data(),
                                                lse.data(), dout.data(), dq.data(), dk.data(),
                                                dv.data(), dgate.data(), workspace.data(), nullptr),
              0);
  }
  TileResult r;
  r.r.out = tensor(out, in.v.sizes(), ts);
  r.r.dq = tensor(dq, in.q.sizes(), ts);
  r.r.dk = tensor(dk, in.k.sizes(), ts);
  r.r.dv = tensor(dv, in.v.sizes(), ts);
  // dgate comes in double; the caller stores it in the gate's type, as the CPU run does.
  if (in.gate.defined())
    r.r.dgate = tensor(dgate, in.gate.sizes(), at::kDouble).to(as).to(at::kDouble);
  r.lse = tensor(lse, in.q.sizes().slice(0, 3), as);
  return r;
}

template <class T> void check_against_reference(const Inputs& base, Mode mode, Gate gate,
                                                const Shape& s, double& worst,
                                                bool tensor_cores = false) {
  const Inputs in = rounded<T>(base);
  const Result want = run(in, reference_options(mode), at::kDouble);
  const TileResult got = run_emulated<T>(in, mode, tensor_cores);
  const bool f64 = std::is_same_v<T, double>;
  const Errors e = compare(got.r, want, f64 ? at::kDouble : at::kFloat);
  const double le = lse_error(got.lse, reference_lse(in, mode));
  EXPECT_LE(std::max(e.worst(), le), tolerance_of<T>())
      << describe(mode, gate, s, scalar_of<T>(), 0.0) << ": " << e.str() << " lse " << le;
  worst = std::max({worst, e.worst(), le});
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    // The kernels' source against the CPU run of the same tile functions: the same bits.
    const TileResult cpu = run_tiles<T>(in, mode);
    auto diff = [](const at::Tensor& a, const at::Tensor& b) {
      return a.defined() ? (a - b).abs().max().template item<double>() : 0.0;
    };
    EXPECT_TRUE(same_bits(got, cpu))
        << describe(mode, gate, s, scalar_of<T>(), 0.0) << ": differs from the CPU tile run: out "
        << diff(got.r.out, cpu.r.out) << " lse " << diff(got.lse, cpu.lse) << " dq "
        << diff(got.r.dq, cpu.r.dq) << " dk " << diff(got.r.dk, cpu.r.dk) << " dv "
        << diff(got.r.dv, cpu.r.dv) << " dgate " << diff(got.r.dgate, cpu.r.dgate);
  }
}

TEST(TiledEmulated, KernelsMatchTheCpuTileRunAndTheReference) {
  const std::vector<Shape> shapes{{1, 1, 1, 16}, {1, 2, 63, 16}, {2, 1, 65, 1}, {1, 1, 130, 64},
                                  {1, 1, 200, 16}};
  double worst[4] = {0, 0, 0, 0};
  uint64_t seed = 3000;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    std::vector<Gate> gates{Gate::Random};
    if (mode != Mode::Softmax) gates = {Gate::Random, Gate::Integer, Gate::Steep};
    if (mode == Mode::FpaExact || mode == Mode::FpaSoft) gates.push_back(Gate::Plateau);
    for (Gate gate : gates) {
      for (const Shape& s : shapes) {
        const Inputs in = make_case(s, mode, gate, seed++);
        check_against_reference<double>(in, mode, gate, s, worst[0]);
        check_against_reference<float>(in, mode, gate, s, worst[1]);
        check_against_reference<__nv_bfloat16>(in, mode, gate, s, worst[2]);
        check_against_reference<__half>(in, mode, gate, s, worst[3]);
      }
    }
  }
  std::printf("worst relative error vs reference: float64 %.3g, float32 %.3g, bfloat16 %.3g, "
              "float16 %.3g\n",
              worst[0], worst[1], worst[2], worst[3]);
}

// The dQ pass's per-pair buffer and the T x T between buffer at more tiles (9 key tiles), a head
// dimension of 128 (the kernels' largest), and values wider and narrower than q and k.
TEST(TiledEmulated, LongSequenceAndWideHeads) {
  double worst = 0;
  uint64_t seed = 3500;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Inputs in = make_case({1, 1, 513, 16}, mode, Gate::Integer, seed++);
    check_against_reference<float>(in, mode, Gate::Integer, {1, 1, 513, 16}, worst);
    const Inputs wide = make_case({1, 1, 100, 128}, mode, Gate::Random, seed++);
    check_against_reference<float>(wide, mode, Gate::Random, {1, 1, 100, 128}, worst);
    // Values of another width than q and k (dv != d), both ways.
    const Inputs wider =
        with_value_width(make_case({2, 1, 100, 16}, mode, Gate::Integer, seed), 40, seed);
    ++seed;
    check_against_reference<float>(wider, mode, Gate::Integer, {2, 1, 100, 16}, worst);
    const Inputs narrower =
        with_value_width(make_case({1, 1, 100, 64}, mode, Gate::Integer, seed), 8, seed);
    ++seed;
    check_against_reference<float>(narrower, mode, Gate::Integer, {1, 1, 100, 64}, worst);
  }
  std::printf("worst relative error vs reference (float32): %.3g\n", worst);
}

// The forward and the backward on tensor cores (bf16 and fp16, head dimensions multiples of 16)
// against the reference; WMMA as cuda_emulation.h emulates it (whole 16 x 16 tiles per thread,
// its alignment rules checked).
TEST(TiledEmulated, TensorCoreKernelsMatchTheReference) {
  const std::vector<Shape> shapes{{1, 1, 1, 16}, {1, 2, 63, 16}, {1, 1, 130, 64}, {1, 1, 100, 128},
                                  {1, 1, 200, 32}};
  double worst[2] = {0, 0};
  uint64_t seed = 4000;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    for (Gate gate : {Gate::Random, Gate::Integer}) {
      for (const Shape& s : shapes) {
        const Inputs in = make_case(s, mode, gate, seed++);
        check_against_reference<__nv_bfloat16>(in, mode, gate, s, worst[0], true);
        check_against_reference<__half>(in, mode, gate, s, worst[1], true);
      }
    }
  }
  std::printf("worst relative error vs reference: bfloat16 %.3g, float16 %.3g\n", worst[0],
              worst[1]);
}

// On a device with less shared memory (sm_80: 163 KB), the tensor-core dK/dV pass at D = 128
// (~186 KB) gives way to the scalar one; the results are the same to bf16 rounding.
TEST(TiledEmulated, TensorCorePassesFallBackWhenSharedMemoryIsShort) {
  const size_t saved = fpa_emu::max_dynamic_smem;
  fpa_emu::max_dynamic_smem = 163 * 1024;
  double worst = 0;
  for (Mode mode : {Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Inputs in = make_case({1, 1, 100, 128}, mode, Gate::Integer, 4500);
    check_against_reference<__nv_bfloat16>(in, mode, Gate::Integer, {1, 1, 100, 128}, worst, true);
  }
  fpa_emu::max_dynamic_smem = saved;
  EXPECT_GT(tiled::detail::WmmaPasses::dkdv_smem<__nv_bfloat16>(
                make_problem(1, 1, 100, 128, 128)) + tiled::detail::WmmaPasses::kStaticSmem,
            size_t(163 * 1024));  // so the fallback did run
  std::printf("worst relative error vs reference (bfloat16): %.3g\n", worst);
}

}  // namespace
}  // namespace fpa::testing
