// The explorer's tools, each checked as a person would with their eyes: the pass list's
// times and its "changed only" toggle, graph zoom, pan, search, edge hover, SVG export and
// cluster toggles, the graph diff and the text diff against any pass (side by side, folds),
// decisions linked with the graph and stepped with j/k, the editor's cursor marking its
// nodes, resizable panes, opening and dropping files (a debug_info export, an XLA dump),
// a crash of the worker; then Web app II's panes: the fusion lab and its overrides, the
// cost table and roofline, runs in the browser and on the server (on random inputs and on
// uploaded .npy files, against `hloscope run`), share links and tours.
const { test, expect } = require("@playwright/test");
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const { OUT, CORPUS, open, measures, pasteSource } = require("./helpers");

/** The graph's pan and zoom, from the transform on its <svg>. */
async function transform(page) {
  const t = await page.locator("[data-testid=graph] svg").evaluate((s) => s.style.transform);
  const m = t.match(/translate\(([-\d.]+)px, ([-\d.]+)px\) scale\(([-\d.]+)\)/);
  return { x: Number(m[1]), y: Number(m[2]), scale: Number(m[3]) };
}

test("the pass list shows each pass's time and can hide the passes that changed nothing", async ({ page }) => {
  await open(page, "#example=mlp");
  const rows = page.getByTestId("pass");
  const all = await rows.count();
  // Every pass after the input has a time in milliseconds, and some took a measurable one.
  const times = await page.getByTestId("pass-time").allTextContents();
  expect(times[0]).toBe("");
  for (const t of times.slice(1)) expect(t).toMatch(/^\d+\.\d$/);
  expect(times.slice(1).some((t) => Number(t) > 0)).toBe(true);
  const unchanged = await page.locator("[data-testid=pass].unchanged").count();
  expect(unchanged).toBeGreaterThan(0);
  await page.getByTestId("hide-unchanged").check();
  await expect(rows).toHaveCount(all - unchanged);
  await expect(page.locator("[data-testid=pass].unchanged")).toHaveCount(0);
  await expect(page).toHaveURL(/changed=1/);
  // Arrow keys step over the hidden passes.
  await page.locator("[data-testid=pass][data-pass=cse]").click();
  await page.keyboard.press("ArrowDown");
  await expect(page.locator("[data-testid=pass][data-pass=fusion]")).toHaveClass(/selected/);
});

test("the graph zooms with the wheel, pans by dragging and fits on f", async ({ page }) => {
  await open(page, "#example=transformer_block");
  const graph = page.getByTestId("graph");
  const box = await graph.boundingBox();
  const before = await transform(page);
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  await page.mouse.wheel(0, -300);
  await expect.poll(async () => (await transform(page)).scale).toBeGreaterThan(before.scale * 1.2);
  const zoomed = await transform(page);
  // Drag the background by (-120, -80): the graph follows the pointer.
  const x0 = box.x + 10, y0 = box.y + box.height - 10;
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  for (let i = 1; i <= 8; i++) await page.mouse.move(x0 - 15 * i, y0 - 10 * i);
  await page.mouse.up();
  const panned = await transform(page);
  expect(panned.x - zoomed.x).toBeCloseTo(-120, 0);
  expect(panned.y - zoomed.y).toBeCloseTo(-80, 0);
  await page.keyboard.press("f");
  await expect.poll(async () => (await transform(page)).scale).toBeCloseTo(before.scale, 3);
});

test("search finds nodes by op and Enter goes from one to the next", async ({ page }) => {
  await open(page, "#example=transformer_block&pass=input");
  await page.keyboard.press("/");
  await expect(page.getByTestId("graph-search")).toBeFocused();
  await page.keyboard.type("dot_general");
  // The input's dots are `dot` ops in HLO terms: name or op.
  await page.getByTestId("graph-search").fill("dot");
  const count = Number((await page.getByTestId("search-count").textContent()).split(" ")[0]);
  expect(count).toBeGreaterThan(1);
  await expect(page.locator("[data-testid=graph-node].match")).toHaveCount(count);
  await page.getByTestId("graph-search").press("Enter");
  const first = await page.locator("[data-testid=node-details] dt:text-is('name') + dd").textContent();
  await page.getByTestId("graph-search").press("Enter");
  const second = await page.locator("[data-testid=node-details] dt:text-is('name') + dd").textContent();
  expect(second).not.toBe(first);
  expect(`${first} ${second}`).toMatch(/dot/);
  await expect(page.locator("[data-testid=graph-node].selected")).toHaveCount(1);
});

test("hovering an edge shows its shape and bytes", async ({ page }) => {
  await open(page, "#example=mlp&pass=input");
  // An edge from a parameter: its shape is the parameter's type.
  const edge = page.locator(".edge-g:not(.internal) .edge-hit").first();
  await edge.hover({ force: true });
  const tip = page.getByTestId("edge-tooltip");
  await expect(tip).toBeVisible();
  await expect(tip).toHaveText(/→ .*: (f32|bf16|f16|s32|pred)\[[\d,]*\] · \d+(\.\d)? (B|KB|MB)$/);
  await page.mouse.move(0, 0);
  await expect(tip).toHaveCount(0);
});

