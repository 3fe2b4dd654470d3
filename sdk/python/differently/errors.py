"""The API's error envelope as exceptions."""

from __future__ import annotations

from typing import Any


class DifferentlyError(Exception):
    """The API answered with an error: its HTTP status and the envelope's code, message and details."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}


class DifferentlyNetworkError(Exception):
    """The endpoint could not be reached (connection refused, DNS, TLS, a timeout)."""

    def __init__(self, endpoint: str, cause: BaseException) -> None:
        super().__init__(f"could not reach {endpoint}: {cause}")
        self.endpoint = endpoint
        self.__cause__ = cause
