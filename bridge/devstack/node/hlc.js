'use strict';
// A kafka-node 3.0.1 HighLevelConsumer (ZooKeeper-balanced) for the bridge's tests.
//
// Speaks the stdout protocol of the Java harness (bridge/devstack/legacy.py):
//   CONSUMER <consumer id>                      once registered
//   READY                                       after the first rebalance
//   MSG <id> <topic> <partition> <offset> <wall ms> <value>
//   REBALANCED <topic>:<partition>,...          the partitions it owns after each rebalance
//   ERROR <text>                                an error event of the consumer (it goes on)
//   EXIT                                        after a clean close (SIGTERM)
// kill -9 leaves its ephemeral nodes to expire with its ZooKeeper session, as in production.
//
// usage: node hlc.js --zookeeper host:port/chroot --group g --topic t [--topic t2]
//                    [--session-timeout-ms 6000] [--commit-interval-ms 500]

const path = require('path');

function args (argv) {
  const out = { topics: [], sessionTimeoutMs: 6000, commitIntervalMs: 500 };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === '--zookeeper') out.zookeeper = v;
    else if (k === '--group') out.group = v;
    else if (k === '--topic') out.topics.push(v);
    else if (k === '--session-timeout-ms') out.sessionTimeoutMs = parseInt(v, 10);
    else if (k === '--commit-interval-ms') out.commitIntervalMs = parseInt(v, 10);
    else if (k === '--modules') out.modules = v;
    else throw new Error('unknown argument ' + k);
  }
  if (!out.zookeeper || !out.group || !out.topics.length) {
    throw new Error('--zookeeper, --group and at least one --topic are required');
  }
  return out;
}

const opts = args(process.argv.slice(2));
const kafka = require(path.join(opts.modules || path.join(__dirname, 'node_modules'), 'kafka-node'));

const client = new kafka.Client(opts.zookeeper, 'kzb-hlc-' + process.pid, {
  sessionTimeout: opts.sessionTimeoutMs,
  spinDelay: 100,
  retries: 2
});
const consumer = new kafka.HighLevelConsumer(
  client,
  opts.topics.map((t) => ({ topic: t })),
  {
    groupId: opts.group,
    autoCommit: true,
    autoCommitIntervalMs: opts.commitIntervalMs,
    fetchMaxWaitMs: 100,
    encoding: 'utf8'
  }
);

const say = (line) => process.stdout.write(line + '\n');
say('CONSUMER ' + consumer.id);
let ready = false;

consumer.on('rebalanced', () => {
  const owned = consumer.topicPayloads.map((p) => p.topic + ':' + p.partition);
  say('REBALANCED ' + owned.join(','));
  if (!ready) {
    ready = true;
    say('READY');
  }
});
consumer.on('message', (m) => {
  const value = String(m.value).replace(/\n/g, ' ');
  say(['MSG', consumer.id, m.topic, m.partition, m.offset, Date.now(), value].join(' '));
});
consumer.on('error', (err) => {
  say('ERROR ' + String((err && err.message) || err).replace(/\n/g, ' '));
});

process.on('SIGTERM', () => {
  consumer.close(true, () => {
    say('EXIT');
    process.exit(0);
  });
});