test("a cluster collapses to one box, opens again, and the SVG export holds the drawing", async ({ page }) => {
  await open(page, "#example=mlp&pass=fusion");
  const cluster = page.getByTestId("fusion-cluster").first();
  const name = await cluster.getAttribute("data-name");
  // The label carries the kernel: kind, bytes, estimated time.
  await expect(cluster.locator(".cluster-cost")).toHaveText(/^(loop|input|output) · [\d.]+ (B|KB|MB) · [\d.]+ (µs|ms)$/);
  const members = page.locator(`[data-testid=graph-node][data-id^="${name}/"]`);
  expect(await members.count()).toBeGreaterThan(0);
  await cluster.getByTestId("cluster-toggle").click();
  await expect(page.locator(`[data-testid=fusion-cluster][data-name="${name}"]`)).toHaveClass(/collapsed/);
  await expect(members).toHaveCount(0);
  await page.getByTestId("expand-all").click();
  await expect(page.locator("[data-testid=fusion-cluster].collapsed")).toHaveCount(0);
  expect(await members.count()).toBeGreaterThan(0);
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-svg").click()]);
  expect(download.suggestedFilename()).toBe("hloscope-fusion.svg");
  const svg = fs.readFileSync(await download.path(), "utf8");
  expect(svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  expect(svg).toContain(`data-name="${name}"`);
  expect(svg).toMatch(/<style>[^<]*svg \.node rect \{[^}]*fill: (#|rgb)/);
  expect(svg).not.toContain("var(--");
});

test("the graph diff colours fused, added, changed and removed nodes", async ({ page }) => {
  await open(page, "#example=mlp&pass=fusion");
  await page.getByTestId("graph-diff").check();
  await expect(page.locator("[data-testid=graph-node][data-diff=fused]").first()).toBeAttached();
  expect(await page.locator("[data-testid=graph-node][data-diff=fused]").count()).toBeGreaterThan(5);
  // The fusion instructions are new: one per cluster at least.
  const clusters = await page.getByTestId("fusion-cluster").count();
  expect(await page.locator("[data-testid=graph-node][data-diff=added]").count()).toBeGreaterThanOrEqual(clusters);
  await page.locator(".pane.graph-pane").screenshot({ path: `${OUT}/graph-diff.png` });
  // Against the input, simplification's removed nodes are drawn too, and the fused node's
  // details say how it compares.
  await page.getByTestId("diff-against").selectOption("input");
  await expect(page.locator("[data-testid=graph-node][data-diff=removed]").first()).toBeAttached();
  await page.locator("[data-testid=graph-node][data-diff=fused]").first().click();
  await expect(page.getByTestId("node-diff")).toHaveText("fused");
  await expect(page).toHaveURL(/gdiff=1/);
  await expect(page).toHaveURL(/against=input/);
  await page.reload();
  await expect(page.getByTestId("graph-diff")).toBeChecked();
  await expect(page.getByTestId("diff-against")).toHaveValue("input");
  await expect(page.locator("[data-testid=graph-node][data-diff=removed]").first()).toBeAttached();
});

test("the text diff goes against any pass, side by side, with unchanged runs folded", async ({ page }) => {
  await open(page, "#example=transformer_block&pass=cse");
  const diff = page.getByTestId("diff");
  const counts = page.getByTestId("diff-counts");
  await expect(counts).toHaveText(/^\+\d+ −\d+$/);
  // The diff against the pass before; against the input it changes more, and the lines
  // below are counted once that diff is drawn (the old one is still on the page until then).
  const before = await counts.textContent();
  await page.getByTestId("diff-against").selectOption("input");
  await expect(page.getByTestId("diff-against")).toHaveValue("input");
  await expect(counts).not.toHaveText(before);
  await expect(diff.getByTestId("diff-removed").first()).toBeVisible();
  await expect(diff.getByTestId("diff-added").first()).toBeVisible();
  // A fold hides a run of unchanged lines until clicked.
  const folds = diff.getByTestId("diff-expand");
  const foldCount = await folds.count();
  expect(foldCount).toBeGreaterThan(0);
  const hidden = Number((await folds.first().textContent()).match(/(\d+) unchanged/)[1]);
  const lines = await diff.locator(".diff-line").count();
  await folds.first().click();
  await expect(diff.locator(".diff-line")).toHaveCount(lines + hidden);
  await expect(folds).toHaveCount(foldCount - 1);
  await page.getByTestId("side-by-side").check();
  const table = diff.locator("table.side-by-side");
  await expect(table).toBeVisible();
  // Removed lines on the left, added on the right, in the same rows.
  await expect(table.locator("td.text.removed").first()).toBeVisible();
  const row = table.locator("tr", { has: page.locator("td.removed") }).first();
  await expect(row.locator("td").nth(1)).toHaveClass(/removed/);
  await page.locator(".pane.diff-pane").screenshot({ path: `${OUT}/diff-side-by-side.png` });
  await expect(page).toHaveURL(/sbs=1/);
});

test("a decision lights up its nodes and cluster; j/k step and the clusters grow", async ({ page }) => {
  await open(page, "#example=mlp&pass=fusion");
  const rows = page.getByTestId("decision");
  const n = await rows.count();
  expect(n).toBeGreaterThan(5);
  // The last decision a cluster took: click it; its producer and consumer light up.
  const taken = page.locator("[data-testid=decision].taken").first();
  const producer = await taken.locator("td").nth(1).textContent();
  const consumer = await taken.locator("td").nth(2).textContent();
  await taken.click();
  await expect(taken).toHaveClass(/selected/);
  const ends = page.locator("[data-testid=graph-node].decision-end");
  await expect(ends.first()).toBeAttached();
  const names = await ends.evaluateAll((els) => els.map((e) => e.getAttribute("data-name")));
  expect(names).toEqual(expect.arrayContaining([producer]));
  expect(names.every((x) => x === producer || x === consumer)).toBe(true);
  await expect(page.locator("[data-testid=fusion-cluster].decision-cluster")).toHaveCount(1);
  // Stepping: k goes back to the first decision, where most members are yet to join; j
  // all the way to the last, where every member has.
  await page.locator(".pane.graph-pane h2").click();
  for (let i = 0; i < n; i++) await page.keyboard.press("k");
  await expect(rows.first()).toHaveClass(/selected/);
  const early = await page.locator("[data-testid=graph-node].later").count();
  expect(early).toBeGreaterThan(0);
  for (let i = 0; i < n; i++) await page.keyboard.press("j");
  await expect(rows.last()).toHaveClass(/selected/);
  await expect(page.locator("[data-testid=graph-node].later")).toHaveCount(0);
  // And back: a node clicked in the graph marks the decisions about it.
  await page.locator("[data-testid=graph-node].decision-end").first().click();
  expect(await page.locator("[data-testid=decision].involves").count()).toBeGreaterThan(0);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/decisions.png` });
});

test("the editor's cursor line marks the nodes it wrote", async ({ page }) => {
  await open(page, "#example=mlp&pass=input");
  const line = page.locator(".cm-line", { hasText: "stablehlo.exponential" }).first();
  await line.click();
  const marked = page.locator("[data-testid=graph-node].at-cursor");
  await expect(marked.first()).toBeAttached();
  const ops = await marked.evaluateAll((els) => els.map((e) => e.getAttribute("data-op")));
  expect(ops).toContain("exponential");
  // Another line, other nodes.
  await page.locator(".cm-line", { hasText: "stablehlo.divide" }).first().click();
  await expect.poll(() => marked.evaluateAll((els) => els.map((e) => e.getAttribute("data-op")))).toContain("divide");
  expect(await marked.evaluateAll((els) => els.map((e) => e.getAttribute("data-op")))).not.toContain("exponential");
});

test("the panes resize by dragging their splitters, and keep their sizes across a reload", async ({ page }) => {
  await open(page);
  const source = page.locator(".pane.source");
  const w0 = (await source.boundingBox()).width;
  const bar = await page.getByTestId("split-source").boundingBox();
  await page.mouse.move(bar.x + 2, bar.y + 200);
  await page.mouse.down();
  await page.mouse.move(bar.x + 60, bar.y + 200, { steps: 4 });
  await page.mouse.move(bar.x + 122, bar.y + 200, { steps: 4 });
  await page.mouse.up();
  const w1 = (await source.boundingBox()).width;
  expect(w1 - w0).toBeCloseTo(120, -1);
  const graph = page.locator(".pane.graph-pane");
  const h0 = (await graph.boundingBox()).height;
  const hbar = await page.getByTestId("split-graph").boundingBox();
  await page.mouse.move(hbar.x + 100, hbar.y + 2);
  await page.mouse.down();
  await page.mouse.move(hbar.x + 100, hbar.y - 78, { steps: 5 });
  await page.mouse.up();
  expect((await graph.boundingBox()).height - h0).toBeCloseTo(-80, -1);
  await page.reload();
  await expect(page.getByTestId("pass").first()).toBeVisible();
  expect((await source.boundingBox()).width).toBeCloseTo(w1, 0);
});

test("an XLA HLO dump opened as a file and a debug_info export dropped on the editor compile", async ({ page }) => {
  await open(page);
  const dump = fs.readFileSync(`${CORPUS}/softmax/xla.hlo`, "utf8");
  expect(dump).toMatch(/^HloModule /m);
  let before = await measures(page);
  await page.getByTestId("open-file").setInputFiles({ name: "softmax.hlo", mimeType: "text/plain", buffer: Buffer.from(dump) });
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await expect(page.locator("[data-testid=editor] .cm-content")).toContainText("HloModule");
  await expect(page.getByTestId("diagnostic")).toHaveCount(0);
  expect(await page.getByTestId("pass").count()).toBeGreaterThan(1);
  await expect(page.getByTestId("examples")).toHaveValue("");

  const debug = fs.readFileSync(`${CORPUS}/transformer_block/module_debug.mlir`, "utf8");
  expect(debug).toMatch(/#loc\d* = loc\(/);
  before = await measures(page);
  const transfer = await page.evaluateHandle((text) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], "transformer_debug.mlir", { type: "text/plain" }));
    return dt;
  }, debug);
  await page.locator(".pane.source").dispatchEvent("drop", { dataTransfer: transfer });
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await expect(page.getByTestId("diagnostic")).toHaveCount(0);
  await expect(page.locator("[data-testid=editor] .cm-content")).toContainText("loc(");
  // The program's own locations reach the node details.
  await page.locator("[data-testid=pass][data-pass=input]").click();
  await expect(page.locator("[data-testid=fusion-cluster]")).toHaveCount(0);
  await page.locator("[data-testid=graph-node][data-op=dot]").first().click();
  await expect(page.locator("[data-testid=node-details] dt:text-is('source') + dd")).not.toHaveText("—");
});

test("a pasted debug_info export and an XLA dump compile from the clipboard's text", async ({ page }) => {
  await open(page);
  for (const file of ["layernorm/module_debug.mlir", "transformer_block/xla.hlo"]) {
    const text = fs.readFileSync(`${CORPUS}/${file}`, "utf8");
    const before = await measures(page);
    await pasteSource(page, text);
    await expect.poll(() => measures(page), { message: file }).toBeGreaterThan(before);
    await expect(page.getByTestId("diagnostic"), file).toHaveCount(0);
    expect(await page.getByTestId("graph-node").count(), file).toBeGreaterThan(3);
  }
});

test("stepping through passes, the nodes a pass did not touch keep their places", async ({ page }) => {
  await open(page, "#example=mlp&pass=simplify");
  const places = () => page.locator("[data-testid=graph-node]").evaluateAll((els) =>
    Object.fromEntries(els.map((g) => {
      const r = g.querySelector("rect");
      return [g.getAttribute("data-id"), `${r.getAttribute("x")},${r.getAttribute("y")}`];
    })));
  const before = await places();
  await page.locator("[data-testid=pass][data-pass=cse]").click();
  await expect(page.locator("[data-testid=pass][data-pass=cse]")).toHaveClass(/selected/);
  await expect.poll(async () => Object.keys(await places()).length).toBeLessThan(Object.keys(before).length);
  const after = await places();
  const common = Object.keys(after).filter((id) => id in before);
  expect(common.length).toBeGreaterThan(15);
  const moved = common.filter((id) => after[id] !== before[id]);
  expect(moved).toEqual([]);
});

test("a crash in the compiler shows a message, keeps the last result and restarts the worker", async ({ page }) => {
  // The real worker, with a trap injected for one marked input: what a bug in the compiler
  // would do to the worker (its wasm instance is then unusable).
  await page.context().route("**/worker.js", async (route) => {
    const real = await route.fetch();
    const text = await real.text();
    const line = "const answer = await handle_async(json, file);";
    expect(text).toContain(line);
    const body = text.replace(line, `if (json.includes("hloscope-crash-test")) throw new Error("a trap in the compiler (injected by the test)");\n    ${line}`);
    await route.fulfill({ response: real, body });
  });
  await open(page, "#example=mlp&pass=fusion");
  const nodes = await page.getByTestId("graph-node").count();
  const source = fs.readFileSync(path.resolve(__dirname, "../../examples/mlp.mlir"), "utf8");
  await pasteSource(page, source + "\n// hloscope-crash-test\n");
  await expect(page.getByTestId("diagnostic")).toHaveText(/the compiler crashed: .*a trap in the compiler/);
  await expect(page.getByTestId("status")).toHaveText(/restarted/);
  // The last good result is still on screen, and a fresh worker compiles the next edit.
  await expect(page.getByTestId("graph-node")).toHaveCount(nodes);
  const before = await measures(page);
  await pasteSource(page, source.replace("stablehlo.divide", "stablehlo.multiply"));
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await expect(page.getByTestId("diagnostic")).toHaveCount(0);
  await expect(page.locator("[data-testid=graph-node][data-op=multiply]").first()).toBeAttached();
});

/** The lab's comparison: { this, default } for a row (`kernels`, `bytes moved`, ...). */
async function compared(page, row) {
  const tr = page.locator(`[data-testid=lab-compare] tr[data-row="${row}"]`);
  return { this: await tr.getByTestId("lab-this").textContent(), default: await tr.getByTestId("lab-default").textContent() };
}

test("the fusion lab: fusion off raises kernels and bytes against the default, and back on restores them", async ({ page }) => {
  await open(page, "#example=mlp&pass=fusion");
  await page.getByTestId("tab-lab").click();
  const start = await compared(page, "kernels");
  expect(start.this).toBe(start.default);
  const before = await measures(page);
  await page.locator("[data-testid=fusion-knob][data-knob=off]").check();
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await expect.poll(async () => Number((await compared(page, "kernels")).this)).toBeGreaterThan(Number(start.default));
  const bytes = await compared(page, "bytes moved");
  const kb = (t) => Number(t.split(" ")[0]) * (t.endsWith("KB") ? 1024 : t.endsWith("MB") ? 1 << 20 : 1);
  expect(kb(bytes.this)).toBeGreaterThan(kb(bytes.default));
  // The graph agrees: no clusters once fusion is off.
  await expect(page.getByTestId("fusion-cluster")).toHaveCount(0);
  await expect(page).toHaveURL(/fusion=off/);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/lab.png` });
  await page.locator("[data-testid=fusion-knob][data-knob=off]").uncheck();
  await expect.poll(async () => (await compared(page, "kernels")).this).toBe(start.default);
  expect(await page.getByTestId("fusion-cluster").count()).toBeGreaterThan(0);
  // A bad pipeline spec is the lab's error, not the text's; the last result stays.
  await page.getByTestId("pipeline-spec").fill("default,frobnicate");
  await page.getByTestId("pipeline-spec").press("Enter");
  await page.getByTestId("pipeline-spec").blur();
  await expect(page.getByTestId("config-error")).toContainText("frobnicate");
  await expect(page.getByTestId("diagnostic")).toHaveCount(0);
  expect(await page.getByTestId("fusion-cluster").count()).toBeGreaterThan(0);
  await page.getByTestId("lab-reset").click();
  await expect(page.getByTestId("config-error")).toHaveCount(0);
});

test("a decision's never-fuse override splits its cluster", async ({ page }) => {
  await open(page, "#example=mlp&pass=fusion");
  // The epilogue that put dot.5 in a kernel with its bias add.
  const row = page.locator("[data-testid=decision].taken", { hasText: "epilogue-fusion" }).first();
  const producer = await row.locator("td").nth(1).textContent();
  const consumer = await row.locator("td").nth(2).textContent();
  const groupOf = (name) => page.locator(`[data-testid=graph-node][data-name="${name}"]`).first().getAttribute("data-id");
  const together = async () => {
    const [p, c] = [await groupOf(producer), await groupOf(consumer)];
    return p.includes("/") && p.split("/")[0] === c.split("/")[0];
  };
  expect(await together()).toBe(true);
  const clusters = await page.getByTestId("fusion-cluster").count();
  await row.getByTestId("decision-override").click();
  await expect(page).toHaveURL(new RegExp(`fusion=never%3D${producer}%3A${consumer}`));
  await expect.poll(together).toBe(false);
  await page.getByTestId("tab-lab").click();
  await expect(page.getByTestId("fusion-override")).toHaveText(new RegExp(`never ${producer} → ${consumer}`));
  const kernels = await compared(page, "kernels");
  expect(Number(kernels.this)).toBeGreaterThan(Number(kernels.default));
  // The decisions of the new compile show the override's refusal.
  await page.getByTestId("tab-decisions").click();
  await expect(page.locator("[data-testid=decision].refused", { hasText: producer }).first()).toBeVisible();
  expect(await page.getByTestId("fusion-cluster").count()).toBeGreaterThanOrEqual(clusters);
});

test("the cost pane: a row per kernel, a roofline point per computing kernel, another chip another estimate", async ({ page }) => {
  await open(page, "#example=transformer_block&pass=fusion");
  await page.getByTestId("tab-cost").click();
  const rows = page.getByTestId("cost-row");
  const kernels = Number(await page.locator("[data-testid=pass][data-pass=schedule] td").nth(2).textContent());
  await expect(rows).toHaveCount(kernels);
  const points = page.getByTestId("roofline-point");
  expect(await points.count()).toBeGreaterThan(0);
  expect(await points.count()).toBeLessThanOrEqual(kernels);
  // Every point lies inside the chart.
  const inside = await page.getByTestId("roofline").evaluate((svg) => {
    const w = svg.width.baseVal.value, h = svg.height.baseVal.value;
    return [...svg.querySelectorAll("circle")].every((c) => c.cx.baseVal.value >= 0 && c.cx.baseVal.value <= w && c.cy.baseVal.value >= 0 && c.cy.baseVal.value <= h);
  });
  expect(inside).toBe(true);
  const total = async () => page.locator("[data-testid=cost-table] tfoot td").nth(5).textContent();
  const h100 = await total();
  await page.getByTestId("cost-profile").selectOption({ label: "generic CPU" });
  await expect(page).toHaveURL(/profile=generic/);
  await expect.poll(total).not.toBe(h100);
  // The server's CPU, measured by GET /api/profile: its roofs, its estimates, and after a
  // reload still chosen.
  const generic = await total();
  await page.getByTestId("cost-profile").selectOption({ label: "server CPU (measured)" });
  await expect(page).toHaveURL(/profile=server/);
  await expect.poll(total).not.toBe(generic);
  await expect(page.locator(".cost p.hint")).toContainText("server CPU (measured)");
  const measured = await total();
  await page.reload();
  await expect(page.getByTestId("cost-profile")).toHaveValue("server", { timeout: 20_000 });
  await expect.poll(total).toBe(measured);
  // A kernel clicked in the table is the graph's selected node.
  const first = rows.first();
  const name = await first.getAttribute("data-kernel");
  await first.click();
  await expect(page.locator(`[data-testid=graph-node][data-id="${name}"]`)).toHaveClass(/selected/);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/cost.png` });
});

/** Wider tabs, for a picture: the splitter beside the diff dragged left. */
async function widenTabs(page) {
  const bar = await page.getByTestId("split-diff").boundingBox();
  await page.mouse.move(bar.x + bar.width / 2, bar.y + bar.height / 2);
  await page.mouse.down();
  await page.mouse.move(bar.x - 250, bar.y + bar.height / 2, { steps: 5 });
  await page.mouse.up();
}

test("the kernels pane shows each kernel's Cranelift IR and machine code for either machine, following the selection", async ({ page }) => {
  await open(page, "#example=softmax&pass=fusion");
  await page.getByTestId("tab-kernels").click();
  const rows = page.getByTestId("kernel-row");
  const kernels = Number(await page.locator("[data-testid=pass][data-pass=schedule] td").nth(2).textContent());
  await expect(rows).toHaveCount(kernels);
  await expect(page.getByTestId("kernel-status")).toContainText(`${kernels} kernels`);
  const code = page.getByTestId("kernel-code");
  // The first kernel, softmax's row max: a vector loop in CLIF.
  await expect(code).toContainText("function u0:");
  await expect(code).toContainText("f32x4");
  await expect(page.getByTestId("kernel-notes")).toContainText("vectorized: 4 lanes");
  await expect(page.getByTestId("kernel-how")).toContainText("reduction(row)");
  // Its x86-64 machine code, then AArch64's.
  await page.getByTestId("kernel-form-asm").click();
  await expect(code).toContainText("%xmm");
  await page.getByTestId("kernel-machine").selectOption("aarch64");
  await expect(code).toContainText(".4s");
  await expect(code).not.toContainText("%xmm");
  // A cluster selected in the graph shows its kernel...
  const cluster = page.locator("[data-testid=fusion-cluster]").last();
  const name = await cluster.getAttribute("data-name");
  await cluster.locator("text.cluster-label").click();
  await expect(page.locator(`[data-testid=kernel-row][data-name="${name}"]`)).toHaveClass(/selected/);
  await expect(page.locator(".kernel-head b")).toContainText(name);
  // ... and a kernel picked in the list selects its cluster.
  const first = page.locator("[data-testid=kernel-row]").first();
  const firstName = await first.getAttribute("data-name");
  await first.click();
  await expect(page.locator(`[data-testid=fusion-cluster][data-name="${firstName}"]`)).toHaveClass(/selected/);
  await page.getByTestId("kernel-form-clif").click();
  await page.getByTestId("kernel-machine").selectOption("x86-64-v3");
  await expect(code).toContainText("f32x4");
  // A line of CLIF lights up the HLO instruction it implements, a member of the cluster.
  const line = code.locator('.line.linked:not([data-hlo^="param"])').first();
  const hlo = await line.getAttribute("data-hlo");
  await line.click();
  const member = page.locator(`[data-testid=graph-node][data-id="${firstName}/${hlo}"]`);
  await expect(member).toHaveClass(/code-lit/);
  await expect(page.locator("[data-testid=graph-node].code-lit")).toHaveCount(1);
  await widenTabs(page);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/kernels.png` });
});

