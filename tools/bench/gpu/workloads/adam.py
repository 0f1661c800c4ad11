"""Data-parallel Adam fused with the gradient all-reduce (samples/adam): coconetc against
eager PyTorch (all_reduce + AdamW(fused=True)), torch.compile, ZeRO-style sharding, and the
all-reduce alone as the floor. Issue 5's targets at 4 GPUs, 2^20..2^28 parameters: >= 1.4x
eager at >= 2^24 and no slower anywhere; within 1.15x of the all-reduce; state 1/P of eager's.
The rows and tolerances are described in _optim.py.
"""
from workloads._optim import OptimizerWorkload, configs, headline_spec

__all__ = ["PROGRAMS", "HEADLINE_PROGRAMS", "configs", "headline", "rows"]

# Tolerances (rtol, atol) per output; _optim.py says why.
TOL = {"w": (1e-6, 1e-7), "m": (1e-5, 1e-7), "v": (1e-5, 1e-9), "w16": (1e-3, 1e-7)}
_W = OptimizerWorkload("adam", "samples/adam/adam.cnet", "samples/adam/adam.sched", TOL)
PROGRAMS = _W.programs
rows = _W.rows
HEADLINE_PROGRAMS = ["adam"]


def headline(params: dict, world: int) -> dict:
    return headline_spec(params, world, "adam")
