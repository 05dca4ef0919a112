// ioredis's Cluster against a cluster whose nodes are given on the command
// line (host:port, in slot order: the first serves the lowest slots).
//
// Prints one JSON line per step (what the client got back, with node
// addresses replaced by their index), so tests/cluster_clients.rs can run it
// against Oxidis and against real Redis and compare the transcripts. With two
// nodes it also moves one slot from node 0 to node 1 while the client holds
// its old slot map, so the client has to follow ASK, then MOVED.

"use strict";
const Redis = require("ioredis");
const keySlot = require("cluster-key-slot");

const ADDRS = process.argv[2].split(",");
const seed = ADDRS.map((a) => {
  const [host, port] = a.split(":");
  return { host, port: Number(port) };
});
let steps = 0;

function norm(text) {
  ADDRS.forEach((a, i) => {
    text = text.split(a).join(`<node${i}>`);
  });
  return text;
}

function step(name, value) {
  steps += 1;
  console.log(norm(JSON.stringify({ [name]: value })));
}

/** The error a call raised (its text), or its value. */
async function outcome(fn) {
  try {
    return ["ok", await fn()];
  } catch (e) {
    return ["error", norm(e.message)];
  }
}

/** Waits (10 s at most) for the first event `name` that `emitter` sends. */
function nextEvent(emitter, name) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), 10000);
    emitter.once(name, (...args) => {
      clearTimeout(timer);
      resolve(args);
    });
  });
}

function admin(i) {
  return new Redis(seed[i]);
}

