// Starts `glass serve` on the built-in demo model (no -m) on a free loopback port for the
// browser tests, and stops it (SIGTERM, expecting exit code 0).
//   GLASS_BINARY     the glass binary (required)
//   GLASS_WEBUI_DIR  optional: serve the page from this folder (--webui-dir), e.g. src/webui
//                    while working on it, instead of the copy built into the binary
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';

// extra: more flags (['--api-key', 'secret'], ['--no-inspect']).
export async function startGlass(extra = []) {
  const binary = process.env.GLASS_BINARY;
  assert.ok(binary, 'GLASS_BINARY must name the glass binary');
  const args = ['serve', '--port', '0', '--quiet', '--threads', '2', ...extra];
  if (process.env.GLASS_WEBUI_DIR) args.push('--webui-dir', process.env.GLASS_WEBUI_DIR);
  const server = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  let exited = null;
  const exit = new Promise((resolve) => server.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); }));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`glass serve did not start in 30 s:\n${log}`)), 30000);
    server.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    exit.then(({ code, signal }) => { clearTimeout(timer); reject(new Error(`glass serve ${args.join(' ')} exited (${code ?? signal}):\n${log}`)); });
  });
  const stop = async () => {
    if (exited) {
      assert.equal(exited.code, 0, `glass serve stopped by itself:\n${log}`);
      return;
    }
    server.kill('SIGTERM');
    const { code, signal } = await exit;
    assert.equal(code, 0, `glass serve should stop cleanly on SIGTERM (got ${code ?? signal}):\n${log}`);
  };
  return { baseURL: `http://127.0.0.1:${port}`, stop, log: () => log };
}
