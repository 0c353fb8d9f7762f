"""K/N: the Kth of N shares of the tests CI runs once a run, not once per leg (tests/README.md)."""

from __future__ import annotations

import argparse


def part(text: str) -> tuple[int, int]:
    """``K/N`` with 1 <= K <= N."""
    share, _, shares = text.partition("/")
    if not (share.isdigit() and shares.isdigit() and 1 <= int(share) <= int(shares)):
        raise argparse.ArgumentTypeError(f"{text!r}: give K/N, such as 1/2, with 1 <= K <= N")
    return int(share), int(shares)
