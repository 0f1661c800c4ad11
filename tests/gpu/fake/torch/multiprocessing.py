"""The fake torch's multiprocessing: Python's own (tests/gpu/fake/torch/__init__.py)."""
from multiprocessing import get_context  # noqa: F401
