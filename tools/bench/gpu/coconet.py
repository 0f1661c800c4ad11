"""Loads a generated program's shared library (libcoconet_NAME.so) through its C interface.

The interface (../README.md, "The generated C interface"):

    const char* coconet_NAME_interface(void);
    int coconet_NAME_unique_id(char id[128]);
    int coconet_NAME_create(const char id[128], int rank, int nranks, void* stream, void** handle);
    int coconet_NAME_run(void* handle, const long long* sizes, const coconet_scalar* scalars,
                         void* const* tensors, unsigned long long seed);
    (coconet_scalar: a union of double f, for float and bool scalars, and long long i, for
    integer ones)
    int coconet_NAME_finish(void* handle, double timeout_seconds);
    int coconet_NAME_local_shape(void* handle, const char* tensor, const long long* sizes,
                                 long long shape[8], int* rank);
    int coconet_NAME_destroy(void* handle);
    const char* coconet_NAME_last_error(void);

Typical use (one process per GPU, torch.distributed initialised):

    lib = Library("build/libcoconet_adam.so")
    prog = lib.create()                       # NCCL communicator of its own, current stream
    step = prog.bind({"N": n}, {"t": 3}, {"g16": g16, "w": w, ...})   # checks once
    step()                                    # enqueues one run (a few microseconds of host time)
    prog.finish()                             # waits; raises on device-side errors
    prog.destroy()

`run(...)` is `bind(...)()`. Argument checks name the tensor: dtype, device, contiguity, and
the number of elements against the program's local_shape for the given sizes.
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import re

import torch
import torch.distributed as dist


class Scalar(ctypes.Union):
    """One scalar parameter of the C interface (coconet_scalar): f for float and bool scalars,
    i for integer ones."""
    _fields_ = [("f", ctypes.c_double), ("i", ctypes.c_longlong)]


INTEGER_DTYPES = ("i8", "u8", "i32", "i64")


def scalar_array(dtypes: list[str], values: list) -> ctypes.Array:
    """scalars[] of the C interface: each value in its dtype's member."""
    arr = (Scalar * max(1, len(values)))()
    for k, (dtype, v) in enumerate(zip(dtypes, values)):
        if dtype in INTEGER_DTYPES:
            arr[k].i = int(v)
        else:
            arr[k].f = float(v)
    return arr

# The interface's dtype names -> torch dtypes.
DTYPES = {
    "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64,
    "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool, "i32": torch.int32,
    "i64": torch.int64,
}
ID_BYTES = 128
MAX_RANK = 8


class CoconetError(RuntimeError):
    """A call into a generated program failed; the message names the program and the call."""


def _layout(t: dict) -> tuple[str, int | None]:
    """(kind, dim) of a tensor's layout; accepts {"layout": "sliced", "dim": 0} (README) and
    the manifest's spelling "sliced(0)"."""
    layout = t.get("layout", "replicated")
    m = re.fullmatch(r"sliced\((\d+)\)", layout)
    if m:
        return "sliced", int(m.group(1))
    return layout, t.get("dim")


