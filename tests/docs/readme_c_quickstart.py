#!/usr/bin/env python3
"""The README's C quick start is the body of examples/quickstart.c (which builds and runs as the
test `quickstart`): fails when a line of the block is no longer in the program, in order, so the
README cannot show code that was never compiled.

Usage: readme_c_quickstart.py README.md examples/quickstart.c
"""
import re
import sys


def main(readme_path, program_path):
    readme = open(readme_path, encoding="utf-8").read()
    section = readme.split("## Quick start (C)", 1)
    if len(section) != 2:
        sys.exit(f"{readme_path}: no '## Quick start (C)' section")
    block = re.search(r"```c\n(.*?)```", section[1], re.S)
    if not block:
        sys.exit(f"{readme_path}: the C quick start has no ```c block")
    wanted = [l.strip() for l in block.group(1).splitlines() if l.strip()]
    program = [l.strip() for l in open(program_path, encoding="utf-8").read().splitlines()]
    at = 0
    for line in wanted:
        try:
            at = program.index(line, at) + 1
        except ValueError:
            sys.exit(f"README C quick start line not in {program_path} (in order): {line}")
    print(f"ok: the README's {len(wanted)} C quick-start lines are in {program_path}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
