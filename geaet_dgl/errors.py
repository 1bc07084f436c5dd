"""The errors a user's configuration raises, shared by every layer that checks one.

:class:`ConfigError` (a setting unknown, mistyped or impossible) and :class:`OptionConflict`
(options that cannot be given together). They live below both :mod:`geaet_dgl.config` (which
re-exports them) and :mod:`geaet_dgl.data` (whose run loading refuses a data option that does not
fit the data), so that neither package imports the other back. The command line prints either as
one line ``error: ...`` (:mod:`geaet_dgl.commands.options`).
"""


class ConfigError(ValueError):
    """A configuration value is unknown, mistyped or impossible."""


class OptionConflict(ConfigError):
    """Options that cannot be given together (the command line shows it as a usage error)."""
