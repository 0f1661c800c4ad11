#!/usr/bin/env python3
"""GPU test of the generated C interface (libcoconet_NAME.so) from Python.

Runs a generated program through ctypes, one process per GPU, on tensors that PyTorch owns and
on PyTorch's current stream, with the inputs of `coconetc verify --dump DIR`, and compares every
output and new state with the dump's expected values (relative Frobenius error, as the C++
driver's --check does, with the limit of the least precise float type in the program).

    python3 tests/gpu/capi_check.py BUILD_DIR DUMP_DIR/ranksP [DUMP_DIR2/ranksP ...]

With several dumps (one program, one rank count), one handle runs them in turn: sizes that take
different paths through run() (the schedule, and the program without it where the schedule's
own requirements do not hold) on the same instance, one after another.

    python3 tests/gpu/capi_check.py --batch LIST

runs many such checks in one pair of worker processes (one per rank, PyTorch imported and CUDA
started once: a check alone takes ~13 s, most of it that start). LIST has a line per check,
`LABEL BUILD_DIR DUMP_DIR/ranksP [DUMP_DIR2/ranksP ...]`, all with the same rank count. Each
check prints its tensor lines prefixed with `LABEL: `, then `== LABEL: ok` or `== LABEL: FAILED
(...)`; a check that does not report within 180 s (CAPI_CHECK_TIMEOUT), or whose worker dies,
stops the batch (its workers are killed) and every later one prints `== LABEL: not run`.
tests/gpu/run.sh reruns alone any check that did not end ok, so a check that ran after a failure
in the same processes is judged by its own run.

Exit status 0 when every tensor of every rank matches (with --batch: of every check).
"""
import ctypes
import json
import os
import queue
import sys
import time

import torch
import torch.multiprocessing as mp


class Scalar(ctypes.Union):
    """coconet_scalar: f for float and bool scalars, i for integer ones."""
    _fields_ = [("f", ctypes.c_double), ("i", ctypes.c_longlong)]

# Seconds a check may take before it counts as hung (CAPI_CHECK_TIMEOUT: tests/gpu/capi_batch_test.sh).
TIMEOUT = float(os.environ.get("CAPI_CHECK_TIMEOUT", "180"))

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
          "i8": torch.int8, "u8": torch.uint8, "bool": torch.uint8, "i32": torch.int32, "i64": torch.int64}
LIMITS = {"f16": 1e-2, "bf16": 2e-2, "f32": 1e-4, "f64": 1e-10}


def read_manifest(d):
    m = {"sizes": {}, "scalars": {}, "tensors": []}
    with open(os.path.join(d, "manifest.txt")) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "program":
                m["program"] = w[1]
            elif w[0] == "ranks":
                m["ranks"] = int(w[1])
            elif w[0] == "seed":
                m["seed"] = int(w[1])
            elif w[0] == "size":
                m["sizes"][w[1]] = int(w[2])
            elif w[0] == "scalar":
                m["scalars"][w[1]] = w[2]  # as written: an integer scalar exactly
            elif w[0] == "tensor":
                m["tensors"].append({"kind": w[1], "name": w[2], "dtype": w[3], "rank": int(w[4]), "file": w[5], "n": int(w[6])})
    return m


def load(d, entry, device):
    with open(os.path.join(d, entry["file"]), "rb") as f:
        raw = bytearray(f.read())
    t = torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[entry["dtype"]])
    return t.clone().to(device)


def bind(lib, name):
    f = lambda s: getattr(lib, f"coconet_{name}_{s}")
    f("interface").restype = ctypes.c_char_p
    f("last_error").restype = ctypes.c_char_p
    f("create").argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    f("run").argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(Scalar),
                         ctypes.POINTER(ctypes.c_void_p), ctypes.c_ulonglong]
    f("finish").argtypes = [ctypes.c_void_p, ctypes.c_double]
    f("local_shape").argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_longlong),
                                 ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(ctypes.c_int)]
    f("destroy").argtypes = [ctypes.c_void_p]
    return f


