// Run a Python script in the site's Pyodide under node: the browser kernel's runtime, with
// the packages it loads at start (vmem from the site's own wheel), without a browser.
//
//   node run_in_pyodide.mjs SITE_PYODIDE_DIR REPO WHEELS SCRIPT [ARGS...]
//
// REPO is mounted read-only in spirit at /repo (the script must not write there), the
// wheels in WHEELS (test-only: pytest, hypothesis) are installed with micropip, the working
// folder is a fresh /work in memory, and SCRIPT runs as __main__ with ARGS as sys.argv[1:].
// The exit status is the script's (SystemExit) or 1 on an uncaught exception.
import { readdirSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, repo, wheels, script, ...args] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(resolve(pyodideDir, "pyodide.mjs")).href);
const settings = JSON.parse(
  (await import("node:fs")).readFileSync(resolve(pyodideDir, "../../jupyter-lite.json"), "utf8"),
);
const kernel = settings["jupyter-config-data"].litePluginSettings[
  "@jupyterlite/pyodide-kernel-extension:kernel"];
const pyodide = await loadPyodide({
  indexURL: resolve(pyodideDir) + "/",
  packages: kernel.loadPyodideOptions.packages,
});
pyodide.FS.mkdirTree("/repo");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: resolve(repo) }, "/repo");
pyodide.FS.mkdirTree("/wheels");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: resolve(wheels) }, "/wheels");
pyodide.FS.mkdirTree("/work");
const files = readdirSync(wheels).filter((name) => name.endsWith(".whl"));
pyodide.globals.set("_wheels", pyodide.toPy(files.map((name) => `emfs:/wheels/${name}`)));
pyodide.globals.set("_argv", pyodide.toPy([script, ...args]));
const status = await pyodide.runPythonAsync(`
import os, runpy, sys, traceback
import micropip
await micropip.install(_wheels, deps=False)
sys.dont_write_bytecode = True
os.chdir("/work")
sys.argv = list(_argv)
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
    status = 0
except SystemExit as stop:
    status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
except BaseException:
    traceback.print_exc()
    status = 1
status
`);
process.exit(status);
