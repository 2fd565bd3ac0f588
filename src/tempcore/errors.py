"""Named errors. Every error says what it is about: the sample, the file, the row, the reason."""

from __future__ import annotations


class TempcoreError(Exception):
    """Base of every error tempcore raises on purpose (the CLI prints these without a traceback)."""


class RunError(TempcoreError):
    """The run cannot start or go on (names what is wrong)."""
