/* The generated run()'s size agreement over two ranks (two processes, GPUs 0 and 1), against
 * tests/lit/hostile/Inputs/delete.cnet's C interface: ranks that pass different sizes both get
 * "the ranks run with different sizes" (before, the rank whose window had to grow waited for the
 * other forever); the same handles then run with equal sizes. Exits 77 (skipped) with fewer than
 * two GPUs. Prints "capi_ranks: ok". */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// The generated header declares the C interface (and coconet_scalar).
#include "delete_program.h"

#define API(f) coconet_delete_program_##f

/* One rank: exit status 0 when every expectation held, 1 otherwise, 77 without two GPUs. */
static int rankMain(const char id[128], int rank) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 2) return 77;
  cudaSetDevice(rank);
  void* h = NULL;
  if (API(create)(id, rank, 2, NULL, &h) != 0) {
    printf("rank %d: FAILED: create: %s\n", rank, API(last_error)());
    return 1;
  }
  coconet_scalar scalars[2];
  scalars[0].f = 0.5;
  scalars[1].i = 3;
  void* tensors[8];
  float* dev[8];
  for (int i = 0; i < 8; ++i) {
    if (cudaMalloc((void**)&dev[i], 1024 * sizeof(float)) != cudaSuccess) return 1;
    cudaMemset(dev[i], 0, 1024 * sizeof(float));
    tensors[i] = dev[i];
  }
  int bad = 0;
  const long long mine[1] = {rank == 0 ? 1024 : 512};
  if (API(run)(h, mine, scalars, tensors, 1) != 1 || !strstr(API(last_error)(), "the ranks run with different sizes")) {
    printf("rank %d: FAILED: different sizes gave '%s'\n", rank, API(last_error)());
    bad = 1;
  } else {
    printf("rank %d: different sizes refused: %s\n", rank, API(last_error)());
  }
  const long long same[1] = {1024};
  if (API(run)(h, same, scalars, tensors, 2) != 0 || API(finish)(h, 60.0) != 0) {
    printf("rank %d: FAILED: equal sizes after the refusal: %s\n", rank, API(last_error)());
    bad = 1;
  }
  API(destroy)(h);
  for (int i = 0; i < 8; ++i) cudaFree(dev[i]);
  return bad;
}

int main(void) {
  /* Rank 0 makes the id and hands it to rank 1 through a pipe: this process makes no CUDA or
   * NCCL call before the ranks fork. */
  int fds[2];
  if (pipe(fds) != 0) return 1;
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      char id[128];
      if (r == 0) {
        if (API(unique_id)(id) != 0) {
          printf("capi_ranks: FAILED: unique_id: %s\n", API(last_error)());
          _exit(1);
        }
        if (write(fds[1], id, sizeof id) != (ssize_t)sizeof id) _exit(1);
      } else if (read(fds[0], id, sizeof id) != (ssize_t)sizeof id) {
        _exit(1);
      }
      int rc = rankMain(id, r);
      fflush(stdout);
      _exit(rc);
    }
  }
  int worst = 0, skipped = 0;
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code == 77) skipped = 1;
    else if (code != 0) worst = 1;
  }
  if (skipped) {
    printf("capi_ranks: skipped (fewer than two GPUs)\n");
    return 77;
  }
  printf(worst ? "capi_ranks: FAILED\n" : "capi_ranks: ok\n");
  return worst;
}
