// What every scenario needs: where screenshots and the corpus are, opening the app on a
// hash, counting the compiles that reached the screen, and replacing the editor's text.
const { expect } = require("@playwright/test");
const path = require("node:path");

const OUT = path.resolve(__dirname, "../../target/e2e");
const CORPUS = path.resolve(__dirname, "../../backend/tests/corpus");

/** Opens the app at `hash`, once its passes and graph are on screen; the page's errors. */
async function open(page, hash = "") {
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${process.env.HLOSCOPE_URL}/${hash}`);
  await expect(page.getByTestId("pass").first()).toBeVisible();
  await expect(page.getByTestId("graph-node").first()).toBeAttached();
  return errors;
}

/** How many compiles have reached the screen. */
function measures(page) {
  return page.evaluate(() => performance.getEntriesByName("hloscope:edit-to-graph").length);
}

async function waitForCompile(page, before) {
  await expect.poll(() => measures(page)).toBeGreaterThan(before);
}

/** Replaces the editor's text by typing it (short texts). */
async function replaceSource(page, text) {
  await page.locator("[data-testid=editor] .cm-content").click();
  await page.keyboard.press("Control+A");
  await page.keyboard.insertText(text);
}

/** Replaces the editor's text by a paste, as Ctrl+V does (a paste event carrying the text:
 * typing 100 KB into the page would time the browser's typing, not the app). */
async function pasteSource(page, text) {
  await page.locator("[data-testid=editor] .cm-content").click();
  await page.keyboard.press("Control+A");
  await page.locator("[data-testid=editor] .cm-content").evaluate((el, text) => {
    const data = new DataTransfer();
    data.setData("text/plain", text);
    el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
}

module.exports = { OUT, CORPUS, open, measures, waitForCompile, replaceSource, pasteSource };
