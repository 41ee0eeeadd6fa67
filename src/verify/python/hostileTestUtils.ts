/**
 * Programs that try to escape, exhaust or confuse a Python sandbox, shared by the Node and
 * browser tests. Each is tested with the asserts `assert f(1) == 2` unless it brings its own.
 */
import type { VerdictStatus } from './verdict';

export interface Hostile {
  name: string;
  program: string;
  asserts?: string;
  /** The verdict it must get, when one is certain. */
  expect?: VerdictStatus;
}

/** `marker`: a file a shell command would create; `port`: a listener on 127.0.0.1 to reach. */
export function hostilePrograms({ marker, port }: { marker: string; port: number }): Hostile[] {
  const ok = 'def f(x):\n    return x + 1\n';
  return [
    { name: 'while True: pass', program: 'def f(x):\n    while True:\n        pass\n', expect: 'timeout' },
    { name: 'loop inside C code', program: 'def f(x):\n    return sum(range(10**13))\n', expect: 'timeout' },
    { name: 'swallowed interrupt', program: 'def f(x):\n    while True:\n        try:\n            while True: pass\n        except BaseException:\n            pass\n', expect: 'timeout' },
    { name: '[0] * 10**10', program: `a = [0] * 10**10\n${ok}` },
    { name: 'growing list', program: `a = []\nwhile True:\n    a.append([0] * 10000)\n${ok}`, expect: 'killed' },
    { name: 'recursion bomb', program: `def g():\n    return g() + 1\ng()\n${ok}`, expect: 'error' },
    { name: 'fork bomb', program: `import os\nwhile True:\n    os.fork()\n${ok}`, expect: 'error' },
    { name: 'os.system', program: `import os\nos.system("touch ${marker}")\n${ok}`, expect: 'error' },
    { name: 'subprocess', program: `import subprocess\nsubprocess.run(["touch", "${marker}"])\n${ok}`, expect: 'error' },
    { name: 'ctypes', program: `import ctypes\nctypes.CDLL(None).system(b"touch ${marker}")\n${ok}`, expect: 'error' },
    { name: 'import js, js.fetch', program: `import js\njs.fetch("http://127.0.0.1:${port}/")\n${ok}`, expect: 'error' },
    { name: 'js.document', program: `import js\njs.document.title = "x"\n${ok}`, expect: 'error' },
    { name: 'js.self.postMessage', program: `import js\njs.self.postMessage("pass")\n${ok}`, expect: 'error' },
    { name: 'js process', program: `import js\njs.process.getBuiltinModule("child_process").execSync("touch ${marker}")\n${ok}`, expect: 'error' },
    { name: 'pyodide_js', program: `import pyodide_js\npyodide_js.runPython("1")\n${ok}`, expect: 'error' },
    { name: 'pyodide.ffi', program: `from pyodide.ffi import to_js\nto_js([]).constructor.constructor("return globalThis")()\n${ok}`, expect: 'error' },
    { name: '_pyodide_core by __import__', program: `__import__("_pyodide_core")\n${ok}`, expect: 'error' },
    { name: 'socket', program: `import socket\ns = socket.socket()\ns.connect(("127.0.0.1", ${port}))\n${ok}`, expect: 'error' },
    { name: "open('/etc/passwd')", program: `print(open("/etc/passwd").read())\n${ok}`, expect: 'error' },
    { name: 'write a file', program: `open("${marker}", "w").write("x")\n${ok}`, expect: 'error' },
    // Past the output limit within milliseconds on any machine (one 100 MB string could take longer than the time limit to build and write on a busy one).
    { name: 'print without end', program: `while True:\n    print("x" * 65536)\n${ok}`, expect: 'killed' },
    { name: 'sys.exit()', program: `import sys\n${ok}sys.exit()\n`, expect: 'error' },
    { name: 'delete builtins', program: `import builtins\nfor k in list(vars(builtins)):\n    delattr(builtins, k)\n${ok}` },
    { name: 'syntax error', program: 'def f(x) return x\n', expect: 'error' },
    { name: 'infinite generator consumed by the tests', program: 'def f(x):\n    while True:\n        yield x\n', asserts: 'assert list(f(1)) == [1]' }, // timeout, or killed when the list fills the memory first
    { name: 'an audit hook of its own', program: `import sys\nsys.addaudithook(lambda e, a: (_ for _ in ()).throw(RuntimeError(e)) if e == "exec" else None)\n${ok}`, expect: 'error' },
    { name: 'frames of the harness', program: `import sys\nsys._getframe(1)\n${ok}`, expect: 'error' },
    { name: 'always-passing tests by patching', program: `import builtins\nbuiltins.AssertionError = Exception\ndef f(x):\n    return 0\n`, expect: 'fail' },
  ];
}
