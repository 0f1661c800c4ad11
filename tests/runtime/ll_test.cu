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

// The LL128 lines of a buffer of n elements of T: the eight parts of every line put back
// together give every element once, bit for bit, zeros past the end, and part 7's second word
// is the flag (epoch, then 0).
template <class T, class Bits> void ll128RoundTrip(const char* type) {
  constexpr int E = 8 / static_cast<int>(sizeof(T));
  const unsigned flag = 0xa5a5f00du;
  for (long long n : {0LL, 1LL, 59LL, 60LL, 61LL, 119LL, 120LL, 4LL * 15 * E + 3}) {
    std::vector<Bits> src(static_cast<size_t>(n));
    for (long long i = 0; i < n; ++i) src[static_cast<size_t>(i)] = static_cast<Bits>(0x51edu * (i + 3) + 0x11);
    std::vector<unsigned long long> store(static_cast<size_t>(n) + 2, 0), store2(static_cast<size_t>(n) + 2, 0);
    T* aligned = reinterpret_cast<T*>(store.data());
    T* offset = reinterpret_cast<T*>(store2.data()) + 1;
    if (n) {
      std::memcpy(aligned, src.data(), static_cast<size_t>(n) * sizeof(T));
      std::memcpy(offset, src.data(), static_cast<size_t>(n) * sizeof(T));
    }
    const long long lines = coconet_rt::ll128Lines(n, sizeof(T));
    expect(lines == (n * static_cast<long long>(sizeof(T)) + 119) / 120, type, n, lines);
    for (int form = 0; form < 3; ++form) {
      const T* p = form == 2 ? offset : aligned;
      std::vector<Bits> back(static_cast<size_t>(lines * 15 * E), Bits{0x7777});
      for (long long L = 0; L < lines; ++L)
        for (int t = 0; t < 8; ++t) {
          const uint4 d = coconet_rt::ll128Part(p, n, L, t, form == 1, flag);
          const uint2 w[2] = {make_uint2(d.x, d.y), make_uint2(d.z, d.w)};
          for (int k = 0; k < (t < 7 ? 2 : 1); ++k)
            for (int e = 0; e < E; ++e) {
              const T x = coconet_rt::llElem<T>(w[k], e);
              std::memcpy(&back[static_cast<size_t>((15 * L + 2 * t + k) * E + e)], &x, sizeof(T));
            }
          if (t == 7) expect(d.z == flag && d.w == 0u, "part 7 carries the flag", L);
        }
      for (long long i = 0; i < lines * 15 * E; ++i)
        expect(back[static_cast<size_t>(i)] == (i < n ? src[static_cast<size_t>(i)] : Bits{0}), type, n, i);
    }
  }
}
}  // namespace

int main() {
  using namespace coconet_rt;
  packRoundTrip<__half, unsigned short>("f16 line round trip");
  packRoundTrip<__nv_bfloat16, unsigned short>("bf16 line round trip");
  packRoundTrip<float, unsigned>("f32 line round trip");
  ll128RoundTrip<__half, unsigned short>("f16 LL128 round trip");
  ll128RoundTrip<__nv_bfloat16, unsigned short>("bf16 LL128 round trip");
  ll128RoundTrip<float, unsigned>("f32 LL128 round trip");
  // LL128: 120 data bytes in 128-byte lines, eight threads a line
  expect(ll128Lines(0, 2) == 0 && ll128Lines(60, 2) == 1 && ll128Lines(61, 2) == 2 && ll128Lines(30, 4) == 1, "LL128 lines");
  expect(ll128WindowBytes(1000, 2, 4) == 2 * 4 * 17 * 128, "LL128 window bytes", static_cast<long long>(ll128WindowBytes(1000, 2, 4)));
  expect(ll128Blocks(1, 2) == 1 && ll128Blocks(60 * kDevThreads / 8, 2) == 1 && ll128Blocks(60 * kDevThreads / 8 + 1, 2) == 2,
         "LL128: eight threads a line");
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
  for (int P : {2, 4, 8}) {
    expect(llMaxBytes(P) <= kLLMaxBytes && llMaxBytes(P) <= oneShotMaxBytes(P), "the LL form within the one-shot form's limit", P);
    expect(ll128MaxBytes(P) == 0 || (ll128MaxBytes(P) > llMaxBytes(P) && ll128MaxBytes(P) <= oneShotMaxBytes(P)),
           "the LL128 form past the LL form's limit, within the one-shot form's", P);
  }
  expect(llMaxBytes(2) == 256 << 10 && llMaxBytes(4) == 32 << 10 && llMaxBytes(8) == 256 << 10, "the LL form's limits");
  expect(ll128MaxBytes(2) == 2 << 20 && ll128MaxBytes(4) == 512 << 10 && ll128MaxBytes(8) == 0, "the LL128 form's limits");
  // rounds by size: devAutoRounds (1 below 16 MiB, 4 at 32 MiB, 16 from 512 MiB); a light epilogue's
  // two-shot kernel the same on two ranks and at most 2 on more; the group's two-shot limit
  expect(devAutoRounds(8LL << 20) == 1 && devAutoRounds(16LL << 20) == 2 && devAutoRounds(32LL << 20) == 4 &&
             devAutoRounds(1LL << 30) == 16, "devAutoRounds");
  for (long long mb : {8, 16, 32, 64, 1024}) {
    expect(epilogueAutoRounds(mb << 20, 2) == devAutoRounds(mb << 20), "epilogue rounds on two ranks", mb);
    expect(epilogueAutoRounds(mb << 20, 4) == std::min(devAutoRounds(mb << 20), 2) &&
               epilogueAutoRounds(mb << 20, 8) == epilogueAutoRounds(mb << 20, 4), "epilogue rounds past two ranks", mb);
  }
  expect(twoShotGroupMaxBytes(2) == ~size_t{0} && twoShotGroupMaxBytes(4) == ~size_t{0} && twoShotGroupMaxBytes(8) == kTwoShotMaxBytes,
         "the group's two-shot limit");
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
