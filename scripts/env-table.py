#!/usr/bin/env python3
"""env-table.py: the table of environment variables in docs/environment.md, made from the
runtime's own table, the one `SHMEM_INFO=1` prints at start-up.

Usage: scripts/env-table.py [--check] PROGRAM [DOC]
  PROGRAM  any program linked with libshmem.so; it is run once as a 1-PE job with SHMEM_INFO=1
           and every other SHMEM_* and SMA_* variable removed from its environment (e.g.
           build/examples/hello, or build/tests/shmem_docs_env_info)
  DOC      the page whose table is replaced (default: docs/environment.md beside this script)
  --check  write nothing: exit 1, showing the difference, when DOC's table is not what PROGRAM
           prints (ctest docs.env_table)

The table sits between the lines `<!-- env-table: begin ... -->` and `<!-- env-table: end -->`;
everything else on the page is prose written by hand.
"""
import difflib
import os
import re
import subprocess
import sys

BEGIN = "<!-- env-table: begin (scripts/env-table.py writes this table from SHMEM_INFO=1's output; do not edit it by hand) -->"
END = "<!-- env-table: end -->"
HEADER = "shmem environment variables (name, value, default, meaning):"


def info_rows(program):
    """The rows SHMEM_INFO=1 prints: (name, default, help, notes), in its order."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHMEM_", "SMA_"))}
    env["SHMEM_INFO"] = "1"
    run = subprocess.run([program], env=env, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        sys.exit(f"env-table.py: {program} exited with {run.returncode}:\n{run.stderr}{run.stdout}")
    lines = (run.stdout + run.stderr).splitlines()
    try:
        start = lines.index(HEADER) + 1
    except ValueError:
        sys.exit(f"env-table.py: {program} printed no line '{HEADER}' under SHMEM_INFO=1")
    table = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        table.append(line)
    rows = [l for l in table if l[2] != " "]
    notes = [l for l in table if l[2] == " "]
    if not rows:
        sys.exit("env-table.py: SHMEM_INFO=1 printed no variables")
    # The columns are `  name value default help`, each padded to its widest entry. A note
    # line has blank name, value and default columns, so its text starts at the help column;
    # without notes, the help column is the first column past the value where every row has
    # a word starting.
    if notes:
        help_col = min(len(l) - len(l.lstrip(" ")) for l in notes)
    else:
        value_col = 2 + max(len(l.split()[0]) for l in rows) + 1
        value_end = value_col + max(len(l[value_col:].split()[0]) for l in rows)
        help_col = next(c for c in range(value_end + 1, min(len(l) for l in rows))
                        if all(l[c - 1] == " " and l[c] != " " for l in rows))
    out = []
    for line in table:
        if line[2] == " ":
            out[-1][3].append(line[help_col:].strip())
            continue
        name, value = line.split()[:2]
        value_start = line.index(value, 2 + len(name))
        default = line[value_start + len(value):help_col].strip()
        out.append((name, default, line[help_col:].strip(), []))
    return out


def cell(text):
    return text.replace("|", "\\|")


def render(rows):
    md = [BEGIN, "", "| Variable | Default | Meaning |", "| --- | --- | --- |"]
    for name, default, help_text, notes in rows:
        meaning = "; ".join([help_text] + notes)
        default = f"`{default}`" if default else "(none)"
        md.append(f"| `{name}` | {default} | {cell(meaning)} |")
    md += ["", END]
    return md


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    if not 1 <= len(args) <= 2:
        sys.exit(__doc__)
    program = args[0]
    doc = args[1] if len(args) == 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "docs", "environment.md")
    page = open(doc, encoding="utf-8").read().split("\n")
    begins = [i for i, l in enumerate(page) if l.startswith("<!-- env-table: begin")]
    ends = [i for i, l in enumerate(page) if l == END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        sys.exit(f"env-table.py: {doc} needs one line starting '<!-- env-table: begin' and, "
                 f"below it, one line '{END}'")
    old = page[begins[0]:ends[0] + 1]
    new = render(info_rows(program))
    if check:
        if old != new:
            sys.stdout.writelines(difflib.unified_diff(
                [l + "\n" for l in old], [l + "\n" for l in new], doc, "SHMEM_INFO=1"))
            print(f"FAIL: the table of {doc} is not what SHMEM_INFO=1 prints; "
                  f"regenerate it: scripts/env-table.py {program} {doc}")
            sys.exit(1)
        print(f"OK: the table of {doc} is what SHMEM_INFO=1 prints ({len(new) - 6} variables)")
        return
    page[begins[0]:ends[0] + 1] = new
    with open(doc, "w", encoding="utf-8") as f:
        f.write("\n".join(page))
    print(f"env-table.py: wrote {len(new) - 6} variables into {doc}")


if __name__ == "__main__":
    main()
