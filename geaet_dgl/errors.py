"""The errors a user can fix: :class:`GeaetError`, the base of all of them, and the configuration's.

Every problem a user can fix (configuration, data, checkpoint, run directory,
the reference of a comparison) raises a subclass of :class:`GeaetError`, so
the command line catches one type (:mod:`geaet_dgl.commands.options`), as
DGL's code catches ``DGLError``. Each subclass also keeps the built-in type it
always had (``ValueError`` or ``RuntimeError``).

:class:`ConfigError` (a setting unknown, mistyped or impossible) and :class:`OptionConflict`
(options that cannot be given together). They live below both :mod:`geaet_dgl.config` (which
re-exports them) and :mod:`geaet_dgl.data` (whose run loading refuses a data option that does not
fit the data), so that neither package imports the other back. The command line prints either as
one line ``error: ...`` (:mod:`geaet_dgl.commands.options`).
"""


class GeaetError(Exception):
    """A problem the user can fix; the message is one line that names the problem and the fix."""


class ConfigError(GeaetError, ValueError):
    """A configuration value is unknown, mistyped or impossible."""


class OptionConflict(ConfigError):
    """Options that cannot be given together (the command line shows it as a usage error)."""
