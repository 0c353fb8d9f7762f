"""The README's Installation section as data: the tests run its commands and use its code, so it cannot drift.

Its fenced blocks, by language: ``sh`` lines are commands (after ``#``: a
comment); a ``python`` block whose first line is ``# settings.py`` goes at the
end of a new project's settings, one whose first line is ``# admin.py ...``
becomes an app's admin module; the ``json`` block is the IAM policy.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    language: str
    text: str

    @property
    def title(self) -> str:
        """The first line when it is a comment naming the file (``# settings.py``), else ''."""
        first = self.text.split("\n", 1)[0]
        return first.removeprefix("# ") if first.startswith("# ") else ""


def installation() -> list[Block]:
    text = README.read_text()
    _, found, rest = text.partition("\n## Installation\n")
    assert found, "README.md has no '## Installation' section"
    section = rest.split("\n## ", 1)[0]
    return [Block(language, body) for language, body in _BLOCK.findall(section)]


def section_blocks(title: str) -> list[Block]:
    """The fenced blocks of the README's section ``## {title}``."""
    _, found, rest = README.read_text().partition(f"\n## {title}\n")
    assert found, f"README.md has no '## {title}' section"
    return [Block(language, body) for language, body in _BLOCK.findall(rest.split("\n## ", 1)[0])]


def protocol_example() -> str:
    """The code of "The protocol client in ten lines"."""
    (block,) = [b for b in section_blocks("The protocol client in ten lines") if b.language == "python"]
    return block.text


def commands() -> list[str]:
    shell = [b.text for b in installation() if b.language == "sh"]
    lines = [line.split(" #", 1)[0].strip() for text in shell for line in text.splitlines()]
    return [line for line in lines if line]


def python_block(title_prefix: str) -> str:
    """The python block whose first line starts with ``# {title_prefix}``."""
    (block,) = [b for b in installation() if b.language == "python" and b.title.startswith(title_prefix)]
    return block.text


def python_blocks() -> list[str]:
    return [b.text for b in installation() if b.language == "python"]


def iam_policy() -> dict[str, Any]:
    (block,) = [b for b in installation() if b.language == "json"]
    policy: dict[str, Any] = json.loads(block.text)
    return policy
