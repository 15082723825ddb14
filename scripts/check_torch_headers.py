#!/usr/bin/env python3
"""Compiles every C++ translation unit of a build against a newer LibTorch's headers.

The suite is built and tested with Debian's LibTorch 1.13, and must also build against the
LibTorch 2.x of a PyTorch installation (the GPU machines', a user's), which cannot be installed
here. This checks the second half without one: it fetches the headers of Debian's newest
libtorch-dev (sid's: a LibTorch 2.x, built from the same sources as PyTorch's wheels), takes each
command of <build>/compile_commands.json, points it at those headers in place of the system's,
with the C++ standard that cmake/TorchCxxStandard.cmake would choose for them, and runs it with
-fsyntax-only (the headers only, no library to link). The CUDA translation units (.cu) include no
LibTorch header and are left out; lm/distributed.cpp is compiled a second time with its NCCL path
(when /usr/local/cuda has nccl.h). A unit fails when it does not compile, or when it read one of
LibTorch's headers from the system's 1.13 copy (a header the newer LibTorch no longer has).
--libstdcxx 13 also swaps in that GCC's C++ library headers (libstdc++-13-dev, same suite), as a
GPU machine's g++ 13 has them: newer ones include less transitively (<cstdint>, for one).

  /usr/bin/python3 scripts/check_torch_headers.py [--suite sid] [--build build] [--only REGEX]
                                                  [--libstdcxx 13]

Needs deb.debian.org (the machines here reach it), dpkg-deb, and a configured build (cmake writes
compile_commands.json). The package is cached in <build>/torch-headers/. About 10 minutes on 2
cores. Exit status 1 when a unit fails, 2 for bad input or a failed download.
"""
import argparse
import concurrent.futures
import hashlib
import json
import lzma
import os
import re
import shlex
import subprocess
import sys
import tempfile
import urllib.request

MIRROR = "http://deb.debian.org/debian"
SYSTEM_TORCH = "/usr/include/torch/csrc/api/include"
# LibTorch's own header folders under /usr/include: read from there, a header is the system's 1.13.
SYSTEM_COPY = re.compile(r"(^|\s)/usr/include/(ATen|c10|torch|caffe2)/")
CUDA_INCLUDE = "/usr/local/cuda/include"


def fail(message, code=2):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def package_entry(suite, component, package):
    """The Packages stanza of `package` in the Debian suite, as a dict."""
    url = f"{MIRROR}/dists/{suite}/{component}/binary-amd64/Packages.xz"
    try:
        text = lzma.decompress(urllib.request.urlopen(url, timeout=120).read()).decode()
    except Exception as e:  # noqa: BLE001 (one line for any network or format failure)
        fail(f"cannot read {url}: {e}")
    for stanza in text.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z0-9-]+): (.*)$", stanza, re.M))
        if fields.get("Package") == package:
            return fields
    fail(f"{package} is not in Debian {suite}/{component}")


def headers_of(entry, cache):
    """The extracted package (cached), checked against the index's SHA-256."""
    folder = os.path.join(cache, f"{entry['Package']}_{entry['Version']}")
    if os.path.isdir(os.path.join(folder, "usr/include")):
        return folder
    url = f"{MIRROR}/{entry['Filename']}"
    try:
        data = urllib.request.urlopen(url, timeout=600).read()
    except Exception as e:  # noqa: BLE001
        fail(f"cannot download {url}: {e}")
    if hashlib.sha256(data).hexdigest() != entry["SHA256"]:
        fail(f"{url}: SHA-256 differs from the Packages index")
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        deb = os.path.join(tmp, "package.deb")
        with open(deb, "wb") as f:
            f.write(data)
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(tmp, "x")], check=True)
        os.rename(os.path.join(tmp, "x"), folder)
    return folder


def libstdcxx_flags(folder, version):
    """The flags that put libstdc++-<version>-dev's headers in place of the compiler's own."""
    dirs = [os.path.join(folder, f"usr/include/c++/{version}"),
            os.path.join(folder, f"usr/include/x86_64-linux-gnu/c++/{version}")]
    if not all(os.path.isdir(d) for d in dirs):
        fail(f"{folder} has no C++ library headers for GCC {version}")
    return ["-nostdinc++"] + [x for d in dirs for x in ("-isystem", d)]


def include_dirs(folder):
    root = os.path.join(folder, "usr/include")
    return [os.path.join(root, "torch/csrc/api/include"), root]


