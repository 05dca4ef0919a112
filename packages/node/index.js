'use strict';
// Starts oxidis-server on a free port (--port 0 + port-file), in the manner
// of redis-memory-server: startServer() resolves to { port, url, stop() }.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const BINARY = 'oxidis-server';
const running = new Set();

const REPO = path.resolve(__dirname, '..', '..');

/** The oxidis-server to run: opts.binary, $OXIDIS_SERVER_BIN, this
 * repository's target/release build (built here with cargo the first time
 * when it is missing), then PATH. */
function findBinary(binary) {
  if (binary) return binary;
  if (process.env.OXIDIS_SERVER_BIN) return process.env.OXIDIS_SERVER_BIN;
  const built = path.join(REPO, 'target', 'release', BINARY);
  if (isExecutable(built)) return built;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir, BINARY);
    if (dir && isExecutable(p)) return p;
  }
  if (inRepository()) {
    buildBinary();
    if (isExecutable(built)) return built;
  }
  throw new Error(`${BINARY} not found: set OXIDIS_SERVER_BIN, put it on PATH, or install this ` +
    'package from a checkout of the Oxidis repository with Rust installed');
}

/** True when this package sits in the Oxidis repository (packages/node). */
function inRepository() {
  try {
    return /name = "oxidis"/.test(fs.readFileSync(path.join(REPO, 'Cargo.toml'), 'utf8'));
  } catch {
    return false;
  }
}

/** `cargo build --release` of the repository (a no-op when up to date). */
function buildBinary() {
  const { spawnSync } = require('node:child_process');
  console.error('oxidis: building oxidis-server with cargo build --release ...');
  const r = spawnSync('cargo', ['build', '--release', '--bin', BINARY, '--manifest-path',
    path.join(REPO, 'Cargo.toml')], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.error) throw new Error(`cargo not found (${r.error.message}): install Rust, or set OXIDIS_SERVER_BIN`);
  if (r.status !== 0) throw new Error('cargo build --release failed');
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Starts a server. opts: { args: [...redis-server style flags], binary,
 * host = '127.0.0.1', testControls = false, startupTimeout = 10000 (ms) }.
 * Resolves to { port, host, url, pid, log(), stop() }.
 */
async function startServer(opts = {}) {
  const host = opts.host || '127.0.0.1';
  const binary = findBinary(opts.binary);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oxidis-'));
  const portFile = path.join(dir, 'port');
  const logPath = path.join(dir, 'server.log');
  const args = ['--port', '0', '--bind', host, '--port-file', portFile, '--dir', dir,
    '--save', '', '--appendonly', 'no', ...(opts.args || []).map(String)];
  if (opts.testControls) args.push('--enable-test-controls', 'yes');
  const logFd = fs.openSync(logPath, 'w');
  const child = spawn(binary, args, { cwd: dir, stdio: ['ignore', logFd, logFd] });
  fs.closeSync(logFd);
  const log = () => {
    try { return fs.readFileSync(logPath, 'utf8'); } catch { return ''; }
  };
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let spawnError = null;
  child.once('error', (e) => { spawnError = e; });
  const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });

  const deadline = Date.now() + (opts.startupTimeout ?? 10000);
  let port = null;
  // The server writes the port file (atomically) once it serves.
  while (port === null) {
    try {
      const n = parseInt(fs.readFileSync(portFile, 'utf8'), 10);
      if (Number.isInteger(n)) port = n;
    } catch { /* not yet */ }
    if (port !== null) break;
    if (spawnError) {
      cleanup();
      throw new Error(`cannot run ${binary}: ${spawnError.message}`);
    }
    if (child.exitCode !== null || child.signalCode !== null) {
      const text = log();
      cleanup();
      throw new Error(`oxidis-server exited at start-up:\n${text}`);
    }
    if (Date.now() > deadline) {
      const text = log();
      child.kill('SIGKILL');
      await exited;
      cleanup();
      throw new Error(`oxidis-server did not start in time:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 1));
  }

  let stopped = null;
  const server = {
    port,
    host,
    url: `redis://${host}:${port}`,
    pid: child.pid,
    log,
    /** SIGTERM, waits for the exit, removes the temporary directory. */
    stop() {
      if (!stopped) {
        running.delete(child);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        stopped = exited.then(() => cleanup());
      }
      return stopped;
    },
  };
  running.add(child);
  return server;
}

// A test run that forgets stop() leaves no server behind.
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

module.exports = { startServer, findBinary, buildBinary, inRepository };
