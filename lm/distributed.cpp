// c10d glue. LibTorch 1.13 and 2.x both provide c10d::TCPStore(host, TCPStoreOptions),
// c10d::ProcessGroupGloo(store, rank, size, options) and, in CUDA builds,
// c10d::ProcessGroupNCCL(store, rank, size, options), with allreduce/barrier returning a work
// handle with wait(); the handle's and the base class's names differ between versions, hence the
// template over the group's type.
#include "lm/distributed.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#if defined(FPA_WITH_GLOO) || defined(FPA_WITH_NCCL)
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#ifdef FPA_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef FPA_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace fpa::lm {
namespace {


std::string env(const char* name, const char* fallback = nullptr) {
  const char* v = std::getenv(name);
  if (v && *v) return v;
  if (fallback) return fallback;
  throw std::runtime_error(fmt::format("distributed: environment variable {} is not set", name));
}

int env_int(const char* name, int lo, int hi, const char* fallback = nullptr) {
  const auto text = env(name, fallback);
  try {
    size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  throw std::runtime_error(
      fmt::format("distributed: {}='{}' must be an integer in [{}, {}]", name, text, lo, hi));
}

#if defined(FPA_WITH_GLOO) || defined(FPA_WITH_NCCL)
// LibTorch 2.4 and newer default the store to a libuv backend that some builds lack (Debian's);
// 1.13 has no such option. Returns whether the options have it.
template <class Options>
auto set_libuv(Options& so, bool on, int) -> decltype(so.useLibUV = on, bool()) {
  so.useLibUV = on;
  return true;
}
template <class Options>
bool set_libuv(Options&, bool, long) {
  return false;
}

// Rank 0 hosts the rendezvous (a TCPStore) that every rank joins. libuv: "0" or "1" chooses the
// store's backend (USE_LIBUV, as for torchrun); "", LibTorch's default, or the classic backend
// where this LibTorch was built without libuv.
c10::intrusive_ptr<c10d::TCPStore> rendezvous(int rank, int world, const std::string& addr, int port,
                                              const std::string& libuv) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(port);
  so.isServer = rank == 0;
  so.numWorkers = world;
  so.waitWorkers = true;
  so.timeout = std::chrono::seconds(60);
  if (!libuv.empty()) set_libuv(so, libuv == "1", 0);
  try {
    return c10::make_intrusive<c10d::TCPStore>(addr, so);
  } catch (const std::exception& e) {
    const bool no_libuv = std::string(e.what()).find("without libuv") != std::string::npos;
    if (!libuv.empty() || !no_libuv || !set_libuv(so, false, 0)) throw;
    return c10::make_intrusive<c10d::TCPStore>(addr, so);
  }
}

// A process group of either backend: Gloo (CPU tensors) or NCCL (CUDA tensors, one GPU a rank).
template <class Group>
class GroupCommunicator final : public Communicator {
 public:
  GroupCommunicator(int rank, int world, c10::intrusive_ptr<Group> group)
      : rank_(rank), world_(world), group_(std::move(group)) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  void all_reduce_mean(const std::vector<at::Tensor>& tensors) override {
    std::vector<at::Tensor> flat_parts;
    for (const auto& t : tensors) flat_parts.push_back(t.detach().reshape({-1}));
    std::vector<at::Tensor> buffer{at::cat(flat_parts)};
    group_->allreduce(buffer)->wait();
    buffer[0].div_(world_);
    int64_t at = 0;
    for (const auto& t : tensors) {
      const auto n = t.numel();
      t.detach().copy_(buffer[0].narrow(0, at, n).view_as(t));
      at += n;
    }
  }

  void barrier() override { group_->barrier()->wait(); }

 private:
  int rank_, world_;
  c10::intrusive_ptr<Group> group_;
};
#endif

#ifdef FPA_WITH_GLOO
std::unique_ptr<Communicator> gloo_group(int rank, int world, const std::string& addr, int port,
                                         const std::string& libuv) {
  auto store = rendezvous(rank, world, addr, port, libuv);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->timeout = std::chrono::seconds(600);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(addr));
  return std::make_unique<GroupCommunicator<c10d::ProcessGroupGloo>>(
      rank, world, c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options));
}
#endif

#ifdef FPA_WITH_NCCL
std::unique_ptr<Communicator> nccl_group(int rank, int world, const std::string& addr, int port,
                                         const std::string& libuv) {
  auto store = rendezvous(rank, world, addr, port, libuv);
  return std::make_unique<GroupCommunicator<c10d::ProcessGroupNCCL>>(
      rank, world, c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world));
}
#endif

}  // namespace

bool distributed_available(bool gpu) {
#ifdef FPA_WITH_NCCL
  if (gpu) return true;
#endif
#ifdef FPA_WITH_GLOO
  return !gpu;
#else
  (void)gpu;
  return false;
#endif
}

int local_rank_from_env() {
  if (std::getenv("LOCAL_RANK")) return env_int("LOCAL_RANK", 0, 1023);
  if (env_int("WORLD_SIZE", 1, 1024, "1") > 1) return env_int("RANK", 0, 1023);
  return -1;
}

std::unique_ptr<Communicator> communicator_from_env(bool gpu) {
  const int world = env_int("WORLD_SIZE", 1, 1024, "1");
  if (world == 1) return std::make_unique<SingleProcess>();
  const int rank = env_int("RANK", 0, world - 1);
  const auto addr = env("MASTER_ADDR", "127.0.0.1");
  const int port = env_int("MASTER_PORT", 1, 65535);
  const auto libuv = env("USE_LIBUV", "");
  if (!libuv.empty() && libuv != "0" && libuv != "1")
    throw std::runtime_error(fmt::format("distributed: USE_LIBUV='{}' must be 0 or 1", libuv));
  if (!distributed_available(gpu))
    throw std::runtime_error(fmt::format("distributed: this build has no {} backend (WORLD_SIZE > 1)",
                                         gpu ? "NCCL" : "Gloo"));
  try {
#ifdef FPA_WITH_NCCL
    if (gpu) return nccl_group(rank, world, addr, port, libuv);
#endif
#ifdef FPA_WITH_GLOO
    if (!gpu) return gloo_group(rank, world, addr, port, libuv);
#endif
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("distributed: rank {} of {} could not join {}:{}: {}",
                                         rank, world, addr, port, e.what()));
  }
  (void)rank;
  (void)addr;
  (void)port;
  throw std::logic_error("distributed: no backend");
}

}  // namespace fpa::lm
