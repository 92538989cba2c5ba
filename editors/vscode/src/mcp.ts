// Registers `anchor-ls mcp` with the editor's MCP support, one server per workspace folder, so
// that agent mode can ask the graph (callers, impact, outline...) without configuration.
// The API is VS Code's `lm.registerMcpServerDefinitionProvider` (1.99+); package.json declares
// the provider under both names the editors look for (`modelContextServerCollections` before
// 1.101, `mcpServerDefinitionProviders` since). An editor without the API, or one that refuses
// the registration, gets nothing registered and a line in the output channel saying so.
import * as vscode from "vscode";
import { resolveEnvironment, resolveInterpreter } from "./interpreter";
import { SECTION } from "./settings";

/** The id package.json's `contributes.mcpServerDefinitionProviders` declares. */
export const MCP_PROVIDER_ID = "anchorLs.mcpServers";

/** True when the provider was registered; false where the editor has no MCP server API. */
export function registerMcpServers(
  context: vscode.ExtensionContext,
  log: vscode.OutputChannel
): boolean {
  // Typed loosely: the extension builds against an older @types/vscode (engines ^1.82).
  const lm: any = (vscode as any).lm;
  const Definition: any = (vscode as any).McpStdioServerDefinition;
  if (typeof lm?.registerMcpServerDefinitionProvider !== "function" || typeof Definition !== "function") {
    log.appendLine(
      `anchor-ls: this editor (VS Code ${vscode.version}) has no MCP server API (VS Code 1.99+); ` +
        "the anchor-ls MCP server is not registered (run `anchor-ls mcp` from an MCP client instead)"
    );
    return false;
  }
  const changed = new vscode.EventEmitter<void>();
  let registration: vscode.Disposable;
  try {
    registration = lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () => definitions(context, log, Definition),
    });
  } catch (err) {
    // e.g. an editor that wants the provider declared under a contribution name we lack
    changed.dispose();
    log.appendLine(
      `anchor-ls: this editor (VS Code ${vscode.version}) has no MCP server API open to ` +
        `extensions (${err}); the anchor-ls MCP server is not registered`
    );
    return false;
  }
  context.subscriptions.push(
    registration,
    changed,
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (
        e.affectsConfiguration(`${SECTION}.interpreter`) ||
        e.affectsConfiguration(`${SECTION}.python`)
      ) {
        changed.fire();
      }
    })
  );
  log.appendLine(`anchor-ls: MCP server definitions registered (${MCP_PROVIDER_ID})`);
  return true;
}

/** One stdio server per folder: the interpreter the language server runs on, with -P (the
 * working directory stays off sys.path), started in the extension's storage folder so that
 * nothing of the repository is importable and nothing is written into it but its cache. */
async function definitions(
  context: vscode.ExtensionContext,
  log: vscode.OutputChannel,
  Definition: any
): Promise<unknown[]> {
  const cwd = context.globalStorageUri;
  await vscode.workspace.fs.createDirectory(cwd);
  const version: string | undefined = context.extension?.packageJSON?.version;
  const found: unknown[] = [];
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    const interpreter = await resolveInterpreter(folder, log);
    // An interpreter the workspace-trust rules refuse (a repository's own, untrusted) is
    // never offered: the language server says why.
    const refused: string | undefined = (interpreter as { refused?: string }).refused;
    if (refused) {
      log.appendLine(`anchor-ls: no MCP server for ${folder.name}: ${refused}`);
      continue;
    }
    const args = [...interpreter.args, "-P", "-m", "anchor_ls", "mcp", folder.uri.fsPath];
    const environment = await resolveEnvironment(folder, log); // the language server's `python`
    if (environment.python) {
      args.push("--python", environment.python);
    }
    const env = { PYTHONSAFEPATH: "1" }; // -P for the processes it starts too
    const definition = new Definition(`anchor-ls: ${folder.name}`, interpreter.command, args, env, version);
    definition.cwd = cwd;
    found.push(definition);
  }
  return found;
}
