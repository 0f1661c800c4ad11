# Call b (session 60): the Triton kernels torch.compile makes for the norms bench's functions
# (tools/bench/gpu/workloads/norms.py: F.rms_norm, F.layer_norm, torch.softmax, compiled with
# dynamic=False, fullgraph=True) at T = 8192 rows of f16, with the configuration its autotuning
# picks (TRITON_PRINT_AUTOTUNING=1) and each kernel's time back to back (CUDA events, 200 calls).
# Run: TRITON_PRINT_AUTOTUNING=1 TORCH_LOGS=output_code python3 tc_code.py > out 2> code
import torch
import torch.nn.functional as Fn

torch.manual_seed(0)
for op, H in [("rmsnorm", 8192), ("rmsnorm", 12288), ("layernorm", 8192), ("layernorm", 12288), ("softmax", 1024),
              ("softmax", 8192)]:
    x = torch.randn(8192, H, device="cuda", dtype=torch.float16)
    g = (1 + 0.01 * torch.randn(H, device="cuda")).half()
    b = (0.01 * torch.randn(H, device="cuda")).half()
    if op == "rmsnorm":
        f = lambda x: Fn.rms_norm(x, (H,), g, 1e-6)  # noqa: E731
    elif op == "layernorm":
        f = lambda x: Fn.layer_norm(x, (H,), g, b, 1e-5)  # noqa: E731
    else:
        f = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
    c = torch.compile(f, dynamic=False, fullgraph=True)
    for _ in range(20):
        c(x)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(200):
        c(x)
    e1.record()
    torch.cuda.synchronize()
    print(f"{op} T=8192 H={H}: {e0.elapsed_time(e1) * 1000 / 200:.1f} us a call back to back", flush=True)
    torch._dynamo.reset()
