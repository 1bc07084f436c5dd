"""The one exception type the data layer raises for problems a user can fix."""
import re

from ..errors import GeaetError


class DataError(GeaetError, ValueError):
    """A dataset is missing, malformed or misconfigured.

    The message is one line that names the problem and the fix.
    """


def first_line(exc: BaseException) -> str:
    """The line of ``exc``'s message worth showing: DGL's ``Check failed: ...: <reason>`` reason, else the first
    line (160 characters at most), else the exception's type."""
    text = str(exc).strip()
    match = re.search(r"Check failed: [^\n]*?: ([^\n]+)", text)
    if match:
        return match.group(1).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:160]
