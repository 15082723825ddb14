#include "alloc_meter.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace fpa::bench {
namespace {

std::atomic<int64_t> g_live{0}, g_peak{0};

constexpr size_t kHeader = 64;  // keeps 64-byte alignment and stores the size

void raise_peak(int64_t live) {
  int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}

void release(void* base) {
  if (!base) return;
  size_t n;
  std::memcpy(&n, base, sizeof n);
  g_live -= int64_t(n);
  std::free(base);
}

class CountingAllocator final : public c10::Allocator {
 public:
  // LibTorch 1.13 declares allocate() const, later ones (2.6, 2.14 seen) not: one of the two
  // overrides it (no `override`, so that each LibTorch compiles the one it has).
  c10::DataPtr allocate(size_t n) const { return counted(n); }
  c10::DataPtr allocate(size_t n) { return counted(n); }
  // Needed (pure virtual) by newer LibTorch; harmless on older versions.
  void copy_data(void* dest, const void* src, std::size_t count) const {
    std::memcpy(dest, src, count);
  }

 private:
  static c10::DataPtr counted(size_t n) {
    void* base = nullptr;
    if (posix_memalign(&base, kHeader, n + kHeader) != 0) throw std::bad_alloc();
    std::memcpy(base, &n, sizeof n);
    raise_peak(g_live += int64_t(n));
    return {static_cast<char*>(base) + kHeader, base, &release,
            c10::Device(c10::DeviceType::CPU)};
  }
};

}  // namespace

void install_alloc_meter() {
  static CountingAllocator allocator;
  c10::SetCPUAllocator(&allocator, /*priority=*/100);
}
int64_t live_bytes() { return g_live.load(); }
void reset_peak() { g_peak = g_live.load(); }
int64_t peak_bytes() { return g_peak.load(); }

}  // namespace fpa::bench
