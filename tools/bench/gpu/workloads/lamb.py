"""Data-parallel LAMB fused with the gradient all-reduce (samples/lamb): coconetc against
eager PyTorch (all_reduce + LAMB in torch ops, exactly stdlib/optim.cnet's lamb),
torch.compile, ZeRO-style sharding, and the all-reduce alone as the floor. Issue 5's targets
are Adam's (4 GPUs, 2^20..2^28 parameters). The rows and tolerances are described in _optim.py.
"""
from workloads._optim import OptimizerWorkload, configs, headline_spec

__all__ = ["PROGRAMS", "HEADLINE_PROGRAMS", "configs", "headline", "rows"]

# Tolerances (rtol, atol) per output. w and w16 also allow for the two norms, which every row
# sums in its own order (a relative error up to ~1e-4 over 2^28 terms in f32 moves w by
# lr * ratio * |u| * 1e-4, under 1e-6); forgetting the trust ratio, the weight decay or the
# bias correction still moves w far more.
TOL = {"w": (1e-6, 1e-6), "m": (1e-5, 1e-7), "v": (1e-5, 1e-9), "w16": (1e-3, 1e-6)}
_W = OptimizerWorkload("lamb", "samples/lamb/lamb.cnet", "samples/lamb/lamb.sched", TOL)
PROGRAMS = _W.programs
rows = _W.rows
HEADLINE_PROGRAMS = ["lamb"]


def headline(params: dict, world: int) -> dict:
    return headline_spec(params, world, "lamb")
