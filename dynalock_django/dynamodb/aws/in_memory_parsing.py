"""moto's parse of an update expression, made once per expression: the same tree, without its tokenizer's CPU.

moto (5.2) parses every UpdateItem's ``UpdateExpression`` twice (once to check its placeholders, once
in its backend) with a tokenizer and parser written in Python: about a fifth of the CPU of an
in-memory UpdateItem. A lock client sends a handful of distinct expressions (its values travel as
placeholders), so :func:`install` keeps the trees of the most recent :data:`MOST` expressions.

A kept tree is shared by every later request with its expression, so nothing may change it: moto's
validator works on a deep copy (its ``Validator.__init__``), and the rest only reads it (the
placeholders' check). tests/dynamodb/aws/test_in_memory_parsing.py holds a tree to that after
requests of every kind, new items, refusals and transactions; a moto that changed a parsed tree would
fail it. An expression moto refuses raises each time (nothing is kept).
"""

from __future__ import annotations

import functools
from typing import Any

MOST = 512  # distinct update expressions kept: a client's few, many clients' and tables' several


def install() -> None:
    """Serve moto's ``UpdateExpressionParser.make`` from a cache in this process (once; idempotent)."""
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]  # moto leaves it untyped

    parser: Any = UpdateExpressionParser
    if not hasattr(parser.make, "cache_info"):
        parser.make = staticmethod(functools.lru_cache(maxsize=MOST)(parser.make))
