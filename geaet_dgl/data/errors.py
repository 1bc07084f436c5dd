"""The one exception type the data layer raises for problems a user can fix."""


class DataError(ValueError):
    """A dataset is missing, malformed or misconfigured.

    The message is one line that names the problem and the fix.
    """
