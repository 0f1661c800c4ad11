"""A stand-in for the few PyTorch calls tests/gpu/capi_check.py makes, on host memory, so that
tests/gpu/capi_batch_test.sh runs capi_check.py (its batch protocol: queues, labels, failures,
timeouts) without PyTorch or a GPU. Tensors are flat ctypes arrays; only f64 and f32 hold data."""
import ctypes
import math
import struct


class dtype:
    def __init__(self, name, ctype, fmt):
        self.name, self.ctype, self.fmt = name, ctype, fmt


float64 = dtype("float64", ctypes.c_double, "d")
float32 = dtype("float32", ctypes.c_float, "f")
float16 = dtype("float16", None, "e")
bfloat16 = dtype("bfloat16", None, None)
int8, uint8 = dtype("int8", None, "b"), dtype("uint8", None, "B")
int32, int64 = dtype("int32", None, "i"), dtype("int64", None, "q")


class Tensor:
    def __init__(self, values, dt):
        if dt.ctype is None:
            raise TypeError(f"the fake torch holds only float64 and float32, not {dt.name}")
        self.dtype, self.n = dt, len(values)
        self.buf = (dt.ctype * max(1, self.n))(*values)

    def tolist(self):
        return [self.buf[i] for i in range(self.n)]

    def numel(self):
        return self.n

    def data_ptr(self):
        return ctypes.addressof(self.buf)

    def clone(self):
        return Tensor(self.tolist(), self.dtype)

    def to(self, device):
        return self

    def cpu(self):
        return self

    def double(self):
        return Tensor(self.tolist(), float64)

    def isnan(self):
        return Tensor([float(math.isnan(v)) for v in self.tolist()], float64)

    def _zip(self, other, f):
        return Tensor([f(a, b) for a, b in zip(self.tolist(), other.tolist())], float64)

    def __ne__(self, other):
        return self._zip(other, lambda a, b: float(a != b))

    def __or__(self, other):
        return self._zip(other, lambda a, b: float(bool(a) or bool(b)))

    def __sub__(self, other):
        return self._zip(other, lambda a, b: a - b)

    def __invert__(self):
        return Tensor([float(not v) for v in self.tolist()], float64)

    def __getitem__(self, mask):
        return Tensor([v for v, m in zip(self.tolist(), mask.tolist()) if m], float64)

    def __pow__(self, k):
        return Tensor([v ** k for v in self.tolist()], float64)

    def sum(self):
        return Tensor([sum(self.tolist())], float64)

    def __float__(self):
        return float(self.buf[0])

    def __int__(self):
        return int(self.buf[0])


def zeros(n, dtype, device=None):
    return Tensor([0.0] * n, dtype)


def empty(n, dtype):
    return Tensor([0.0] * n, dtype)


def frombuffer(raw, dtype):
    size = struct.calcsize(dtype.fmt)
    return Tensor(list(struct.unpack(f"<{len(raw) // size}{dtype.fmt}", bytes(raw))), dtype)


class device:
    def __init__(self, kind, index=0):
        self.kind, self.index = kind, index


class _Stream:
    cuda_stream = 0


class cuda:
    @staticmethod
    def set_device(rank):
        pass

    @staticmethod
    def current_stream():
        return _Stream()

    @staticmethod
    def synchronize():
        pass