def check(rank, world, lib_path, name, dumps, uid):
    """One check on this rank: a handle made from uid, every dump run on it in turn, destroyed.
    Returns (tensors that do not match, lines); raises on a failing call."""
    dev = torch.device("cuda", rank)
    f = bind(ctypes.CDLL(lib_path), name)

    def ok(rc, what):
        if rc != 0:
            raise RuntimeError(f"rank {rank}: {what}: {f('last_error')().decode()}")

    iface = json.loads(f("interface")())
    stream = torch.cuda.current_stream()
    handle = ctypes.c_void_p()
    ok(f("create")(uid, rank, world, ctypes.c_void_p(stream.cuda_stream), ctypes.byref(handle)), "create")
    bad, lines = 0, []
    for dump in dumps:
        b, ls = run_dump(f, ok, handle, iface, rank, dev, dump)
        bad += b
        lines += [(f"{dump}: " if len(dumps) > 1 else "") + line for line in ls]
    ok(f("destroy")(handle), "destroy")
    return bad, lines


def batch_worker(rank, world, jobs, results):
    """One rank's process: the checks its queue hands it, until None; a failing one is reported
    as such and the next one runs."""
    torch.cuda.set_device(rank)
    while True:
        job = jobs.get()
        if job is None:
            return
        i, lib_path, name, dumps, uid = job
        try:
            bad, lines = check(rank, world, lib_path, name, dumps, uid)
        except Exception as e:  # reported as this check's failure on this rank
            bad, lines = 1, [f"rank {rank}: {e}"]
        results.put((i, rank, bad, lines))


def run_dump(f, ok, handle, iface, rank, dev, dump):
    m = read_manifest(dump)
    sizes = (ctypes.c_longlong * max(1, len(iface["sizes"])))(*[m["sizes"][s] for s in iface["sizes"]])
    scalars = (Scalar * max(1, len(iface["scalars"])))()
    for k, s in enumerate(iface["scalars"]):
        v = m["scalars"].get(s["name"], s["default"])
        if v is None:
            raise RuntimeError(f"scalar {s['name']} is neither in the dump nor has a default")
        if s["dtype"] in ("i8", "u8", "i32", "i64"):
            scalars[k].i = int(v)
        else:
            scalars[k].f = float(v)
    mine = {(e["kind"], e["name"]): e for e in m["tensors"] if e["rank"] == rank}
    tensors, expected = [], {}
    for t in iface["tensors"]:
        shape = (ctypes.c_longlong * 8)()
        r = ctypes.c_int()
        ok(f("local_shape")(handle, t["name"].encode(), sizes, shape, ctypes.byref(r)), "local_shape " + t["name"])
        numel = 1
        for k in range(r.value):
            numel *= shape[k]
        if t["role"] == "out":
            x = torch.zeros(numel, dtype=DTYPES[t["dtype"]], device=dev)
        else:
            x = load(dump, mine[("in", t["name"])], dev)
        if x.numel() != numel:
            raise RuntimeError(f"{t['name']}: the dump has {x.numel()} elements, local_shape says {numel}")
        tensors.append(x)
        key = ("out", t["name"]) if t["role"] == "out" else ("state", t["name"])
        if t["role"] != "in" and key in mine:
            expected[t["name"]] = (x, load(dump, mine[key], dev), t["dtype"])
    ptrs = (ctypes.c_void_p * max(1, len(tensors)))(*[x.data_ptr() for x in tensors])
    ok(f("run")(handle, sizes, scalars, ptrs, m["seed"]), "run")
    ok(f("finish")(handle, 60.0), "finish")
    torch.cuda.synchronize()
    limit = max([LIMITS.get(t["dtype"], 0.0) for t in iface["tensors"]] + [0.0])
    lines, bad = [], 0
    for n, (got, exp, dt) in expected.items():
        g, e = got.double().cpu(), exp.double().cpu()
        nan = int((g.isnan() != e.isnan()).sum())
        mask = ~(g.isnan() | e.isnan())
        diff = float(((g - e)[mask] ** 2).sum())
        norm = float((e[mask] ** 2).sum())
        rel = (diff / norm) ** 0.5 if norm > 0 else diff ** 0.5
        good = nan == 0 and rel <= limit
        bad += not good
        lines.append(f"rank {rank}: '{n}' ({dt}): relative error {rel:.3g} (limit {limit:g}){': ok' if good else ': WRONG'}")
    return bad, lines


