"""The one exception type the data layer raises for problems a user can fix."""
from ..errors import GeaetError


class DataError(GeaetError, ValueError):
    """A dataset is missing, malformed or misconfigured.

    The message is one line that names the problem and the fix.
    """
