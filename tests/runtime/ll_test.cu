// Host checks of the LL form's helpers (coconet_device.cuh, dev_allreduce_ll): the lines a
// buffer packs into and the elements read back from them, the window's size, the flags' epochs
// (never 0, what a zeroed window holds), the grid, the groups' limit and the aliasing check that
// keeps a group off the LL form. Built with nvcc and run on the build machine (nothing here
// touches a GPU): tests/CMakeLists.txt, runtime_ll.
#include <cstdio>
#include <cstring>
#include <vector>

#include "coconet_device.cuh"
#include "coconet_runtime.cuh"

namespace {
int failures = 0;
void expect(bool ok, const char* what, long long a = 0, long long b = 0) {
  if (ok) return;
  if (++failures <= 20) std::printf("FAIL %s (%lld, %lld)\n", what, a, b);
}

// Every line of a buffer of n elements of T (bits `src`), packed from an 8-byte aligned copy
// (whole lines as one load where asked) and from a copy one element off alignment (element by
// element): each element comes back bit for bit, and the bytes past the end are zero.
template <class T, class Bits> void packRoundTrip(const char* type) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  for (long long n = 0; n <= 3 * E + 1; ++n) {
    std::vector<Bits> src(static_cast<size_t>(n));
    for (long long i = 0; i < n; ++i) src[static_cast<size_t>(i)] = static_cast<Bits>(0x9e37u * (i + 1) + 0x7f);
    std::vector<unsigned long long> store(static_cast<size_t>(n) + 2, 0), store2(static_cast<size_t>(n) + 2, 0);  // 8-byte aligned
    T* aligned = reinterpret_cast<T*>(store.data());
    T* offset = reinterpret_cast<T*>(store2.data()) + 1;  // 2 or 4 bytes off an 8-byte boundary
    if (n) {
      std::memcpy(aligned, src.data(), static_cast<size_t>(n) * sizeof(T));
      std::memcpy(offset, src.data(), static_cast<size_t>(n) * sizeof(T));
    }
    const long long lines = coconet_rt::llLines(n, sizeof(T));
    expect(lines == (n + E - 1) / E, type, n, lines);
    for (int form = 0; form < 3; ++form) {
      const T* p = form == 2 ? offset : aligned;
      for (long long j = 0; j < lines; ++j) {
        const uint2 d = coconet_rt::llPack(p, n, j, form == 1);
        for (int e = 0; e < E; ++e) {
          const long long i = j * E + e;
          const T x = coconet_rt::llElem<T>(d, e);
          Bits got = 0;
          std::memcpy(&got, &x, sizeof(T));
          expect(got == (i < n ? src[static_cast<size_t>(i)] : Bits{0}), type, n, i);
        }
      }
    }
  }
}
}  // namespace

int main() {
  using namespace coconet_rt;
  packRoundTrip<__half, unsigned short>("f16 line round trip");
  packRoundTrip<__nv_bfloat16, unsigned short>("bf16 line round trip");
  packRoundTrip<float, unsigned>("f32 line round trip");
  // lines: 8 data bytes each
  expect(llLines(0, 2) == 0, "no lines for nothing");
  expect(llLines(4, 2) == 1 && llLines(5, 2) == 2 && llLines(2, 4) == 1 && llLines(3, 4) == 2, "lines round up");
  expect(llLines(1LL << 33, 2) == 1LL << 31, "lines past 2^32 elements");
  // the window: two areas of P slots of 16-byte lines
  expect(llWindowBytes(1000, 2, 4) == 2 * 4 * 250 * 16, "window bytes", static_cast<long long>(llWindowBytes(1000, 2, 4)));
  // epochs: 1, 2, ... and never 0 after a wrap
  unsigned epoch = 0;
  expect(nextLLEpoch(epoch) == 1 && nextLLEpoch(epoch) == 2, "epochs count from 1");
  epoch = 0xffffffffu;
  expect(nextLLEpoch(epoch) == 1 && epoch == 1, "the epoch skips 0 when it wraps", epoch);
  // the grid: a line per thread, at least one block, at most kDevMaxBlocks
  expect(llBlocks(1, 2) == 1 && llBlocks(kDevThreads * 4, 2) == 1 && llBlocks(kDevThreads * 4 + 1, 2) == 2, "one line per thread");
  expect(llBlocks(1LL << 30, 2) == kDevMaxBlocks, "at most kDevMaxBlocks blocks", llBlocks(1LL << 30, 2));
  // the groups' LL limit: 64 KiB on two ranks, none on more
  expect(llGroupMaxBytes(2) == 64 * 1024 && llGroupMaxBytes(4) == 0 && llGroupMaxBytes(8) == 0, "group limit");
  expect(kLLMaxBytes <= kOneShotMaxBytes, "the LL form within the one-shot form's limit");
  // aliasing: byte ranges [a, a + an) and [b, b + bn)
  std::vector<char> buf(64);
  char* b0 = buf.data();
  expect(disjoint(b0, 16, b0 + 16, 16) && disjoint(b0 + 16, 16, b0, 16), "adjacent ranges are apart");
  expect(!disjoint(b0, 16, b0, 16), "a buffer is not apart from itself");
  expect(!disjoint(b0, 17, b0 + 16, 16) && !disjoint(b0 + 16, 16, b0 + 8, 9), "overlapping ranges");
  expect(!disjoint(b0, 64, b0 + 8, 8) && !disjoint(b0 + 8, 8, b0, 64), "one inside the other");
  if (failures) {
    std::printf("%d failures\n", failures);
    return 1;
  }
  std::printf("ll_test: ok\n");
  return 0;
}
