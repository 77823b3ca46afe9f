#!/usr/bin/env python3
"""architecture_check.py <source-dir> [libshmem.so]: the mechanical claims of
docs/architecture.md, checked against the code (ctest docs.architecture). When it fails, what
it names is what the page must say now.

- Every path in backticks exists. A path with a slash is taken from the source dir (in the
  folder table: from the row's folder first); a bare file name (`wire.rs`) must exist under
  the row's folder in the folder table, and anywhere in the tree elsewhere.
- Every folder of the code has its row in the folder table (the table under "## 2. Folders"):
  each top-level folder, each folder of rust/ and each folder under rust/core/src/; the rows
  of rust/core/src/ and its folders, and of scripts/, name every file directly in them.
- The C symbols the runtime defines (the paragraph after `<!-- architecture-check:
  runtime-symbols -->`) are exactly the `#[no_mangle]` / `#[export_name]` items of the crates
  under rust/, each in the file the page names, and none is exported by libshmem.so.
- The exported symbols (the first sentence after `<!-- architecture-check: exports -->`, up to
  "nothing else") are what `nm -D` shows libshmem.so exports: every symbol matches one of the
  names or prefixes (`shmem_*`), and every one of them matches a symbol.
Without the library path, the two symbol checks against libshmem.so are left out, saying so.
"""
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1])
lib = sys.argv[2] if len(sys.argv) > 2 else None
doc_path = os.path.join(root, "docs", "architecture.md")
doc = open(doc_path, encoding="utf-8").read()
failures = []
SKIP_DIRS = {".git", "build", "install", "target", "__pycache__", ".gpu"}
EXTS = ("rs", "h", "c", "cc", "cpp", "hpp", "cu", "cuh", "py", "pyi", "sh", "md", "txt", "toml",
        "map", "ptx", "in", "cmake", "json", "lock")


def fail(msg):
    failures.append(msg)
    print("FAIL: docs/architecture.md: " + msg)


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split("\n")
        files = [f for f in out if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith(("build", "install"))
                   and not os.path.exists(os.path.join(d, x, "CMakeCache.txt"))]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


files = tracked_files()
folders = {os.path.dirname(f) for f in files} - {""}
folders = {p for f in folders for p in (f.split("/")[:i] for i in range(1, f.count("/") + 2))
           for p in ["/".join(p)]}


def is_path(tok):
    if re.search(r"[\s*<>()\[\]{},:=]", tok) or tok.startswith(("-", "#", "$")):
        return False
    return "/" in tok or tok.rsplit(".", 1)[-1] in EXTS and "." in tok


def exists(p):
    return os.path.exists(os.path.join(root, p.rstrip("/")))


def under(folder, name):
    """A tracked file or folder named `name` somewhere under `folder` ('' for anywhere)."""
    pre = folder.rstrip("/") + "/" if folder else ""
    for f in files:
        if f.startswith(pre) and (f.endswith("/" + name) or f == pre + name or
                                  ("/" + name.rstrip("/") + "/") in "/" + f):
            return True
    return False


# The folder table.
m = re.search(r"^## 2\. Folders\n(.*?)(?=^## )", doc, flags=re.S | re.M)
if not m:
    fail("no section '## 2. Folders' with the folder table")
    table_rows = []
else:
    table_rows = [l for l in m.group(1).split("\n") if l.startswith("| `")]
listed = {}
for row in table_rows:
    cells = [c.strip() for c in row.strip("|").split("|")]
    folder = re.match(r"`([^`]+)`", cells[0]).group(1)
    listed[folder.rstrip("/")] = row
    if not exists(folder):
        fail(f"the folder table lists `{folder}`, which does not exist")
        continue
    for tok in re.findall(r"`([^`]+)`", " ".join(cells[1:])):
        if not is_path(tok):
            continue
        if "/" in tok.rstrip("/"):
            ok = exists(os.path.join(folder, tok)) or exists(tok)
        else:
            ok = exists(os.path.join(folder, tok)) or under(folder, tok)
        if not ok:
            fail(f"the row of `{folder}` names `{tok}`, which is not there")

# The rows of the runtime's folders and of scripts/ name every file directly in their folder.
COMPLETE = ("rust/core/src", "scripts")
for folder, row in listed.items():
    if not (folder in COMPLETE or folder.startswith("rust/core/src/")):
        continue
    named = set(re.findall(r"`([^`]+)`", row))
    for f in files:
        if os.path.dirname(f) == folder and os.path.basename(f) not in named:
            fail(f"the row of `{folder}/` does not name `{os.path.basename(f)}`, a file of it")