async function main() {
  // A hang's bound.
  setTimeout(() => {
    console.error("timed out");
    process.exit(2);
  }, 120000).unref();
  const cluster = new Redis.Cluster([seed[0]]);
  await cluster.set("warmup", "1");
  step("nodes", cluster.nodes("master").length);

  // Plain commands over every slot range.
  for (let i = 0; i < 200; i++) await cluster.set(`key:${i}`, i);
  const got = [];
  for (let i = 0; i < 200; i++) got.push(await cluster.get(`key:${i}`));
  step("get", got);
  const admins = ADDRS.map((_, i) => admin(i));
  step("dbsize_per_node", await Promise.all(admins.map((a) => a.dbsize())));

  // A pipeline: ioredis sends one to a single node, so its keys share a tag.
  const pipe = cluster.pipeline();
  for (let i = 0; i < 20; i++) pipe.incr(`{p}n`).set(`{p}${i}`, `v${i}`).get(`{p}${i}`);
  step("pipeline", await pipe.exec());
  step(
    "pipeline_many_slots",
    await outcome(() => cluster.pipeline().get("key:1").get("key:2").get("key:3").exec())
  );

  // MULTI/EXEC within one slot (hash tags), and one the server refuses.
  step(
    "multi",
    await cluster.multi().set("{acct}a", 10).incrby("{acct}a", 5).set("{acct}b", "x").get("{acct}a").exec()
  );
  step(
    "multi_cross_slot_server",
    await outcome(() => admins[0].multi().set("{acct}a", 1).set("key:1", 2).exec())
  );

  // Scripts with declared keys: EVAL, EVALSHA (loaded on every master), a
  // defined command (EVALSHA, EVAL on NOSCRIPT), a key of another slot.
  const src =
    "redis.call('set', KEYS[1], ARGV[1]); return {redis.call('incr', KEYS[2]), redis.call('get', KEYS[1])}";
  step("eval", await cluster.eval(src, 2, "{s}x", "{s}n", "hello"));
  const shas = await Promise.all(cluster.nodes("master").map((n) => n.script("LOAD", src)));
  step("evalsha", await cluster.evalsha(shas[0], 2, "{s}x", "{s}n", "again"));
  cluster.defineCommand("setIncr", { numberOfKeys: 2, lua: src.replace("incr", "incrby").replace("KEYS[2])", "KEYS[2], 10)") });
  step("defined", [await cluster.setIncr("{d}x", "{d}n", "a"), await cluster.setIncr("{d}x", "{d}n", "b")]);
  step(
    "eval_other_slot",
    await outcome(() => cluster.eval("return redis.call('get', 'key:1')", 1, "{s}x"))
  );
  step("eval_cross_slot_server", await outcome(() => admins[0].eval("return 1", 2, "key:1", "{acct}a")));

  step(
    "eval_remote_key",
    await outcome(() => cluster.eval("return redis.call('get', 'foo')", 1, "{s}x"))
  );

  // Functions: loaded on every master, called with a key.
  const lib =
    "#!lua name=clcjs\nredis.register_function('getset2', function(keys, args) local old = redis.call('get', keys[1]); redis.call('set', keys[1], args[1]); return old end)";
  step(
    "function_load",
    await Promise.all(cluster.nodes("master").map((n) => n.function("LOAD", "REPLACE", lib)))
  );
  step("fcall", [
    await cluster.fcall("getset2", 1, "{f}k", "one"),
    await cluster.fcall("getset2", 1, "{f}k", "two"),
  ]);

  // Keys of every master: SCAN on each, blocking pops.
  const scanned = [];
  for (const n of cluster.nodes("master")) {
    let cursor = "0";
    do {
      const [next, keys] = await n.scan(cursor, "MATCH", "key:1?", "COUNT", 1000);
      scanned.push(...keys);
      cursor = next;
    } while (cursor !== "0");
  }
  step("scan", scanned.sort());
  step("blpop_timeout", await cluster.blpop("{q}a", 0.1));
  await cluster.rpush("{q}a", "x");
  step("blpop", await cluster.blpop("{q}a", "{q}b", 1));
  await cluster.mset("{u}0", "a", "{u}1", "b");
  step("exists_one_slot", await cluster.exists("{u}0", "{u}1", "{u}9"));
  step("del_cross_slot", await outcome(() => cluster.del("key:1", "key:2")));

  // Pub/sub: a classic channel on a one-node cluster (without a cluster bus
  // a message does not travel between Oxidis nodes, and ioredis picks the
  // publishing node at random), then shard channels, which live on the node
  // serving their slot, with either topology.
  if (ADDRS.length === 1) {
    const sub = new Redis.Cluster([seed[0]]);
    step("subscribe", await sub.subscribe("news"));
    const msg = nextEvent(sub, "message");
    step("publish", await cluster.publish("news", "hi"));
    step("message", await msg);
    sub.disconnect();
  }
  const ssub = new Redis.Cluster([seed[0]], { shardedSubscribers: true });
  await ssub.set("warmup", "1");
  for (const ch of ["{a}shard", "{z}shard"]) {
    step(`ssubscribe ${ch}`, await ssub.ssubscribe(ch));
    const msg = nextEvent(ssub, "smessage");
    step(`spublish ${ch}`, await cluster.spublish(ch, `to ${ch}`));
    step(`smessage ${ch}`, await msg);
  }
  ssub.disconnect();

  if (ADDRS.length === 2) {
    // A slot of node 0 moves to node 1 by hand, the client not told.
    let tag = null;
    for (let i = 0; tag === null; i++) if (keySlot(`mv${i}`) < 8192) tag = `mv${i}`;
    const slot = keySlot(tag);
    const keys = [...Array(10).keys()].map((i) => `{${tag}}${i}`);
    for (const k of keys) await cluster.set(k, k);
    const [a, b] = admins;
    const aId = await a.cluster("MYID");
    const bId = await b.cluster("MYID");
    await b.cluster("SETSLOT", slot, "IMPORTING", aId);
    await a.cluster("SETSLOT", slot, "MIGRATING", bId);
    const migrate = (ks) => a.migrate(seed[1].host, seed[1].port, "", 0, 5000, "KEYS", ...ks);
    step("migrate", await migrate(keys.slice(0, 5)));
    // Half the keys are on node 1 now: node 0 answers ASK for them.
    const during = [];
    for (const k of keys) during.push(await cluster.get(k));
    step("during_get", during);
    await cluster.set(`{${tag}}new`, "n");
    const count = async () => [
      await a.cluster("COUNTKEYSINSLOT", slot),
      await b.cluster("COUNTKEYSINSLOT", slot),
    ];
    step("during_count", await count());
    step("migrate_rest", await migrate(keys.slice(5)));
    await b.cluster("SETSLOT", slot, "NODE", bId);
    await a.cluster("SETSLOT", slot, "NODE", bId);
    // The client's map still says node 0: MOVED sends it to node 1.
    const after = [];
    for (const k of [...keys, `{${tag}}new`]) after.push(await cluster.get(k));
    step("after_get", after);
    await cluster.set(`{${tag}}after`, "x");
    step("after_count", await count());
    step("raw_moved", await outcome(() => a.get(keys[0])));
  }

  for (const a of admins) a.disconnect();
  cluster.disconnect();
  console.log(JSON.stringify({ done: steps }));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  }
);
