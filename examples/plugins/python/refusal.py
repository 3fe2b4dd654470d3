"""The error every route of the plugin answers with: the protocol's envelope."""


class Refusal(Exception):
    """An error the protocol names: answered as {"error": {code, message, details}}."""

    def __init__(self, code, message, details=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
