#!/usr/bin/env python3
"""docs_check.py <source-dir>: the facts README.md and docs/*.md state, checked against their
one source each (ctest docs.links).

- Every relative link of README.md, SECURITY.md and docs/*.md resolves: the file exists, and a
  `#anchor` names a heading of it (GitHub's anchors: lower case, punctuation dropped, spaces to
  dashes).
- Every page of docs/ is reachable from README.md by following links.
- README.md is a landing page: at most 250 lines.
- Every option of `scripts/build.sh` that the pages name (`scripts/build.sh -torch`, `build.sh
  -uttests`...) is one that `scripts/build.sh --help` lists.
- The Rust version: the pages state it once ("Rust X.Y or newer"), it is the workspace's
  `rust-version` in Cargo.toml, and no crate that Cargo.lock locks declares a newer one (read
  from cargo's registry sources, $CARGO_HOME/registry/src; crates not there are counted, not
  failed).
"""
import glob
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../.."))
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def rel(path):
    return os.path.relpath(path, root)


def strip_code(text):
    """The text without fenced blocks (links inside code are not links)."""
    return re.sub(r"^( *)(```+|~~~+)[^\n]*\n.*?^\1\2 *$", "", text, flags=re.S | re.M)


def anchors(path):
    text = strip_code(open(path, encoding="utf-8").read())
    out = set()
    seen = {}
    for head in re.findall(r"^#{1,6} +(.+?) *#* *$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", head.lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


pages = [os.path.join(root, "README.md"), os.path.join(root, "SECURITY.md")]
pages += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
pages = [p for p in pages if os.path.exists(p)]
links = {}
for page in pages:
    text = strip_code(open(page, encoding="utf-8").read())
    targets = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(dest):
            fail(f"{rel(page)}: link ({target}) names {rel(dest)}, which does not exist")
            continue
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
            fail(f"{rel(page)}: link ({target}): {rel(dest)} has no heading with anchor #{anchor}")
        targets.append(dest)
    links[page] = targets

readme = os.path.join(root, "README.md")
reached, todo = {readme}, [readme]
while todo:
    for dest in links.get(todo.pop(), []):
        if dest not in reached and dest.endswith(".md"):
            reached.add(dest)
            todo.append(dest)
for page in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
    if page not in reached:
        fail(f"{rel(page)} is not reachable from README.md by links")

n_readme = sum(1 for _ in open(readme, encoding="utf-8"))
if n_readme > 250:
    fail(f"README.md has {n_readme} lines: a landing page keeps to 250; move the detail to docs/")

# Build options: scripts/build.sh --help is their one source.
help_text = subprocess.run([os.path.join(root, "scripts", "build.sh"), "--help"],
                           capture_output=True, text=True).stdout
known = set(re.findall(r"(?<![\w-])(--?[a-z][a-z_-]*)", help_text))
if not known:
    fail("scripts/build.sh --help printed no options")
for page in pages:
    text = open(page, encoding="utf-8").read()
    for m in re.finditer(r"(?:scripts/|(?<![\w./-]))build\.sh((?: +--?[a-z][a-z_-]*(?: +[^\s`-][^\s`]*)?)+)", text):
        for opt in re.findall(r"(?<![\w-])(--?[a-z][a-z_-]*)", m.group(1)):
            if known and opt not in known:
                fail(f"{rel(page)}: `build.sh {opt}` is not an option of scripts/build.sh --help")

# The Rust version.
cargo_toml = open(os.path.join(root, "Cargo.toml"), encoding="utf-8").read()
m = re.search(r'^rust-version *= *"([\d.]+)"', cargo_toml, flags=re.M)
declared = m.group(1) if m else None
if not declared:
    fail("Cargo.toml declares no rust-version")
stated = []
for page in pages:
    for v in re.findall(r"Rust (\d+\.\d+(?:\.\d+)?) or newer", open(page, encoding="utf-8").read()):
        stated.append((rel(page), v))
if len(stated) != 1:
    fail(f"the pages should state the Rust version once ('Rust X.Y or newer'), found {stated}")
for page, v in stated:
    if declared and v != declared:
        fail(f"{page} says Rust {v} or newer; Cargo.toml's rust-version is {declared}")


def version(v):
    parts = [int(x) for x in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


lock = open(os.path.join(root, "Cargo.lock"), encoding="utf-8").read()
cargo_home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
registries = glob.glob(os.path.join(cargo_home, "registry", "src", "*"))
found = missing = 0
needs = []
for name, ver in re.findall(r'\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"\nsource = "registry', lock):
    for reg in registries:
        manifest = os.path.join(reg, f"{name}-{ver}", "Cargo.toml")
        if os.path.exists(manifest):
            found += 1
            rv = re.search(r'^rust-version *= *"([\d.]+)"', open(manifest, encoding="utf-8").read(), flags=re.M)
            if rv:
                needs.append((version(rv.group(1)), f"{name} {ver}"))
            break
    else:
        missing += 1
if needs and declared:
    need, crate = max(needs)
    if need > version(declared):
        fail(f"Cargo.lock locks {crate}, which needs Rust {'.'.join(map(str, need))}; "
             f"Cargo.toml's rust-version is {declared}: raise it (and the pages' statement)")
    print(f"rust-version {declared}: the locked crates need at most {'.'.join(map(str, need))} "
          f"({crate}); {found} crates read from the registry, {missing} not there")
else:
    print(f"rust-version {declared}: no registry sources found under {cargo_home}, not compared")

if failures:
    print(f"FAIL: {len(failures)} documentation fact(s) above are not true")
    sys.exit(1)
print(f"OK: {len(pages)} pages: links resolve, every docs page is reachable, build options and "
      f"the Rust version match their sources")
