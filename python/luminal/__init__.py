"""luminal: a torch.compile backend with a C++ compiler and runtime.

    fast = torch.compile(model, backend="luminal")       # or backend=luminal.luminal_backend
"""

from . import openblas_env

openblas_env.configure()  # before _C loads OpenBLAS, which reads its environment once

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
