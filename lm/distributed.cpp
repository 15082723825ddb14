// c10d glue. LibTorch 1.13 and 2.x both provide c10d::TCPStore(host, TCPStoreOptions) and
// c10d::ProcessGroupGloo(store, rank, size, options) with allreduce/barrier returning a work
// handle with wait(); the handle's type name differs between versions, hence `auto`.
#include "lm/distributed.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

#ifdef FPA_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
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

#ifdef FPA_WITH_GLOO
class GlooGroup final : public Communicator {
 public:
  GlooGroup(int rank, int world, const std::string& addr, int port) : rank_(rank), world_(world) {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(port);
    so.isServer = rank == 0;
    so.numWorkers = world;
    so.waitWorkers = true;
    so.timeout = std::chrono::seconds(60);
    auto store = c10::make_intrusive<c10d::TCPStore>(addr, so);
    auto options = c10d::ProcessGroupGloo::Options::create();
    options->timeout = std::chrono::seconds(600);
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(addr));
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options);
  }
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
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};
#endif

}  // namespace

bool distributed_available() {
#ifdef FPA_WITH_GLOO
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Communicator> communicator_from_env() {
  const int world = env_int("WORLD_SIZE", 1, 1024, "1");
  if (world == 1) return std::make_unique<SingleProcess>();
  const int rank = env_int("RANK", 0, world - 1);
  const auto addr = env("MASTER_ADDR", "127.0.0.1");
  const int port = env_int("MASTER_PORT", 1, 65535);
#ifdef FPA_WITH_GLOO
  try {
    return std::make_unique<GlooGroup>(rank, world, addr, port);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("distributed: rank {} of {} could not join {}:{}: {}",
                                         rank, world, addr, port, e.what()));
  }
#else
  (void)rank;
  (void)addr;
  (void)port;
  throw std::runtime_error("distributed: this build has no Gloo backend (WORLD_SIZE > 1)");
#endif
}

}  // namespace fpa::lm
