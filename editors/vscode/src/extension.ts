// VS Code client of anchor-ls: starts `<python> -P -m anchor_ls serve` over stdio (in the
// extension's folder, see launch.ts) and adds the commands, the status bar item and the
// `anchor.showLocations` lens command around it.
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
} from "vscode-languageclient/node";
import {
  checkServerInstalled,
  resolveEnvironment,
  resolveInterpreter,
  Interpreter,
} from "./interpreter";
import { interpreterSetting, serverLaunch } from "./launch";
import { serverSettings, SECTION } from "./settings";
import { StatusItem } from "./status";
import { StatsView } from "./statsView";
import { exportSnapshot } from "./exportSnapshot";
import { toLocations, toPosition } from "./locations";
import { registerMcpServers } from "./mcp";

let client: LanguageClient | undefined;
let status: StatusItem;
let output: vscode.OutputChannel;
let starting: Promise<void> | undefined;
let home = ""; // the extension's folder: where the server starts, never the workspace
// The interpreter whose environment the index reads libraries from (the server's `python`).
let environment: string | undefined;
const statsView = new StatsView();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  home = context.extensionPath;
  output = vscode.window.createOutputChannel("anchor-ls");
  status = new StatusItem();
  context.subscriptions.push(
    output,
    status,
    vscode.workspace.registerTextDocumentContentProvider(StatsView.scheme, statsView)
  );

  const register = (id: string, fn: (...args: any[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, fn));

  // The server's code lenses carry this command; VS Code runs it client-side.
  register("anchor.showLocations", showLocations);
  register("anchorLs.materializeFile", () => fileCommand("anchor.materialize"));
  register("anchorLs.materializeWorkspace", () => serverCommand("anchor.materialize", [{}]));
  register("anchorLs.stripFile", () => fileCommand("anchor.strip"));
  register("anchorLs.stripWorkspace", () => serverCommand("anchor.strip", [{}]));
  register("anchorLs.export", () =>
    exportSnapshot((out) => serverCommand("anchor.export", [{ out }]))
  );
  register("anchorLs.showStats", showStats);
  register("anchorLs.reindex", async () => {
    await serverCommand("anchor.reindex", []);
    await refreshPolicy();
  });
  register("anchorLs.restartServer", restart);

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration(`${SECTION}.interpreter`)) {
        await restart();
      } else if (e.affectsConfiguration(`${SECTION}.python`)) {
        await updateEnvironment();
        await pushSettings();
      } else if (e.affectsConfiguration(SECTION)) {
        await pushSettings();
      }
    })
  );
  watchPythonExtension(context);
  // Trusting the workspace lets its own anchorLs.interpreter (and the Python extension's) count.
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => void restart()));
  registerMcpServers(context, output);

  await start();
}

export async function deactivate(): Promise<void> {
  await stop();
}

async function start(): Promise<void> {
  if (starting) {
    return starting;
  }
  starting = doStart().finally(() => {
    starting = undefined;
  });
  return starting;
}

async function doStart(): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const interpreter = await resolveInterpreter(folder, output);
  output.appendLine(`anchor-ls: interpreter ${interpreter.command} (from ${interpreter.source})`);
  if (interpreter.refused) {
    status.failed("untrusted workspace");
    output.appendLine(`anchor-ls: not started: ${interpreter.refused}`);
    void vscode.window
      .showWarningMessage(`anchor-ls: ${interpreter.refused}`, "Manage Workspace Trust")
      .then((pick) => pick && vscode.commands.executeCommand("workbench.trust.manage"));
    return;
  }
  await updateEnvironment();
  const problem = await checkServerInstalled(interpreter, home);
  if (problem) {
    status.failed(problem.short);
    output.appendLine(problem.message);
    void explainStartFailure(interpreter, problem.message, true);
    return;
  }

  const launch = serverLaunch(interpreter, home, process.env);
  const serverOptions: ServerOptions = {
    command: launch.command,
    args: launch.args,
    // No `transport`: stdio pipes without the `--stdio` argument the client would append.
    options: { cwd: launch.cwd, env: launch.env },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "python" }],
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher("**/*.py"),
    },
    initializationOptions: { [SECTION]: serverSettings(folder?.uri, environment) },
    middleware: {
      // After a settings change the server re-renders and asks for a refresh; the next
      // hints or lenses are the moment its policy is settled.
      provideCodeLenses: (document, token, next) => {
        policyAfterRefresh();
        return next(document, token);
      },
      provideInlayHints: (document, range, token, next) => {
        policyAfterRefresh();
        return next(document, range, token);
      },
      workspace: {
        // Answer workspace/configuration for our section with the server's keys only
        // (interpreter and trace are the client's business).
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) {
            return answers;
          }
          return params.items.map((item, i) =>
            item.section === SECTION
              ? serverSettings(
                  item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined,
                  environment
                )
              : answers[i]
          );
        },
      },
    },
    outputChannel: output,
    initializationFailedHandler: (error) => {
      void explainStartFailure(interpreter, String(error?.message ?? error));
      return false;
    },
  };

  const c = new LanguageClient("anchorLs", "anchor-ls", serverOptions, clientOptions);
  c.onDidChangeState((e) => {
    if (e.newState === State.Stopped && client === c) {
      status.failed("server stopped");
    }
  });
  client = c;
  status.starting();
  try {
    await c.start();
  } catch (err) {
    client = undefined;
    status.failed("server failed to start");
    void explainStartFailure(interpreter, String((err as Error)?.message ?? err));
    return;
  }
  trackProgress(c);
  status.ready();
  // Not awaited: serverCommand waits for `starting`, which is this very function.
  void refreshPolicy();
}

