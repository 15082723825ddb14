// The tiled CUDA kernels' own source (kernels/cuda/tiled_forward.cuh, tiled_backward.cuh, with
// their launchers) run on the CPU under tests/cuda_emulation.h: each block's threads as fibers
// meeting at __syncthreads (and a warp's lanes at its collectives), in ascending or descending
// order. So the kernels run here, where there is no GPU:
//   - against the CPU run of the tile algorithm (tile_simulation.h), in float64 and float32: the
//     same functions in the same order, compiled by the same compiler, so the same bits;
//   - against the float64 reference in float64, float32, bfloat16 and float16 (the inputs
//     rounded to the type, the gate in float), tolerances 1e-10, 2e-5, 2e-2 and 4e-3;
//   - float32 on (emulated) TF32 tensor cores, the default for float32 on the GPU, against the
//     float64 reference on the float32 inputs, tolerance tf32_tolerance() (tiled_test_support.h),
//     gradients included; exact float32 (the scalar kernels) stays bitwise the CPU tile run;
//   - in both thread orders, for the same bits: races within a block, and cp.async reads before
//     their wait.
// What it cannot show: anything of nvcc's code generation or of the hardware (see
// cuda_emulation.h); test_tiled_cuda does that on a GPU.
#include "tiled_test_support.h"

#include <gtest/gtest.h>

// After LibTorch's headers: the emulation defines CUDA's keywords as macros.
#include "cuda_emulation.h"
#include "kernels/cuda/tiled_backward.cuh"
#include "kernels/cuda/tiled_backward_mma.cuh"
#include "kernels/cuda/tiled_backward_wmma.cuh"
#include "kernels/cuda/tiled_forward.cuh"
#include "kernels/cuda/tiled_forward_mma.cuh"
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