def cxx_standard(dirs, cxx_flags):
    """17 when the headers take C++17, else 20: cmake/TorchCxxStandard.cmake's probe."""
    probe = ["g++", "-std=c++17", "-fsyntax-only", "-x", "c++", "-"]
    probe[1:1] = cxx_flags + [a for d in dirs for a in ("-isystem", d)]
    ok = subprocess.run(probe, input="#include <ATen/core/TensorBase.h>\n", text=True,
                        capture_output=True).returncode == 0
    return "17" if ok else "20"


def syntax_command(entry, dirs, std, extra):
    """The build's command for `entry`, on the newer headers, checking syntax only."""
    args, out, skip = shlex.split(entry["command"]), [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif a in ("-c", "-MD", "-MMD", entry["file"]):
            pass
        elif a == SYSTEM_TORCH and out and out[-1] == "-isystem":
            out.pop()
            out += [x for d in dirs for x in ("-isystem", d)]
        elif a.startswith("-std="):
            out.append(re.sub(r"\d+$", std, a))
        else:
            out.append(a)
    return out + ["-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE"] + extra + ["-fsyntax-only", entry["file"]]


def check(entry, dirs, std, extra, label):
    with tempfile.NamedTemporaryFile(suffix=".d") as deps:
        command = syntax_command(entry, dirs, std, extra) + ["-MD", "-MF", deps.name]
        r = subprocess.run(command, cwd=entry["directory"], capture_output=True, text=True)
        stale = SYSTEM_COPY.findall(open(deps.name).read()) if r.returncode == 0 else []
    if r.returncode != 0:
        errors = [l for l in r.stderr.splitlines() if "error" in l]
        return label, False, "\n".join(errors[:12]) or r.stderr[-2000:]
    if stale:
        return label, False, "read LibTorch headers from the system's 1.13 copy: " + \
            ", ".join(sorted({f"/usr/include/{d}/" for _, d in stale}))
    return label, True, ""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="sid", help="Debian suite to take libtorch-dev from (sid)")
    p.add_argument("--package", default="libtorch-dev", help="the package with the headers")
    p.add_argument("--component", default="main", help="its archive component (main, contrib)")
    p.add_argument("--build", default="build", help="a configured build folder")
    p.add_argument("--only", default="", help="check only the sources matching this regex")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--libstdcxx", default="", help="also use this GCC's C++ library headers (e.g. 13)")
    a = p.parse_args()
    if a.jobs < 1:
        fail(f"--jobs must be >= 1, not {a.jobs}")
    commands_file = os.path.join(a.build, "compile_commands.json")
    if not os.path.isfile(commands_file):
        fail(f"{commands_file} is missing: configure the build first (cmake -S . -B {a.build})")
    entries = [e for e in json.load(open(commands_file))
               if not e["file"].endswith(".cu") and re.search(a.only, e["file"])]
    if not entries:
        fail(f"no C++ translation unit in {commands_file} matches --only '{a.only}'")

    if a.libstdcxx and not re.fullmatch(r"\d+", a.libstdcxx):
        fail(f"--libstdcxx must be a GCC major version such as 13, not '{a.libstdcxx}'")
    cache = os.path.abspath(os.path.join(a.build, "torch-headers"))
    entry = package_entry(a.suite, a.component, a.package)
    dirs = include_dirs(headers_of(entry, cache))
    cxx_flags, cxx_note = [], ""
    if a.libstdcxx:
        library = package_entry(a.suite, "main", f"libstdc++-{a.libstdcxx}-dev")
        cxx_flags = libstdcxx_flags(headers_of(library, cache), a.libstdcxx)
        cxx_note = f", libstdc++ {library['Version']}"
    std = cxx_standard(dirs, cxx_flags)
    print(f"{a.package} {entry['Version']} (Debian {a.suite}{cxx_note}): C++{std}, "
          f"{len(entries)} translation units, {a.jobs} at a time", flush=True)

    jobs = [(e, cxx_flags, os.path.relpath(e["file"])) for e in entries]
    nccl = os.path.isfile(os.path.join(CUDA_INCLUDE, "nccl.h"))
    for e in entries:
        if nccl and "fpa_lm_distributed" in e["file"]:
            jobs.append((e, cxx_flags + ["-DFPA_WITH_NCCL", "-DUSE_C10D_NCCL", "-isystem", CUDA_INCLUDE],
                         os.path.relpath(e["file"]) + " (NCCL path)"))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for label, ok, detail in pool.map(lambda j: check(j[0], dirs, std, j[1], j[2]), jobs):
            print(f"{'ok  ' if ok else 'FAIL'} {label}", flush=True)
            if not ok:
                failed += 1
                print("     " + detail.replace("\n", "\n     "), flush=True)
    print(f"{len(jobs) - failed} of {len(jobs)} compile against {a.package} {entry['Version']}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
