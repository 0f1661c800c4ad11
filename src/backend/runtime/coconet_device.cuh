// coconet_device.cuh: collectives as kernels over NCCL's device API, for programs compiled with
// `coconetc compile --device-collectives`. Written into the output folder beside
// coconet_runtime.cuh when a program uses it.
//
// Every rank of the (single-node) communicator owns symmetric windows (ncclMemAlloc'd and
// registered with ncclCommWindowRegister); ncclGetLsaPointer turns (window, offset, peer) into
// an address this GPU loads from or stores to over NVLink. Kernels synchronize the ranks with
// LSA barriers, one per block index: block b of every rank handles the same elements, so a
// barrier of block b orders exactly the accesses that conflict.
//
// Reductions sum the ranks' values in rank order in f32 and round once, as the reference
// interpreter does.
#pragma once

#include <cuda/atomic>
#include <nccl_device.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coconet_runtime.cuh"

namespace coconet_rt {

// coconetc's sources keep this header in parts by concern (src/backend/runtime/device/*.cuh); an
// output folder gets them as this one file.
#include "device/limits.cuh"
#include "device/launch.cuh"
#include "device/windows.cuh"
#include "device/phases.cuh"
#include "device/rounds.cuh"
#include "device/kernels.cuh"
#include "device/ll.cuh"
}  // namespace coconet_rt