/** Resolve the environment the server reads libraries from (see resolveEnvironment). */
async function updateEnvironment(): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const env = await resolveEnvironment(folder, output);
  if (env.refused) {
    output.appendLine(`anchor-ls: ${env.refused}`);
    void vscode.window.showWarningMessage(`anchor-ls: ${env.refused}`);
  }
  environment = env.python;
  output.appendLine(
    `anchor-ls: libraries from ${environment ?? "the server's own environment"} (from ${env.source})`
  );
}

/** Live settings: the server re-renders and asks the editor to refresh hints and lenses. */
async function pushSettings(): Promise<void> {
  const c = client;
  if (!c || !c.isRunning()) {
    return;
  }
  const folder = vscode.workspace.workspaceFolders?.[0];
  settingsChanged = true;
  await c.sendNotification(DidChangeConfigurationNotification.type, {
    settings: { [SECTION]: serverSettings(folder?.uri, environment) },
  });
  setTimeout(() => policyAfterRefresh(), 3000); // in case no editor shows hints or lenses
}

let settingsChanged = false;
let policyTimer: NodeJS.Timeout | undefined;

function policyAfterRefresh(): void {
  if (!settingsChanged) {
    return;
  }
  if (policyTimer) {
    clearTimeout(policyTimer);
  }
  policyTimer = setTimeout(() => {
    policyTimer = undefined;
    settingsChanged = false;
    void refreshPolicy();
  }, 300);
}

async function stop(): Promise<void> {
  const c = client;
  client = undefined;
  if (c) {
    try {
      await c.stop(5000);
    } catch (err) {
      output.appendLine(`anchor-ls: stop failed: ${err}`);
    }
  }
}

async function restart(): Promise<void> {
  await stop();
  await start();
}

/** Show work-done progress of the index in the status bar instead of a notification. */
function trackProgress(c: LanguageClient): void {
  c.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
    const token = params.token;
    const sub = c.onProgress(WorkDoneProgress.type, token, (value) => {
      if (value.kind === "begin") {
        status.progress(value.title, value.message, value.percentage);
      } else if (value.kind === "report") {
        status.progress(undefined, value.message, value.percentage);
      } else {
        sub.dispose();
        status.ready();
        void refreshPolicy();
      }
    });
  });
}

async function refreshPolicy(): Promise<void> {
  const stats = await serverCommand<Record<string, unknown>>("anchor.stats", [], true);
  if (stats && typeof stats === "object") {
    status.policy(describePolicy(stats));
  }
}

/** "auto→topo": the policy asked for and the one the server resolved it to. */
export function describePolicy(stats: Record<string, unknown>): string {
  const asked =
    stringField(stats["settings"], "policy") ??
    vscode.workspace.getConfiguration(SECTION).get<string>("policy", "auto");
  const resolved = new Set<string>();
  const folders = Array.isArray(stats["folders"]) ? stats["folders"] : [];
  for (const f of folders) {
    const name = stringField((f as Record<string, unknown>)?.["policy"], "name");
    if (name) {
      resolved.add(name);
    }
  }
  const top = stats["policy"];
  if (typeof top === "string") {
    resolved.add(top);
  } else {
    const name = stringField(top, "name");
    if (name) {
      resolved.add(name);
    }
  }
  const chosen = [...resolved].join(",");
  if (!chosen || chosen === asked) {
    return asked;
  }
  return `${asked}→${chosen}`;
}

