#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/*.md resolves.

Usage: check_links.py [REPO_ROOT]   (default: the folder above this script)

For each Markdown link or image, [text](target) or ![alt](target), and each
reference definition, [label]: target, whose target is relative (not http:,
https:, mailto: or a pure #anchor), the target with its #fragment stripped,
resolved against the Markdown file's folder, must be a file or folder that
exists. Links inside code spans and fenced code blocks are not links and are
skipped. Prints each broken link as FILE: TARGET and exits 1 if there is any;
otherwise prints "N links checked, 0 broken". Python 3 standard library only.
"""
import os
import re
import sys
from urllib.parse import unquote

# [text](target) and ![alt](target); the text may hold one level of nested
# brackets (an image inside a link). The target ends at whitespace (a title
# may follow) or at the closing parenthesis; <target> may hold spaces.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[^)]*)?\)")
# [label]: target at the start of a line.
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.MULTILINE)
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?\1")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, any scheme


def strip_code(text):
    """The text with fenced blocks and code spans blanked (line numbers kept)."""
    out, in_fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if in_fence:
            if m and m.group(1) == in_fence:
                in_fence = None
            out.append("")
        elif m:
            in_fence = m.group(1)
            out.append("")
        else:
            out.append(line)
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), "\n".join(out))


def targets(text):
    text = strip_code(text)
    for m in INLINE.finditer(text):
        yield m.group(1)
    for m in REFERENCE.finditer(text):
        yield m.group(1)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    checked, broken = 0, []
    for path in files:
        if not os.path.isfile(path):
            broken.append((path, "(the file itself is missing)"))
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for target in targets(text):
            target = target.strip("<>")
            if not target or target.startswith("#") or EXTERNAL.match(target):
                continue
            checked += 1
            local = unquote(target.split("#", 1)[0].split("?", 1)[0])
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), local))
            if not os.path.exists(resolved):
                broken.append((path, target))
    for path, target in broken:
        print(f"{os.path.relpath(path, root)}: {target}")
    if broken:
        print(f"{checked} links checked, {len(broken)} broken", file=sys.stderr)
        return 1
    print(f"{checked} links checked, 0 broken")
    return 0


if __name__ == "__main__":
    sys.exit(main())
