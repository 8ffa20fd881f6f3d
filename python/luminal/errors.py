"""The exceptions luminal raises. The C++ core maps its errors onto these classes."""


class LuminalError(Exception):
    """Base class of every error luminal raises on purpose."""


class UserError(LuminalError, ValueError):
    """Something the caller or their model can fix: bad input shapes or dtypes, a malformed
    PT2 archive, an unknown option, a tensor on a device this build cannot run."""


class UnsupportedError(LuminalError, NotImplementedError):
    """An op, dtype or feature luminal does not handle yet. The message names the op and node."""


class InternalError(LuminalError, RuntimeError):
    """A bug in luminal. Please report it with the message."""
