"""A GPT-style model trained with torchrun, its optimizer step from a coconetc program.

The model is fp16 (mixed precision: fp32 master weights and moments in the optimizer). Variants:
  torch           torch.optim.AdamW(fused=True) on fp32 master copies, copied back to the fp16
                  parameters after each step (the usual mixed-precision recipe); gradients averaged
                  over the ranks by an all-reduce (what DDP does);
  coconet         coconet_adam.Optimizer (samples/adam: the gradient reduce-scatter, AdamW on this
                  rank's slice of the masters and moments, and the all-gather of the fp16 weights in
                  one operator), swapped in for the above with one line;
  coconet-blocks  coconet with each block's MLP half (layer norm, column- and row-parallel
                  linears, GELU, residual) from samples/megatron_mlp (coconet_megatron_mlp.Module;
                  its gradients from the backward program's package, coconet_megatron_mlp_backward),
                  one rank;
  compile suffix  the model under torch.compile.
Every variant starts from the same weights (seed) and reads the same tokens, so their loss curves
can be compared step by step (examples/gpt/compare.py).

  torchrun --nproc-per-node 1 examples/gpt/train.py --variant coconet --out runs.jsonl

Appends one JSON line to --out: the variant, the loss of every step, tokens per second (steps after
the warm-up, timed with CUDA events), peak memory (torch's allocator, and the device's in use).
"""
import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden)
        self.fc2 = torch.nn.Linear(4 * hidden, hidden)

        self.cmlp = None

    def use_coconet_mlp(self):
        """The MLP half from samples/megatron_mlp: its parameters are this block's (the linears'
        weights transposed: the program multiplies x by w1 [H, F]); dropout off, as the PyTorch half."""
        import coconet_megatron_mlp

        with torch.no_grad():
            self.cmlp = coconet_megatron_mlp.Module(
                gamma=self.ln2.weight.detach().clone(), beta=self.ln2.bias.detach().clone(),
                w1=self.fc1.weight.detach().t().contiguous(), b1=self.fc1.bias.detach().clone(),
                w2=self.fc2.weight.detach().t().contiguous(), b2=self.fc2.bias.detach().clone(), p=0.0)
        del self.ln2, self.fc1, self.fc2

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(a)
        if self.cmlp is not None:
            return self.cmlp(x, seed=0)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(torch.nn.Module):
    def __init__(self, vocab, seq, hidden, heads, layers):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, hidden)
        self.pos = torch.nn.Embedding(seq, hidden)
        self.blocks = torch.nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(hidden)
        for name, p in self.named_parameters():  # GPT-2's initialization
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "fc2.weight")) else 0.02
                torch.nn.init.normal_(p, std=std)
            elif "ln" not in name:
                torch.nn.init.zeros_(p)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x) @ self.tok.weight.t()  # the output layer shares the embedding


def batches(vocab, batch, seq, rank, steps, device):
    """A token stream a model can learn: each token follows from the one before by a fixed random
    table, except for one token in eight drawn at random. Rank r reads its own batches; all of them
    are made before the first step (on the device: the loop times the model, not the data)."""
    g = torch.Generator(device="cpu").manual_seed(1234)
    table = torch.randint(vocab, (vocab,), generator=g)
    out = []
    for step in range(steps):
        g.manual_seed(10_000 * step + rank)
        t = torch.empty(batch, seq + 1, dtype=torch.long)
        t[:, 0] = torch.randint(vocab, (batch,), generator=g)
        noise = torch.rand(batch, seq + 1, generator=g) < 0.125
        rand = torch.randint(vocab, (batch, seq + 1), generator=g)
        for i in range(1, seq + 1):
            t[:, i] = torch.where(noise[:, i], rand[:, i], table[t[:, i - 1]])
        out.append(t.to(device))
    return out


class MasterAdamW:
    """torch.optim.AdamW(fused=True) on fp32 master copies of fp16 parameters; each step averages the
    gradients over the ranks (one all-reduce each, as DDP does) and copies the masters back."""

    def __init__(self, params, lr, betas, eps, weight_decay):
        self.params = list(params)
        self.masters = [p.detach().float().clone().requires_grad_(True) for p in self.params]
        self.opt = torch.optim.AdamW(self.masters, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, fused=True)

    @torch.no_grad()
    def step(self):
        if dist.is_initialized() and dist.get_world_size() > 1:
            for p in self.params:
                dist.all_reduce(p.grad)
                p.grad.div_(dist.get_world_size())
        for p, m in zip(self.params, self.masters):
            m.grad = p.grad.float()
        self.opt.step()
        torch._foreach_copy_(self.params, self.masters)

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", required=True, choices=["torch", "torch-compile", "coconet", "coconet-compile", "coconet-blocks"])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4, help="sequences per rank and step")
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10, help="steps left out of tokens per second")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--out", default="runs.jsonl")
    a = ap.parse_args()

    if "RANK" in os.environ:
        dist.init_process_group("nccl")
    rank = dist.get_rank() if dist.is_initialized() else 0
    ranks = dist.get_world_size() if dist.is_initialized() else 1
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(device)
    torch.manual_seed(0)  # the same weights on every rank and in every variant
    with device:
        model = GPT(a.vocab, a.seq, a.hidden, a.heads, a.layers).half()
    if a.variant == "coconet-blocks":
        if ranks > 1:  # (the blocks would be tensor-parallel over the ranks the optimizer averages over)
            raise SystemExit("coconet-blocks runs on one rank")
        for blk in model.blocks:
            blk.use_coconet_mlp()
    hyper = dict(lr=a.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    if a.variant.startswith("coconet"):
        import coconet_adam

        opt = coconet_adam.Optimizer(model.parameters(), lr=a.lr, beta1=0.9, beta2=0.95, eps=1e-8, wd=0.1)
    else:
        opt = MasterAdamW(model.parameters(), **hyper)
    run = torch.compile(model) if a.variant.endswith("compile") else model

    losses, start, stop = [], torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.reset_peak_memory_stats()
    wall = time.time()
    for step, tokens in enumerate(batches(a.vocab, a.batch, a.seq, rank, a.steps, device)):
        if step == a.warmup:
            start.record()
        logits = run(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, a.vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    stop.record()
    torch.cuda.synchronize()
    timed = a.steps - a.warmup
    seconds = start.elapsed_time(stop) / 1000 if timed > 0 else float("nan")
    losses = torch.stack(losses).float()
    if ranks > 1:  # the mean over the ranks' batches
        dist.all_reduce(losses)
        losses /= ranks
    free, total = torch.cuda.mem_get_info()
    row = dict(variant=a.variant, gpu=torch.cuda.get_device_name(), ranks=ranks, torch=torch.__version__,
               shape=dict(layers=a.layers, hidden=a.hidden, heads=a.heads, seq=a.seq, batch=a.batch, vocab=a.vocab),
               params=sum(p.numel() for p in model.parameters()), steps=a.steps,
               losses=[round(x, 6) for x in losses.tolist()],
               tokens_per_s=timed * a.batch * a.seq * ranks / seconds if timed > 0 else None,
               peak_allocated_gib=torch.cuda.max_memory_allocated() / 2**30,
               device_used_gib=(total - free) / 2**30, wall_s=time.time() - wall)
    if rank == 0:
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print("%s: final loss %.4f, %.0f tokens/s, peak %.2f GiB allocated, %.2f GiB in use on the device"
              % (a.variant, row["losses"][-1], row["tokens_per_s"] or 0, row["peak_allocated_gib"], row["device_used_gib"]))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