# Every folder of the code has a row.
wanted = {f.split("/")[0] for f in folders}
wanted |= {f for f in folders if f.startswith("rust/") and f.count("/") == 1}
wanted |= {f for f in folders if f == "rust/core/src" or f.startswith("rust/core/src/")}
for f in sorted(wanted):
    if f not in listed:
        fail(f"the folder `{f}/` has no row in the folder table")

# Paths elsewhere on the page (outside the table and the fenced blocks).
body = doc.replace(m.group(1), "") if m else doc
body = re.sub(r"^```.*?^```", "", body, flags=re.S | re.M)
for tok in sorted(set(re.findall(r"`([^`]+)`", body))):
    if not is_path(tok):
        continue
    ok = exists(tok) if "/" in tok.rstrip("/") else (exists(tok) or under("", tok))
    if not ok:
        fail(f"names `{tok}`, which is not there")


def paragraph_after(marker):
    i = doc.find(marker)
    if i < 0:
        fail(f"no line '{marker}'")
        return ""
    return doc[i + len(marker):].strip().split("\n\n")[0]


def exported():
    if not lib:
        return None
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"nm -D {lib}: {out.stderr.strip()}")
        return None
    syms = set()
    for line in out.stdout.split("\n"):
        parts = line.split()
        if len(parts) >= 3 and parts[1] != "A":
            syms.add(parts[2].split("@")[0])
    return syms


exports = exported()
if exports is None:
    print("NOTE: no libshmem.so given: the symbols are not compared with its exports")

# The runtime's C symbols.
para = paragraph_after("<!-- architecture-check: runtime-symbols -->")
claimed = {}
for sym, path in re.findall(r"`([A-Za-z_]\w*)` \(`([^`]+)`", para):
    claimed[sym] = path
if not claimed:
    fail("the runtime-symbols paragraph names no symbol as `name` (`file`)")
defined = {}
for f in files:
    if not (f.startswith("rust/") and f.endswith(".rs") and "/src/" in f):
        continue
    text = open(os.path.join(root, f), encoding="utf-8").read()
    for attr, rest in re.findall(r"#\[(unsafe\(no_mangle\)|no_mangle|export_name\s*=\s*\"\w+\")\]"
                                 r"((?:\s*#\[[^\]]*\])*\s*(?:pub(?:\([^)]*\))?\s+)?"
                                 r"(?:unsafe\s+)?(?:extern\s+\"C\"\s+)?(?:fn|static|const)\s+\w+)",
                                 text):
        name = re.search(r'"(\w+)"', attr)
        name = name.group(1) if name else re.search(r"(\w+)$", rest).group(1)
        defined[name] = f
for sym, path in claimed.items():
    if sym not in defined:
        fail(f"says the runtime defines `{sym}`; no #[no_mangle] item of rust/ has that name")
    elif defined[sym] != path:
        fail(f"says `{sym}` is defined in `{path}`; it is in `{defined[sym]}`")
    if exports is not None and sym in exports:
        fail(f"says `{sym}` is local to libshmem.so; the library exports it")
for sym, path in defined.items():
    if sym not in claimed:
        fail(f"`{sym}` (#[no_mangle] in `{path}`) is missing from the runtime-symbols paragraph")

# The exported symbols.
para = paragraph_after("<!-- architecture-check: exports -->")
sentence = para.split("nothing else")[0]
if sentence == para:
    fail("the exports paragraph has no 'nothing else' ending its list")
names = [t for t in re.findall(r"`([^`]+)`", sentence) if re.fullmatch(r"[A-Za-z_]\w*\*?", t)]
if not names:
    fail("the exports paragraph lists no symbol")
if exports is not None and names:
    prefixes = [n[:-1] for n in names if n.endswith("*")]
    exact = {n for n in names if not n.endswith("*")}
    for sym in sorted(exports):
        if sym not in exact and not any(sym.startswith(p) for p in prefixes):
            fail(f"libshmem.so exports `{sym}`, which the exports paragraph does not list")
    for p in prefixes:
        if not any(s.startswith(p) for s in exports):
            fail(f"lists `{p}*` as exported; libshmem.so exports no such symbol")
    for n in sorted(exact):
        if n not in exports:
            fail(f"lists `{n}` as exported; libshmem.so does not export it")
    print(f"libshmem.so: {len(exports)} exported symbols, all of the families listed")

if failures:
    print(f"FAIL: {len(failures)} claim(s) of docs/architecture.md above are not true of the code")
    sys.exit(1)
print(f"OK: docs/architecture.md: paths exist, {len(listed)} folder rows cover every folder of "
      f"the code, runtime symbols {sorted(claimed)} as stated")
