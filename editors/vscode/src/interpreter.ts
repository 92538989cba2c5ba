// Which Python runs the server: the anchorLs.interpreter setting, else the Python extension's
// active interpreter, else python3. And whether anchor-ls is importable there.
import * as cp from "child_process";
import * as os from "os";
import * as path from "path";
import * as vscode from "vscode";
import { SECTION } from "./settings";

export interface Interpreter {
  command: string;
  args: string[];
  source: "setting" | "python extension" | "default";
  display: string;
}

export interface StartProblem {
  short: string;
  message: string;
}

export async function resolveInterpreter(
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.OutputChannel
): Promise<Interpreter> {
  const configured = vscode.workspace
    .getConfiguration(SECTION, folder?.uri)
    .get<string>("interpreter", "")
    .trim();
  if (configured) {
    const command = expand(configured, folder);
    return { command, args: [], source: "setting", display: command };
  }
  const fromExtension = await pythonExtensionInterpreter(folder, log);
  if (fromExtension) {
    return fromExtension;
  }
  return { command: "python3", args: [], source: "default", display: "python3" };
}

function expand(value: string, folder: vscode.WorkspaceFolder | undefined): string {
  let v = value;
  if (folder) {
    v = v.split("${workspaceFolder}").join(folder.uri.fsPath);
  }
  if (v === "~" || v.startsWith("~/")) {
    v = path.join(os.homedir(), v.slice(1));
  }
  return v;
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

/** Undefined when `<interpreter> -m anchor_ls` can run, else what is wrong and how to fix it. */
export function checkServerInstalled(
  interpreter: Interpreter,
  cwd?: string
): Promise<StartProblem | undefined> {
  return new Promise((resolve) => {
    cp.execFile(
      interpreter.command,
      [...interpreter.args, "-c", PROBE],
      { timeout: 30000, cwd },
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