function stringField(obj: unknown, key: string): string | undefined {
  if (obj && typeof obj === "object") {
    const v = (obj as Record<string, unknown>)[key];
    return typeof v === "string" ? v : undefined;
  }
  return undefined;
}

async function serverCommand<T = unknown>(
  command: string,
  args: unknown[],
  quiet = false
): Promise<T | undefined> {
  if (starting) {
    await starting;
  }
  const c = client;
  if (!c || !c.isRunning()) {
    if (!quiet) {
      void vscode.window.showErrorMessage(
        "anchor-ls is not running. Run 'anchor-ls: Restart Server' after fixing the interpreter.",
        "Show Log"
      ).then((pick) => pick && output.show());
    }
    return undefined;
  }
  try {
    return (await c.sendRequest("workspace/executeCommand", {
      command,
      arguments: args,
    })) as T;
  } catch (err) {
    const msg = (err as Error)?.message ?? String(err);
    output.appendLine(`anchor-ls: ${command} failed: ${msg}`);
    if (!quiet) {
      void vscode.window.showErrorMessage(`anchor-ls: ${command} failed: ${msg}`);
    }
    return undefined;
  }
}

async function fileCommand(command: string): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "python") {
    void vscode.window.showWarningMessage("anchor-ls: open a Python file first.");
    return;
  }
  // The version lets the server refuse an edit computed against older text.
  await serverCommand(command, [
    { uri: editor.document.uri.toString(), version: editor.document.version },
  ]);
}

async function showStats(): Promise<void> {
  const stats = await serverCommand<Record<string, unknown>>("anchor.stats", []);
  if (stats === undefined) {
    return;
  }
  if (stats && typeof stats === "object") {
    status.policy(describePolicy(stats));
  }
  statsView.update(JSON.stringify(stats, null, 2) + "\n");
  const doc = await vscode.workspace.openTextDocument(StatsView.uri);
  await vscode.languages.setTextDocumentLanguage(doc, "json");
  await vscode.window.showTextDocument(doc, { preview: true });
}

/** Lens command: [uri, {line, character}, [{uri, range}]] -> the references peek view. */
async function showLocations(uri: unknown, position: unknown, locations: unknown): Promise<void> {
  const target = vscode.Uri.parse(String(uri));
  const pos = toPosition(position);
  const locs = toLocations(locations);
  await vscode.commands.executeCommand("editor.action.showReferences", target, pos, locs);
}

async function explainStartFailure(
  interpreter: Interpreter,
  detail: string,
  complete = false
): Promise<void> {
  const install = `${interpreter.display} -m pip install anchor-ls`;
  const message = complete
    ? detail
    : `anchor-ls could not start with ${interpreter.display}: ${detail.replace(/\.$/, "")}. ` +
      `Check that anchor-ls is installed there (${install}) or set "anchorLs.interpreter" ` +
      `to a Python that has it, then run "anchor-ls: Restart Server".`;
  const pick = await vscode.window.showErrorMessage(
    message,
    "Open Settings",
    "Copy Install Command",
    "Show Log"
  );
  if (pick === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "anchorLs.interpreter");
  } else if (pick === "Copy Install Command") {
    await vscode.env.clipboard.writeText(install);
  } else if (pick === "Show Log") {
    output.show();
  }
}

/** When the Python extension's active interpreter changes in a trusted workspace: restart
 * when no setting pins the server's interpreter, else send the server the new environment. */
function watchPythonExtension(context: vscode.ExtensionContext): void {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return;
  }
  void Promise.resolve(ext.activate()).then((api: any) => {
    const event = api?.environments?.onDidChangeActiveEnvironmentPath;
    if (typeof event !== "function") {
      return;
    }
    context.subscriptions.push(
      event(() => {
        const trusted = vscode.workspace.isTrusted; // else its choice is not used
        const values = vscode.workspace.getConfiguration(SECTION).inspect<string>("interpreter");
        if (trusted && !interpreterSetting(values, trusted)) {
          void restart(); // resolves the environment again too
        } else if (trusted) {
          void updateEnvironment().then(pushSettings);
        }
      })
    );
  }, () => undefined);
}
