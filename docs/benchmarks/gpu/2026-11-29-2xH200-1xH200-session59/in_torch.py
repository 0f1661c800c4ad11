# Call f: rows-b2b-micro (built as a shared library, its main as rows_b2b_entry) run inside a PyTorch
# process, before and after the bench's layer norm rows (eager, torch.compile) have run, with the
# context's cache configuration (cuCtxGetCacheConfig) printed at each point.
import ctypes
import sys

import torch
import torch.nn.functional as F

cuda = ctypes.CDLL("libcuda.so.1")
micro = ctypes.CDLL(sys.argv[1])
names = {0: "PreferNone", 1: "PreferShared", 2: "PreferL1", 3: "PreferEqual"}


def cache_config(when):
    c = ctypes.c_int(-1)
    rc = cuda.cuCtxGetCacheConfig(ctypes.byref(c))
    print(f"-- {when}: cuCtxGetCacheConfig rc={rc} {names.get(c.value, c.value)}", flush=True)


def run_micro(when):
    argv = (ctypes.c_char_p * 4)(b"micro", b"8192", b"8192", b"plain")
    print(f"-- micro {when}", flush=True)
    rc = micro.rows_b2b_entry(3, argv)
    sys.stdout.flush()
    print(f"-- micro rc={rc}", flush=True)


torch.zeros(1, device="cuda")
cache_config("after torch's CUDA init")
run_micro("after torch's CUDA init")
T, H = 8192, 8192
x = torch.randn(T, H, device="cuda", dtype=torch.float16)
g = (1 + 0.1 * torch.randn(H, device="cuda")).half()
b = (0.1 * torch.randn(H, device="cuda")).half()
for _ in range(5):
    F.layer_norm(x, (H,), g, b, 1e-5)
cache_config("after eager layer norm")
f = torch.compile(lambda: F.layer_norm(x, (H,), g, b, 1e-5), dynamic=False, fullgraph=True)
for _ in range(5):
    f()
torch.cuda.synchronize()
cache_config("after torch.compile's layer norm")
run_micro("after eager and torch.compile's layer norm")
