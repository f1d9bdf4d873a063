// Every built-in example on every target the page runs on here, fused and unfused: each
// run must match the reference interpreter, and the run times are reported (a benchmark,
// not an assertion: target/e2e/targets.json, the README's table).
const { test, expect } = require("@playwright/test");
const fs = require("node:fs");

const { OUT, open, measures, waitForCompile } = require("./helpers");

const TARGETS = ["browser-cpu", "browser-webgpu", "server-cpu"];

/** `7.100 ms`, `3.20 µs`, `2.000 s` (format.rs's `seconds`) in milliseconds. */
function ms(text) {
  const m = text.trim().match(/^([\d.]+) (s|ms|µs)$/);
  expect(m, text).not.toBeNull();
  return Number(m[1]) * { s: 1e3, ms: 1, "µs": 1e-3 }[m[2]];
}

/** Runs shown so far, and the run error shown (if any). */
function shown(page) {
  return page.evaluate(() => ({
    runs: Number(document.querySelector("[data-testid=run-result]")?.dataset.runs ?? 0),
    error: document.querySelector("[data-testid=run-error]")?.textContent ?? null,
  }));
}

test("every built-in example runs on browser-cpu, browser-webgpu and server-cpu, fused and unfused, matching the interpreter", async ({ page }) => {
  test.setTimeout(600_000); // 15 examples × 3 targets × 2, SwiftShader a CPU adapter
  await open(page);
  const ids = await page.locator("[data-testid=examples] option:not([disabled])").evaluateAll(
    (os) => os.map((o) => o.value));
  expect(ids.length).toBeGreaterThanOrEqual(8);
  await page.getByTestId("tab-run").click();
  await expect(page.locator("[data-testid=run-target] option[value=browser-webgpu]")).not.toBeDisabled();
  await page.locator("input[data-testid=run-unfused]").check();
  const report = {};
  for (const id of ids) {
    const before = await measures(page);
    await page.getByTestId("examples").selectOption(id);
    await waitForCompile(page, before);
    report[id] = {};
    for (const target of TARGETS) {
      await page.getByTestId("run-target").selectOption(target);
      const { runs } = await shown(page);
      await page.getByTestId("run").click();
      await expect.poll(async () => {
        const now = await shown(page);
        return now.runs > runs ? "shown" : now.error;
      }, { timeout: 120_000, message: `${id} on ${target}` }).toBe("shown");
      await expect(page.getByTestId("run-result"), `${id} on ${target}`).toHaveAttribute("data-check", "pass");
      const side = async (label) => ({
        ms: ms(await page.locator(`[data-testid=run-${label}] [data-testid=run-time]`).textContent()),
        kernels: await page.locator(`[data-testid=run-${label}] [data-testid=kernel-time]`).count(),
      });
      const [fused, unfused] = [await side("fused"), await side("unfused")];
      report[id][target] = {
        fused_ms: Math.round(fused.ms * 1e4) / 1e4,
        unfused_ms: Math.round(unfused.ms * 1e4) / 1e4,
        kernels: [fused.kernels, unfused.kernels],
      };
      if (target === "browser-webgpu" || target === "browser-cpu") {
        const device = await page.locator("[data-testid=run-fused] [data-testid=run-device]").textContent();
        report[id][target].on_host = Number(device.match(/(\d+) on the host/)[1]);
        // The loop's condition and body run as kernels on the device, the page's worker
        // driving the loop: nothing of it is interpreted.
        if (id === "fori_loop" && target === "browser-webgpu") {
          expect(report[id][target].on_host, device).toBe(0);
        }
        // Matrix multiplies alone compile no module in the page's worker: the GEMM
        // library's own kernel runs them.
        if (id === "matmul_chain" && target === "browser-cpu") {
          expect(device).toContain("all f32 dots: the GEMM library runs them");
        }
      }
    }
  }
  fs.writeFileSync(`${OUT}/targets.json`, JSON.stringify(report, null, 2) + "\n");
  console.log(JSON.stringify({ targets: report }));
});
