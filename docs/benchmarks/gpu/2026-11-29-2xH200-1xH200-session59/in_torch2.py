# Call g: the generated layer norm through the bench's own path (tools/bench/gpu/coconet.py: the
# CMake-built libcoconet_layernorm.so, its C interface, torch tensors), back to back behind a
# sleeping kernel as bench.py's queued_us times it, with inputs made as the bench makes them
# (normal, f32 then f16) and otherwise (uniform, made in f16; the same x with a fresh y); then
# rows-b2b-micro (argv[2]) in the same process. argv[3]: seconds of warm-up before each timing
# (call h: 0 and 2).
import ctypes
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, "tools/bench/gpu")
from coconet import Library  # noqa: E402

dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29555", rank=0, world_size=1)
torch.cuda.set_device(0)
lib = Library(sys.argv[1])
prog = lib.create()
T = H = 8192


WARM_S = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0


def warm(step):
    # 20 steps, then more for about WARM_S seconds (bench.py's warm-up: --warmup-seconds)
    import time
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < WARM_S:
        for _ in range(50):
            step()
        torch.cuda.synchronize()


def queued(step, n=200):
    warm(step)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(int(4e6))   # ~2 ms at 2 GHz: the steps queue behind it
    step()
    s.record()
    for _ in range(n):
        step()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) * 1000.0 / n


def each(step, n=200):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    warm(step)
    for s, e in ev:
        s.record()
        step()
        e.record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1000.0 for s, e in ev)
    return t[n // 2]


gen = torch.Generator(device="cuda")
gen.manual_seed(41 * 1000003)
bench_x = torch.randn((T, H), generator=gen, device="cuda", dtype=torch.float32).to(torch.float16)
gamma = (1.0 + 0.1 * torch.randn((H,), device="cuda")).to(torch.float16)
beta = (0.1 * torch.randn((H,), device="cuda")).to(torch.float16)
inputs = {"bench (normal, f32 -> f16)": bench_x,
          "uniform in f16": (torch.rand((T, H), device="cuda", dtype=torch.float16) * 4 - 2)}
for rnd in range(2):
    for name, x in inputs.items():
        y = torch.empty((T, H), device="cuda", dtype=torch.float16)
        step = prog.bind({"T": T, "H": H}, {}, {"x": x, "gamma": gamma, "beta": beta, "y": y})
        print(f"round {rnd} {name}: queued {queued(step):.1f} us, each {each(step):.1f} us (median)", flush=True)
    f = torch.compile(lambda: torch.nn.functional.layer_norm(bench_x, (H,), gamma, beta, 1e-5),
                      dynamic=False, fullgraph=True)
    print(f"round {rnd} torch.compile: queued {queued(f):.1f} us, each {each(f):.1f} us (median)", flush=True)
prog.finish()
if sys.argv[2] != "-":
    micro = ctypes.CDLL(sys.argv[2])
    argv = (ctypes.c_char_p * 4)(b"micro", b"8192", b"8192", b"plain")
    micro.rows_b2b_entry(3, argv)
