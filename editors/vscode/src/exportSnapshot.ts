// Export Tagged Snapshot…: pick a parent folder; the snapshot goes to a new folder inside it.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";

export async function exportSnapshot(run: (out: string) => Promise<unknown>): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) {
    void vscode.window.showWarningMessage("anchor-ls: open a folder to export it.");
    return;
  }
  const picked = await vscode.window.showOpenDialog({
    canSelectFiles: false,
    canSelectFolders: true,
    canSelectMany: false,
    openLabel: "Export Here",
    title: "Folder to create the tagged snapshot in",
    defaultUri: vscode.Uri.file(path.dirname(folder.uri.fsPath)),
  });
  if (!picked || picked.length === 0) {
    return;
  }
  const suggested = freshName(picked[0].fsPath, `${folder.name}-tagged`);
  const name = await vscode.window.showInputBox({
    title: "Name of the new snapshot folder",
    value: suggested,
    validateInput: (v) => {
      if (!v.trim() || /[\\/]/.test(v)) {
        return "A folder name, without slashes";
      }
      return fs.existsSync(path.join(picked[0].fsPath, v)) ? "That folder exists already" : undefined;
    },
  });
  if (!name) {
    return;
  }
  const out = path.join(picked[0].fsPath, name);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `anchor-ls: exporting to ${out}` },
    () => run(out)
  );
  if (result === undefined || (result as { ok?: boolean } | null)?.ok === false) {
    return; // the server has told the user why
  }
  const problems = exportProblems(result);
  if (problems.length > 0) {
    void vscode.window.showWarningMessage(
      `anchor-ls: export of ${folder.name}: ${problems.slice(0, 5).join("; ")}` +
        (problems.length > 5 ? ` (+${problems.length - 5} more)` : "")
    );
  }
  const pick = await vscode.window.showInformationMessage(
    `anchor-ls: tagged snapshot written to ${out}`,
    "Open in New Window"
  );
  if (pick) {
    await vscode.commands.executeCommand("vscode.openFolder", vscode.Uri.file(out), true);
  }
}

/** The server's per-file notes ("changed since it was indexed; copied untagged", …). */
function exportProblems(result: unknown): string[] {
  const exports = (result as { exports?: { problems?: unknown[] }[] } | null)?.exports ?? [];
  return exports.flatMap((e) =>
    (Array.isArray(e.problems) ? e.problems : []).map((p) =>
      typeof p === "string" ? p : JSON.stringify(p)
    )
  );
}

function freshName(parent: string, base: string): string {
  let name = base;
  for (let i = 2; fs.existsSync(path.join(parent, name)); i++) {
    name = `${base}-${i}`;
  }
  return name;
}
