"""luminal: a torch.compile backend with a C++ compiler and runtime.

    fast = torch.compile(model, backend="luminal")       # or backend=luminal.luminal_backend
"""

import os

# Before _C loads OpenBLAS, which reads this once: its workers go to sleep right after each GEMM
# instead of spinning for about 2^28 cycles (~0.1 s). Spinning, they held a core through a whole
# prefill while our kernels between the GEMMs woke our own pool's worker: three busy threads on
# two cores, and f32 prefill 15-20% slower in most processes (docs/lessons.md). A GEMM that
# wakes them costs microseconds. A value the user set is kept.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from .errors import InternalError, LuminalError, UnsupportedError, UserError  # noqa: E402
from . import _C  # noqa: E402
from .aot import compile  # noqa: E402
from .backend import luminal_backend, register_backend  # noqa: E402
from .compiled_model import CompiledModel  # noqa: E402
from .training import TrainingModel  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "CompiledModel",
    "InternalError",
    "LuminalError",
    "TrainingModel",
    "UnsupportedError",
    "UserError",
    "compile",
    "luminal_backend",
    "register_backend",
]
