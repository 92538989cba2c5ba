// How the extension starts Python (src/launch.ts, bundled by `npm test`), run for real: the
// server's command line and the import probe start in the extension's folder with -P, and a
// workspace's own interpreter setting counts only in a trusted workspace. Each case runs the
// command line the extension builds in a "repository" that plants an `anchor_ls/` package
// and a `json/` package which leave a mark when imported.
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const cp = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const launch = require("../dist/launch.js");

const HOME = path.resolve(__dirname, ".."); // the extension's folder (editors/vscode)
const PYTHON = process.env.ANCHOR_LS_PYTHON || "python3";

/** A repository with marking `anchor_ls/` and `json/` packages; the marks go to `marks`. */
function plantedRepository() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "anchor-ls-launch-"));
  const repo = path.join(root, "repo");
  const marks = path.join(root, "marks");
  fs.mkdirSync(marks, { recursive: true });
  for (const name of ["anchor_ls", "json"]) {
    fs.mkdirSync(path.join(repo, name), { recursive: true });
    fs.writeFileSync(
      path.join(repo, name, "__init__.py"),
      `open(${JSON.stringify(path.join(marks, name))}, "w").close()\n`
    );
  }
  return { root, repo, marks };
}

test("the server and the probe start with -P, PYTHONSAFEPATH=1, in the extension's folder", () => {
  const python = { command: "/usr/bin/python3", args: ["-X", "utf8"] };
  const env = { PATH: "/usr/bin", PYTHONSAFEPATH: "" };
  const server = launch.serverLaunch(python, HOME, env);
  assert.deepStrictEqual(server, {
    command: "/usr/bin/python3",
    args: ["-X", "utf8", "-P", "-m", "anchor_ls", "serve"],
    cwd: HOME,
    env: { PATH: "/usr/bin", PYTHONSAFEPATH: "1" },
  });
  const probe = launch.probeLaunch(python, "import anchor_ls", HOME, env);
  assert.deepStrictEqual(probe.args, ["-X", "utf8", "-P", "-c", "import anchor_ls"]);
  assert.strictEqual(probe.cwd, HOME);
  assert.strictEqual(probe.env.PYTHONSAFEPATH, "1");
});

test("the probe's command line imports nothing of a repository, even run in it", () => {
  const { root, repo, marks } = plantedRepository();
  try {
    const code = "import json\ntry:\n    import anchor_ls\nexcept ImportError:\n    pass";
    for (const cwd of [HOME, repo]) {
      const probe = launch.probeLaunch({ command: PYTHON, args: [] }, code, cwd, process.env);
      cp.execFileSync(probe.command, probe.args, { cwd: probe.cwd, env: probe.env, stdio: "pipe" });
    }
    assert.deepStrictEqual(fs.readdirSync(marks), []);
    // the same code as `python -c` in the repository: what the extension ran before
    cp.execFileSync(PYTHON, ["-c", code], { cwd: repo, stdio: "pipe" });
    assert.deepStrictEqual(fs.readdirSync(marks).sort(), ["anchor_ls", "json"]);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("in Restricted Mode only the user's own interpreter setting counts", () => {
  const values = {
    globalValue: "/opt/py/bin/python",
    workspaceValue: "${workspaceFolder}/.venv/bin/python",
    workspaceFolderValue: ".venv/bin/python",
  };
  assert.strictEqual(launch.interpreterSetting(values, true), ".venv/bin/python");
  assert.strictEqual(launch.interpreterSetting(values, false), "/opt/py/bin/python");
  assert.strictEqual(launch.interpreterSetting({ workspaceValue: "/evil/python" }, false), "");
  assert.strictEqual(launch.interpreterSetting(undefined, false), "");
});

test("an interpreter inside a workspace folder is recognised however it is written", () => {
  const ws = "/home/u/repo";
  const inside = (value) => launch.insideAny(launch.expandInterpreter(value, ws, "/home/u"), [ws]);
  assert.ok(inside("${workspaceFolder}/.venv/bin/python"));
  assert.ok(inside(".venv/bin/python"));
  assert.ok(inside("~/repo/.venv/bin/python"));
  assert.ok(inside("/home/u/repo/../repo/bin/python"));
  assert.ok(!inside("/home/u/repo-other/bin/python"));
  assert.ok(!inside("~/.pyenv/versions/3.12.1/bin/python"));
  assert.ok(!inside("python3"));
});

test("the environment the server reads: the setting, else the Python extension's, trusted", () => {
  const ws = "/home/u/repo";
  const pick = (values, trusted, fromExtension) =>
    launch.environmentPython(values, trusted, fromExtension, ws, [ws], "/home/u");
  const chosen = "/opt/venvs/site/bin/python";
  // the user's setting wins over the Python extension's selection
  assert.deepStrictEqual(pick({ globalValue: chosen }, true, "/usr/bin/python3"), {
    python: chosen,
    source: "setting",
  });
  assert.deepStrictEqual(pick({ workspaceValue: ".venv/bin/python" }, true, undefined), {
    python: "/home/u/repo/.venv/bin/python",
    source: "setting",
  });
  assert.deepStrictEqual(pick(undefined, true, "/home/u/repo/.venv/bin/python"), {
    python: "/home/u/repo/.venv/bin/python",
    source: "python extension",
  });
  // nothing chosen: the server's own environment, never an interpreter found in the folder
  assert.deepStrictEqual(pick(undefined, true, undefined), { source: "none" });
  // Restricted Mode: not the Python extension's choice, not the workspace's setting, and not
  // the user's own setting when it points inside the workspace
  assert.deepStrictEqual(pick(undefined, false, "/home/u/repo/.venv/bin/python"), {
    source: "none",
  });
  assert.deepStrictEqual(pick({ workspaceValue: chosen }, false, undefined), { source: "none" });
  assert.deepStrictEqual(pick({ globalValue: chosen }, false, undefined), {
    python: chosen,
    source: "setting",
  });
  const refused = pick({ globalValue: "~/repo/.venv/bin/python" }, false, undefined);
  assert.strictEqual(refused.python, undefined);
  assert.match(refused.refused, /inside this workspace/);
});
