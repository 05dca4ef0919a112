'use strict';
// The Node package with ioredis: startServer(), SET/GET, expiry, pub/sub,
// and the test controls (skipped when the binary has none).

const test = require('node:test');
const assert = require('node:assert');
const net = require('node:net');
const Redis = require('ioredis');
const { startServer } = require('oxidis');

const client = (srv, opts = {}) => new Redis(srv.url, { lazyConnect: false, ...opts });

test('startServer gives a port, a url and stop()', async () => {
  const a = await startServer();
  const b = await startServer();
  assert.notStrictEqual(a.port, b.port);
  assert.strictEqual(a.url, `redis://127.0.0.1:${a.port}`);
  for (const srv of [a, b]) {
    const r = client(srv);
    assert.deepStrictEqual(await r.config('GET', 'port'), ['port', String(srv.port)]);
    assert.strictEqual(await r.ping(), 'PONG');
    r.disconnect();
  }
  await a.stop();
  await b.stop();
  await assert.rejects(new Promise((resolve, reject) => {
    const s = net.connect(a.port, '127.0.0.1', () => { s.end(); resolve(); });
    s.on('error', reject);
  }));
});

test('SET/GET, expiry and pub/sub with ioredis', async () => {
  const srv = await startServer({ args: ['--databases', '4'] });
  const r = client(srv);
  assert.strictEqual(await r.set('greeting', 'hello'), 'OK');
  assert.strictEqual(await r.get('greeting'), 'hello');
  assert.deepStrictEqual(await r.config('GET', 'databases'), ['databases', '4']);

  await r.set('short', 'v', 'PX', 20);
  // Polled, not timed: the key goes once its 20 ms pass.
  for (let i = 0; i < 10000 && (await r.get('short')) !== null; i++) {
    await new Promise((res) => setTimeout(res, 1));
  }
  assert.strictEqual(await r.get('short'), null);

  const sub = client(srv);
  const got = new Promise((resolve) => sub.on('message', (ch, msg) => resolve([ch, msg])));
  await sub.subscribe('news');
  assert.strictEqual(await r.publish('news', 'hello'), 1);
  assert.deepStrictEqual(await got, ['news', 'hello']);
  sub.disconnect();
  r.disconnect();
  await srv.stop();
});

test('a server that cannot start says why', async () => {
  await assert.rejects(startServer({ args: ['--no-such-option', '1'] }), /Bad directive/);
});

/** A server with the test controls, or null when this build has none. */
async function controlled() {
  try {
    return await startServer({ testControls: true });
  } catch (e) {
    // cargo test sets OXIDIS_TEST_CONTROLS_REQUIRED when its build has them.
    if (/enable-test-controls/.test(e.message) && !process.env.OXIDIS_TEST_CONTROLS_REQUIRED) return null;
    throw e;
  }
}

test('test controls: the clock and fault injection', async (t) => {
  const srv = await controlled();
  if (!srv) {
    t.skip('this oxidis-server has no test controls yet');
    return;
  }
  const r = client(srv);
  await r.set('session', 'v', 'EX', 3600);
  await r.call('OXIDIS', 'CLOCK', 'ADVANCE', '3600000');
  assert.strictEqual(await r.get('session'), null);

  // A closed connection: ioredis reconnects and sends the GET again.
  await r.set('k', 'v');
  const connections = async () => Number(/total_connections_received:(\d+)/.exec(await r.info('stats'))[1]);
  const before = await connections();
  await r.call('OXIDIS', 'FAULT', 'ADD', 'COMMAND', 'get', 'CLOSE', 'COUNT', '1');
  assert.strictEqual(await r.get('k'), 'v');
  assert.strictEqual((await connections()) - before, 1);

  await r.call('OXIDIS', 'FAULT', 'ADD', 'COMMAND', 'get', 'ERROR', 'TRYAGAIN later', 'COUNT', '1');
  await assert.rejects(r.get('k'), /TRYAGAIN later/);
  assert.strictEqual(await r.get('k'), 'v');
  r.disconnect();
  await srv.stop();
});
