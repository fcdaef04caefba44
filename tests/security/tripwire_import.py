"""Import exported graph.py files behind a tripwire; run as a script, one package a line.

Reads JSON lines `{"package": DIR}` on stdin and answers one JSON line each:
`{"ok": bool, "error": str, "tripped": [event, ...], "name": RUNTIME.name, "nodes": [...],
"doc": module docstring}`. The process runs in a fresh empty working directory with bytecode
writing off; an audit hook (sys.addaudithook) records every event that is a side effect (a file
opened for writing, a process started, a file removed or renamed, a socket connected, code
executed (exec, eval) that is not the graph.py being imported) while a package is imported, and
stops it by raising.
A plain package is imported first (argv[1], unarmed), so that what flowkit and LangGraph import
lazily is in place and the import of each graph.py runs only its own code.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import typing
import uuid
from typing import Any

sys.dont_write_bytecode = True

#: Audit events that are side effects whatever their arguments (prefixes).
_FORBIDDEN = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.kill",
              "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
              "os.truncate", "os.symlink", "os.link", "os.utime", "os.putenv", "os.unsetenv",
              "subprocess.Popen", "socket.connect", "socket.bind", "socket.sendto",
              "shutil.", "ctypes.", "urllib.Request", "webbrowser.open", "builtins.input",
              "pty.spawn", "sqlite3.connect", "marshal.loads", "pickle.find_class")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

armed: dict[str, Any] = {"path": None, "tripped": []}


def _writes(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


class Tripped(RuntimeError):
    """Raised from the audit hook: the side effect is recorded and does not happen."""


def _hook(event: str, args: tuple[Any, ...]) -> None:
    path = armed["path"]
    if path is None:
        return
    if event == "exec" and sys._getframe(1).f_code.co_filename == typing.__file__:
        return      # typing.get_type_hints evaluating graph.py's State annotations (fixed text)
    before = len(armed["tripped"])
    _check(event, args, path)
    if len(armed["tripped"]) > before:
        raise Tripped(armed["tripped"][-1])


def _check(event: str, args: tuple[Any, ...], path: str) -> None:
    if event == "open":
        if _writes(args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None):
            armed["tripped"].append(f"open for writing: {args[0]!r}")
    elif event == "exec":
        code = args[0]
        if getattr(code, "co_filename", None) != path or code.co_name != "<module>":
            armed["tripped"].append(f"exec of {getattr(code, 'co_filename', code)!r}")
    elif event.startswith(_FORBIDDEN):
        armed["tripped"].append(f"{event}: {str(args)[:120]}")


def _import(package: str, arm: bool = True) -> dict[str, Any]:
    path = os.path.join(package, "graph.py")
    name = f"exported_graph_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module      # as an import does: typing resolves State's hints there
    armed["path"], armed["tripped"] = (path if arm else None), []
    try:
        spec.loader.exec_module(module)
        error = ""
    except BaseException as err:   # noqa: BLE001 - anything the import raised is the finding
        error = f"{type(err).__name__}: {err}"
    finally:
        armed["path"] = None
    out: dict[str, Any] = {"ok": not error and not armed["tripped"], "error": error,
                           "tripped": armed["tripped"]}
    if not error:
        out["name"] = module.RUNTIME.name
        out["doc"] = module.__doc__
        out["nodes"] = sorted(module.graph.get_graph().nodes)
    return out


def main() -> None:
    """Warm up on the package named in argv[1] (a plain template's, unarmed: what LangGraph imports
    lazily is imported then), then import each package read from stdin behind the tripwire."""
    sys.addaudithook(_hook)
    if len(sys.argv) > 1:
        _import(sys.argv[1], arm=False)
    for line in sys.stdin:
        package = json.loads(line)["package"]
        sys.stdout.write(json.dumps(_import(package)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
