"""llama.cpp's own `llama-server`, built from the llama.cpp that flowkit's bindings are built from.

llama-cpp-python's source distribution vendors llama.cpp (vendor/llama.cpp, tools/server included).
`make llama-server` (this module's `main`) downloads the sdist of the SAME version as the installed
bindings (`pip download --no-binary :all: --no-deps llama-cpp-python==V`), configures a CPU build of
that llama.cpp with cmake (server only: no tests, examples, web UI, curl or OpenSSL) and builds the
`llama-server` target alone, statically linked, into a cache outside the repository keyed by the
version:

    ~/.cache/flowkit/llama-server-<version>/bin/llama-server

(`$FLOWKIT_LLAMA_SERVER_CACHE` replaces ~/.cache/flowkit). A clone on the same machine reuses it; a
binary that is there is not built again. `$FLOWKIT_LLAMA_SERVER` names a binary to use instead
(another build, a GPU one). `build-info.json` beside the binary records the version, the cmake flags
and the seconds the build took. Extra cmake flags (a CUDA build): `LLAMA_SERVER_CMAKE_ARGS`.

    python -m flowkit.testing.llama_server_build          # build unless cached; prints the path
    python -m flowkit.testing.llama_server_build --path   # the path only (built or not)
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

PACKAGE = "llama-cpp-python"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",          # one self-contained binary in the cache
    "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_COMMON=ON",
    "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",        # loopback HTTP only; no libcurl, no libssl
    # no web UI: the prebuilt one is downloaded from Hugging Face, the other needs npm
    "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
)


def bindings_version() -> str:
    """The installed llama-cpp-python's version (the llama.cpp the bindings are built from)."""
    return importlib.metadata.version(PACKAGE)


def cache_root() -> Path:
    root = os.environ.get("FLOWKIT_LLAMA_SERVER_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "flowkit"


def build_dir(version: str | None = None) -> Path:
    return cache_root() / f"llama-server-{version or bindings_version()}"


def binary_path() -> Path:
    """Where `llama-server` is (or will be once built): `$FLOWKIT_LLAMA_SERVER`, else the cache."""
    explicit = os.environ.get("FLOWKIT_LLAMA_SERVER")
    if explicit:
        return Path(explicit)
    return build_dir() / "bin" / "llama-server"


def missing_reason(path: Path) -> str | None:
    """None when `path` is a runnable llama-server, else why not (and how to build it)."""
    if not path.is_file():
        return (f"llama.cpp's llama-server is not built: {path} does not exist (`make llama-server` "
                f"builds it from llama-cpp-python {bindings_version()}'s vendored llama.cpp)")
    if not os.access(path, os.X_OK):
        return f"{path} is not executable"
    return None


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _run(cmd: list[str], log: Path, cwd: Path | None = None) -> None:
    _say("+ " + shlex.join(cmd))
    with open(log, "ab") as out:
        done = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise SystemExit(f"{cmd[0]} failed with code {done.returncode} (log: {log}):\n{tail}")


def _extract_llama_cpp(sdist: Path, dest: Path) -> Path:
    """vendor/llama.cpp of the sdist, extracted under `dest`; returns its directory."""
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/", 1)[0]
        prefix = f"{top}/vendor/llama.cpp/"
        members = [m for m in tar.getmembers() if m.name.startswith(prefix)]
        if not members:
            raise SystemExit(f"{sdist.name} has no vendor/llama.cpp")
        tar.extractall(dest, members=members, filter="data")
    src = dest / top / "vendor" / "llama.cpp"
    if not (src / "tools" / "server").is_dir():
        raise SystemExit(f"{sdist.name}'s llama.cpp has no tools/server")
    return src


def build(jobs: int | None = None) -> Path:
    """Build llama-server into the cache unless it is there; returns the binary's path."""
    version = bindings_version()
    where = build_dir(version)
    exe = where / "bin" / "llama-server"
    if missing_reason(exe) is None:
        _say(f"llama-server {version} already built: {exe}")
        return exe
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise SystemExit(f"building llama-server needs `{tool}` (Debian: apt-get install cmake g++)")
    where.mkdir(parents=True, exist_ok=True)
    log = where / "build.log"
    log.write_text("")
    jobs = jobs or os.cpu_count() or 1
    extra = shlex.split(os.environ.get("LLAMA_SERVER_CMAKE_ARGS", ""))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="flowkit-llama-server-", dir=where) as tmp:
        work = Path(tmp)
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:",
              "--no-deps", f"{PACKAGE}=={version}", "-d", str(work)], log)
        sdists = sorted(work.glob("*.tar.gz"))
        if not sdists:
            raise SystemExit(f"pip download gave no source distribution of {PACKAGE}=={version}")
        downloaded = time.monotonic()
        src = _extract_llama_cpp(sdists[0], work / "src")
        out = work / "build"
        flags = [*CMAKE_FLAGS, *extra]
        _run(["cmake", "-S", str(src), "-B", str(out), *flags], log)
        _run(["cmake", "--build", str(out), "--target", "llama-server", "-j", str(jobs)], log)
        built = out / "bin" / "llama-server"
        if not built.is_file():
            raise SystemExit(f"the build finished without {built} (log: {log})")
        exe.parent.mkdir(parents=True, exist_ok=True)
        tmp_exe = exe.with_suffix(".tmp")
        shutil.copy2(built, tmp_exe)
        os.replace(tmp_exe, exe)           # the binary appears whole or not at all
    finished = time.monotonic()
    info = {"llama_cpp_python": version, "cmake_flags": flags, "jobs": jobs,
            "download_s": round(downloaded - started, 1),
            "build_s": round(finished - downloaded, 1), "total_s": round(finished - started, 1)}
    (where / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    _say(f"llama-server {version} built in {info['total_s']:.0f} s "
         f"(download {info['download_s']:.0f} s, cmake {info['build_s']:.0f} s): {exe}")
    return exe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--path", action="store_true", help="print the binary's path and exit")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="parallel compile jobs (nproc)")
    args = ap.parse_args(argv)
    if args.path:
        _say(str(binary_path()))
        return 0
    if os.environ.get("FLOWKIT_LLAMA_SERVER"):
        exe = binary_path()
        reason = missing_reason(exe)
        if reason:
            raise SystemExit(f"FLOWKIT_LLAMA_SERVER: {reason}")
        _say(f"using FLOWKIT_LLAMA_SERVER={exe}")
        return 0
    build(args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
