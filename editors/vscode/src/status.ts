// Status bar item: indexing progress while the server builds its index, then the active policy.
import * as vscode from "vscode";

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private policyText = "";

  constructor() {
    this.item = vscode.window.createStatusBarItem("anchorLs.status", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "anchor-ls";
    this.item.command = "anchorLs.showStats";
    this.starting();
    this.item.show();
  }

  starting(): void {
    this.set("$(sync~spin) anchor-ls", "anchor-ls: starting the server");
  }

  progress(title: string | undefined, message: string | undefined, percentage: number | undefined): void {
    const pct = percentage === undefined ? "" : ` ${Math.round(percentage)}%`;
    const what = title ?? "indexing";
    this.set(
      `$(sync~spin) anchor-ls: ${what.toLowerCase()}${pct}`,
      `anchor-ls: ${what}${message ? ` (${message})` : ""}`
    );
  }

  ready(): void {
    const policy = this.policyText ? ` ${this.policyText}` : "";
    this.set(`$(references) anchor-ls${policy}`, "anchor-ls: index ready. Click for index stats.");
  }

  policy(text: string): void {
    this.policyText = text;
    if (!this.item.text.includes("sync~spin")) {
      this.set(
        `$(references) anchor-ls: ${text}`,
        `anchor-ls: index ready, tag policy ${text}. Click for index stats.`
      );
    }
  }

  failed(reason: string): void {
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    this.item.text = `$(error) anchor-ls: ${reason}`;
    this.item.tooltip = `anchor-ls: ${reason}. Click 'anchor-ls: Restart Server' after fixing it.`;
    this.item.command = "anchorLs.restartServer";
  }

  dispose(): void {
    this.item.dispose();
  }

  private set(text: string, tooltip: string): void {
    this.item.backgroundColor = undefined;
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.command = "anchorLs.showStats";
  }
}
