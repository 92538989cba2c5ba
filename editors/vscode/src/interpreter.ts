// Which Python runs the server: the anchorLs.interpreter setting, else the Python extension's
// active interpreter, else python3; in Restricted Mode only the user's own setting or python3
// (see launch.ts). And whether anchor-ls is importable there.
import * as cp from "child_process";
import * as os from "os";
import * as vscode from "vscode";
import { SECTION } from "./settings";
import {
  Environment,
  environmentPython,
  expandInterpreter,
  insideAny,
  interpreterSetting,
  probeLaunch,
} from "./launch";

export interface Interpreter {
  command: string;
  args: string[];
  source: "setting" | "python extension" | "default";
  display: string;
  /** Why it must not run (inside a workspace that is not trusted), if so. */
  refused?: string;
}

export interface StartProblem {
  short: string;
  message: string;
}

const DEFAULT: Interpreter = { command: "python3", args: [], source: "default", display: "python3" };

export async function resolveInterpreter(
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.OutputChannel
): Promise<Interpreter> {
  const trusted = vscode.workspace.isTrusted;
  const values = vscode.workspace.getConfiguration(SECTION, folder?.uri).inspect<string>("interpreter");
  const configured = interpreterSetting(values, trusted);
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  if (configured) {
    const command = expandInterpreter(configured, folder?.uri.fsPath, os.homedir());
    const chosen: Interpreter = { command, args: [], source: "setting", display: command };
    if (!trusted && insideAny(command, folders)) {
      chosen.refused =
        `"anchorLs.interpreter" names ${command}, inside this workspace, which is not trusted ` +
        `(Restricted Mode): a repository's own interpreter would run its code. Trust the workspace, ` +
        `or set "anchorLs.interpreter" to a Python outside it.`;
    }
    return chosen;
  }
  if (!trusted) {
    if (values?.workspaceFolderValue || values?.workspaceValue) {
      log.appendLine(
        "anchor-ls: the workspace's own anchorLs.interpreter is ignored until you trust the workspace (Restricted Mode)."
      );
    }
    // The Python extension may have picked the repository's own .venv.
    return DEFAULT;
  }
  const fromExtension = await pythonExtensionInterpreter(folder, log);
  if (fromExtension) {
    return fromExtension;
  }
  return DEFAULT;
}

/** The environment whose packages the repository uses, passed to the server as its `python`
 * setting: `anchorLs.python`, else the Python extension's selected interpreter (in a trusted
 * workspace), else none: the server reads its own environment. */
export async function resolveEnvironment(
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.OutputChannel
): Promise<Environment> {
  const trusted = vscode.workspace.isTrusted;
  const values = vscode.workspace.getConfiguration(SECTION, folder?.uri).inspect<string>("python");
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  let fromExtension: string | undefined;
  if (trusted && !interpreterSetting(values, trusted)) {
    const chosen = await pythonExtensionInterpreter(folder, log);
    // A command line (`conda run ...`) is no interpreter path the server could ask.
    fromExtension = chosen && chosen.args.length === 0 ? chosen.command : undefined;
  }
  const env = environmentPython(values, trusted, fromExtension, folder?.uri.fsPath, folders, os.homedir());
  if (!trusted && (values?.workspaceFolderValue || values?.workspaceValue)) {
    log.appendLine(
      "anchor-ls: the workspace's own anchorLs.python is ignored until you trust the workspace (Restricted Mode)."
    );
  }
  return env;
}

async function pythonExtensionInterpreter(
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.OutputChannel
): Promise<Interpreter | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api: any = await ext.activate();
    const envs = api?.environments;
    if (envs?.getActiveEnvironmentPath) {
      const active = envs.getActiveEnvironmentPath(folder?.uri);
      const resolved = active ? await envs.resolveEnvironment(active) : undefined;
      const exe: string | undefined = resolved?.executable?.uri?.fsPath ?? active?.path;
      if (exe) {
        return { command: exe, args: [], source: "python extension", display: exe };
      }
    }
    const details = api?.settings?.getExecutionDetails?.(folder?.uri);
    const exec: string[] | undefined = details?.execCommand;
    if (exec && exec.length > 0) {
      return {
        command: exec[0],
        args: exec.slice(1),
        source: "python extension",
        display: exec.join(" "),
      };
    }
  } catch (err) {
    log.appendLine(`anchor-ls: could not ask the Python extension for its interpreter: ${err}`);
  }
  return undefined;
}

const PROBE = [
  "import sys",
  "try:",
  "    import anchor_ls",
  "except ModuleNotFoundError as e:",
  "    print(e); sys.exit(3 if e.name == 'anchor_ls' else 4)",
  "except Exception as e:",
  "    print(repr(e)); sys.exit(4)",
].join("\n");

/** Undefined when `<interpreter> -P -m anchor_ls` can run (started as the server will be:
 * in `home`, the extension's folder), else what is wrong and how to fix it. */
export function checkServerInstalled(
  interpreter: Interpreter,
  home: string
): Promise<StartProblem | undefined> {
  const probe = probeLaunch(interpreter, PROBE, home, process.env);
  return new Promise((resolve) => {
    cp.execFile(
      probe.command,
      probe.args,
      { timeout: 30000, cwd: probe.cwd, env: probe.env },
      (error, stdout, stderr) => {
        if (!error) {
          resolve(undefined);
          return;
        }
        const code = (error as NodeJS.ErrnoException).code;
        const text = `${stdout}${stderr}`.trim();
        if (code === "ENOENT") {
          resolve({
            short: "no Python",
            message: `Python interpreter "${interpreter.display}" was not found. Set "anchorLs.interpreter" to the path of a Python that has anchor-ls installed.`,
          });
        } else if ((error as any).code === 2 && /-P\b/.test(text)) {
          resolve({
            short: "Python too old",
            message: `${interpreter.display} is older than Python 3.11 (it has no -P), which anchor-ls needs. Set "anchorLs.interpreter" to a Python 3.11+ that has anchor-ls installed.`,
          });
        } else if ((error as any).code === 3) {
          resolve({
            short: "not installed",
            message: `anchor-ls is not installed in ${interpreter.display}. Run "${interpreter.display} -m pip install anchor-ls" or set "anchorLs.interpreter" to a Python that has it, then run "anchor-ls: Restart Server".`,
          });
        } else {
          resolve({
            short: "import failed",
            message: `anchor-ls cannot be imported in ${interpreter.display}: ${text || error.message}. Reinstall it there ("${interpreter.display} -m pip install --force-reinstall anchor-ls").`,
          });
        }
      }
    );
  });
}