// Two layers of one softmax, the second reading the first's output: the CPU target
// compiles the kernels that are the same code up to their buffers once.
const TWO_LAYERS = `func.func public @main(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %a = call @layer(%x) : (tensor<8x64xf32>) -> tensor<8x64xf32>
  %b = call @layer(%a) : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return %b : tensor<8x64xf32>
}
func.func private @layer(%v: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = stablehlo.reduce(%v init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<8x64xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %2 = stablehlo.subtract %v, %1 : tensor<8x64xf32>
  %3 = stablehlo.exponential %2 : tensor<8x64xf32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %4 = stablehlo.reduce(%3 init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x64xf32>, tensor<f32>) -> tensor<8xf32>
  %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<8xf32>) -> tensor<8x64xf32>
  %6 = stablehlo.divide %3, %5 : tensor<8x64xf32>
  return %6 : tensor<8x64xf32>
}
`;

test("the kernels pane says which kernels share code: a second layer runs the first layer's function", async ({ page }) => {
  await open(page);
  const before = await measures(page);
  await pasteSource(page, TWO_LAYERS);
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await expect(page.getByTestId("diagnostic")).toHaveCount(0);
  await page.getByTestId("tab-kernels").click();
  const rows = page.getByTestId("kernel-row");
  const kernels = Number(await page.locator("[data-testid=pass][data-pass=schedule] td").nth(2).textContent());
  await expect(rows).toHaveCount(kernels);
  // The second layer's exp-and-sum kernel names the first layer's, which has its own code.
  const sharer = rows.filter({ has: page.locator("[data-testid=kernel-runs]", { hasText: "code of kernel" }) });
  await expect(sharer).toHaveCount(1);
  const runs = await sharer.getByTestId("kernel-runs").textContent();
  const [, first, firstName] = runs.match(/code of kernel (\d+) \(([^)]+)\)/);
  const original = rows.nth(Number(first));
  await expect(original).toHaveAttribute("data-name", firstName);
  await expect(original.getByTestId("kernel-runs")).not.toContainText("code of kernel");
  expect(await rows.evaluateAll((r) => r.indexOf(r.find((x) => x.textContent.includes("code of kernel"))))).toBeGreaterThan(Number(first));
  // Picked, its notes say so; its listing is still shown.
  await sharer.click();
  await expect(page.getByTestId("kernel-notes")).toContainText(`The same code as kernel ${first} (${firstName})`);
  await expect(page.getByTestId("kernel-code")).toContainText("function u0:");
});

