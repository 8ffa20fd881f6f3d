"""luminal: a torch.compile backend with a C++ compiler and runtime.

    fast = torch.compile(model, backend="luminal")       # or backend=luminal.luminal_backend
"""

from .errors import InternalError, LuminalError, UnsupportedError, UserError
from . import _C
from .aot import compile
from .backend import luminal_backend, register_backend
from .compiled_model import CompiledModel

__version__ = "0.1.0"

__all__ = [
    "CompiledModel",
    "InternalError",
    "LuminalError",
    "UnsupportedError",
    "UserError",
    "compile",
    "luminal_backend",
    "register_backend",
]
