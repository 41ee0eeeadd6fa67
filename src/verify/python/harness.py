# Runs one program and its tests inside a Pyodide sandbox and reports a JSON verdict.
#
# Isolation comes from outside the interpreter (a process without permissions or network, a
# Worker under a CSP, capped memory, a deadline). This file keeps verdicts clean and the warm
# instance reusable: an audit hook (which Python cannot remove) denies, and records, what no
# test program needs (the JS bridge, ctypes, sockets, processes, writing files, reading
# outside the standard library, peeking at the harness's frames), and the interpreter's
# shared state is restored after every job.
import ast
import builtins
import json
import math
import sys

_BLOCKED_MODULES = {
    "js", "pyodide_js", "pyodide", "_pyodide", "_pyodide_core", "ctypes", "_ctypes",
    "socket", "_socket", "select", "ssl", "subprocess", "multiprocessing", "_posixsubprocess",
    "pyodide_http", "urllib.request", "http.client",
}
_BLOCKED_EVENTS = (
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
    "os.killpg", "subprocess.", "ctypes.", "socket.", "sys._getframe", "sys._current_frames",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__", "function.__new__",
    "sys.setprofile", "sys.settrace", "os.remove", "os.rename", "os.rmdir", "os.mkdir",
    "os.symlink", "os.link", "os.truncate", "os.chmod", "os.chown", "shutil.", "os.putenv",
    "os.unsetenv", "sys.monitoring", "sys.addaudithook",
)
_FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back", "gi_code", "f_globals", "f_locals"}
_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND

_denied = []
# What the harness calls after the program ran: taken now, so that a program patching them changes nothing.
_exec = builtins.exec
_dumps = json.dumps
_loads = json.loads


def _deny(what):
    _denied.append(what)
    raise PermissionError(f"sandbox: {what} is not allowed")


def _audit(event, args):
    if event == "import":
        name = args[0] or ""
        if name in _BLOCKED_MODULES or name.split(".")[0] in _BLOCKED_MODULES:
            _deny(f"import {name}")
    elif event == "open":
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writing:
            _deny(f"writing {path}")
        if isinstance(path, str) and not path.startswith("/lib/"):
            _deny(f"reading {path}")
        if isinstance(path, int):
            _deny("opening a file descriptor")
    elif event == "object.__getattr__":
        if len(args) > 1 and args[1] in _FRAME_ATTRIBUTES:
            _deny(f"reading .{args[1]}")
    elif event.startswith(_BLOCKED_EVENTS):
        _deny(event)


# Modules the boot loaded that reach the JS side: imported again, they pass the hook.
for _name in list(sys.modules):
    if _name in _BLOCKED_MODULES or _name.split(".")[0] in _BLOCKED_MODULES:
        del sys.modules[_name]

_BUILTINS = dict(builtins.__dict__)
_MODULES = dict(sys.modules)
_SYS = {k: getattr(sys, k) for k in ("stdout", "stderr", "stdin", "displayhook", "excepthook", "path", "meta_path", "path_hooks")}
_RECURSION_LIMIT = sys.getrecursionlimit()
sys.addaudithook(_audit)


def _restore_builtins():
    builtins.__dict__.clear()
    builtins.__dict__.update(_BUILTINS)


def _restore():
    _restore_builtins()
    for name in [m for m in sys.modules if m not in _MODULES]:
        del sys.modules[name]
    sys.modules.update(_MODULES)
    for key, value in _SYS.items():
        setattr(sys, key, value)
    sys.setrecursionlimit(_RECURSION_LIMIT)


def _describe(e):
    text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return text[:500]


def _units(code):
    """Top-level statements of test code: those holding an assert are counted checks, the rest setup."""
    tree = ast.parse(code)
    out = []
    for stmt in tree.body:
        module = ast.Module(body=[stmt], type_ignores=[])
        is_check = any(isinstance(n, ast.Assert) for n in ast.walk(stmt))
        out.append((is_check, compile(module, "<test>", "exec"), ast.get_source_segment(code, stmt) or ""))
    return out


