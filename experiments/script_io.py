"""What the suite's Python tools share when they write a results file (the C++ tools' counterparts
are atomic_file.h and provenance.h): the atomic write, the CSV text, and the code version their
sidecars record (docs/results-schema.md: `git describe`, `-dirty` when tracked files outside
results/ have uncommitted changes). Standard library only: it runs on a GPU machine too.

    sys.path.insert(0, os.path.join(REPO, "experiments")); import script_io"""
import csv
import io
import os
import subprocess
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def atomic_write(path, text):
    """Writes `text` (str, or bytes written as they are) to `path` through a temporary file and a
    rename: a reader, or a kill, never sees half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".tmp.")
    try:
        binary = isinstance(text, bytes)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"newline": ""})) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def csv_text(columns, rows):
    """A header and one line per row (dicts; missing cells empty), quoted as csv quotes."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: r.get(c, "") for c in columns})
    return buf.getvalue()


def code_version(given=""):
    """`git describe` of the tree (with -dirty as the schema defines it), else `given` (a copy
    without .git, e.g. on a GPU machine), else "unknown"."""
    try:
        desc = subprocess.run(["git", "-C", REPO, "describe", "--always", "--abbrev=12"],
                              capture_output=True, text=True, timeout=20)
        if desc.returncode == 0 and desc.stdout.strip():
            dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no",
                                    "--", ".", ":(exclude)results"], capture_output=True, text=True, timeout=20)
            return desc.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return given or "unknown"
