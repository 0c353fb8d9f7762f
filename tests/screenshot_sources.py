"""Which sources draw each picture of docs/images, and their hash when the picture was taken.

docs/images/sources.json maps each image to the templates, scripts and modules that render its page,
with the sha256 of those sources and of the image when it was last taken. tests/test_screenshot_sources.py
fails when a source changed since: the picture may no longer show the page.

    python -m tests.screenshot_sources update IMAGE.png ...   # after taking those pictures again

``make screenshots`` runs it for the pictures it takes. Updating an entry whose sources changed while its
picture's bytes did not is refused (the picture was not taken again) unless ``--same-picture`` says that
the page looks the same (a comment, say).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
MANIFEST = IMAGES / "sources.json"


def sha256(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def manifest() -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = json.loads(MANIFEST.read_text())
    return entries


def sources_hash(entry: dict[str, Any]) -> str:
    return sha256([ROOT / source for source in entry["sources"]])


def stale(entries: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """``image -> its sources`` for each picture whose sources changed since it was taken."""
    return {
        image: entry["sources"] for image, entry in entries.items() if sources_hash(entry) != entry["sources_sha256"]
    }


def update(images: list[str], *, same_picture: bool) -> None:
    entries = manifest()
    for image in images:
        entry = entries[image]
        picture = sha256([IMAGES / image])
        if sources_hash(entry) != entry["sources_sha256"] and picture == entry["image_sha256"] and not same_picture:
            raise SystemExit(f"{image}: its sources changed but the picture did not: take it again (make screenshots)")
        entry["sources_sha256"], entry["image_sha256"] = sources_hash(entry), picture
    MANIFEST.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.screenshot_sources")
    parser.add_argument("command", choices=["update"])
    parser.add_argument("images", nargs="+", help="file names under docs/images")
    parser.add_argument("--same-picture", action="store_true", help="the sources changed, the page looks the same")
    arguments = parser.parse_args(argv)
    update(arguments.images, same_picture=arguments.same_picture)


if __name__ == "__main__":
    main(sys.argv[1:])
