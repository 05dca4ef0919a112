"""redis-py's RedisCluster against a cluster whose nodes are given on the
command line (host:port, in slot order: the first serves the lowest slots).

Prints one JSON line per step (what the client got back, with node
addresses replaced by their index), so tests/cluster_clients.rs can run it
against Oxidis and against real Redis and compare the transcripts. With two
nodes it also moves one slot from node 0 to node 1 while the client holds
its old slot map, so the client has to follow ASK, then MOVED.
"""

import json
import signal
import sys
import time

import redis
from redis.cluster import ClusterNode, RedisCluster

signal.alarm(120)  # a hang's bound: SIGALRM ends the script
ADDRS = sys.argv[1].split(",")
OUT = []


def norm(text):
    for i, a in enumerate(ADDRS):
        text = text.replace(a, f"<node{i}>")
    return text


def step(name, value):
    OUT.append(name)
    print(norm(json.dumps({name: value}, sort_keys=True)), flush=True)


def error(fn):
    """The error a call raised (its class and its text), or its value."""
    try:
        return ["ok", fn()]
    except (redis.RedisError, redis.exceptions.RedisClusterException) as e:
        return [type(e).__name__, norm(str(e))]


def admin(i):
    host, port = ADDRS[i].split(":")
    return redis.Redis(host=host, port=int(port), decode_responses=True)


def wait_message(p, get, want):
    """Messages until one of type `want` arrives (bounded: 10 s)."""
    end = time.monotonic() + 10
    while time.monotonic() < end:
        m = get(p)
        if m and m["type"] == want:
            return {k: m[k] for k in ("type", "channel", "data")}
    return None


host, port = ADDRS[0].split(":")
rc = RedisCluster(host=host, port=int(port), decode_responses=True)
step("nodes", len(rc.get_primaries()))

# Plain commands over every slot range.
for i in range(200):
    rc.set(f"key:{i}", i)
step("get", [rc.get(f"key:{i}") for i in range(200)])
rc.mset_nonatomic({f"{{u}}{i}": f"u{i}" for i in range(3)})
step("mget_one_slot", rc.mget_nonatomic([f"{{u}}{i}" for i in range(4)]))
step("dbsize_per_node", [admin(i).dbsize() for i in range(len(ADDRS))])

# A pipeline over many slots (split by node by the client).
pipe = rc.pipeline()
for i in range(50):
    pipe.incr(f"n:{i}")
    pipe.set(f"p:{i}", f"v{i}")
    pipe.get(f"p:{i}")
step("pipeline", pipe.execute())

# MULTI/EXEC within one slot (hash tags), and one that spans slots.
tx = rc.pipeline(transaction=True)
tx.set("{acct}a", 10).incrby("{acct}a", 5).set("{acct}b", "x").get("{acct}a")
step("multi", tx.execute())
tx = rc.pipeline(transaction=True)
tx.set("{acct}a", 1).set("other", 2)
step("multi_cross_slot", error(tx.execute))
# The same sent to the node itself: the server refuses it at EXEC.
tx = admin(0).pipeline(transaction=True)
tx.set("{acct}a", 1).set("key:1", 2)
step("multi_cross_slot_server", error(tx.execute))

# Scripts with declared keys: EVAL, EVALSHA after SCRIPT LOAD, a script
# touching a key of another slot than its declared ones.
src = "redis.call('set', KEYS[1], ARGV[1]); return {redis.call('incr', KEYS[2]), redis.call('get', KEYS[1])}"
step("eval", rc.eval(src, 2, "{s}x", "{s}n", "hello"))
sha = rc.script_load(src)
step("evalsha", rc.evalsha(sha, 2, "{s}x", "{s}n", "again"))
step("script_exists", rc.script_exists(sha))
step(
    "eval_other_slot",
    error(lambda: rc.eval("return redis.call('get', 'key:1')", 1, "{s}x")),
)
step("eval_cross_slot", error(lambda: rc.eval("return 1", 2, "a", "b")))

step(
    "eval_remote_key",
    error(lambda: rc.eval("return redis.call('get', 'foo')", 1, "{s}x")),
)

# Functions: loaded on every primary, called with a key.
lib = "#!lua name=clc\nredis.register_function('getset2', function(keys, args) local old = redis.call('get', keys[1]); redis.call('set', keys[1], args[1]); return old end)"
step("function_load", rc.function_load(lib, replace=True))
step("fcall", [rc.fcall("getset2", 1, "{f}k", "one"), rc.fcall("getset2", 1, "{f}k", "two")])

