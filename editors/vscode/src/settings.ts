// The anchorLs settings the server reads (everything but the client-only ones).
import * as vscode from "vscode";

export const SECTION = "anchorLs";

export interface ServerSettings {
  policy: string;
  maxItems: number;
  inlayHints: boolean;
  codeLens: boolean;
  hintFields: string[];
  lensFields: string[];
  exclude: string[];
  cacheDir: string | null;
  sourceRoots: string[];
  python: string | null;
}

/** The server's settings; `python` is the environment the extension resolved (interpreter.ts:
 * resolveEnvironment), not the raw `anchorLs.python` value. */
export function serverSettings(scope: vscode.Uri | undefined, python: string | undefined): ServerSettings {
  const cfg = vscode.workspace.getConfiguration(SECTION, scope);
  return {
    policy: cfg.get<string>("policy", "auto"),
    maxItems: cfg.get<number>("maxItems", 8),
    inlayHints: cfg.get<boolean>("inlayHints", true),
    codeLens: cfg.get<boolean>("codeLens", true),
    hintFields: cfg.get<string[]>("hintFields", ["CALLED_BY", "BASE", "DERIVED"]),
    lensFields: cfg.get<string[]>("lensFields", [
      "CALLED_BY",
      "REFERENCED_BY",
      "CALLS",
      "DERIVED",
      "OVERRIDES",
      "OVERRIDDEN_BY",
    ]),
    exclude: cfg.get<string[]>("exclude", []),
    cacheDir: cfg.get<string | null>("cacheDir", null) || null,
    sourceRoots: cfg.get<string[]>("sourceRoots", []),
    python: python ?? null,
  };
}
