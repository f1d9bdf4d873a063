// Starts `hloscope serve --static-dir static --addr 127.0.0.1:0 --data-dir <tmp>` from the
// repository root, waits for the address it prints, and hands it to the tests in
// HLOSCOPE_URL. The returned function stops it.
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

module.exports = async function globalSetup() {
  const root = path.resolve(__dirname, "..");
  const bin = process.env.HLOSCOPE_BIN || path.join(root, "target/debug/hloscope");
  if (!fs.existsSync(path.join(root, "static/pkg/hloscope_web.js"))) {
    throw new Error("static/pkg/ is not built: run `cargo xtask web` first");
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "hloscope-e2e-"));
  const server = spawn(bin, ["serve", "--static-dir", "static", "--addr", "127.0.0.1:0", "--data-dir", dataDir],
    { cwd: root, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, RUST_LOG: process.env.RUST_LOG || "warn" } });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`hloscope serve printed no address: ${out}`)), 30_000);
    server.on("error", reject);
    server.on("exit", (code) => reject(new Error(`hloscope serve exited (${code}): ${out}`)));
    server.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/hloscope serving on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
  });
  process.env.HLOSCOPE_URL = url;
  fs.mkdirSync(path.join(root, "target/e2e"), { recursive: true });
  return async () => {
    server.kill("SIGTERM");
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
};