# WATCH: a transaction whose watched key changed is not run.
def bump(pipe):
    v = int(pipe.get("{w}n") or 0)
    pipe.multi()
    pipe.set("{w}n", v + 1)


step("transaction", [rc.transaction(bump, "{w}n"), rc.transaction(bump, "{w}n"), rc.get("{w}n")])
tx = rc.pipeline(transaction=True)
tx.watch("{w}n")
tx.multi()
tx.incr("{w}n")
admin_w = rc.get_redis_connection(rc.get_node_from_key("{w}n"))
admin_w.set("{w}n", 100)
step("watch_broken", error(tx.execute))
tx.reset()

# Commands a cluster client spreads over the nodes or splits by slot.
step("dbsize", rc.dbsize())
step("exists_split", rc.exists("key:1", "key:2", "nope", "{u}0"))
step("delete_split", rc.delete("key:198", "key:199", "nope"))
step("scan", sorted(rc.scan_iter(match="key:1?", count=1000)))
step("blpop_timeout", rc.blpop(["{q}a"], timeout=0.1))
rc.rpush("{q}a", "x")
step("blpop", rc.blpop(["{q}a", "{q}b"], timeout=1))
step("keyslot", [rc.cluster_keyslot("foo"), rc.cluster_countkeysinslot(rc.keyslot("{u}"))])

# Pub/sub: a classic channel (subscriber and publisher on one node: without
# a cluster bus a message does not travel between Oxidis nodes), then a
# shard channel, which lives on the node serving its slot.
node = rc.get_default_node()
p = rc.pubsub(node=node)
p.subscribe("news")
step("subscribe", wait_message(p, lambda p: p.get_message(timeout=0.5), "subscribe"))
step("publish", rc.execute_command("PUBLISH", "news", "hi", target_nodes=node))
step("message", wait_message(p, lambda p: p.get_message(timeout=0.5), "message"))
p.close()
sp = rc.pubsub()
for ch in ("{a}shard", "{z}shard"):
    sp.ssubscribe(ch)
    step(
        f"ssubscribe {ch}",
        wait_message(sp, lambda p: p.get_sharded_message(timeout=0.5), "ssubscribe"),
    )
    step(f"spublish {ch}", rc.spublish(ch, f"to {ch}"))
    step(
        f"smessage {ch}",
        wait_message(sp, lambda p: p.get_sharded_message(timeout=0.5), "smessage"),
    )
sp.close()

if len(ADDRS) == 2:
    # A slot of node 0 moves to node 1 by hand, the client not told.
    tag = next(t for t in (f"mv{i}" for i in range(1000)) if rc.keyslot(t) < 8192)
    slot = rc.keyslot(tag)
    keys = [f"{{{tag}}}{i}" for i in range(10)]
    for k in keys:
        rc.set(k, k)
    a, b = admin(0), admin(1)
    a_id, b_id = a.cluster("MYID"), b.cluster("MYID")
    b.cluster("SETSLOT", slot, "IMPORTING", a_id)
    a.cluster("SETSLOT", slot, "MIGRATING", b_id)
    bh, bp = ADDRS[1].split(":")
    step("migrate", a.migrate(bh, int(bp), keys[:5], 0, 5000))
    # Half the keys are on node 1 now: node 0 answers ASK for them.
    step("during_get", [rc.get(k) for k in keys])
    rc.set(f"{{{tag}}}new", "n")
    step("during_count", [a.cluster("COUNTKEYSINSLOT", slot), b.cluster("COUNTKEYSINSLOT", slot)])
    step("migrate_rest", a.migrate(bh, int(bp), keys[5:], 0, 5000))
    b.cluster("SETSLOT", slot, "NODE", b_id)
    a.cluster("SETSLOT", slot, "NODE", b_id)
    # The client's map still says node 0: MOVED sends it to node 1.
    step("after_get", [rc.get(k) for k in keys + [f"{{{tag}}}new"]])
    rc.set(f"{{{tag}}}after", "x")
    step("after_count", [a.cluster("COUNTKEYSINSLOT", slot), b.cluster("COUNTKEYSINSLOT", slot)])
    step("raw_moved", norm(str(error(lambda: a.get(keys[0])))))

rc.close()
print(json.dumps({"done": len(OUT)}), flush=True)
