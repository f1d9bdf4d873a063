// The web app in headless Chromium: Debian's /usr/bin/chromium (no browser download),
// against the real `hloscope serve` that global-setup.js starts on a free port.
// Run by `cargo xtask test` after `cargo xtask web`; by hand: `npx playwright test`.
const { defineConfig } = require("@playwright/test");

module.exports = defineConfig({
  testDir: "./tests",
  globalSetup: require.resolve("./global-setup.js"),
  outputDir: "../target/e2e/results",
  timeout: 60_000,
  expect: { timeout: 20_000 },
  retries: 0,
  workers: 2,
  reporter: [["list"]],
  use: {
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        // WebGPU (SwiftShader, a CPU adapter, here) for the browser-webgpu target.
        "--enable-unsafe-webgpu"],
    },
  },
});