def program_of(build, dumps):
    """The program the dumps are of (one program, one rank count), its library, its rank count."""
    m = read_manifest(dumps[0])
    for d in dumps[1:]:
        other = read_manifest(d)
        if (other["program"], other["ranks"]) != (m["program"], m["ranks"]):
            raise ValueError(f"{d}: {other['program']} at {other['ranks']} ranks, not {m['program']} at {m['ranks']}")
    name = m["program"]
    return name, os.path.join(build, f"libcoconet_{name}.so"), m["ranks"]


def unique_id(lib_path, name):
    f = bind(ctypes.CDLL(lib_path), name)
    uid = ctypes.create_string_buffer(128)
    if f("unique_id")(uid) != 0:
        raise RuntimeError(f"unique_id: {f('last_error')().decode()}")
    return uid.raw


def run_checks(jobs, report):
    """Runs the checks (LABEL, BUILD_DIR, DUMPS) in turn in one process per rank and hands each
    one's outcome to report(label, tensor lines, status): 'ok', 'FAILED' or 'FAILED (why)', or
    'not run' after a check that hung or lost a process (which stops the rest). Returns the number
    of checks not ok."""
    world = read_manifest(jobs[0][2][0])["ranks"]
    ctx = mp.get_context("spawn")
    queues = [ctx.Queue() for _ in range(world)]
    results = ctx.Queue()
    procs = [ctx.Process(target=batch_worker, args=(r, world, queues[r], results)) for r in range(world)]
    for p in procs:
        p.start()
    failed, stopped = 0, False
    for i, (label, build, dumps) in enumerate(jobs):
        failed += 1  # until it ends ok
        if stopped:
            report(label, [], "not run")
            continue
        try:
            name, lib_path, ranks = program_of(build, dumps)
            if ranks != world:
                raise ValueError(f"{ranks} ranks in a batch of {world}")
            uid = unique_id(lib_path, name)
        except Exception as e:
            report(label, [], f"FAILED ({e})")
            continue
        for q in queues:
            q.put((i, lib_path, name, dumps, uid))
        bad, lines, got, why = 0, [], 0, ""
        deadline = time.monotonic() + TIMEOUT
        while got < world and not why:
            try:
                j, rank, b, ls = results.get(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            except queue.Empty:
                dead = [f"rank {r}'s process ended (exit {p.exitcode})" for r, p in enumerate(procs) if not p.is_alive()]
                if dead:
                    why = "; ".join(dead)
                elif time.monotonic() >= deadline:
                    why = f"{world - got} of {world} ranks did not report in {TIMEOUT:g} s"
                continue
            assert j == i, "a report of another check"  # one check at a time, every report awaited
            got += 1
            bad += b
            lines += ls
        if got < world:
            report(label, lines, f"FAILED ({why}; the batch stops)")
            stopped = True
            for p in procs:
                p.kill()
        else:
            report(label, lines, "ok" if bad == 0 else "FAILED")
            failed -= bad == 0
    if not stopped:
        for q in queues:
            q.put(None)
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
    return failed


def batch(list_path):
    jobs = []
    with open(list_path) as fl:
        for line in fl:
            w = line.split()
            if w:
                if len(w) < 3:
                    sys.exit(f"{list_path}: '{line.strip()}' is not LABEL BUILD_DIR DUMP...")
                jobs.append((w[0], w[1], w[2:]))

    def report(label, lines, status):
        for line in lines:
            print(f"{label}: {line}")
        print(f"== {label}: {status}", flush=True)

    return 0 if not jobs or run_checks(jobs, report) == 0 else 1


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        sys.exit(batch(sys.argv[2]))
    build, dumps = sys.argv[1], sys.argv[2:]
    try:
        name, _, world = program_of(build, dumps)
    except Exception as e:
        sys.exit(str(e))

    def report(label, lines, status):  # one check: its lines bare, then the program's verdict
        for line in lines:
            print(line)
        if status not in ("ok", "FAILED"):
            print(f"{name}: {status}")
        print(f"{name} P={world} through the C interface: {'ok' if status == 'ok' else 'FAILED'}")

    sys.exit(0 if run_checks([(name, build, dumps)], report) == 0 else 1)


if __name__ == "__main__":
    main()
