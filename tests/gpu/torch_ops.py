"""Each --target torch package's operator against `coconetc verify --dump` vectors at one rank.

Usage: python3 tests/gpu/torch_ops.py DUMPS NAME [NAME ...]   (coconet_NAME importable: installed
with pip by tests/gpu/torch-run.sh). For each NAME: its inputs and states from DUMPS/NAME/ranks1,
the operator run (states changed in place, outputs returned), each output and final state compared
with the expected values (relative Frobenius error within the tolerance of the least precise
floating dtype of the program's tensors; integers exactly); then a tensor of the wrong dtype and
one of the wrong shape (the last tensor argument) raise RuntimeError naming it; torch.compile(fullgraph=True) of a function
that calls the operator gives the same values; and a CUDA graph captures the call and replays it.
A package with an Optimizer class runs it against its reference (REFERENCES) and round-trips its state_dict;
one with a Module class runs it under no_grad; one whose backward program's package is installed
runs autograd through it against the backward program's vectors.
Prints one line per check; exits 1 if any failed.
"""
import importlib
import inspect
import json
import os
import sys

import numpy as np
import torch

DTYPES = {"f16": (np.float16, torch.float16), "bf16": (np.uint16, torch.bfloat16), "f32": (np.float32, torch.float32),
          "f64": (np.float64, torch.float64), "i8": (np.int8, torch.int8), "i32": (np.int32, torch.int32),
          "i64": (np.int64, torch.int64), "u8": (np.uint8, torch.uint8), "bool": (np.uint8, torch.bool)}
TOLERANCE = {"f16": 1e-2, "bf16": 2e-2, "f32": 1e-4, "f64": 1e-10}
failed = 0


def report(ok, what):
    global failed
    failed += not ok
    print(("ok: " if ok else "FAIL: ") + what, flush=True)


def load(d, entry):
    r = entry["ranks"][0]
    np_t, t_t = DTYPES[entry["dtype"]]
    a = np.fromfile(os.path.join(d, r["file"]), dtype=np_t).reshape(r["shape"])
    t = torch.from_numpy(a.copy())
    if entry["dtype"] == "bf16":
        t = t.view(torch.bfloat16)
    return t.to(t_t).cuda() if entry["dtype"] != "bf16" else t.cuda()


def rel_error(got, want):
    """Relative Frobenius error; a NaN expected (the interpreter's value, as for Adam's square root of
    a negative second moment that verify may draw) must be NaN in `got` too, and counts no further."""
    g, w = got.double().cpu(), want.double().cpu()
    if not torch.equal(torch.isnan(g), torch.isnan(w)):
        return float("inf")
    g, w = g[~torch.isnan(w)], w[~torch.isnan(w)]
    den = torch.linalg.vector_norm(w).item()
    return torch.linalg.vector_norm(g - w).item() / (den if den > 0 else 1.0)


def given_sizes(mod, man):
    """The sizes the operator cannot read from its tensors' shapes (pipeline's stage count P), from the vectors."""
    return {k: v for k, v in man["sizes"].items() if k in mod.SIZES and k not in mod._SIZE_FROM and k not in mod._BOUND}


