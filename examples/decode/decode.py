"""Token-by-token decoding through tensor-parallel MLPs, the step captured in a CUDA graph.

Each layer is h = h + b2 + W2 gelu(W1 layer_norm(h) + b1), W1 split by rows and W2 by columns over
the ranks, one all-reduce of the partial sums: the decode_gemv program (samples/decode_gemv), whose
GEMVs and all-reduce + bias + residual epilogue run as coconetc's operator, against the same layers in
PyTorch (F.linear, gelu, dist.all_reduce), also captured in a CUDA graph: the strongest peer at
decode sizes, where a step is too short to pay for host launches.

  torchrun --nproc-per-node 1 examples/decode/decode.py [--hidden 4096 --ffn 16384 --layers 8]

Checks that both give the same hidden state after --tokens steps (relative error within fp16's
1e-2), then times graph replays of one step (CUDA events; the median of --repeats runs of --iters
replays each) and prints one JSON line (also appended to --out).
"""
import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=16384)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=16, help="steps run before the values are compared")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()

    if "RANK" in os.environ:
        dist.init_process_group("nccl")
    rank = dist.get_rank() if dist.is_initialized() else 0
    ranks = dist.get_world_size() if dist.is_initialized() else 1
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(device)
    import coconet_decode_gemv as cg

    H, Fl = a.hidden, a.ffn // ranks  # this rank's slice of the intermediate size
    torch.manual_seed(0)  # the same full weights on every rank; each keeps its slice
    layers = []
    with device:
        for _ in range(a.layers):
            w1 = torch.randn(a.ffn, H, dtype=torch.half) / H**0.5
            b1 = torch.randn(a.ffn, dtype=torch.half) * 0.1
            w2 = torch.randn(H, a.ffn, dtype=torch.half) / a.ffn**0.5
            b2 = torch.randn(H, dtype=torch.half) * 0.1
            sl = slice(rank * Fl, (rank + 1) * Fl)
            layers.append(dict(w1=w1[sl].contiguous(), b1=b1[sl].contiguous(), w2=w2[:, sl].contiguous(), b2=b2))
        h0 = torch.randn(H, dtype=torch.half)

    def step_coconet(h):
        for L in layers:
            h = cg.decode_gemv(F.layer_norm(h, (H,)), h, L["w1"], L["b1"], L["w2"], L["b2"])
        return h

    def step_torch(h):
        for L in layers:
            part = F.linear(F.gelu(F.linear(F.layer_norm(h, (H,)), L["w1"], L["b1"])), L["w2"])
            if ranks > 1:
                dist.all_reduce(part)
            h = part + L["b2"] + h
        return h

    def graph(step):
        """The step captured once (after a warm-up on a side stream), with its static input."""
        static = h0.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            step(static)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(static)
        return g, static, out

    result = dict(gpu=torch.cuda.get_device_name(), ranks=ranks, torch=torch.__version__, hidden=H, ffn=a.ffn,
                  layers=a.layers)
    graphs = {"coconet": graph(step_coconet), "torch": graph(step_torch)}
    finals = {}
    for name, (g, static, out) in graphs.items():
        static.copy_(h0)
        for _ in range(a.tokens):  # decode: each step's output is the next step's input
            g.replay()
            static.copy_(out)
        finals[name] = static.clone()
    torch.cuda.synchronize()
    ref = finals["torch"].double()
    err = (torch.linalg.vector_norm(finals["coconet"].double() - ref) / torch.linalg.vector_norm(ref)).item()
    result["relative_error"] = err
    result["match"] = err <= 1e-2
    for name, (g, static, out) in graphs.items():
        times = []
        for _ in range(a.repeats):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(a.iters):
                g.replay()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1000 / a.iters)
        result[name + "_us_per_token"] = statistics.median(times)
        result[name + "_us_spread"] = [min(times), max(times)]
    result["speedup_vs_torch_graph"] = result["torch_us_per_token"] / result["coconet_us_per_token"]
    if rank == 0:
        print(json.dumps(result))
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(result) + "\n")
    cg.close()
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0 if result["match"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
