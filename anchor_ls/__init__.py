"""anchor-ls: a repository-wide call, inheritance, import and containment index for Python."""

__version__ = "0.1.0"
