#!/usr/bin/env python3
"""Regenerate or check the generated blocks of a markdown document.

A block is written

    <!-- generated: COMMAND -->
    ...what COMMAND prints...
    <!-- /generated -->

and COMMAND runs under bash from the repository root. `--check` reruns every block's command
and fails (exit 1) naming the file, the line and a diff where the text differs; `--update`
writes the fresh output in place. CI runs the check on docs/validation.md
(crates/cli/tests/validation_doc.rs), so its comparison tables cannot go stale.

Usage: bench/doc_blocks.py --check|--update FILE...
"""

import difflib
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPEN = re.compile(r"^<!-- generated: (.+) -->$")
CLOSE = "<!-- /generated -->"


def blocks(lines):
    """(command, first line index of the body, index of the closing marker) per block."""
    out = []
    i = 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if m:
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == CLOSE), None)
            if end is None:
                raise SystemExit(f"line {i + 1}: `{lines[i]}` has no `{CLOSE}`")
            out.append((m.group(1), i + 1, end))
            i = end
        i += 1
    return out


def run(command):
    p = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"`{command}` failed ({p.returncode}):\n{p.stderr}")
    return p.stdout.rstrip("\n").split("\n")


def main(argv):
    if len(argv) < 2 or argv[0] not in ("--check", "--update"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, files = argv[0], argv[1:]
    stale = 0
    for name in files:
        path = Path(name)
        lines = path.read_text().split("\n")
        found = blocks(lines)
        if not found:
            print(f"{name}: no generated block", file=sys.stderr)
            return 1
        # From the last block up, so that replacing one keeps the earlier indices right.
        for command, start, end in reversed(found):
            fresh = run(command)
            have = lines[start:end]
            if have == fresh:
                continue
            if mode == "--update":
                lines[start:end] = fresh
            else:
                stale += 1
                diff = difflib.unified_diff(have, fresh, "doc", "fresh run", lineterm="", n=0)
                print(f"{name}:{start}: the block of `{command}` differs from its output:", file=sys.stderr)
                print("\n".join(diff), file=sys.stderr)
        if mode == "--update":
            path.write_text("\n".join(lines))
        print(f"{name}: {len(found)} generated blocks {'checked' if mode == '--check' else 'written'}")
    if stale:
        print(f"{stale} stale; rerun bench/doc_blocks.py --update {' '.join(files)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
