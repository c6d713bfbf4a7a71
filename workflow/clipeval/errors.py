"""The one exception type for mistakes a user can fix."""


class ClipevalError(Exception):
    """Bad input or configuration: reported as one line, exit status 1.

    The message must name the file and the offending id or line.
    """


def first_line(error: BaseException) -> str:
    """The first line of a library's exception, or its type's name when it says nothing: what a one-line
    message quotes of it."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
