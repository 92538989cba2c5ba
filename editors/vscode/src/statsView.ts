// A read-only document with the latest index statistics (no "save changes?" on close).
import * as vscode from "vscode";

export class StatsView implements vscode.TextDocumentContentProvider {
  static readonly scheme = "anchor-ls";
  static readonly uri = vscode.Uri.parse("anchor-ls:/index-stats.json");
  private text = "{}\n";
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  update(text: string): void {
    this.text = text;
    this.changed.fire(StatsView.uri);
  }

  provideTextDocumentContent(): string {
    return this.text;
  }
}