class Library:
    """A loaded libcoconet_NAME.so. NAME comes from the file name unless given."""

    def __init__(self, path: str, name: str | None = None):
        self.path = path
        if name is None:
            m = re.fullmatch(r"libcoconet_(\w+)\.so", os.path.basename(path))
            if not m:
                raise CoconetError(f"{path}: expected a file named libcoconet_NAME.so")
            name = m.group(1)
        self.name = name
        # RTLD_LOCAL (ctypes' default on Linux): two libraries of the same program (say with
        # and without a schedule) define the same symbols; each keeps its own.
        self._lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
        f = self._fn
        c_p, c_int, c_ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        self._interface = f("interface", ctypes.c_char_p, [])
        self._unique_id = f("unique_id", c_int, [ctypes.POINTER(ctypes.c_char)])
        self._create = f("create", c_int, [ctypes.POINTER(ctypes.c_char), c_int, c_int, c_p,
                                           ctypes.POINTER(c_p)])
        self._run = f("run", c_int, [c_p, ctypes.POINTER(c_ll), ctypes.POINTER(Scalar),
                                     ctypes.POINTER(c_p), ctypes.c_ulonglong])
        self._finish = f("finish", c_int, [c_p, ctypes.c_double])
        self._local_shape = f("local_shape", c_int, [c_p, ctypes.c_char_p, ctypes.POINTER(c_ll),
                                                     ctypes.POINTER(c_ll), ctypes.POINTER(c_int)])
        self._destroy = f("destroy", c_int, [c_p])
        self._last_error = f("last_error", ctypes.c_char_p, [])
        self.interface = json.loads(self._interface().decode())
        self.sizes = list(self.interface.get("sizes", []))
        self.scalars = list(self.interface.get("scalars", []))
        self.tensors = list(self.interface.get("tensors", []))
        self.tensor_info = {t["name"]: t for t in self.tensors}

    def _fn(self, what, restype, argtypes):
        symbol = f"coconet_{self.name}_{what}"
        try:
            fn = getattr(self._lib, symbol)
        except AttributeError:
            raise CoconetError(f"{self.path}: no function {symbol} (does this coconetc emit "
                               f"the C interface?)") from None
        fn.restype, fn.argtypes = restype, argtypes
        return fn

    def check(self, rc: int, call: str):
        if rc != 0:
            msg = self._last_error()
            raise CoconetError(f"{self.name}: {call} failed: "
                               f"{msg.decode(errors='replace') if msg else '(no message)'}")

    def unique_id(self) -> bytes:
        buf = ctypes.create_string_buffer(ID_BYTES)
        self.check(self._unique_id(buf), "unique_id")
        return buf.raw

    def create(self, group=None, stream: torch.cuda.Stream | None = None) -> "Program":
        """A program instance on this rank: rank 0 of torch.distributed's `group` (default:
        the world) makes the NCCL unique id, every rank receives it, and each creates its own
        communicator with `stream` (default: the current stream). Collective: every rank of
        the group must call it."""
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        box = [self.unique_id() if rank == 0 else None]
        src = dist.get_global_rank(group, 0) if group is not None else 0
        dist.broadcast_object_list(box, src=src, group=group)
        uid = ctypes.create_string_buffer(box[0], ID_BYTES)
        stream = stream or torch.cuda.current_stream()
        handle = ctypes.c_void_p()
        self.check(self._create(uid, rank, world, ctypes.c_void_p(stream.cuda_stream),
                                ctypes.byref(handle)), "create")
        return Program(self, handle, rank, world, torch.device("cuda", torch.cuda.current_device()),
                       stream)