test("the kernels pane shows each kernel's WGSL, its lines linked to the fusion's instructions", async ({ page }) => {
  await open(page, "#example=softmax&pass=fusion");
  await page.getByTestId("tab-kernels").click();
  await page.getByTestId("kernel-machine").selectOption("webgpu");
  const code = page.getByTestId("kernel-code");
  await expect(code).toContainText("@compute @workgroup_size(64)");
  await expect(code).toContainText("var<storage, read_write> arena: array<u32>");
  await expect(page.getByTestId("kernel-form-wgsl")).toHaveClass(/active/);
  await expect(page.getByTestId("kernel-form-asm")).toHaveCount(0);
  const kernels = Number(await page.locator("[data-testid=pass][data-pass=schedule] td").nth(2).textContent());
  await expect(page.getByTestId("kernel-row")).toHaveCount(kernels);
  // softmax's rows are short: an invocation per row; every kernel is on the device.
  await expect(page.getByTestId("kernel-runs").first()).toHaveText(/^\d+ invocations, workgroups of 64$/);
  await expect(page.locator("[data-testid=kernel-runs]", { hasText: "host" })).toHaveCount(0);
  // The exp-and-sum kernel: a line binding the exponential lights it up in the graph.
  const second = page.getByTestId("kernel-row").nth(1);
  const name = await second.getAttribute("data-name");
  await second.click();
  const line = code.locator('.line.linked[data-hlo^="exp"]').first();
  await expect(line).toContainText("let e");
  const hlo = await line.getAttribute("data-hlo");
  await line.click();
  await expect(page.locator(`[data-testid=graph-node][data-id="${name}/${hlo}"]`)).toHaveClass(/code-lit/);
  await widenTabs(page);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/kernels-wgsl.png` });
});

test("a browser-webgpu run on the page's adapter passes the check, each kernel timed, fused beside unfused", async ({ page }) => {
  test.setTimeout(120_000);
  await open(page, "#example=mlp_gelu_tanh");
  await page.getByTestId("tab-run").click();
  // Chromium with --enable-unsafe-webgpu offers SwiftShader here: no adapter fails the test.
  const option = page.locator("[data-testid=run-target] option[value=browser-webgpu]");
  await expect(option).toContainText("the WGSL kernels on", { timeout: 20_000 });
  await expect(option).not.toBeDisabled();
  // The server's targets come from GET /api/targets: this one has no CUDA, and says so.
  const cuda = page.locator("[data-testid=run-target] option[value=server-cuda]");
  await expect(cuda).toBeDisabled();
  await expect(cuda).toContainText("server-cuda: not available: ");
  await expect(page.locator("[data-testid=run-target] option[value=server-cpu]")).not.toBeDisabled();
  await page.getByTestId("run-seed").fill("5");
  await page.getByTestId("run-seed").blur();
  await page.getByTestId("run-target").selectOption("browser-webgpu");
  await page.getByTestId("run-unfused").check();
  await page.getByTestId("run").click();
  const result = page.getByTestId("run-result");
  await expect(result).toHaveAttribute("data-check", "pass", { timeout: 90_000 });
  await expect(page.locator("[data-testid=run-fused] h3")).toContainText("browser-webgpu");
  await expect(page.locator("[data-testid=run-fused] [data-testid=run-device]")).toContainText(/kernels timed by .*: \d+ kernels on the device, \d+ on the host/);
  const fused = await page.locator("[data-testid=run-fused] [data-testid=kernel-time]").count();
  const unfused = await page.locator("[data-testid=run-unfused] [data-testid=kernel-time]").count();
  expect(fused).toBeGreaterThan(0);
  expect(unfused).toBeGreaterThan(fused);
  const times = await page.locator("[data-testid=run-fused] [data-testid=kernel-time] .bar-time").allTextContents();
  expect(times.every((t) => /^[\d.]+ (ns|µs|ms|s)$/.test(t))).toBe(true);
  await expect(page.getByTestId("run-speedup")).toHaveText(/^fused .* against unfused .*: [\d.]+× \(\d+ kernels against \d+\)$/);
  // The same outputs as the interpreter's in the worker, for the same seed.
  const gpu = await page.locator("[data-testid=run-fused] [data-testid=run-output] td.first").first().textContent();
  await widenTabs(page);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/run-webgpu.png` });
  await page.getByTestId("run-target").selectOption("browser-cpu");
  await page.getByTestId("run").click();
  await expect(page.locator("[data-testid=run-fused] h3")).toContainText("browser-cpu");
  const cpu = await page.locator("[data-testid=run-fused] [data-testid=run-output] td.first").first().textContent();
  const close = (a, b) => a.split(", ").every((x, i) => Math.abs(Number(x) - Number(b.split(", ")[i])) < 1e-4);
  expect(close(gpu, cpu)).toBe(true);
  // The output downloads from the worker, as a browser-cpu run's does.
  await page.getByTestId("run-target").selectOption("browser-webgpu");
  await page.locator("input[data-testid=run-unfused]").uncheck();
  await page.getByTestId("run").click();
  await expect(page.locator("[data-testid=run-fused] h3")).toContainText("browser-webgpu", { timeout: 60_000 });
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.locator("[data-testid=run-fused] [data-testid=run-output-download]").first().click(),
  ]);
  expect(download.suggestedFilename()).toBe("out0.npy");
  expect(fs.readFileSync(await download.path()).subarray(1, 6).toString("latin1")).toBe("NUMPY");
});

