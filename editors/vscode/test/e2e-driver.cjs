// Browser half of test/e2e.sh: drives code-server in headless Chromium with playwright-core
// and asserts on what the editor renders. Exits non-zero with a reason on the first failure.
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require("playwright-core");

const URL = process.env.E2E_URL;
const RUN = process.env.E2E_RUN;
const SHOT = process.env.E2E_SHOT;
const CALLERS = (process.env.E2E_CALLERS || "").split(",").filter(Boolean);
const TIMEOUT = 180_000;

let step = "start";
const t0 = Date.now();
function log(msg) {
  console.log(`[driver ${Math.round((Date.now() - t0) / 1000)}s] ${msg}`);
}

async function main() {
  const context = await chromium.launchPersistentContext(path.join(RUN, "chromium"), {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 1400, height: 900 },
  });
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(TIMEOUT);
  try {
    await run(page);
  } catch (err) {
    await page.screenshot({ path: SHOT.replace(/\.png$/, "") + "-failure.png" }).catch(() => {});
    console.error(`[driver] FAILED at step "${step}": ${err && err.stack ? err.stack : err}`);
    process.exitCode = 1;
  } finally {
    await context.close();
  }
}

async function run(page) {
  step = "load the workbench";
  await page.goto(URL);
  await page.waitForSelector(".monaco-workbench .part.editor", { timeout: TIMEOUT });
  log("workbench loaded");
  if (process.env.E2E_MODE === "restricted") {
    await runRestricted(page);
    return;
  }
  if (process.env.E2E_MODE === "nested") {
    await runNested(page);
    return;
  }
  if (process.env.E2E_MODE === "loose") {
    await runLoose(page);
    return;
  }
  if (process.env.E2E_MODE === "environment") {
    await runEnvironment(page);
    return;
  }

  step = "open pkg/service.py";
  await openFile(page, "service.py", "pkg");
  await page.waitForSelector(".monaco-editor .view-lines");
  log("pkg/service.py open");

  step = "inlay hint with a caller on the `def checkout` line";
  const hintLine = await waitFor(
    page,
    () => {
      const lines = [...document.querySelectorAll(".monaco-editor .view-line")];
      const line = lines.find((l) => /^\s*def checkout\(/.test((l.textContent || "").replace(/\u00a0/g, " ")));
      return line ? line.textContent.replace(/\u00a0/g, " ") : null;
    },
    // Every caller, after the header's colon (the hint may first show a partial index).
    (text) => text && CALLERS.every((c) => text.split(":").slice(1).join(":").includes(c))
  );
  const hintText = await page.evaluate(() => {
    const parts = [...document.querySelectorAll(".monaco-editor .view-line")]
      .find((l) => /^\s*def checkout\(/.test((l.textContent || "").replace(/\u00a0/g, " ")));
    // Inlay hints are injected text: spans whose class names monaco generates for them.
    return [...parts.querySelectorAll("span")]
      .filter((s) => s.children.length === 0 && /inlay|dyn-rule|ced-/.test(s.className))
      .map((s) => s.textContent)
      .join("");
  });
  log(`def checkout line: ${JSON.stringify(hintLine)}`);
  log(`inlay hint text: ${JSON.stringify(hintText)}`);
  const missing = CALLERS.filter((c) => !hintText.includes(c));
  if (CALLERS.length === 0 || missing.length > 0) {
    throw new Error(`the inlay hint of checkout lacks callers ${missing}: ${JSON.stringify(hintText)}`);
  }

  step = "code lenses";
  const lenses = await waitFor(page, defLens, (found) => found && found.text, TIMEOUT, "checkout");
  log(`code lenses: ${JSON.stringify(lenses.all)}; above def checkout: ${JSON.stringify(lenses.text)}`);
  if (!new RegExp(`^${CALLERS.length} callers?\\b`).test(lenses.text)) {
    throw new Error(`the lens of checkout should count ${CALLERS.length} callers: ${JSON.stringify(lenses)}`);
  }

  step = "status bar shows the policy";
  const statusText = await waitFor(
    page,
    anchorStatus,
    (text) => text && /auto|topo|inv|dense/.test(text)
  );
  log(`status bar: ${JSON.stringify(statusText)}`);

  await page.screenshot({ path: SHOT });
  log(`screenshot ${SHOT}`);

  step = "hovering a caller named in the hint shows its tooltip and a link to it";
  // The server leaves tooltips and the links of hint names to inlayHint/resolve for VS
  // Code, which resolves a hint when the pointer rests on it: the hover then lists the
  // callers and offers to go to the definition (shown only for a part with a location).
  const target = CALLERS.find((c) => !c.includes(".")) || CALLERS[0];
  const box = await page.evaluate((name) => {
    const line = [...document.querySelectorAll(".monaco-editor .view-line")].find((l) =>
      /^\s*def checkout\(/.test((l.textContent || "").replace(/\u00a0/g, " "))
    );
    const span =
      line &&
      [...line.querySelectorAll("span")].find(
        (s) => s.children.length === 0 && /inlay|dyn-rule|ced-/.test(s.className) && s.textContent === name
      );
    if (!span) {
      return null;
    }
    const r = span.getBoundingClientRect();
    return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
  }, target);
  if (!box) {
    throw new Error(`the hint of checkout has no part named ${target}`);
  }
  await page.mouse.move(box.x, box.y - 2);
  await page.mouse.move(box.x, box.y);
  const hover = await waitFor(
    page,
    () => {
      const widget = document.querySelector(".monaco-hover:not(.hidden)");
      return widget ? (widget.textContent || "").replace(/\u00a0/g, " ") : null;
    },
    (t) => t && t.includes("CALLED_BY") && /Go to Definition/.test(t),
    30_000
  );
  log(`hover on ${target}: ${JSON.stringify(hover)}`);
  if (!CALLERS.every((c) => hover.includes(c))) {
    throw new Error(`the hover should list every caller (${CALLERS}): ${hover}`);
  }
  await page.mouse.move(5, 5);
  await page.keyboard.press("Escape");

  step = "a code lens opens the references view (anchor.showLocations)";
  // On a loaded machine VS Code sometimes keeps showing the commands of a lens list it has
  // released: the click does nothing (exthost log: "Actual command not found"), and clicking
  // again alone did not help (three clicks, the same stale command). The editor asks for its
  // lenses again when its text gets the focus back: this step refocuses it and clicks again,
  // up to three times in all.
  for (let click = 1; ; click++) {
    const lensLink = await page.evaluate(defLens, "checkout");
    await page.mouse.click(lensLink.x, lensLink.y);
    try {
      await page.waitForSelector(".monaco-editor .peekview-widget .ref-tree, .reference-zone-widget", {
        timeout: 10_000,
      });
      break;
    } catch (err) {
      if (click === 3) {
        throw err;
      }
      log(`click ${click} on the lens of checkout opened no references view: focus back, again`);
      await runCommand(page, "View: Focus Active Editor Group");
      await page.waitForTimeout(2000);
    }
  }
  const peekTitle = await page
    .locator(".peekview-widget .peekview-title")
    .first()
    .textContent()
    .catch(() => "");
  log(`references view open: ${JSON.stringify((peekTitle || "").trim())}`);
  const shown = /\((\d+)\)/.exec(peekTitle || "");
  if (!shown || Number(shown[1]) < CALLERS.length) {
    throw new Error(`the references view should list the ${CALLERS.length} call sites: ${peekTitle}`);
  }
  await page.screenshot({ path: SHOT.replace(/\.png$/, "") + "-references.png" });
  await page.keyboard.press("Escape");

  step = "Show Index Stats returns the server's statistics";
  await runCommand(page, "anchor-ls: Show Index Stats");
  const stats = await waitFor(
    page,
    () => {
      const ed = [...document.querySelectorAll(".monaco-editor .view-lines")].map((v) =>
        (v.textContent || "").replace(/\u00a0/g, " ")
      );
      return ed.find((t) => t.includes('"policy"')) || null;
    },
    (t) => !!t,
    30_000
  );
  log(`stats editor: ${JSON.stringify(stats.slice(0, 160))}…`);

  step = "MCP: List Servers lists the anchor-ls server of the workspace folder";
  if (versionAtLeast(process.env.E2E_CODE_VERSION || "0", "1.99")) {
    const label = `anchor-ls: ${path.basename(process.env.E2E_WS)}`;
    await runCommand(page, "MCP: List Servers");
    const servers = await waitFor(
      page,
      () =>
        [...document.querySelectorAll(".quick-input-list .monaco-list-row")].map((r) =>
          (r.textContent || "").replace(/\u00a0/g, " ")
        ),
      (rows) => rows.some((t) => t.includes(label)),
      60_000
    );
    log(`MCP servers listed: ${JSON.stringify(servers)}`);
    await page.keyboard.press("Escape");
  } else {
    log(`MCP: Code ${process.env.E2E_CODE_VERSION} has no MCP server list to check`);
  }

  step = "settings are live: hintFields [CALLS] turns the hint into callees";
  const settingsFile = path.join(RUN, "data", "User", "settings.json");
  const userSettings = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
  await editUserSettings(page, { ...userSettings, "anchorLs.hintFields": ["CALLS"] });
  await openFile(page, "service.py", "pkg");
  const calleesLine = await waitFor(
    page,
    () => {
      const line = [...document.querySelectorAll(".monaco-editor .view-line")]
        .map((l) => (l.textContent || "").replace(/\u00a0/g, " "))
        .find((t) => /^\s*def checkout\(/.test(t));
      return line || null;
    },
    (t) => t && t.includes("→") && !t.includes("←"),
    60_000
  );
  log(`after hintFields=[CALLS]: ${JSON.stringify(calleesLine)}`);

  step = "settings are live: policy inv shows in the status bar";
  await editUserSettings(page, { ...userSettings, "anchorLs.policy": "inv" });
  await openFile(page, "service.py", "pkg");
  const invStatus = await waitFor(
    page,
    anchorStatus,
    (text) => text && /\binv\b/.test(text),
    60_000
  );
  log(`status bar after policy=inv: ${JSON.stringify(invStatus)}`);

  step = "Materialize Tags in File applies the server's edit to the buffer";
  await openFile(page, "service.py", "pkg");
  await runCommand(page, "anchor-ls: Materialize Tags in File");
  await waitFor(
    page,
    () => {
      const lines = [...document.querySelectorAll(".monaco-editor .view-line")].map((l) => (l.textContent || "").replace(/\u00a0/g, " "));
      return lines.filter((t) => t.includes("=== CodeAnchor ")).length;
    },
    (n) => n >= 1,
    30_000
  );
  log("materialized tag block visible in the editor");

  step = "Strip Tags in File removes them again";
  await runCommand(page, "anchor-ls: Strip Tags in File");
  await waitFor(
    page,
    () => {
      const lines = [...document.querySelectorAll(".monaco-editor .view-line")].map((l) => (l.textContent || "").replace(/\u00a0/g, " "));
      return lines.filter((t) => t.includes("=== CodeAnchor ")).length;
    },
    (n) => n === 0,
    30_000
  );
  log("tag blocks stripped");

  step = "Export Tagged Snapshot… writes a tagged copy into a new folder";
  const parent = path.join(RUN, "exports");
  fs.mkdirSync(parent, { recursive: true });
  await runCommand(page, "anchor-ls: Export Tagged Snapshot…");
  // code-server's folder picker is VS Code's simple file dialog: a path in a quick input.
  const dialog = page.locator(".quick-input-widget input");
  await dialog.waitFor({ state: "visible" });
  // The dialog fills in its own start folder once it has listed it, which can land after
  // our fill on a loaded machine: type until the path stays, then accept it.
  for (let attempt = 0; ; attempt++) {
    await dialog.fill(parent + "/");
    await page.waitForTimeout(1000);
    if ((await dialog.inputValue()) === parent + "/") {
      break;
    }
    if (attempt === 10) {
      throw new Error(`the folder picker kept replacing ${parent}/ with ${await dialog.inputValue()}`);
    }
  }
  await page.keyboard.press("Enter");
  const nameBox = page.locator(".quick-input-widget input");
  await waitFor(page, () => {
    const t = document.querySelector(".quick-input-widget .quick-input-title");
    return t ? t.textContent : null;
  }, (t) => t && t.includes("Name of the new snapshot folder"), 30_000);
  const snapshotName = await nameBox.inputValue();
  await page.keyboard.press("Enter");
  const snapshot = path.join(parent, snapshotName);
  const exported = await waitForFile(path.join(snapshot, "pkg", "service.py"), 60_000);
  if (!exported.includes("# === CodeAnchor pkg/service.py:checkout")) {
    throw new Error(`the exported service.py has no tag block for checkout:\n${exported.slice(0, 400)}`);
  }
  const original = fs.readFileSync(path.join(process.env.E2E_WS, "pkg", "service.py"), "utf8");
  if (original.includes("=== CodeAnchor ")) {
    throw new Error("the export changed the workspace file");
  }
  log(`exported to ${snapshot} (service.py tagged, workspace untouched)`);

  step = "an interpreter without anchor-ls gets a clear message with the fix";
  const bare = process.env.E2E_BARE_PYTHON;
  await editUserSettings(page, { ...userSettings, "anchorLs.interpreter": bare });
  const toast = await waitFor(
    page,
    notifications,
    (ts) => ts.some((t) => t.includes("not installed")),
    60_000
  ).then((ts) => ts.find((t) => t.includes("not installed")));
  log(`notification: ${JSON.stringify(toast)}`);
  if (!toast.includes(bare) || !toast.includes("pip install anchor-ls") || !toast.includes("anchorLs.interpreter")) {
    throw new Error(`the message should name ${bare}, the install command and the setting: ${toast}`);
  }
  const failedStatus = await waitFor(
    page,
    anchorStatus,
    (t) => t && t.includes("not installed"),
    30_000
  );
  log(`status bar: ${JSON.stringify(failedStatus)}`);
  await page.screenshot({ path: SHOT.replace(/\.png$/, "") + "-not-installed.png" });
}

/** An untrusted workspace: Restricted Mode shows, and the server still renders the hints
 * (started with the user's interpreter: e2e.sh checks the workspace's never ran). */
async function runRestricted(page) {
  step = "the workspace opens in Restricted Mode";
  const restricted = await waitFor(
    page,
    () => (document.body.innerText || "").includes("Restricted Mode"),
    (seen) => seen,
    60_000
  );
  log(`Restricted Mode shown: ${restricted}`);

  step = "inlay hint with the callers in Restricted Mode";
  await openFile(page, "service.py", "pkg");
  const hintLine = await waitFor(
    page,
    () => {
      const lines = [...document.querySelectorAll(".monaco-editor .view-line")];
      const line = lines.find((l) => /^\s*def checkout\(/.test((l.textContent || "").replace(/\u00a0/g, " ")));
      return line ? line.textContent.replace(/\u00a0/g, " ") : null;
    },
    (text) => text && CALLERS.every((c) => text.split(":").slice(1).join(":").includes(c))
  );
  log(`def checkout line: ${JSON.stringify(hintLine)}`);
  await page.screenshot({ path: SHOT });

  step = "a user setting that names the workspace's own interpreter is refused there";
  const settingsFile = path.join(RUN, "data", "User", "settings.json");
  const userSettings = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
  await editUserSettings(page, { ...userSettings, "anchorLs.interpreter": "${workspaceFolder}/.venv/bin/python" });
  const toast = await waitFor(
    page,
    notifications,
    (ts) => ts.some((t) => t.includes("not trusted")),
    60_000
  ).then((ts) => ts.find((t) => t.includes("not trusted")));
  log(`notification: ${JSON.stringify(toast)}`);
  const refusedStatus = await waitFor(
    page,
    anchorStatus,
    (t) => t && t.includes("untrusted workspace"),
    30_000
  );
  log(`status bar: ${JSON.stringify(refusedStatus)}`);
}

/** Flask's tutorial in small (fixtures/source_roots): a nested project with its own
 * pyproject.toml whose tests import its package as installed (`from flaskr.db import get_db`).
 * The lens of get_db counts its callers and the nested tests that call it. */
async function runNested(page) {
  step = "open examples/tutorial/flaskr/db.py";
  await openFile(page, "db.py", "flaskr");
  await page.waitForSelector(".monaco-editor .view-lines");

  step = "the lens of get_db counts the nested project's callers and its tests";
  const want = { callers: Number(process.env.E2E_NESTED_CALLERS), tests: Number(process.env.E2E_NESTED_TESTS) };
  const lens = await waitFor(
    page,
    defLens,
    (found) => found && found.text && /\btests?\b/.test(found.text),
    TIMEOUT,
    "get_db"
  );
  log(`code lenses above def get_db: ${JSON.stringify(lens.text)}`);
  const callers = /(\d+) callers?\b/.exec(lens.text);
  const tests = [...lens.text.matchAll(/(\d+) tests?\b/g)].map((m) => Number(m[1]));
  if (!callers || Number(callers[1]) !== want.callers || !tests.includes(want.tests)) {
    throw new Error(`the lens of get_db should count ${want.callers} callers and ${want.tests} tests: ${lens.text}`);
  }
  await page.screenshot({ path: SHOT });
}

/** A loose folder (no pyproject.toml, setup.py or .git) opened without a workspace folder:
 * the server indexes the opened file's project (its folder) and the hint names a caller
 * in a sibling file. */
async function runLoose(page) {
  step = "open the loose file (no workspace folder)";
  await page.locator(".tabs-container .tab.active", { hasText: process.env.E2E_LOOSE_NAME }).waitFor();
  await page.waitForSelector(".monaco-editor .view-lines");

  step = "inlay hint of the loose file names its caller in a sibling file";
  const hintLine = await waitFor(
    page,
    lineStarting,
    (text) => text && text.split(":").slice(1).join(":").includes(process.env.E2E_LOOSE_CALLER),
    TIMEOUT,
    `def ${process.env.E2E_LOOSE_DEF}(`
  );
  log(`loose def line: ${JSON.stringify(hintLine)}`);
  await page.screenshot({ path: SHOT });
}

/** A repository on libraries (fixtures/libraries/app) whose workspace settings name, as
 * anchorLs.python, an environment that has them (fixtures/libraries/site-packages): the
 * editor shows what only that environment gives (ArticleView's base View from Django, the
 * method its dispatch overrides); with the setting removed, and no restart, the index
 * without it (e2e.sh then checks that the workspace's own .venv/bin/python never ran). */
async function runEnvironment(page) {
  const hint = (line) => line.split(":").slice(1).join(":"); // after `class ArticleView(View):`

  step = "open shop/views.py";
  await openFile(page, "views.py", "shop");
  await page.waitForSelector(".monaco-editor .view-lines");

  step = "with anchorLs.python, the hint of ArticleView names its library base View";
  const withBase = await waitFor(
    page,
    lineStarting,
    (t) => t && hint(t).includes("▲ View") && hint(t).includes("SpecialArticleView"),
    TIMEOUT,
    "class ArticleView("
  );
  log(`class ArticleView line: ${JSON.stringify(withBase)}`);

  step = "with anchorLs.python, the lens of ArticleView.dispatch says it overrides View.dispatch";
  const withOverride = await waitFor(
    page,
    defLens,
    (found) => found && found.text && found.text.includes("overrides View.dispatch"),
    60_000,
    "dispatch"
  );
  log(`lens above def dispatch: ${JSON.stringify(withOverride.text)}`);
  await page.screenshot({ path: SHOT });

  step = "anchorLs.python removed from the workspace settings: the index without the environment";
  const settingsFile = path.join(process.env.E2E_WS, ".vscode", "settings.json");
  const settings = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
  delete settings["anchorLs.python"];
  await editSettings(page, "Preferences: Open Workspace Settings (JSON)", settingsFile, settings);
  await openFile(page, "views.py", "shop");
  const withoutBase = await waitFor(
    page,
    lineStarting,
    (t) => t && !hint(t).includes("▲") && hint(t).includes("SpecialArticleView"),
    60_000,
    "class ArticleView("
  );
  log(`class ArticleView line: ${JSON.stringify(withoutBase)}`);
  const withoutOverride = await waitFor(
    page,
    defLens,
    // Still `1 override` (SpecialArticleView's), and nothing it overrides: not even a bare
    // `overrides`, a lens listed before the change and resolved after it.
    (found) => {
      const text = (found && found.text) || "";
      const parts = text.split("|").map((p) => p.replace(/\u00a0/g, " ").trim());
      return parts.includes("1 override") && !parts.some((p) => p.startsWith("overrides"));
    },
    60_000,
    "dispatch"
  );
  log(`lens above def dispatch: ${JSON.stringify(withoutOverride.text)}`);
  await page.screenshot({ path: SHOT.replace(/\.png$/, "") + "-without.png" });
}

async function openFile(page, name, dirHint) {
  const tab = page.locator(".tabs-container .tab", { hasText: name }).first();
  if ((await tab.count()) > 0) {
    await tab.click();
  } else {
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible" });
    await input.fill(name);
    await page
      .locator(".quick-input-list .monaco-list-row", { hasText: dirHint })
      .filter({ hasText: name })
      .first()
      .waitFor({ state: "visible" });
    await page.keyboard.press("Enter");
  }
  await page.locator(".tabs-container .tab.active", { hasText: name }).waitFor({ timeout: 30_000 });
}

/** Replace the user settings the way a user does: in the settings.json editor, then save. */
async function editUserSettings(page, settings) {
  await editSettings(
    page,
    "Preferences: Open User Settings (JSON)",
    path.join(RUN, "data", "User", "settings.json"),
    settings
  );
}

/** Replace the settings of the settings.json that `command` opens (`file`): typed into its
 * editor, then saved. */
async function editSettings(page, command, file, settings) {
  await runCommand(page, command);
  await page.locator(".tabs-container .tab.active", { hasText: "settings.json" }).waitFor();
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(JSON.stringify(settings)); // one line: no auto-indent or auto-close
  await page.keyboard.press("Control+S");
  await page
    .locator(".tabs-container .tab.active:not(.dirty)", { hasText: "settings.json" })
    .waitFor({ timeout: 30_000 });
  // The saved file must be exactly what was typed (strict JSON, no editor additions).
  const end = Date.now() + 30_000;
  let text = "";
  while (Date.now() < end) {
    text = fs.readFileSync(file, "utf8");
    try {
      if (JSON.stringify(JSON.parse(text)) === JSON.stringify(settings)) {
        return;
      }
    } catch {
      // not saved yet, or not JSON
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${file} was not saved as typed: ${text}`);
}

async function runCommand(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
  await page.keyboard.press("Enter");
}

function versionAtLeast(version, least) {
  const a = version.split(".").map(Number);
  const b = least.split(".").map(Number);
  for (let i = 0; i < b.length; i++) {
    if ((a[i] || 0) !== b[i]) {
      return (a[i] || 0) > b[i];
    }
  }
  return true;
}

async function waitForFile(file, timeout) {
  const end = Date.now() + timeout;
  while (Date.now() < end) {
    if (fs.existsSync(file)) {
      return fs.readFileSync(file, "utf8");
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${file} did not appear`);
}

// In the page: the text of the first editor line that starts (after its indent) with prefix.
function lineStarting(prefix) {
  const line = [...document.querySelectorAll(".monaco-editor .view-line")]
    .map((l) => (l.textContent || "").replace(/\u00a0/g, " "))
    .find((t) => t.trimStart().startsWith(prefix));
  return line || null;
}

// In the page: the text of the anchor-ls status bar item (null while there is none).
function anchorStatus() {
  const item = [...document.querySelectorAll(".statusbar-item")].find((e) =>
    (e.textContent || "").includes("anchor-ls")
  );
  return item ? (item.textContent || "").trim() : null;
}

// In the page: the messages of the notifications shown.
function notifications() {
  return [...document.querySelectorAll(".notification-list-item-message")].map((e) =>
    (e.textContent || "").replace(/\u00a0/g, " ")
  );
}

/** Poll a page function until `ok(value)`; the last value goes into the error. */
async function waitFor(page, fn, ok, timeout = TIMEOUT, arg = undefined) {
  const end = Date.now() + timeout;
  let value;
  for (;;) {
    value = await page.evaluate(fn, arg);
    if (ok(value)) {
      return value;
    }
    if (Date.now() > end) {
      throw new Error(`timed out; last value ${JSON.stringify(value)}`);
    }
    await page.waitForTimeout(500);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

// In the page: the code lens of `def <name>` and the middle of its first link. Monaco adds
// the lenses' view zones to the DOM as they come, and a zone laid out for a line that
// scrolled away keeps its old place: the lens of `def <name>` is the one that ends
// nearest above that line, wherever it stands in the DOM or on the screen.
// (page.evaluate sends the function's text: it uses nothing from outside it.)
function defLens(name) {
  const line = [...document.querySelectorAll(".monaco-editor .view-line")].find((l) =>
    new RegExp(`^\\s*def ${name}\\(`).test((l.textContent || "").replace(/\u00a0/g, " "))
  );
  if (!line) return null;
  const top = line.getBoundingClientRect().top;
  const shown = [...document.querySelectorAll(".monaco-editor .codelens-decoration")].filter(
    (d) => (d.textContent || "").trim()
  );
  const above = shown
    .filter((d) => d.getBoundingClientRect().bottom <= top + 1)
    .sort((a, b) => b.getBoundingClientRect().bottom - a.getBoundingClientRect().bottom)[0];
  const link = above && above.querySelector("a");
  const r = link ? link.getBoundingClientRect() : null;
  return {
    all: shown.map((d) => d.textContent.trim()),
    text: above ? above.textContent.trim() : null,
    x: r ? r.x + r.width / 2 : null,
    y: r ? r.y + r.height / 2 : null,
  };
}