class Program:
    """One instance of a generated program (its communicators and buffers) on this rank."""

    def __init__(self, lib: Library, handle, rank: int, world: int, device, stream):
        self.lib, self._handle = lib, handle
        self.rank, self.world, self.device, self.stream = rank, world, device, stream
        self._shapes: dict[tuple, tuple[int, ...]] = {}

    @property
    def name(self) -> str:
        return self.lib.name

    def _live(self):
        if self._handle is None:
            raise CoconetError(f"{self.name}: the program was destroyed")
        return self._handle

    def _sizes_array(self, sizes: dict) -> tuple:
        """sizes[] in the interface's order; every size named, no others."""
        want = self.lib.sizes
        unknown = sorted(set(sizes) - set(want))
        missing = [s for s in want if s not in sizes]
        if unknown or missing:
            raise CoconetError(f"{self.name}: sizes {sorted(sizes)} do not match the program's "
                               f"{want}" + (f" (missing {missing})" if missing else "")
                               + (f" (unknown {unknown})" if unknown else ""))
        values = []
        for s in want:
            v = sizes[s]
            if isinstance(v, bool) or int(v) != v or v <= 0:
                raise CoconetError(f"{self.name}: size '{s}' must be a positive integer, got {v!r}")
            values.append(int(v))
        return tuple(values)

    def _scalars_array(self, scalars: dict) -> list:
        """scalars[] in the interface's order: the given value, else the default; a scalar
        without a default must be given."""
        known = {s["name"] for s in self.lib.scalars}
        unknown = sorted(set(scalars) - known)
        if unknown:
            raise CoconetError(f"{self.name}: unknown scalars {unknown} (the program has "
                               f"{sorted(known)})")
        values = []
        for s in self.lib.scalars:
            name = s["name"]
            if name in scalars:
                v = scalars[name]
            elif s.get("default") is not None:
                v = s["default"]
            else:
                raise CoconetError(f"{self.name}: scalar '{name}' ({s.get('dtype')}) has no "
                                   f"default and was not given")
            dtype = s.get("dtype", "f64")
            if dtype in INTEGER_DTYPES:
                if isinstance(v, bool) or int(v) != v:
                    raise CoconetError(f"{self.name}: scalar '{name}' is {dtype}, got {v!r}")
                values.append(int(v))
            else:
                values.append(float(v))
        return values

    def local_shape(self, name: str, sizes: dict) -> tuple[int, ...]:
        """The shape of this rank's storage of tensor `name` for these sizes."""
        if name not in self.lib.tensor_info:
            raise CoconetError(f"{self.name}: no tensor '{name}' (the program has "
                               f"{[t['name'] for t in self.lib.tensors]})")
        key = (name, self._sizes_array(sizes))
        if key not in self._shapes:
            arr = (ctypes.c_longlong * max(1, len(key[1])))(*key[1])
            shape = (ctypes.c_longlong * MAX_RANK)()
            rank = ctypes.c_int()
            self.lib.check(self.lib._local_shape(self._live(), name.encode(), arr, shape,
                                                 ctypes.byref(rank)), f"local_shape('{name}')")
            self._shapes[key] = tuple(shape[i] for i in range(rank.value))
        return self._shapes[key]

    def empty(self, name: str, sizes: dict) -> torch.Tensor:
        """An uninitialised tensor of the right dtype and local shape for `name`."""
        dtype = DTYPES[self.lib.tensor_info[name]["dtype"]]
        return torch.empty(self.local_shape(name, sizes), dtype=dtype, device=self.device)

    def local_part(self, name: str, whole: torch.Tensor) -> torch.Tensor:
        """This rank's storage of tensor `name` taken from the whole (logical) tensor: the
        whole for a replicated or local tensor, the rank's block for a sliced one (rank r of
        G holds [r*n/G, (r+1)*n/G) of dimension dim). A copy, contiguous. Only tensors of
        the world group (other groups: build the storage from local_shape yourself)."""
        info = self.lib.tensor_info[name]
        kind, dim = _layout(info)
        if kind != "sliced":
            return whole.contiguous().clone()
        if info.get("group", "world") != "world":
            raise CoconetError(f"{self.name}: tensor '{name}' is sliced in group "
                               f"'{info.get('group')}': local_part handles the world group only")
        n = whole.shape[dim]
        lo, hi = self.rank * n // self.world, (self.rank + 1) * n // self.world
        return whole.narrow(dim, lo, hi - lo).contiguous().clone()

    def is_sliced(self, name: str) -> bool:
        return _layout(self.lib.tensor_info[name])[0] == "sliced"

    def bind(self, sizes: dict, scalars: dict, tensors: dict[str, torch.Tensor], seed: int = 0):
        """Checks the arguments once and returns a callable that enqueues one run with them
        (on the program's stream). The tensors must stay alive while the callable is used."""
        lib = self.lib
        size_values = self._sizes_array(sizes)
        scalar_values = self._scalars_array(scalars)
        names = [t["name"] for t in lib.tensors]
        unknown = sorted(set(tensors) - set(names))
        if unknown:
            raise CoconetError(f"{self.name}: unknown tensors {unknown} (the program has {names})")
        pointers = []
        for info in lib.tensors:
            name = info["name"]
            if name not in tensors:
                raise CoconetError(f"{self.name}: tensor '{name}' ({info.get('role')}) not given")
            t = tensors[name]
            want = DTYPES.get(info["dtype"])
            if want is None:
                raise CoconetError(f"{self.name}: tensor '{name}': unknown dtype {info['dtype']}")
            if t.dtype != want:
                raise CoconetError(f"{self.name}: tensor '{name}' must be {info['dtype']} "
                                   f"({want}), got {t.dtype}")
            if t.device != self.device:
                raise CoconetError(f"{self.name}: tensor '{name}' is on {t.device}, the program "
                                   f"runs on {self.device}")
            if not t.is_contiguous():
                raise CoconetError(f"{self.name}: tensor '{name}' is not contiguous")
            shape = self.local_shape(name, sizes)
            if t.numel() != math.prod(shape):
                raise CoconetError(f"{self.name}: tensor '{name}' has {t.numel()} elements, its "
                                   f"local shape for {dict(sizes)} is {list(shape)} "
                                   f"({math.prod(shape)} elements)")
            pointers.append(t.data_ptr())
        c_sizes = (ctypes.c_longlong * max(1, len(size_values)))(*size_values)
        c_scalars = scalar_array([s.get("dtype", "f64") for s in lib.scalars], scalar_values)
        c_tensors = (ctypes.c_void_p * max(1, len(pointers)))(*pointers)
        c_seed = ctypes.c_ulonglong(seed)
        run, handle, check = lib._run, self._live(), lib.check
        keep = dict(tensors)  # the storage stays alive as long as the callable

        def step():
            if run(handle, c_sizes, c_scalars, c_tensors, c_seed) != 0:
                check(1, "run")
        step.tensors = keep
        return step

    def run(self, sizes: dict, scalars: dict, tensors: dict[str, torch.Tensor], seed: int = 0):
        """Enqueues one run on the program's stream (checks the arguments every call)."""
        self.bind(sizes, scalars, tensors, seed)()

    def finish(self, timeout_seconds: float = 120.0):
        """Waits for the enqueued runs; raises with the device-side error if there was one."""
        self.lib.check(self.lib._finish(self._live(), float(timeout_seconds)), "finish")

    def destroy(self):
        """Frees the program's buffers and NCCL communicators (call on every rank)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self.lib.check(self.lib._destroy(handle), "destroy")
