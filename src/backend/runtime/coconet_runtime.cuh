// coconet_runtime.cuh: support code shared by every program coconetc generates. Written into
// each output folder by `coconetc compile`; the folder builds on its own.
#pragma once

#include <cublas_v2.h>
#include <cuda.h>  // types only (CUdeviceptr): the driver is reached through the runtime
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "coconet_env.h"
#include "coconet_tuning.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 28, 0)
#error "coconetc's generated code needs NCCL 2.28 or newer"
#endif

namespace coconet_rt {

// coconetc's sources keep this header in parts by concern (src/backend/runtime/common/*.cuh); an
// output folder gets them as this one file.
#include "common/checks.cuh"
#include "common/elements.cuh"
#include "common/rows.cuh"
#include "common/reduce.cuh"
#include "common/vector.cuh"
#include "common/workspace.cuh"
}  // namespace coconet_rt