test("a share link opened in a new page restores the source, pass, node, knobs and tab", async ({ page, context }) => {
  await open(page, "#example=mlp&pass=fusion");
  const source = fs.readFileSync(path.resolve(__dirname, "../../examples/mlp.mlir"), "utf8") + "// shared by the e2e test\n";
  let before = await measures(page);
  await pasteSource(page, source);
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await page.getByTestId("tab-lab").click();
  before = await measures(page);
  await page.locator("[data-testid=fusion-knob][data-knob=no-epilogue]").check();
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await page.locator("[data-testid=pass][data-pass=dce]").click();
  await expect(page.locator("[data-testid=pass][data-pass=dce]")).toHaveClass(/selected/);
  const node = page.locator("[data-testid=graph-node][data-op=exponential]").first();
  const id = await node.getAttribute("data-id");
  await node.click();
  // The run pane's target travels too (the lab stays the tab shown).
  await page.getByTestId("tab-run").click();
  await page.getByTestId("run-target").selectOption("server-cpu");
  await page.getByTestId("tab-lab").click();
  await page.getByTestId("share").click();
  const link = page.getByTestId("share-link");
  await expect(link).toHaveValue(/\/\?share=[\w-]{12,}$/);
  const url = await link.inputValue();
  await expect(page).toHaveURL(/\?share=/);

  const other = await context.newPage();
  await other.goto(url);
  await expect(other.locator("[data-testid=pass][data-pass=dce]")).toHaveClass(/selected/);
  await expect(other.locator("[data-testid=editor] .cm-content")).toContainText("shared by the e2e test");
  await expect(other.getByTestId("tab-lab")).toHaveClass(/active/);
  await expect(other.locator("[data-testid=fusion-knob][data-knob=no-epilogue]")).toBeChecked();
  await expect(other.locator(`[data-testid=graph-node][data-id="${id}"]`)).toHaveClass(/selected/);
  await expect(other.getByTestId("diagnostic")).toHaveCount(0);
  await other.getByTestId("tab-run").click();
  await expect(other.getByTestId("run-target")).toHaveValue("server-cpu");
  // Edited, the page's link no longer names the share.
  await other.locator("[data-testid=editor] .cm-content").click();
  await other.keyboard.press("Control+End");
  await other.keyboard.insertText("// edited after\n");
  await expect(other).not.toHaveURL(/\?share=/);
  await expect(other).toHaveURL(/src=/);
});

