"""The exceptions of the aotc package."""


class AotcError(RuntimeError):
    """A call into a model library failed. status is the ABI's status name (e.g.
    "AOTC_ERR_WRONG_SHAPE"), message the library's message (aotc_last_error) or the check
    that refused the call before it reached the library."""

    def __init__(self, status, message):
        super().__init__(f"{message} ({status})")
        self.status = status
        self.message = message


class CompileError(RuntimeError):
    """aotc could not compile a model; the message is the compiler's, which lists every
    unsupported op with its count and source lines."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message