// tensor_cores: both passes on (emulated) tensor cores, tiled_*_wmma.cuh (bf16 / fp16; float32
// on TF32).
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
  if constexpr (std::is_same_v<T, float>) {
    if (tensor_cores) {
      EXPECT_EQ(tiled::detail::launch_forward_wmma<T>(p, q.data(), k.data(), v.data(), g,
                                                      out.data(), lse.data(), workspace.data(),
                                                      nullptr),
                0);
    }
  } else if constexpr (std::is_same_v<A, float>) {
    if (tensor_cores) {  // as tiled::forward: the register kernel at D = Dv in {64, 128}
      EXPECT_EQ(tiled::detail::launch_forward_mma<T>(p, q.data(), k.data(), v.data(), g,
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
  if constexpr (std::is_same_v<T, float>) {
    if (tensor_cores) {
      EXPECT_EQ((tiled::detail::launch_backward<T, tiled::detail::WmmaPasses>(
                    p, q.data(), k.data(), v.data(), g, out.data(), lse.data(), dout.data(),
                    dq.data(), dk.data(), dv.data(), dgate.data(), workspace.data(), nullptr)),
                0);
    }
  } else if constexpr (std::is_same_v<A, float>) {
    if (tensor_cores) {  // as tiled::backward: the register passes at D = Dv in {64, 128}
      EXPECT_EQ((tiled::detail::launch_backward<T, tiled::detail::MmaPasses>(
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
                                                bool tensor_cores = false, double offset = 0.0) {
  const Inputs in = rounded(base, scalar_of<T>());
  const Result want = run(in, reference_options(mode), at::kDouble);
  const TileResult got = run_emulated<T>(in, mode, tensor_cores);
  const bool f64 = std::is_same_v<T, double>, tf32 = std::is_same_v<T, float> && tensor_cores;
  Errors e = compare(got.r, want, f64 ? at::kDouble : at::kFloat);
  if (tf32 && s.n == 1) {
    // One position: dq and dk are zero in exact arithmetic, and TF32 leaves dp - delta as noise
    // of TF32's size in |dO| |v| (dp from TF32 products, delta from fp32 ones); measured against
    // the gradient scale max |dv| instead of 1% of it.
    const double scale = want.dv.abs().max().template item<double>();
    e.dq = rel_error(got.r.dq, want.dq, scale);
    e.dk = rel_error(got.r.dk, want.dk, scale);
  }
  const double le = lse_error(got.lse, reference_lse(in, mode));
  if (std::getenv("FPA_PRINT_TF32") && tf32)
    std::printf("%s: %s lse %.2e\n", describe(mode, gate, s, scalar_of<T>(), offset).c_str(),
                e.str().c_str(), le);
  EXPECT_LE(std::max(e.worst(), le), tf32 ? tf32_tolerance() : tolerance_of<T>())
      << describe(mode, gate, s, scalar_of<T>(), offset) << (tf32 ? " tf32" : "") << ": "
      << e.str() << " lse " << le;
  worst = std::max({worst, e.worst(), le});
  if (tf32) return;  // TF32's roundings: not the CPU tile run's bits
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

// More tiles (9, and 38 with valleys: C's split at levels -1 .. 5, both passes' slots), a head
// dimension of 128 (the kernels' largest), and values wider and narrower than q and k.
TEST(TiledEmulated, LongSequenceAndWideHeads) {
  double worst = 0;
  uint64_t seed = 3500;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Inputs in = make_case({1, 1, 513, 16}, mode, Gate::Integer, seed++);
    check_against_reference<float>(in, mode, Gate::Integer, {1, 1, 513, 16}, worst);
    if (mode == Mode::FpaExact || mode == Mode::FpaSoft) {
      const Shape many{1, 1, 38 * 64 - 7, 16};
      check_against_reference<float>(valleys_case(many, mode, seed++), mode, Gate::Random, many,
                                     worst);
    }
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

// The forward alone through tiled::forward's bf16 / fp16 path (the register kernel at D = Dv in
// {64, 128}): the largest error of the output and of the log-sum-exp against the reference's,
// each relative to its largest magnitude (at least 1).
template <class T> double forward_error(const Inputs& base, Mode mode) {
  const Inputs in = rounded(base, scalar_of<T>());
  tiled::Problem p = make_problem(in.q.size(0), in.q.size(1), in.q.size(2), in.q.size(3),
                                  in.v.size(3));
  p.mode = tiled_mode_of(mode);
  p.dtype = dtype_of<T>();
  p.scale = 1.0 / std::sqrt(double(p.d));
  p.tau = kTau;
  const auto ts = scalar_of<T>();
  const auto q = host<T>(in.q, ts), k = host<T>(in.k, ts), v = host<T>(in.v, ts);
  const auto gate = host<float>(in.gate, at::kFloat);
  const int64_t positions = p.batch * p.heads * p.n;
  std::vector<T> out(positions * p.dv);
  std::vector<float> lse(positions);
  std::vector<unsigned char> workspace(tiled::forward_workspace_bytes(p) + 256);
  // The register kernel, not its fallback, runs: the inputs are 16-byte aligned.
  EXPECT_TRUE(tiled::detail::aligned_16b(q.data(), k.data(), v.data()));
  EXPECT_EQ(tiled::detail::launch_forward_mma<T>(p, q.data(), k.data(), v.data(),
                                                 gate.empty() ? nullptr : gate.data(), out.data(),
                                                 lse.data(), workspace.data(), nullptr),
            0);
  const at::Tensor want = run(in, reference_options(mode), at::kDouble).out;
  const double out_error = rel_error(tensor(out, in.v.sizes(), ts), want, 1.0);
  return std::max(out_error, lse_error(tensor(lse, in.q.sizes().slice(0, 3), at::kFloat),
                                       reference_lse(in, mode)));
}

// The register forward where the online softmax must rescale: the first 16 keys, in the key tile
// the kernel reaches last, are aligned with every query (logits near 8, the others about
// N(0, 1)), so the running maximum jumps on the last tile and every earlier contribution to the
// output must shrink by exp(old - new) (a kernel that forgot to rescale its register accumulator
// passed the random cases of TensorCoreKernelsMatchTheReference within bf16's tolerance).
// Sequences of 1 to 5 query tiles, a last tile partly past the sequence, two heads. The
// forward alone: with such peaked rows the bf16 backward's dq loses its relative accuracy to
// cancellation, which is the WMMA backward's matter, not this kernel's.
TEST(TiledEmulated, RegisterForwardRescalesWhenTheMaximumMovesLate) {
  double worst[2] = {0, 0};
  uint64_t seed = 4600;
  for (int64_t d : {64, 128}) {
    for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
      for (int64_t n : {int64_t(64), int64_t(200), int64_t(300)}) {
        if (d == 128 && n == 300) continue;  // the emulation's time: 200 has 4 query tiles already
        const Shape s{1, 2, n, d};
        const Gate gate = mode == Mode::Softmax ? Gate::Random : Gate::Integer;
        Inputs in = make_case(s, mode, gate, seed);
        auto gen = at::make_generator<at::CPUGeneratorImpl>(seed++);
        at::Tensor u = at::randn({d}, gen, at::TensorOptions().dtype(at::kDouble));
        u = u / u.norm() * std::sqrt(8.0 * std::sqrt(double(d)));  // |u|^2 / sqrt(d) = 8
        in.q = in.q + u;
        in.k.slice(2, 0, 16).copy_(u.expand({1, 2, 16, d}));
        ASSERT_TRUE(tiled::detail::mma_shape<__nv_bfloat16>(make_problem(1, 2, n, d, d)));
        const double eb = forward_error<__nv_bfloat16>(in, mode), eh = forward_error<__half>(in, mode);
        EXPECT_LE(eb, tolerance_of<__nv_bfloat16>()) << describe(mode, gate, s, at::kBFloat16, 0);
        EXPECT_LE(eh, tolerance_of<__half>()) << describe(mode, gate, s, at::kHalf, 0);
        worst[0] = std::max(worst[0], eb);
        worst[1] = std::max(worst[1], eh);
      }
    }
  }
  std::printf("worst relative error vs reference: bfloat16 %.3g, float16 %.3g\n", worst[0],
              worst[1]);
}

// The register kernels read their inputs in 16-byte chunks; a view starting elsewhere (an odd
// element offset) must go to the WMMA kernels, which read element by element.
TEST(TiledEmulated, RegisterKernelsTakeOnly16ByteAlignedInputs) {
  alignas(16) __nv_bfloat16 buffer[64] = {};
  EXPECT_TRUE(tiled::detail::aligned_16b(buffer, buffer + 8, buffer + 16, buffer + 24));
  EXPECT_FALSE(tiled::detail::aligned_16b(buffer + 1, buffer + 8, buffer + 16));
  EXPECT_FALSE(tiled::detail::aligned_16b(buffer, buffer + 8, buffer + 16, buffer + 4));
}

// A field with a valley in the middle tiles (positions 64 to 159 lowered by 4), so that for
// queries in the last tiles and keys in the first FPA's path minimum lies strictly between them
// and its gradient goes through the between part C (random fields rarely send it there).
Inputs valley_case(const Shape& s, Mode mode, uint64_t seed) {
  Inputs in = make_case(s, mode, Gate::Random, seed);
  in.gate = in.gate * 0.25;
  in.gate.slice(2, 64, std::min<int64_t>(160, s.n)).sub_(4.0);
  in.gate = in.gate.to(at::kFloat).to(at::kDouble);
  return in;
}

// FPA's gate gradient through the between part C on the register passes: a valley in the
// middle tiles (valley_case), and the dQ pass's pair sums (over a
// warp by shuffles, then over the warps) carry the gradient of those scores to the valley's
// argmin (a pass that dropped the pair sums, or summed one lane's instead of the warp's, passed
// the random fields above). Both FPA modes, D 64 and 128, n = 200 (4 tiles); and bf16 at D 64
// over 12 tiles with valleys (valleys_case: C's split at levels -1 .. 3, both passes' slots).
TEST(TiledEmulated, RegisterPassesAttributeTheBetweenPart) {
  double worst[2] = {0, 0};
  uint64_t seed = 4800;
  for (int64_t d : {64, 128}) {
    for (Mode mode : {Mode::FpaExact, Mode::FpaSoft}) {
      const Shape s{1, 2, 200, d};
      const Inputs in = valley_case(s, mode, seed++);
      check_against_reference<__nv_bfloat16>(in, mode, Gate::Random, s, worst[0], true);
      check_against_reference<__half>(in, mode, Gate::Random, s, worst[1], true);
    }
  }
  for (Mode mode : {Mode::FpaExact, Mode::FpaSoft}) {
    const Shape s{1, 1, 12 * 64 - 5, 64};
    check_against_reference<__nv_bfloat16>(valleys_case(s, mode, seed++), mode, Gate::Random, s,
                                           worst[0], true);
  }
  std::printf("worst relative error vs reference: bfloat16 %.3g, float16 %.3g\n", worst[0],
              worst[1]);
}

// Races between a block's threads: every kind of tiled kernel run with its blocks, warps and
// lanes in ascending and in descending order (cuda_emulation.h) gives the same bits, finite. A
// read of another thread's shared-memory write with no barrier (or warp collective) between them
// sees the write in one order and not in the other, as does a read of a static __shared__ value
// left by the previous block; a cp.async destination read before its wait, or overwritten while
// another warp still reads it, reads NaN, as does dynamic shared memory never written. Every
// mode, a field with ties, two heads of three query and key tiles (the double buffers' both
// halves, the diagonal tile and the others).
template <class T> void expect_order_free(Mode mode, int64_t d, bool tensor_cores, uint64_t seed,
                                          const char* kernels, bool valley = false) {
  // The valley's between part needs a full query tile past it (every warp holding rows).
  const Shape s{1, 2, valley ? 192 : 130, d};
  const Gate gate = mode == Mode::Softmax || valley ? Gate::Random : Gate::Integer;
  const Inputs in =
      rounded(valley ? valley_case(s, mode, seed) : make_case(s, mode, gate, seed), scalar_of<T>());
  struct Restore { ~Restore() { fpa_emu::schedule = fpa_emu::Schedule::Ascending; } } restore;
  fpa_emu::schedule = fpa_emu::Schedule::Ascending;
  const TileResult ascending = run_emulated<T>(in, mode, tensor_cores);
  fpa_emu::schedule = fpa_emu::Schedule::Descending;
  const TileResult descending = run_emulated<T>(in, mode, tensor_cores);
  const std::string what = describe(mode, gate, s, scalar_of<T>(), 0.0) + " " + kernels;
  EXPECT_TRUE(same_bits(ascending, descending)) << what << ": the thread order changes the result";
  for (const at::Tensor& t : {ascending.r.out, ascending.lse, ascending.r.dq, ascending.r.dk,
                              ascending.r.dv, ascending.r.dgate})
    if (t.defined()) EXPECT_TRUE(t.isfinite().all().item<bool>()) << what << ": not finite";
}

TEST(TiledEmulated, EveryKernelGivesTheSameBitsInEitherThreadOrder) {
  uint64_t seed = 4900;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    expect_order_free<double>(mode, 16, false, seed++, "scalar");
    expect_order_free<float>(mode, 16, false, seed++, "scalar");
    expect_order_free<float>(mode, 32, true, seed++, "WMMA (TF32)");
    expect_order_free<__half>(mode, 32, true, seed++, "WMMA");
    expect_order_free<__nv_bfloat16>(mode, 64, true, seed++, "register");
  }
  expect_order_free<__half>(Mode::FpaExact, 128, true, seed++, "register");
  for (Mode mode : {Mode::FpaExact, Mode::FpaSoft}) {  // the pair sums of the between part
    expect_order_free<__nv_bfloat16>(mode, 64, true, seed++, "register, valley", true);
    expect_order_free<float>(mode, 32, true, seed++, "WMMA (TF32), valley", true);
  }
}

// On a device with less shared memory (sm_80: 163 KB), the WMMA dK/dV pass at D = 112 (~170 KB;
// bf16 at D 64 and 128 takes the register passes, which fit) gives way to the scalar one; the
// results are the same to bf16 rounding.
TEST(TiledEmulated, TensorCorePassesFallBackWhenSharedMemoryIsShort) {
  const size_t saved = fpa_emu::max_dynamic_smem;
  fpa_emu::max_dynamic_smem = 163 * 1024;
  double worst = 0;
  for (Mode mode : {Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Inputs in = make_case({1, 1, 100, 112}, mode, Gate::Integer, 4500);
    check_against_reference<__nv_bfloat16>(in, mode, Gate::Integer, {1, 1, 100, 112}, worst, true);
  }
  fpa_emu::max_dynamic_smem = saved;
  const tiled::Problem p112 = make_problem(1, 1, 100, 112, 112), p128 = make_problem(1, 1, 100, 128, 128);
  EXPECT_FALSE(tiled::detail::mma_shape<__nv_bfloat16>(p112));
  EXPECT_GT(tiled::detail::WmmaPasses::dkdv_smem<__nv_bfloat16>(p112) +
                tiled::detail::WmmaPasses::kStaticSmem,
            size_t(163 * 1024));  // so the fallback did run
  // The register passes at D = 128 fit sm_80: no fallback there.
  EXPECT_LE(tiled::detail::MmaPasses::dkdv_smem<__nv_bfloat16>(p128) + tiled::detail::kMmaStaticSmem,
            size_t(163 * 1024));
  EXPECT_LE(tiled::detail::MmaPasses::dq_smem<__nv_bfloat16>(p128) + tiled::detail::kMmaStaticSmem,
            size_t(163 * 1024));
  std::printf("worst relative error vs reference (bfloat16): %.3g\n", worst);
}

// float32 on TF32 tensor cores (the GPU's default for float32: WMMA 16 x 16 x 8, each element
// of a fragment rounded to TF32 when loaded, as cuda_emulation.h emulates it), forward and every
// gradient, against the float64 reference on the float32 inputs: every mode, the fields with
// ties (integer), plateaus, steep walks and FPA's field offset by 1e3 and 1e4, at the head dimensions of the
// tensor-core kernels (multiples of 16, up to 128), one tile and several.
TEST(TiledEmulated, Tf32KernelsMatchTheReference) {
  const std::vector<Shape> shapes{{1, 1, 1, 16}, {1, 2, 63, 16}, {1, 1, 130, 64}, {1, 1, 100, 128},
                                  {1, 1, 200, 32}};
  double worst = 0;
  uint64_t seed = 5000;
  for (Mode mode : {Mode::Softmax, Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    std::vector<Gate> gates{Gate::Random};
    if (mode != Mode::Softmax) gates = {Gate::Random, Gate::Integer, Gate::Steep};
    if (mode == Mode::FpaExact || mode == Mode::FpaSoft) gates.push_back(Gate::Plateau);
    for (Gate gate : gates)
      for (const Shape& s : shapes) {
        const Inputs in = make_case(s, mode, gate, seed++);
        check_against_reference<float>(in, mode, gate, s, worst, /*tensor_cores=*/true);
      }
    if (mode != Mode::FpaExact && mode != Mode::FpaSoft) continue;
    // FPA's field offset by 1e3 and 1e4 (make_case offsets FPA's field only).
    for (double offset : {1e3, 1e4})
      for (Gate gate : {Gate::Integer, Gate::Steep})
        for (const Shape& s : {Shape{1, 1, 130, 64}, Shape{1, 1, 200, 32}}) {
          const Inputs in = make_case(s, mode, gate, seed++, offset);
          check_against_reference<float>(in, mode, gate, s, worst, true, offset);
        }
  }
  std::printf("worst relative error vs reference (float32 on TF32): %.3g (tolerance %.3g)\n",
              worst, tf32_tolerance());
}

// Exact float32 (fp32_matmul "exact": Problem::tensor_cores false) is still the scalar kernels:
// bitwise the CPU tile run (as checked above for every case), and the TF32 path does differ from
// it, so that the option chooses something.
TEST(TiledEmulated, ExactFloat32IsBitwiseTheCpuTileRunAndTf32IsNot) {
  double worst = 0;
  for (Mode mode : {Mode::Softmax, Mode::FpaExact}) {
    const Inputs in = rounded(make_case({1, 1, 130, 64}, mode, Gate::Integer, 5500), at::kFloat);
    const TileResult exact = run_emulated<float>(in, mode, /*tensor_cores=*/false);
    const TileResult cpu = run_tiles<float>(in, mode);
    EXPECT_TRUE(same_bits(exact, cpu)) << name(mode);
    const TileResult tf32 = run_emulated<float>(in, mode, /*tensor_cores=*/true);
    EXPECT_FALSE(same_bits(tf32, cpu)) << name(mode);
    worst = std::max(worst, (tf32.r.out - exact.r.out).abs().max().item<double>());
  }
  EXPECT_GT(worst, 0.0);
}

// The TF32 rounding that the emulation gives wmma::__float_to_tf32 (cvt.rna.tf32.f32): to
// nearest, ties away from zero, 10 mantissa bits kept.
TEST(TiledEmulated, Tf32RoundingIsToNearestTiesAwayFromZero) {
  namespace w = nvcuda::wmma;
  const float ulp = std::ldexp(1.0f, -10);  // TF32's spacing in [1, 2)
  EXPECT_EQ(w::__float_to_tf32(1.0f), 1.0f);
  EXPECT_EQ(w::__float_to_tf32(1.0f + ulp), 1.0f + ulp);
  EXPECT_EQ(w::__float_to_tf32(1.0f + 0.25f * ulp), 1.0f);
  EXPECT_EQ(w::__float_to_tf32(1.0f + 0.75f * ulp), 1.0f + ulp);
  EXPECT_EQ(w::__float_to_tf32(1.0f + 0.5f * ulp), 1.0f + ulp);     // tie: away from zero
  EXPECT_EQ(w::__float_to_tf32(-1.0f - 0.5f * ulp), -1.0f - ulp);   // tie: away from zero
  EXPECT_EQ(w::__float_to_tf32(1.0f + 1.5f * ulp), 1.0f + 2 * ulp); // tie: away, not to even
  EXPECT_TRUE(std::isinf(w::__float_to_tf32(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(w::__float_to_tf32(std::nanf(""))));
  EXPECT_TRUE(std::isinf(w::__float_to_tf32(std::numeric_limits<float>::max())));
  for (float x : {0.1f, -3.3f, 1e-20f, 123456.7f}) {
    const float r = w::__float_to_tf32(x);
    EXPECT_LE(std::abs(r - x), std::ldexp(std::abs(x), -11)) << x;  // half a TF32 ulp
    EXPECT_TRUE(w::is_tf32(r)) << x;
  }
}

// As the bf16 case above, for TF32: where the device has less shared memory (sm_80: 163 KB),
// the passes that do not fit (at D = 128 the dK/dV pass, ~249 KB, and the dQ pass, ~200 KB; the
// forward, ~149 KB, fits) run on the scalar kernels, exact fp32; the results stay within the
// TF32 tolerance.
TEST(TiledEmulated, Tf32PassesFallBackWhenSharedMemoryIsShort) {
  const size_t saved = fpa_emu::max_dynamic_smem;
  fpa_emu::max_dynamic_smem = 163 * 1024;
  double worst = 0;
  for (Mode mode : {Mode::Fox, Mode::FpaExact, Mode::FpaSoft}) {
    const Inputs in = make_case({1, 1, 100, 128}, mode, Gate::Integer, 5600);
    check_against_reference<float>(in, mode, Gate::Integer, {1, 1, 100, 128}, worst, true);
  }
  fpa_emu::max_dynamic_smem = saved;
  EXPECT_GT(tiled::detail::WmmaPasses::dkdv_smem<float>(make_problem(1, 1, 100, 128, 128)) +
                tiled::detail::WmmaPasses::kStaticSmem,
            size_t(163 * 1024));
  std::printf("worst relative error vs reference (float32 on TF32, sm_80 shared memory): %.3g\n",
              worst);
}

}  // namespace
}  // namespace fpa::testing