test("without the server, sharing and the server's targets say what they need", async ({ page }) => {
  for (const api of ["share", "targets"]) {
    await page.route(`**/api/${api}`, (route) => route.fulfill({ status: 404, contentType: "text/plain", body: "not here" }));
  }
  await open(page);
  await page.getByTestId("share").click();
  await expect(page.getByTestId("share-error")).toContainText("sharing needs the hloscope server");
  // Nor do the server's targets run: the menu says why; the browser's still do.
  await page.getByTestId("tab-run").click();
  const serverCpu = page.locator("[data-testid=run-target] option[value=server-cpu]");
  await expect(serverCpu).toBeDisabled();
  await expect(serverCpu).toContainText("server-cpu: not available: ");
  await expect(page.locator("[data-testid=run-target] option[value=browser-cpu]")).not.toBeDisabled();
  await page.getByTestId("tab-decisions").click();
  // A share id nobody stored: the page says so and shows the default example.
  await page.goto(`${process.env.HLOSCOPE_URL}/?share=AAAAAAAAAAAAAAAA`);
  await expect(page.getByTestId("graph-node").first()).toBeAttached();
  await expect(page.getByTestId("share-error")).toContainText("cannot open the share AAAAAAAAAAAAAAAA: no share");
  await expect(page.getByTestId("diagnostic")).toHaveCount(0);
});

