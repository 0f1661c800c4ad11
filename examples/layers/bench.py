"""Training steps of single layers, forward and backward: coconetc's operators against PyTorch autograd.

Each layer runs as a torch.nn.Module whose gradients come from autograd: in PyTorch (eager, and
torch.compile), and as the coconetc program's Module, whose backward is the program's derived
backward program (coconetc compile --backward --target torch), eager and under torch.compile.
Layers (one rank, dropout off):
  mlp        samples/megatron_mlp: layer norm, x w1 + b1, gelu, (.) w2, + b2 + x
  row        samples/megatron_row: x w + bias + residual
  embedding  samples/dlrm_embedding: each sample's L rows of each of T tables summed (the
             gradient a scatter-add into the tables), against F.embedding_bag (mode sum)

First every variant's output and gradients are checked against eager PyTorch's (relative error
within f16's 1e-2, f32's 1e-4). Then each variant's step (zeroed gradients, forward, backward
from a fixed cotangent) is timed with CUDA events over --iters steps after a warm-up, --repeats
times in rounds (every variant once per round); the median step and its spread are printed, and
each variant's ratio to the fastest PyTorch variant (above 1: faster). One JSON line per layer
and shape goes to --out.

  python3 examples/layers/bench.py --layers mlp,row,embedding --out layers.jsonl
(coconet_megatron_mlp, coconet_megatron_row, coconet_dlrm_embedding and their _backward packages
importable: examples/layers/run.sh builds them.)
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

TOL = {torch.float16: 1e-2, torch.float32: 1e-4}


class TorchMLP(torch.nn.Module):
    def __init__(self, H, Fd):
        super().__init__()
        self.ln = torch.nn.LayerNorm(H)
        self.fc1 = torch.nn.Linear(H, Fd)
        self.fc2 = torch.nn.Linear(Fd, H)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class TorchRow(torch.nn.Module):
    def __init__(self, H):
        super().__init__()
        self.fc = torch.nn.Linear(H, H)

    def forward(self, x, residual):
        return self.fc(x) + residual


class TorchBag(torch.nn.Module):
    """dlrm_embedding at one rank: out[b, t, :] = the sum over l of table[idx[b, t, l], :]."""

    def __init__(self, R, D):
        super().__init__()
        self.table = torch.nn.Parameter(torch.empty(R, D))

    def forward(self, idx):
        B, T, L = idx.shape
        return F.embedding_bag(idx.reshape(B * T, L), self.table, mode="sum").reshape(B, T, -1)


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def layer(name, shape, dev):
    """(PyTorch module, coconet module, call(module, is_coconet) running it on the layer's inputs, the
    pairs (coconet's, PyTorch's) of parameter gradients, the input tensors that take gradients)."""
    torch.manual_seed(0)
    if name == "mlp":
        import coconet_megatron_mlp as cm
        B, S, H, Fd = shape
        ref = TorchMLP(H, Fd).to(dev).half()
        with torch.no_grad():
            for p in ref.parameters():
                p.normal_(0, 0.02) if p.dim() > 1 else p.normal_(0, 0.1)
        co = cm.Module(gamma=ref.ln.weight.detach().clone(), beta=ref.ln.bias.detach().clone(),
                       w1=ref.fc1.weight.detach().t().contiguous(), b1=ref.fc1.bias.detach().clone(),
                       w2=ref.fc2.weight.detach().t().contiguous(), b2=ref.fc2.bias.detach().clone(), p=0.0)
        x = torch.randn(B, S, H, device=dev, dtype=torch.float16, requires_grad=True)
        grads = lambda: [(co.gamma.grad, ref.ln.weight.grad), (co.beta.grad, ref.ln.bias.grad),  # noqa: E731
                         (co.w1.grad, ref.fc1.weight.grad.t()), (co.b1.grad, ref.fc1.bias.grad),
                         (co.w2.grad, ref.fc2.weight.grad.t()), (co.b2.grad, ref.fc2.bias.grad)]
        return ref, co, (lambda m, coconet: m(x, seed=0) if coconet else m(x)), grads, [x]
    if name == "row":
        import coconet_megatron_row as cm
        B, S, H = shape
        ref = TorchRow(H).to(dev).half()
        with torch.no_grad():
            ref.fc.weight.normal_(0, 0.02)
            ref.fc.bias.normal_(0, 0.1)
        co = cm.Module(w=ref.fc.weight.detach().t().contiguous(), bias=ref.fc.bias.detach().clone(), p=0.0)
        x = torch.randn(B, S, H, device=dev, dtype=torch.float16, requires_grad=True)
        res = torch.randn(B, S, H, device=dev, dtype=torch.float16, requires_grad=True)
        grads = lambda: [(co.w.grad, ref.fc.weight.grad.t()), (co.bias.grad, ref.fc.bias.grad)]  # noqa: E731
        return ref, co, (lambda m, coconet: m(x, res, seed=0) if coconet else m(x, res)), grads, [x, res]
    if name == "embedding":
        import coconet_dlrm_embedding as cm
        B, T, L, R, D = shape
        ref = TorchBag(R, D).to(dev)
        with torch.no_grad():
            ref.table.normal_(0, 1)
        co = cm.Module(table=ref.table.detach().clone())
        idx = torch.randint(0, R, (B, T, L), device=dev)
        grads = lambda: [(co.table.grad, ref.table.grad)]  # noqa: E731
        return ref, co, (lambda m, coconet: m(idx)), grads, []
    raise ValueError(name)


def step_fn(params, call, dy, leaves):
    """One training step of a layer: gradients zeroed, call() (the forward), its backward from dy."""
    def step():
        for p in params.parameters():
            p.grad = None
        for t in leaves:
            t.grad = None
        call().backward(dy)
    return step


def time_step(step, iters, warmup):
    for _ in range(warmup):
        step()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / iters  # us per step


def bench(name, shape, args, dev):
    ref, co, call, grads, leaves = layer(name, shape, dev)
    out_ref = call(ref, False)
    dy = torch.randn_like(out_ref)
    # correctness: coconet's output and gradients against eager PyTorch's
    out_ref.backward(dy)
    leaf_ref = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    out_co = call(co, True)
    out_co.backward(dy)
    tol = TOL[out_ref.dtype]
    errors = {"out": rel(out_co, out_ref)}
    errors.update({"d_input%d" % k: rel(t.grad, g) for k, (t, g) in enumerate(zip(leaves, leaf_ref))})
    errors.update({"d_param%d" % k: rel(a, b) for k, (a, b) in enumerate(grads())})
    ok = all(e <= tol for e in errors.values())
    forms = {"torch": (ref, ref, False), "coconet": (co, co, True)}
    if not args.no_compile:
        forms["torch-compile"] = (ref, torch.compile(ref), False)
        forms["coconet-compile"] = (co, torch.compile(co), True)
    variants = {v: step_fn(params, (lambda m=m, c=c: call(m, c)), dy, leaves) for v, (params, m, c) in forms.items()}
    times = {v: [] for v in variants}
    for _ in range(args.repeats):
        for v, step in variants.items():
            times[v].append(time_step(step, args.iters, args.warmup))
    med = {v: statistics.median(t) for v, t in times.items()}
    peer = min((v for v in med if v.startswith("torch")), key=lambda v: med[v])
    rec = {"layer": name, "shape": shape, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "check": {"ok": ok, "tolerance": tol, "relative_errors": errors},
           "us_per_step": {v: {"median": med[v], "min": min(times[v]), "max": max(times[v]), "runs": times[v]} for v in med},
           "strongest_peer": peer, "speedup_vs_peer": {v: med[peer] / med[v] for v in med if v.startswith("coconet")}}
    return rec, ok


SHAPES = {"mlp": [(4, 1024, 2048, 8192)], "row": [(4, 1024, 4096)], "embedding": [(2048, 8, 20, 100000, 64)]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="mlp,row,embedding")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    dev = torch.device("cuda", 0)
    all_ok = True
    for name in args.layers.split(","):
        for shape in SHAPES[name]:
            rec, ok = bench(name, shape, args, dev)
            all_ok &= ok
            line = json.dumps(rec)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(line + "\n")
    return 0 if all_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