def same_values(a, b):
    """Bitwise-equal values (NaN where the other has NaN counts as equal)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    eq = a == b
    if a.is_floating_point():
        eq |= a.isnan() & b.isnan()
    return bool(eq.all())


def check_program(dumps, name):
    mod = importlib.import_module("coconet_" + name)
    d = os.path.join(dumps, name, "ranks1")
    man = json.load(open(os.path.join(d, "manifest.json")))
    ins = {e["name"]: e for e in man["inputs"]}
    floats = [e["dtype"] for e in man["inputs"] + man.get("outputs", []) if e["dtype"] in TOLERANCE]
    tol = max([TOLERANCE[t] for t in floats], default=0)
    fn = getattr(mod, name if hasattr(mod, name) else name + "_")
    # the operator's tensor arguments, in its order: the program's inputs and states, by their
    # program names (_TENSOR_NAMES: a backward's saved h.x is the argument h_x)
    order = [a for a in fn.__code__.co_varnames[:fn.__code__.co_argcount]]
    names = list(mod._TENSOR_NAMES)
    code = fn.__code__
    kwonly = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    # (a scalar named like one of the wrapper's own keyword arguments, such as `group`, is `group_` there)
    scalars = {(k + "_" if k + "_" in kwonly else k): v for k, v in man["scalars"].items()}
    scalars.update(given_sizes(mod, man))

    def fresh():
        return [load(d, ins[n]) for n in names]

    def run(args):
        out = fn(*args, run_seed=man["seed"], **scalars)
        return out if isinstance(out, tuple) else (() if out is None else (out,))

    args = fresh()
    outs = run(args)
    torch.cuda.synchronize()
    results = {}
    for k, e in enumerate(man.get("outputs", [])):
        results[e["name"]] = (outs[k], e)
    for e in man.get("states", []):
        results[e["name"]] = (args[names.index(e["name"])], e)
    worst = 0.0
    for nm, (got, e) in results.items():
        want = load(d, e)
        if e["dtype"] in TOLERANCE:
            err = rel_error(got, want)
            worst = max(worst, err)
            report(err <= tol, "%s: '%s' relative error %.3g (limit %g)" % (name, nm, err, tol))
        else:
            report(torch.equal(got.cpu(), want.cpu()), "%s: '%s' exactly" % (name, nm))
    # error paths: a wrong dtype and a wrong shape name the tensor
    for what, change in (("dtype", lambda t: t.to(torch.float64 if t.dtype != torch.float64 else torch.float32)),
                         ("shape", lambda t: torch.cat([t.reshape(-1), t.reshape(-1)[:1]]))):
        bad = fresh()
        bad[-1] = change(bad[-1])
        try:
            run(bad)
            report(False, "%s: a tensor of the wrong %s ran" % (name, what))
        except RuntimeError as ex:
            report(("'" + names[-1] + "'") in str(ex) and what in str(ex),
                   "%s: wrong %s of '%s' raises: %s" % (name, what, order[-1], str(ex).splitlines()[0][:160]))
    # Module: the floating inputs after the first as parameters; forward under no_grad gives the
    # function's values, and with gradients enabled it refuses (no backward program yet)
    if hasattr(mod, "Module") and not man.get("states"):
        first = fresh()
        params = {a: t for a, t in zip(order[1:], first[1:]) if t.is_floating_point()}
        m = mod.Module(run_seed=man["seed"], **params, **scalars)
        rest = [t for a, t in zip(order, first) if a not in params]
        with torch.no_grad():
            mouts = m(*rest)
        mouts = mouts if isinstance(mouts, tuple) else (mouts,)
        torch.cuda.synchronize()
        report(all(same_values(a, b) for a, b in zip(outs, mouts)),
               "%s: Module (parameters %s) under no_grad gives the function's values" % (name, ", ".join(params) or "none"))
        if params and getattr(mod, "_bw", None) is None:
            try:
                m(*rest)
                report(False, "%s: Module with parameters that require grad ran without a backward program" % name)
            except RuntimeError as ex:
                report("no backward program" in str(ex), "%s: Module with gradients enabled raises: %s" % (name, str(ex)[:100]))
    # torch.compile(fullgraph=True): the same values
    args2 = fresh()
    compiled = torch.compile(lambda *a: fn(*a, run_seed=man["seed"], **scalars), fullgraph=True)
    outs2 = compiled(*args2)
    outs2 = outs2 if isinstance(outs2, tuple) else (() if outs2 is None else (outs2,))
    torch.cuda.synchronize()
    same = all(same_values(a, b) for a, b in zip(outs, outs2)) and all(same_values(a, b) for a, b in zip(args, args2))
    report(same, "%s: torch.compile(fullgraph=True) gives the same values" % name)
    # CUDA graph: capture one call (after the warm-up above), replay it on fresh inputs
    args3 = fresh()
    static = [a.clone() for a in args3]
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        run(static)  # warm-up on the capture stream
    torch.cuda.current_stream().wait_stream(s)
    for st, a in zip(static, args3):
        st.copy_(a)
    with torch.cuda.graph(g):
        gouts = run(static)
    for st, a in zip(static, args3):
        st.copy_(a)
    g.replay()
    torch.cuda.synchronize()
    same = all(same_values(a, b) for a, b in zip(outs, gouts)) and all(same_values(a, b) for a, b in zip(args, static))
    report(same, "%s: a CUDA graph of the call replays to the same values" % name)
    return worst


class _Lamb(torch.optim.Optimizer):
    """LAMB as the lamb program computes it (samples/lamb, stdlib optim.lamb), on f32 parameters."""

    def __init__(self, params, lr, beta1, beta2, eps, wd):
        super().__init__(params, dict(lr=lr, beta1=beta1, beta2=beta2, eps=eps, wd=wd))

    @torch.no_grad()
    def step(self):
        for gr in self.param_groups:
            b1, b2 = gr["beta1"], gr["beta2"]
            for p in gr["params"]:
                st = self.state[p]
                if not st:
                    st.update(t=0, m=torch.zeros_like(p), v=torch.zeros_like(p))
                st["t"] += 1
                t, g = st["t"], p.grad
                m = st["m"].mul_(b1).add_(g, alpha=1 - b1)
                v = st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
                u = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + gr["eps"]) + gr["wd"] * p
                wn, un = p.norm().item(), u.norm().item()
                p.sub_(gr["lr"] * (wn / un if wn > 0 and un > 0 else 1.0) * u)


# The reference of each optimizer sample on f32 master copies: its hyperparameters and the torch optimizer.
REFERENCES = {
    "adam": (dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, wd=0.01),
             lambda ps, h: torch.optim.AdamW(ps, lr=h["lr"], betas=(h["beta1"], h["beta2"]), eps=h["eps"], weight_decay=h["wd"])),
    "sgd": (dict(lr=1e-2, momentum=0.9, wd=0.01),
            lambda ps, h: torch.optim.SGD(ps, lr=h["lr"], momentum=h["momentum"], weight_decay=h["wd"])),
    "lamb": (dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-6, wd=0.01), lambda ps, h: _Lamb(ps, **h)),
}


def check_optimizer(name):
    """coconet_NAME.Optimizer on f16 parameters of odd sizes against its reference on f32 master
    copies (REFERENCES: torch.optim.AdamW for adam, torch.optim.SGD with momentum for sgd, LAMB for
    lamb), 5 steps with an LR scheduler, flat (one buffer per param group, where the update is
    element by element; the model's zero_grad in between, so gradients arrive elsewhere too) and
    flat=False; then a state_dict round trip: the loaded optimizer's next step equals the original's
    exactly, its states keep their dtypes."""
    mod = importlib.import_module("coconet_" + name)
    if name not in REFERENCES:
        report(False, "%s: an Optimizer with no reference in torch_ops.py" % name)
        return
    hyper, make_ref = REFERENCES[name]
    has_flat = "flat" in inspect.signature(mod.Optimizer.__init__).parameters
    sizes = (4099, 17, 192)
    for flat in ((True, False) if has_flat else (False, )):
        torch.manual_seed(0)
        ps = [torch.nn.Parameter(torch.randn(n, device="cuda").half()) for n in sizes]
        masters = [p.detach().float().clone().requires_grad_(True) for p in ps]
        opt = mod.Optimizer(ps, **({"flat": flat} if has_flat else {}), **hyper)
        ref = make_ref(masters, hyper)
        sched = [torch.optim.lr_scheduler.StepLR(o, 2, 0.5) for o in (opt, ref)]
        for it in range(5):
            for p, m in zip(ps, masters):
                g = torch.randn(p.numel(), device="cuda").half()
                if p.grad is None or it % 2:
                    p.grad = g.clone()  # (a new tensor, as after the model's zero_grad)
                else:
                    p.grad.copy_(g)  # (in place: the buffer's view where flat)
                m.grad = g.float()
            opt.step()
            ref.step()
            for sc in sched:
                sc.step()
        torch.cuda.synchronize()
        err = max(rel_error(p.detach(), m.detach().half()) for p, m in zip(ps, masters))
        report(err <= 1e-2, "%s: Optimizer(flat=%s), parameters of %s elements, 5 steps with StepLR against "
               "%s (f32 masters): relative error %.3g (limit 0.01)" % (name, flat, sizes, type(ref).__name__, err))
        # state_dict round trip
        sd = opt.state_dict()
        qs = [torch.nn.Parameter(p.detach().clone()) for p in ps]
        opt2 = mod.Optimizer(qs, **({"flat": flat} if has_flat else {}), **hyper)
        opt2.load_state_dict(sd)
        dtypes_ok = all(opt2.state[q][k].dtype == opt.state[p][k].dtype for p, q in zip(ps, qs)
                        for k in opt.state[p] if torch.is_tensor(opt.state[p][k]))
        for p, q in zip(ps, qs):
            g = torch.randn(p.numel(), device="cuda").half()
            p.grad, q.grad = g.clone(), g.clone()
        opt.step()
        opt2.step()
        torch.cuda.synchronize()
        same = all(torch.equal(p.detach(), q.detach()) for p, q in zip(ps, qs))
        report(dtypes_ok and same, "%s: Optimizer(flat=%s) state_dict round trip: the loaded optimizer's step equals "
               "the original's (states keep their dtypes: %s)" % (name, flat, dtypes_ok))


def check_autograd(dumps, name):
    """Where coconet_NAME_backward is installed: the operator's autograd against NAME_backward's
    vectors (the forward's inputs requiring grad, out.backward(d_OUT), each input's .grad against
    d_IN)."""
    mod = importlib.import_module("coconet_" + name)
    if getattr(mod, "_bw", None) is None:
        return
    d = os.path.join(dumps, name + "_backward", "ranks1")
    man = json.load(open(os.path.join(d, "manifest.json")))
    ins = {e["name"]: e for e in man["inputs"]}
    tol = max([TOLERANCE[e["dtype"]] for e in man["inputs"] if e["dtype"] in TOLERANCE], default=0)
    fn = getattr(mod, name if hasattr(mod, name) else name + "_")
    args = [load(d, ins[t]) for t in mod._TENSOR_NAMES]
    args = [a.requires_grad_(True) if a.is_floating_point() else a for a in args]
    code = fn.__code__
    kwonly = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    scalars = {(k + "_" if k + "_" in kwonly else k): v for k, v in man["scalars"].items()}
    scalars.update(given_sizes(mod, man))
    out = fn(*args, run_seed=man["seed"], **scalars)
    outs = out if isinstance(out, tuple) else (out,)
    # (the outputs the function returns: a forward compiled with --saving returns the values it saves
    # to its operator's autograd, not to its caller)
    torch.autograd.backward(outs, [load(d, ins["d_" + o]) for o in mod._OUTPUT_NAMES[:len(outs)]])
    torch.cuda.synchronize()
    for e in man["outputs"]:
        a = args[list(mod._TENSOR_NAMES).index(e["name"][2:])]
        err = rel_error(a.grad, load(d, e)) if a.grad is not None else float("inf")
        report(err <= tol, "%s: autograd through %s_backward: '%s' relative error %.3g (limit %g)" % (name, name, e["name"], err, tol))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    torch.cuda.set_device(0)
    for name in sys.argv[2:]:
        try:
            check_program(sys.argv[1], name)
            if hasattr(importlib.import_module("coconet_" + name), "Optimizer"):
                check_optimizer(name)
            check_autograd(sys.argv[1], name)
        except Exception as ex:  # one program's failure does not stop the others
            report(False, "%s: %s: %s" % (name, type(ex).__name__, str(ex).splitlines()[0][:300] if str(ex) else ""))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