test("a browser-cpu run checks the compiled module against the interpreter", async ({ page }) => {
  await open(page, "#example=layernorm");
  await page.getByTestId("tab-run").click();
  await expect(page.getByTestId("run-target")).toHaveValue("browser-cpu");
  await page.getByTestId("run-seed").fill("7");
  await page.getByTestId("run-seed").blur();
  await page.getByTestId("run").click();
  const result = page.getByTestId("run-result");
  await expect(result).toHaveAttribute("data-check", "pass");
  await expect(page.getByTestId("run-check")).toContainText("matches the reference interpreter");
  // Compiled WebAssembly kernels, not the interpreter: the module's kernels, each timed.
  await expect(page.getByTestId("run-device")).toContainText(/WebAssembly \(SIMD128\) in this page's worker: [1-9]\d* kernels compiled, \d+ on the host/);
  expect(await page.getByTestId("kernel-time").count()).toBeGreaterThan(0);
  const first = await page.getByTestId("run-output").first().locator("td.first").textContent();
  expect(first).toMatch(/^-?\d+\.\d{5}/);
  // Another seed, other values; the same seed again, the same values.
  await page.getByTestId("run-seed").fill("8");
  await page.getByTestId("run-seed").blur();
  await page.getByTestId("run").click();
  await expect(page.getByTestId("run-output").first().locator("td.first")).not.toHaveText(first);
  await page.getByTestId("run-seed").fill("7");
  await page.getByTestId("run-seed").blur();
  await page.getByTestId("run").click();
  await expect(page.getByTestId("run-output").first().locator("td.first")).toHaveText(first);
});

test("a server-cpu run, fused beside unfused, passes the check and exports a trace", async ({ page }) => {
  test.setTimeout(120_000);
  await open(page, "#example=mlp_gelu_tanh");
  await page.getByTestId("tab-run").click();
  await page.getByTestId("run-target").selectOption("server-cpu");
  await page.getByTestId("run-unfused").check();
  await page.getByTestId("run").click();
  const result = page.getByTestId("run-result");
  await expect(result).toHaveAttribute("data-check", "pass", { timeout: 60_000 });
  await expect(page.getByTestId("run-speedup")).toHaveText(/^fused .* against unfused .*: [\d.]+× \(\d+ kernels against \d+\)$/);
  const fusedKernels = await page.locator("[data-testid=run-fused] [data-testid=kernel-time]").count();
  const unfusedKernels = await page.locator("[data-testid=run-unfused] [data-testid=kernel-time]").count();
  expect(fusedKernels).toBeGreaterThan(0);
  expect(unfusedKernels).toBeGreaterThan(fusedKernels);
  // The same outputs as in the browser, for the same seed.
  const server = await page.locator("[data-testid=run-fused] [data-testid=run-output] td.first").first().textContent();
  await page.getByTestId("run-target").selectOption("browser-cpu");
  await page.getByTestId("run").click();
  await expect(page.locator("[data-testid=run-fused] h3")).toContainText("browser-cpu");
  const browser = await page.locator("[data-testid=run-fused] [data-testid=run-output] td.first").first().textContent();
  const close = (a, b) => a.split(", ").every((x, i) => Math.abs(Number(x) - Number(b.split(", ")[i])) < 1e-4);
  expect(close(server, browser)).toBe(true);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/run.png` });
  // The trace of the server run: one complete event per kernel, on a fused and an unfused track.
  await page.getByTestId("run-target").selectOption("server-cpu");
  await page.getByTestId("run").click();
  await expect(page.locator("[data-testid=run-fused] h3")).toContainText("server-cpu", { timeout: 60_000 });
  const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-trace").click()]);
  const trace = JSON.parse(fs.readFileSync(await download.path(), "utf8"));
  const spans = trace.traceEvents.filter((e) => e.ph === "X");
  expect(spans.length).toBe(fusedKernels + unfusedKernels);
  expect(spans.every((e) => e.dur > 0 && typeof e.name === "string")).toBe(true);
  // The cost pane puts the measured times beside the estimates, and on the roofline.
  await page.getByTestId("tab-cost").click();
  const measured = await page.getByTestId("cost-measured").allTextContents();
  expect(measured.length).toBeGreaterThan(0);
  expect(measured.filter((t) => /^[\d.]+ (µs|ms)$/.test(t)).length).toBeGreaterThan(0);
  expect(await page.getByTestId("roofline-measured").count()).toBeGreaterThan(0);
});

/** An .npy file (version 1.0, C order, as NumPy writes it) of float32 `values`, shape `dims`. */
function npyF32(dims, values) {
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(", ")})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  header += " ".repeat((64 - ((10 + header.length + 1) % 64)) % 64) + "\n";
  const head = Buffer.from("\x93NUMPY\x01\x00\x00\x00", "latin1");
  head.writeUInt16LE(header.length, 8);
  return Buffer.concat([head, Buffer.from(header, "latin1"), Buffer.from(new Float32Array(values).buffer)]);
}

/** The dims and float32 values of an .npy file of `<f4`. */
function readNpyF32(buf) {
  const len = buf.readUInt16LE(8);
  const header = buf.subarray(10, 10 + len).toString("latin1");
  expect(header).toContain("'descr': '<f4'");
  const dims = header.match(/'shape': \(([^)]*)\)/)[1].split(",").filter((d) => d.trim()).map(Number);
  const data = buf.subarray(10 + len);
  return { dims, values: new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)) };
}

/** The run pane's row of output `i` as its cells' texts: type, min, max, mean, first values
 * (after the index and the download button). */
async function outputRow(page, scope, i) {
  const cells = await page.locator(`${scope} [data-testid=run-output]`).nth(i).locator("td").allTextContents();
  return { type: cells[2], min: cells[3], max: cells[4], mean: cells[5], first: cells[6] };
}

/** The summary the page shows for these values: 5 decimals, the mean summed in order. */
function summaryOf({ dims, values }) {
  let [min, max, sum] = [Infinity, -Infinity, 0];
  for (const v of values) [min, max, sum] = [Math.min(min, v), Math.max(max, v), sum + v];
  return {
    type: `f32[${dims.join(",")}]`, min: min.toFixed(5), max: max.toFixed(5), mean: (sum / values.length).toFixed(5),
    first: Array.from(values.slice(0, 6), (v) => v.toFixed(5)).join(", "),
  };
}

/** Downloads output `i` of the run shown (in `scope`); its bytes and file name. */
async function downloadOutput(page, scope, i) {
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.locator(`${scope} [data-testid=run-output-download]`).nth(i).click(),
  ]);
  return { name: download.suggestedFilename(), bytes: fs.readFileSync(await download.path()) };
}

test("uploaded .npy inputs give the outputs of hloscope run on the same files, in the page and as a download", async ({ page }) => {
  test.setTimeout(120_000);
  await open(page, "#example=mlp");
  await page.getByTestId("tab-run").click();
  await page.getByTestId("run-input-mode").selectOption("files");
  await expect(page.getByTestId("run-seed")).toHaveCount(0);
  // One file input per parameter of the entry, labelled with its name, type and dtype.
  const inputs = page.getByTestId("run-input-file");
  await expect(inputs).toHaveCount(5);
  const labels = await page.locator(".run-input .run-param").allTextContents();
  expect(labels[0]).toBe("0: %Arg.0 f32[4,8]");
  await expect(page.locator(".run-input small").first()).toHaveText("float32 (4, 8)");
  const dims = labels.map((l) => l.match(/\[([\d,]*)\]$/)[1].split(",").filter(Boolean).map(Number));
  const dir = path.join(OUT, "npy");
  fs.mkdirSync(dir, { recursive: true });
  const files = dims.map((d, p) => {
    const n = d.reduce((a, b) => a * b, 1);
    const file = path.join(dir, `in${p}.npy`);
    fs.writeFileSync(file, npyF32(d, Array.from({ length: n }, (_, i) => Math.sin(1 + 0.37 * i + p))));
    return file;
  });

  // A run before every parameter has a file names the first one without.
  await page.locator("[data-testid=run-input-file][data-param='0']").setInputFiles(files[0]);
  await expect(page.locator("[data-testid=run-input-status][data-param='0']")).toHaveText(/^✓ in0\.npy \(\d+ B\)$/);
  await page.getByTestId("run").click();
  await expect(page.getByTestId("run-error")).toHaveText("parameter 1 (%Arg.1: f32[8,16]) has no .npy file: pick one");
  // A file of the wrong shape is refused at once, the parameter named with what it expects.
  const transposed = path.join(dir, "transposed.npy");
  fs.writeFileSync(transposed, npyF32([16, 8], new Array(128).fill(0.5)));
  await page.locator("[data-testid=run-input-file][data-param='1']").setInputFiles(transposed);
  const wrong = "transposed.npy: parameter 1 (%Arg.1: f32[8,16]) expects shape (8, 16), but the file holds shape (16, 8)";
  await expect(page.locator("[data-testid=run-input-status][data-param='1']")).toHaveText(`✗ ${wrong}`);
  await page.getByTestId("run").click();
  await expect(page.getByTestId("run-error")).toHaveText(wrong);
  // The right files, one picked and the rest dropped on their rows.
  await page.locator("[data-testid=run-input-file][data-param='1']").setInputFiles(files[1]);
  for (let p = 2; p < files.length; p++) {
    const bytes = [...fs.readFileSync(files[p])];
    const transfer = await page.evaluateHandle(([bytes, name]) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(bytes)], name));
      return dt;
    }, [bytes, `in${p}.npy`]);
    await page.locator(`.run-input[data-param='${p}']`).dispatchEvent("drop", { dataTransfer: transfer });
  }
  for (let p = 0; p < files.length; p++) {
    await expect(page.locator(`[data-testid=run-input-status][data-param='${p}']`)).toHaveText(new RegExp(`^✓ in${p}\\.npy`));
  }
  await page.getByTestId("run").click();
  await expect(page.getByTestId("run-result")).toHaveAttribute("data-check", "pass");
  await expect(page.getByTestId("run-error")).toHaveCount(0);

  // hloscope run on the same files, on the same WebAssembly kernels (wasmtime there, the
  // page's V8 here).
  const bin = process.env.HLOSCOPE_BIN || path.resolve(__dirname, "../../target/debug/hloscope");
  const module = path.resolve(__dirname, "../../examples/mlp.mlir");
  const outDir = path.join(dir, "cli");
  fs.rmSync(outDir, { recursive: true, force: true });
  const cliArgs = ["run", module, "--target", "wasm", ...files.flatMap((f) => ["--input", f])];
  execFileSync(bin, [...cliArgs, "--out-dir", outDir]);
  const cli = fs.readFileSync(path.join(outDir, "out0.npy"));
  const printed = execFileSync(bin, cliArgs, { encoding: "utf8" });
  // The page's summary is the CLI's output's, and the download is the CLI's file, byte for byte.
  const shown = await outputRow(page, "[data-testid=run-fused]", 0);
  expect(shown).toEqual(summaryOf(readNpyF32(cli)));
  const [, min, max] = printed.match(/min (\S+)\s+max (\S+)/);
  expect(Math.abs(Number(shown.min) - Number(min))).toBeLessThan(5e-6);
  expect(Math.abs(Number(shown.max) - Number(max))).toBeLessThan(5e-6);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/run-files.png` });
  const downloaded = await downloadOutput(page, "[data-testid=run-fused]", 0);
  expect(downloaded.name).toBe("out0.npy");
  expect(downloaded.bytes.equals(cli)).toBe(true);

  // The same files on the server: the numerics check passes, and its outputs download too.
  await page.getByTestId("run-target").selectOption("server-cpu");
  await page.getByTestId("run").click();
  await expect(page.locator("[data-testid=run-fused] h3")).toContainText("server-cpu", { timeout: 60_000 });
  await expect(page.getByTestId("run-result")).toHaveAttribute("data-check", "pass");
  const server = await outputRow(page, "[data-testid=run-fused]", 0);
  expect(server.type).toBe(shown.type);
  const close = (a, b) => a.split(", ").every((x, i) => Math.abs(Number(x) - Number(b.split(", ")[i])) < 1e-4);
  expect(close(server.first, shown.first)).toBe(true);
  const fromServer = readNpyF32((await downloadOutput(page, "[data-testid=run-fused]", 0)).bytes);
  const want = readNpyF32(cli);
  expect(fromServer.dims).toEqual(want.dims);
  expect(fromServer.values.every((v, i) => Math.abs(v - want.values[i]) < 1e-5)).toBe(true);
});

