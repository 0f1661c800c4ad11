/* The generated C interface's argument checks, against tests/lit/hostile/Inputs/delete.cnet
 * (class delete_program; sizes N; scalars errno, int; tensors new, class, NULL, stdout,
 * coconet_rt, cudaStream_t, float4 in, run out). Without a GPU: every null or dead handle and
 * null pointer is an error return with its message, never a crash. With one: finish()'s time
 * limit (NaN and negative refused, the communicator still usable), tensors outside device memory
 * or shorter than their shape, and a handle used after destroy. Prints "capi_args: ok". */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The generated header declares the C interface (and coconet_scalar).
#include "delete_program.h"

#define API(f) coconet_delete_program_##f

static int failures = 0;
/* A call that must fail with a message containing `want`. */
static void expectError(int rc, const char* call, const char* want) {
  const char* got = API(last_error)();
  if (rc != 1 || !strstr(got, want)) {
    printf("FAILED: %s returned %d with '%s'; expected 1 with '%s'\n", call, rc, got, want);
    ++failures;
  }
}
static void expectOk(int rc, const char* call) {
  if (rc != 0) {
    printf("FAILED: %s: %s\n", call, API(last_error)());
    ++failures;
  }
}

int main(void) {
  const long long sizes[1] = {1024};
  coconet_scalar scalars[2];
  scalars[0].f = 0.5;  /* errno: f32 */
  scalars[1].i = 3;    /* int: i64 */
  void* tensors[8] = {0};
  long long shape[8];
  int rank = 0;
  char id[128];
  void* h = NULL;
  void* bogus = (void*)0x1234;

  if (!strstr(API(interface)(), "\"program\":\"delete\"")) {
    printf("FAILED: interface() does not name the program\n");
    ++failures;
  }
  expectError(API(run)(NULL, sizes, scalars, tensors, 1), "run(NULL handle)", "not a live handle");
  expectError(API(run)(bogus, sizes, scalars, tensors, 1), "run(bogus handle)", "not a live handle");
  expectError(API(finish)(NULL, 1.0), "finish(NULL handle)", "not a live handle");
  expectError(API(local_shape)(bogus, "new", sizes, shape, &rank), "local_shape(bogus handle)", "not a live handle");
  expectError(API(destroy)(NULL), "destroy(NULL handle)", "not a live handle");
  expectError(API(destroy)(bogus), "destroy(bogus handle)", "not a live handle");
  expectError(API(unique_id)(NULL), "unique_id(NULL)", "id is null");
  expectError(API(create)(NULL, 0, 1, NULL, &h), "create(NULL id)", "id is null");
  memset(id, 0, sizeof id);
  expectError(API(create)(id, 0, 1, NULL, NULL), "create(NULL handle)", "handle is null");
  expectError(API(create)(id, 2, 2, NULL, &h), "create(rank 2 of 2)", "rank 2 of 2 ranks");
  expectError(API(create)(id, 0, 0, NULL, &h), "create(0 ranks)", "rank 0 of 0 ranks");

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    printf(failures ? "capi_args: %d FAILED\n" : "capi_args: ok (no GPU: argument checks only)\n", failures);
    return failures ? 1 : 0;
  }

  /* One rank on GPU 0. */
  expectOk(API(unique_id)(id), "unique_id");
  expectOk(API(create)(id, 0, 1, NULL, &h), "create");
  expectError(API(run)(h, NULL, scalars, tensors, 1), "run(NULL sizes)", "sizes is null");
  expectError(API(run)(h, sizes, NULL, tensors, 1), "run(NULL scalars)", "scalars is null");
  expectError(API(run)(h, sizes, scalars, NULL, 1), "run(NULL tensors)", "tensors is null");
  expectError(API(local_shape)(h, NULL, sizes, shape, &rank), "local_shape(NULL tensor)", "tensor is null");
  expectError(API(local_shape)(h, "new", NULL, shape, &rank), "local_shape(NULL sizes)", "sizes is null");
  expectOk(API(local_shape)(h, "new", sizes, shape, &rank), "local_shape");

  const size_t bytes = 1024 * sizeof(float);
  float* dev[8];
  for (int i = 0; i < 8; ++i) {
    if (cudaMalloc((void**)&dev[i], bytes) != cudaSuccess) return 2;
    cudaMemset(dev[i], 0, bytes);
    tensors[i] = dev[i];
  }
  expectOk(API(run)(h, sizes, scalars, tensors, 1), "run");
  expectOk(API(finish)(h, 10.0), "finish");
  expectError(API(finish)(h, NAN), "finish(NaN)", "finish's time limit is nan s");
  expectError(API(finish)(h, -1.0), "finish(-1)", "finish's time limit is -1");
  expectOk(API(finish)(h, INFINITY), "finish(infinity)");

  /* Tensors that do not hold their shape: a host pointer, a shorter allocation, an offset that
   * runs past the end. The communicator stays usable after each. */
  static float host[1024];
  tensors[1] = host;
  expectError(API(run)(h, sizes, scalars, tensors, 1), "run(host tensor)", "tensor 'class'");
  float* small = NULL;
  cudaMalloc((void**)&small, bytes / 2);
  tensors[1] = small;
  expectError(API(run)(h, sizes, scalars, tensors, 1), "run(short tensor)", "runs past the end of its allocation");
  tensors[1] = dev[1];
  tensors[7] = dev[7] + 1;
  expectError(API(run)(h, sizes, scalars, tensors, 1), "run(output past the end)", "output 'run'");
  tensors[7] = dev[7];
  const long long big[1] = {4096};
  expectError(API(run)(h, big, scalars, tensors, 1), "run(sizes larger than the tensors)", "runs past the end");
  const long long huge[1] = {1LL << 62};
  expectError(API(run)(h, huge, scalars, tensors, 1), "run(2^62 elements)", "would take more than 2^63 - 1 bytes");
  expectOk(API(run)(h, sizes, scalars, tensors, 2), "run after the errors");
  expectOk(API(finish)(h, 10.0), "finish after the errors");
  float out[1024];
  cudaMemcpy(out, dev[7], sizeof out, cudaMemcpyDeviceToHost);
  if (out[0] != 0.0f) {
    printf("FAILED: run of zeros gave %g\n", out[0]);
    ++failures;
  }

  expectOk(API(destroy)(h), "destroy");
  expectError(API(run)(h, sizes, scalars, tensors, 1), "run after destroy", "not a live handle");
  expectError(API(finish)(h, 1.0), "finish after destroy", "not a live handle");
  expectError(API(destroy)(h), "destroy twice", "not a live handle");
  cudaFree(small);
  for (int i = 0; i < 8; ++i) cudaFree(dev[i]);
  printf(failures ? "capi_args: %d FAILED\n" : "capi_args: ok\n", failures);
  return failures ? 1 : 0;
}
