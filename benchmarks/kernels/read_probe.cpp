// The fastest plain read of a large buffer this machine allows, for roofline.py's read-bandwidth
// floor: torch's sum and BLAS's GEMV read 256 MiB at 25.5 GB/s on a Zen 4 where luminal's decode
// GEMVs streamed their weights at 31, so floors derived from them were below what we reach.
// Each of `threads` threads sums its contiguous part as two streams (the two halves of its part,
// as the GEMVs read two blocks of rows), four vectors of each in flight. No software prefetch:
// 256 B to 4 KiB ahead all measured slower than the hardware's alone. Built by roofline.py with
// -O3 -march=native (the widest vectors this CPU has). On that Zen 4 VM every probe's rate moved
// between 20 and 38 GB/s from one second to the next, with other tenants' traffic.
#include <cstdint>
#include <thread>
#include <vector>

namespace {

typedef float Vec __attribute__((vector_size(64)));

Vec load(const float* p) {
  Vec v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

constexpr int64_t kLanes = 16, kStep = 4 * kLanes;

float sum_two_streams(const float* p, int64_t n) {
  const int64_t half = n / 2 / kStep * kStep;
  const float* a = p;
  const float* b = p + half;
  Vec acc[8] = {};
  for (int64_t i = 0; i < half; i += kStep) {
    for (int j = 0; j < 4; ++j) {
      acc[j] += load(a + i + j * kLanes);
      acc[4 + j] += load(b + i + j * kLanes);
    }
  }
  float total = 0.0f;
  for (const Vec& v : acc)
    for (int64_t l = 0; l < kLanes; ++l) total += v[l];
  for (int64_t i = 2 * half; i < n; ++i) total += p[i];
  return total;
}

}  // namespace

// The sum of data[0 .. n), read by `threads` threads (returned so that the reads are not dead).
extern "C" float luminal_read_probe(const float* data, int64_t n, int threads) {
  std::vector<float> partial(threads);
  std::vector<std::thread> workers;
  const int64_t part = (n + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = t * part < n ? t * part : n, end = begin + part < n ? begin + part : n;
    workers.emplace_back([&partial, data, t, begin, end] { partial[t] = sum_two_streams(data + begin, end - begin); });
  }
  float total = 0.0f;
  for (int t = 0; t < threads; ++t) {
    workers[t].join();
    total += partial[t];
  }
  return total;
}
