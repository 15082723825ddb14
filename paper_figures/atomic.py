"""The one atomic writer of paper_figures: a reader (or a kill) never sees a half-written file."""
import os


def write_text(path, text):
    """Writes text to path through a temporary beside it and a rename. The temporary's name
    matches .gitignore's *.tmp.* and carries the process id, so two writers never share one."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
