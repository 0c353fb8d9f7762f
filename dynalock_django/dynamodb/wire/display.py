"""Text from the lock table, made safe to print or log.

Keys, owner names and ``releasedBy`` may have been written by anyone with
access to the table. Printed raw, a control character in them can forge a
log line (a newline) or drive the terminal (an escape sequence that hides
text or retitles the window). Every reader shows such text through
:func:`printable`, which keeps what prints as itself and writes every other
character as a Python escape, so it stays visible and cannot act.
"""

from __future__ import annotations


def printable(value: object) -> str:
    """``str(value)`` with every non-printable character escaped (``\\n``, ``\\x1b``, ``\\u202e``...).

    Printable means :meth:`str.isprintable` (plus the ASCII space): letters,
    digits, punctuation and symbols of every script stay as they are, while
    control, format (bidirectional overrides), separator and unassigned code
    points are escaped.
    """
    text = str(value)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() or char == " " else _escape(char) for char in text)


def _escape(char: str) -> str:
    escaped = repr(char)[1:-1]  # Python's own escape for it: \n, \x1b, \u202e, \U000e0001
    return escaped if escaped != char else f"\\u{ord(char):04x}"
