#!/usr/bin/python3
"""The documentation's examples, run: every ```console block preceded by `<!-- example -->` in README.md
and docs/*.md is executed in order on this build, and each output line it quotes must appear in what
its command printed ("…" stands for anything). A command that exits non-zero fails the test.

  doc_examples.py --stalldx BUILD/cli/stalldx --source SOURCE_DIR

Exits 77 (ctest: skipped) when the examples' Python (Debian's /usr/bin/python3 with torch and
torchvision) is not there."""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = "<!-- example -->"


def blocks(path):
    """(line number, [(command, [expected lines])]) for each marked console block of a file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == MARK and i + 1 < len(lines) and lines[i + 1].startswith("```console"):
            start, i = i + 1, i + 2
            cmds = []
            while i < len(lines) and not lines[i].startswith("```"):
                line = lines[i]
                if line.startswith("$ "):
                    cmd = line[2:]
                    while cmd.endswith("\\") and i + 1 < len(lines):
                        i += 1
                        cmd = cmd[:-1] + " " + lines[i].strip()
                    cmds.append((cmd, []))
                elif cmds and line.strip():
                    cmds[-1][1].append(line.rstrip())
                i += 1
            out.append((start + 1, cmds))
        i += 1
    return out


def pattern(expected):
    parts = re.split(r"…|\.\.\.", expected.strip())
    return re.compile(".*".join(re.escape(p) for p in parts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stalldx", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch, torchvision"], capture_output=True).returncode != 0:
        print("doc_examples: skipped: /usr/bin/python3 has no torch + torchvision (scripts/setup-debian.sh installs them)")
        return 77
    shutil.rmtree("/tmp/stalldx-doc", ignore_errors=True)
    os.makedirs("/tmp/stalldx-doc")
    bindir = tempfile.mkdtemp(prefix="stalldx-doc-bin-")
    os.symlink(os.path.abspath(a.stalldx), os.path.join(bindir, "stalldx"))
    os.symlink(py, os.path.join(bindir, "python3"))
    env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", ""))
    files = [os.path.join(a.source, "README.md")] + sorted(glob.glob(os.path.join(a.source, "docs", "*.md")))
    failures, ran = [], 0
    for f in files:
        for line, cmds in blocks(f):
            for cmd, expected in cmds:
                ran += 1
                r = subprocess.run(["bash", "-c", cmd], cwd=a.source, env=env, capture_output=True, text=True, errors="replace")
                out = r.stdout + r.stderr
                where = f"{os.path.relpath(f, a.source)}:{line}: $ {cmd}"
                if r.returncode != 0:
                    failures.append(f"{where}\n  exited {r.returncode}\n{out[-3000:]}")
                    continue
                missing = [e for e in expected if not any(pattern(e).search(o) for o in out.split("\n"))]
                if missing:
                    failures.append(f"{where}\n  these quoted lines are not in its output:\n    " + "\n    ".join(missing) +
                                    "\n  its output:\n" + out[-3000:])
    print(f"doc_examples: {ran} commands run, {len(failures)} failed")
    for fl in failures:
        print("FAILED " + fl)
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
