"""The one exception type for mistakes a user can fix."""


class ClipevalError(Exception):
    """Bad input or configuration: reported as one line, exit status 1.

    The message must name the file and the offending id or line.
    """
