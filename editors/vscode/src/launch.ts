// How the server and the import probe start, and which interpreter setting counts: a
// repository's code never runs. (No vscode import: test/launch.test.cjs runs this in Node.)
//
// `python -m` and `python -c` put the working directory first on sys.path, so started in the
// workspace folder, a repository's own `anchor_ls/`, `json/` or `sitecustomize.py` would run.
// Both start with -P and PYTHONSAFEPATH=1 (the server's workers inherit it) in the extension's
// own folder. And `anchorLs.interpreter` could come from the repository's own
// .vscode/settings.json, naming its own .venv/bin/python: in Restricted Mode only the user's
// setting counts, and never an interpreter inside a workspace folder.
import * as path from "path";

export interface Python {
  command: string;
  args: string[];
}

export interface Launch {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** `<python> -P -m anchor_ls serve`, started in `home` (the extension's folder). */
export function serverLaunch(python: Python, home: string, env: NodeJS.ProcessEnv): Launch {
  return safe(python, ["-m", "anchor_ls", "serve"], home, env);
}

/** `<python> -P -c <code>` in `home`: it imports what the server will. */
export function probeLaunch(
  python: Python,
  code: string,
  home: string,
  env: NodeJS.ProcessEnv
): Launch {
  return safe(python, ["-c", code], home, env);
}

function safe(python: Python, run: string[], home: string, env: NodeJS.ProcessEnv): Launch {
  return {
    command: python.command,
    args: [...python.args, "-P", ...run],
    cwd: home,
    env: { ...env, PYTHONSAFEPATH: "1" },
  };
}

/** What `inspect("interpreter")` gives (the scopes that matter here). */
export interface SettingValues {
  globalValue?: string;
  workspaceValue?: string;
  workspaceFolderValue?: string;
}

/** The anchorLs.interpreter to use, "" for none: in a trusted workspace the most specific
 * scope that sets it, in Restricted Mode the user's own setting alone. */
export function interpreterSetting(values: SettingValues | undefined, trusted: boolean): string {
  const scopes = trusted
    ? [values?.workspaceFolderValue, values?.workspaceValue, values?.globalValue]
    : [values?.globalValue];
  for (const value of scopes) {
    if (typeof value === "string" && value.trim()) {
      return value.trim();
    }
  }
  return "";
}

/** `${workspaceFolder}` and `~` expanded; a relative path with a directory in it is taken
 * from the workspace folder (the server does not start there). */
export function expandInterpreter(value: string, folder: string | undefined, home: string): string {
  let v = value;
  if (folder) {
    v = v.split("${workspaceFolder}").join(folder);
  }
  if (v === "~" || v.startsWith("~/")) {
    v = path.join(home, v.slice(1));
  }
  if (folder && !path.isAbsolute(v) && v.includes("/")) {
    v = path.resolve(folder, v);
  }
  return v;
}

/** Whether `file` lies in one of `folders` (or is one); a bare name is looked up on PATH. */
export function insideAny(file: string, folders: string[]): boolean {
  if (!path.isAbsolute(file) && !file.includes("/") && !file.includes(path.sep)) {
    return false;
  }
  const target = path.resolve(file);
  return folders.some((folder) => {
    const rel = path.relative(path.resolve(folder), target);
    return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
  });
}

/** The environment the index reads installed packages from (the server's `python` setting). */
export interface Environment {
  /** The interpreter's path, undefined for the server's own environment. */
  python?: string;
  source: "setting" | "python extension" | "none";
  /** Why a configured one is not used (inside a workspace that is not trusted), if so. */
  refused?: string;
}

/** Which interpreter's environment the server reads (it asks that interpreter for its
 * sys.path, so it runs it): the `anchorLs.python` setting, else the Python extension's
 * selected interpreter, else none (the server's own environment). In Restricted Mode only
 * the user's own setting counts, never the Python extension's choice (it may have picked
 * the repository's .venv) and never an interpreter inside a workspace folder. */
export function environmentPython(
  values: SettingValues | undefined,
  trusted: boolean,
  fromExtension: string | undefined,
  folder: string | undefined,
  folders: string[],
  home: string
): Environment {
  const configured = interpreterSetting(values, trusted);
  if (configured) {
    const python = expandInterpreter(configured, folder, home);
    if (!trusted && insideAny(python, folders)) {
      return {
        source: "setting",
        refused:
          `"anchorLs.python" names ${python}, inside this workspace, which is not trusted ` +
          `(Restricted Mode): the server would run it. Libraries are read from the server's ` +
          `own environment until you trust the workspace.`,
      };
    }
    return { python, source: "setting" };
  }
  if (trusted && fromExtension) {
    return { python: fromExtension, source: "python extension" };
  }
  return { source: "none" };
}
