// Session 43: what streaming (non-temporal) stores would buy the CPU backend's
// gradient paths. z = x - y over 2^24 floats on two threads, with plain stores
// and with _mm256_stream_ps, and a memcpy of the same 6N bytes, each the median
// of 15 runs, three times. Build: g++ -O3 -std=c++17 streaming_store_probe.cpp -lpthread
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
using Clock = std::chrono::steady_clock;
__attribute__((target("avx2"))) void sub_reg(const float* x, const float* y, float* z, long n) {
  for (long i = 0; i < n; ++i) z[i] = x[i] - y[i];
}
__attribute__((target("avx2"))) void sub_nt(const float* x, const float* y, float* z, long n) {
  long i = 0;
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(z + i, _mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) z[i] = x[i] - y[i];
  _mm_sfence();
}
template <class F> double run(F f, const float* x, const float* y, float* z, long n) {
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    auto a = Clock::now();
    std::thread th([&] { f(x + n / 2, y + n / 2, z + n / 2, n - n / 2); });
    f(x, y, z, n / 2);
    th.join();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end()); return t[t.size() / 2];
}
int main() {
  long n = 1L << 24;
  float *x = (float*)aligned_alloc(64, n * 4), *y = (float*)aligned_alloc(64, n * 4), *z = (float*)aligned_alloc(64, n * 4);
  std::vector<char> s(n * 6, 1), d(n * 6);
  for (long i = 0; i < n; ++i) { x[i] = i; y[i] = 1; z[i] = 0; }
  for (int k = 0; k < 3; ++k) {
    double a = run(sub_reg, x, y, z, n), b = run(sub_nt, x, y, z, n);
    std::vector<double> t; for (int r = 0; r < 15; ++r) { auto c = Clock::now(); std::thread th([&]{ memcpy(d.data() + n*3, s.data() + n*3, n*3); }); memcpy(d.data(), s.data(), n*3); th.join(); t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - c).count()); }
    std::sort(t.begin(), t.end());
    printf("regular %.0f us  nt %.0f us  memcpy(6N bytes) %.0f us\n", a, b, t[7]);
  }
}
