/* A stand-in for a generated libcoconet_NAME.so's C interface (tests/gpu/capi_batch_test.sh):
 * program NAME(N: size) { in x : f64[N] local; y = 2 x + rank }, on host memory. Built as
 * -DNAME=fake_ok (as said), fake_bad (y one off: a wrong result), fake_hang (rank 1's create
 * never returns) or fake_crash (rank 1's run aborts its process). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FN(s) CAT(CAT(coconet_, NAME), _##s)
#define STR2(x) #x
#define STR(x) STR2(x)

static int g_rank;

const char* FN(interface)(void) {
  return "{\"program\": \"" STR(NAME) "\", \"sizes\": [\"N\"], \"scalars\": [], \"tensors\": ["
         "{\"name\": \"x\", \"role\": \"in\", \"dtype\": \"f64\"}, "
         "{\"name\": \"y\", \"role\": \"out\", \"dtype\": \"f64\"}]}";
}
const char* FN(last_error)(void) { return "fake error"; }
int FN(unique_id)(char* id) { memset(id, 7, 128); return 0; }
int FN(create)(const char* id, int rank, int world, void* stream, void** handle) {
  (void)id; (void)world; (void)stream;
  if (strcmp(STR(NAME), "fake_hang") == 0 && rank == 1) pause();
  g_rank = rank;
  *handle = &g_rank;
  return 0;
}
int FN(local_shape)(void* h, const char* name, const long long* sizes, long long* shape, int* rank) {
  (void)h; (void)name;
  shape[0] = sizes[0];
  *rank = 1;
  return 0;
}
int FN(run)(void* h, const long long* sizes, const void* scalars, void** tensors, unsigned long long seed) {
  (void)scalars; (void)seed;
  const double* x = tensors[0];
  double* y = tensors[1];
  const int r = *(int*)h;
  if (strcmp(STR(NAME), "fake_crash") == 0 && r == 1) abort();
  for (long long i = 0; i < sizes[0]; ++i) y[i] = 2 * x[i] + r + (strcmp(STR(NAME), "fake_bad") == 0);
  return 0;
}
int FN(finish)(void* h, double seconds) { (void)h; (void)seconds; return 0; }
int FN(destroy)(void* h) { (void)h; return 0; }
