"""The Differently sandbox control plane: a Python client on the standard library alone."""

from .client import Admin, DifferentlyClient, ExecEvent
from .errors import DifferentlyError, DifferentlyNetworkError

__all__ = ["Admin", "DifferentlyClient", "DifferentlyError", "DifferentlyNetworkError", "ExecEvent"]
__version__ = "0.1.0"
