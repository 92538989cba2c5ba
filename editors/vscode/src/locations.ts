// Conversions of the JSON arguments of `anchor.showLocations` into VS Code types.
import * as vscode from "vscode";

interface JsonPosition {
  line: number;
  character: number;
}

interface JsonLocation {
  uri: string;
  range: { start: JsonPosition; end: JsonPosition };
}

export function toPosition(value: unknown): vscode.Position {
  const p = value as Partial<JsonPosition> | undefined;
  return new vscode.Position(Number(p?.line ?? 0), Number(p?.character ?? 0));
}

export function toLocations(value: unknown): vscode.Location[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value
    .filter((l): l is JsonLocation => !!l && typeof (l as JsonLocation).uri === "string")
    .map(
      (l) =>
        new vscode.Location(
          vscode.Uri.parse(l.uri),
          new vscode.Range(toPosition(l.range?.start), toPosition(l.range?.end ?? l.range?.start))
        )
    );
}