test("a 1 MiB .npy input uploads, runs in the browser and downloads", async ({ page }) => {
  test.setTimeout(120_000);
  await open(page);
  const source = "func.func @main(%x: tensor<512x512xf32>) -> tensor<512x512xf32> {\n" +
    "  %y = stablehlo.multiply %x, %x : tensor<512x512xf32>\n  return %y : tensor<512x512xf32>\n}\n";
  const before = await measures(page);
  await pasteSource(page, source);
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
  await page.getByTestId("tab-run").click();
  await page.getByTestId("run-input-mode").selectOption("files");
  const values = Array.from({ length: 512 * 512 }, (_, i) => (i % 1000) / 250 - 2);
  const file = npyF32([512, 512], values);
  expect(file.length).toBe(128 + 4 * 512 * 512);
  // Timed in the page: from the file input's change to the ✓, from the click on run to the
  // result, from the click on .npy to the download's blob (Playwright's transfers left out).
  await page.evaluate(() => {
    const t = (window.npyTimes = {});
    const now = () => performance.now();
    document.addEventListener("change", () => { t.picked ??= now(); }, true);
    document.addEventListener("click", (e) => {
      if (e.target.closest("[data-testid=run]")) t.run = now();
      if (e.target.closest("[data-testid=run-output-download]")) t.download = now();
    }, true);
    new MutationObserver(() => {
      if (document.querySelector("[data-testid=run-input-status]")?.textContent.startsWith("✓")) t.checked ??= now();
      if (t.run && document.querySelector("[data-testid=run-result]")) t.ran ??= now();
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
    const create = URL.createObjectURL;
    URL.createObjectURL = (blob) => { t.blob ??= now(); return create(blob); };
  });
  await page.getByTestId("run-input-file").setInputFiles({ name: "big.npy", mimeType: "application/octet-stream", buffer: file });
  await expect(page.getByTestId("run-input-status")).toHaveText("✓ big.npy (1.00 MB)");
  await page.getByTestId("run").click();
  await expect(page.getByTestId("run-result")).toHaveAttribute("data-check", "pass");
  const { bytes } = await downloadOutput(page, "[data-testid=run-fused]", 0);
  const out = readNpyF32(bytes);
  expect(out.dims).toEqual([512, 512]);
  expect(out.values.every((v, i) => v === Math.fround(Math.fround(values[i]) * Math.fround(values[i])))).toBe(true);
  const t = await page.evaluate(() => window.npyTimes);
  const ms = (a, b) => Math.round(t[b] - t[a]);
  const result = {
    date: new Date().toISOString(),
    pick_to_checked_ms: ms("picked", "checked"), run_ms: ms("run", "ran"), download_ms: ms("download", "blob"),
  };
  for (const v of Object.values(result).slice(1)) expect(v).toBeGreaterThanOrEqual(0);
  fs.writeFileSync(`${OUT}/npy.json`, JSON.stringify(result, null, 2) + "\n");
  console.log("1 MiB .npy input:", JSON.stringify(result));
});

test("a dot pass lists its rewrites, each selecting its instruction, with no fusion overrides", async ({ page }) => {
  // JAX writes both weight gradients of train_step as transpose(dot(g, x)); transpose
  // folding makes each one dot with its operands swapped.
  await open(page, "#example=train_step&pass=transpose-folding");
  const rows = page.getByTestId("rewrite");
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(0).locator("td")).toHaveText(["transposed-dot-swaps-operands", "transpose.50"]);
  await expect(rows.nth(1).locator("td")).toHaveText(["transposed-dot-swaps-operands", "transpose.69"]);
  await expect(page.getByTestId("rewrites").locator("th").first()).toHaveText("2 rewrites: rule");
  await expect(page.getByTestId("decision")).toHaveCount(0);
  await rows.nth(0).click();
  await expect(rows.nth(0)).toHaveClass(/selected/);
  const detail = (dt) => page.locator(`[data-testid=node-details] dt:text-is('${dt}') + dd`);
  await expect(detail("name")).toHaveText("transpose.50");
  await expect(detail("op")).toHaveText("dot");
  await expect(page.locator("[data-testid=graph-node][data-id='transpose.50']")).toHaveClass(/selected/);
  await page.locator(".pane.decisions-pane").screenshot({ path: `${OUT}/rewrites.png` });
  // The fusion pass's decisions keep their override buttons; a pass with neither
  // decisions nor rewrites says so.
  await page.locator("[data-testid=pass][data-pass=fusion]").click();
  await expect(page.getByTestId("decision-override").first()).toBeVisible();
  await page.locator("[data-testid=pass][data-pass=dot-merger]").click();
  await expect(page.locator(".decisions .empty")).toContainText("nothing decided or rewritten in this pass");
});

test("every guided tour runs to its end, each step showing its pass and selection", async ({ page }) => {
  const dir = path.resolve(__dirname, "../../frontend/tours");
  const tours = fs.readdirSync(dir).map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")));
  test.setTimeout(30_000 + 15_000 * tours.length); // one per built-in example: a page load and a compile each
  expect(tours.length).toBeGreaterThanOrEqual(3);
  for (const tour of tours) {
    await page.goto("about:blank"); // a hash alone would not reload the app
    await open(page, `#example=${tour.example}`);
    await page.getByTestId("tour-start").click();
    for (let i = 0; i < tour.steps.length; i++) {
      const step = tour.steps[i];
      const at = `${tour.example} step ${i + 1}`;
      await expect(page.getByTestId("tour-step"), at).toHaveText(`step ${i + 1} of ${tour.steps.length}`);
      await expect(page.locator(`[data-testid=pass][data-pass="${step.pass}"]`), at).toHaveClass(/selected/);
      // The numbers are filled in from the compile on screen.
      const text = await page.getByTestId("tour-text").textContent();
      expect(text, at).not.toContain("{");
      if (step.text.includes(`{kernels@${step.pass}}`)) {
        const kernels = await page.locator(`[data-testid=pass][data-pass="${step.pass}"] td`).nth(2).textContent();
        expect(text, at).toContain(`${kernels} kernels`);
      }
      if (step.node) {
        await expect(page.locator(`[data-testid=graph-node][data-id="${step.node}"]`), at).toHaveClass(/selected/);
      }
      if (step.decision) {
        const row = page.locator("[data-testid=decision].selected");
        await expect(row, at).toHaveCount(1);
        await expect(row.locator("td").nth(1), at).toHaveText(step.decision[0]);
        await expect(row.locator("td").nth(2), at).toHaveText(step.decision[1]);
      }
      if (i === 2 && tour.example === "mlp") await page.screenshot({ path: `${OUT}/tour.png` });
      if (i + 1 < tour.steps.length) await page.getByTestId("tour-next").click();
    }
    await expect(page.getByTestId("tour-next")).toBeDisabled();
    await page.getByTestId("tour-close").click();
    await expect(page.getByTestId("tour")).toHaveCount(0);
  }
});