def _run_units(units, namespace):
    """Runs setup statements and counted checks in order; a check that raises counts as failed and the rest still run."""
    passed = total = 0
    failure = error = None
    for is_check, code, source in units:
        if not is_check:
            _exec(code, namespace)
            continue
        total += 1
        try:
            _exec(code, namespace)
            passed += 1
        except AssertionError as e:
            failure = failure or source[:300] + (f" ({e})" if str(e) else "")
        except Exception as e:
            error = error or _describe(e)
    return passed, total, failure, error


def _check_units(job):
    """HumanEval: the setup of test code, and the body of check(candidate) as units, each assert counted."""
    tree = ast.parse(job["test"])
    check = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"), None)
    if check is None:
        raise ValueError("the test defines no check(candidate)")
    setup = compile(ast.Module(body=[s for s in tree.body if s is not check], type_ignores=[]), "<test>", "exec")
    parameter = check.args.args[0].arg if check.args.args else "candidate"
    return setup, parameter, _units(ast.unparse(ast.Module(body=check.body, type_ignores=[])))


def _assert_units(job):
    """MBPP and model-written tests: every assert in the given snippets counts once."""
    return [u for snippet in job["asserts"] for u in _units(snippet)]


def _encode(value, depth=0):
    """Outputs as JSON for comparison outside the interpreter (a test program cannot see the expected values)."""
    if depth > 50:
        raise ValueError("output nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else {"int": str(value)}
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, complex):
        return {"complex": [_encode(value.real), _encode(value.imag)]}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [_encode(v, depth + 1) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted((json.dumps(_encode(v, depth + 1), sort_keys=True) for v in value))}
    if isinstance(value, dict):
        return {"dict": sorted(([json.dumps(_encode(k, depth + 1), sort_keys=True), _encode(v, depth + 1)] for k, v in value.items()), key=lambda kv: kv[0])}
    return {"repr": repr(value)[:1000]}


def _io_outputs(job, ns):
    """MBPP+: the entry point's output for each input, encoded; compared with the canonical outputs outside."""
    import copy

    fn = ns[job["entryPoint"]]
    outputs = []
    for args in job["inputs"]:
        try:
            outputs.append({"value": _encode(fn(*copy.deepcopy(args)))})
        except Exception as e:
            outputs.append({"error": _describe(e)})
    return outputs


def run_job(job_json):
    job = _loads(job_json)
    del _denied[:]
    ns = {"__name__": "__main__"}
    result = {"status": "error", "passed": 0, "total": 0}
    try:
        # Tests are parsed before the program runs: a program cannot change how they are read.
        try:
            program = compile(job["program"], "<program>", "exec")
            style = job["style"]
            tests = _check_units(job) if style == "check" else _assert_units(job) if style == "asserts" else None
        except SyntaxError as e:
            result["detail"] = _describe(e)
            return _dumps(result)
        if style == "asserts" and job.get("setup"):
            _exec(job["setup"], ns)
        _exec(program, ns)
        _restore_builtins()
        if style == "io":
            result.update(status="outputs", outputs=_io_outputs(job, ns))
        else:
            if style == "check":
                # As in HumanEval's own harness, the tests share the program's namespace: some
                # call helpers the prompt defines (encode_cyclic) or the function by its name.
                setup, parameter, units = tests
                _exec(setup, ns)
                ns[parameter] = ns[job["entryPoint"]]
                passed, total, failure, error = _run_units(units, ns)
            else:
                passed, total, failure, error = _run_units(tests, ns)
            result.update(passed=passed, total=total)
            if total == 0:
                result["detail"] = "no assert to check"
            elif passed == total:
                result["status"] = "pass"
            elif error:
                result["detail"] = error
            else:
                result.update(status="fail", detail=failure)
    except KeyboardInterrupt:
        result.update(status="timeout", detail="interrupted at the time limit")
    except MemoryError:
        result.update(status="killed", detail="out of memory")
    except BaseException as e:  # SystemExit, a deleted builtin's NameError...: all the program's doing
        result["detail"] = _describe(e)
    finally:
        _restore()
    if _denied:
        result.update(status="error", denied=list(_denied[:5]), detail=f"denied: {_denied[0]}")
    return _dumps(result)
