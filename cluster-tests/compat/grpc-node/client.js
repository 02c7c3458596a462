'use strict';
// The Node.js twin of grpc/GrpcClient.java: a producer, a SimpleConsumer and a PushConsumer of
// rocketmq-client-nodejs (the RocketMQ 5 gRPC client for Node.js), all talking to one Proxy.
//
//   node client.js run --endpoint HOST:PORT --topic T --count N --simple-group G1 --push-group G2 [--timeout S]
//
// Both consumers (each its own group, so each must see every message) start before the producer
// sends N messages with distinct bodies (only bodies of this run count); then it waits until both
// have N distinct bodies or S seconds (default 60) passed since the last send, and prints one JSON line with the same keys as
// GrpcClient. Exit status 0 only if every count is N.
const { Producer, SimpleConsumer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');

const MAX_ERRORS = 20;

function parse(argv) {
  if (argv[0] !== 'run') throw new Error('usage: run --endpoint HOST:PORT --topic T --count N ...');
  const opt = {};
  for (let i = 1; i + 1 < argv.length; i += 2) {
    if (!argv[i].startsWith('--')) throw new Error(`expected --key value at ${argv[i]}`);
    opt[argv[i].slice(2)] = argv[i + 1];
  }
  for (const k of [ 'endpoint', 'topic', 'count', 'simple-group', 'push-group' ]) {
    if (!opt[k]) throw new Error(`missing --${k}`);
  }
  return opt;
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function main() {
  const opt = parse(process.argv.slice(2));
  const count = Number(opt.count);
  const t0 = Date.now();
  // The wait is counted from the last send (as in GrpcClient).
  let deadline = Infinity;
  // Bodies carry this run's id: a consumer group new to a topic may also be handed messages an
  // earlier run left there, and those must not count.
  const run = `${t0.toString(36)}-${process.pid}-`;
  const errors = [];
  const error = (what, e) => { if (errors.length < MAX_ERRORS) errors.push(`${what}: ${e && e.message || e}`); };
  const common = { endpoints: opt.endpoint, sslEnabled: false, requestTimeout: 10000 };
  const subscriptions = new Map([[ opt.topic, '*' ]]);

  const pushSeen = new Set();
  let pushTotal = 0;
  const push = new PushConsumer({
    ...common, namespace: '', consumerGroup: opt['push-group'], subscriptions,
    messageListener: {
      async consume(view) {
        const body = view.body.toString('utf8');
        if (body.startsWith(run)) { pushTotal++; pushSeen.add(body); }
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await push.startup();
  const simple = new SimpleConsumer({ ...common, consumerGroup: opt['simple-group'], subscriptions, awaitDuration: 5000 });
  await simple.startup();
  const simpleSeen = new Set();
  let simpleTotal = 0;
  const receiving = (async () => {
    while (simpleSeen.size < count && Date.now() < deadline) {
      try {
        for (const view of await simple.receive(16, 30000)) {
          const body = view.body.toString('utf8');
          if (body.startsWith(run)) { simpleTotal++; simpleSeen.add(body); }
          await simple.ack(view);
        }
      } catch (e) {
        error('simple receive/ack', e);
        await sleep(500);
      }
    }
  })();
  const started = Date.now() - t0;

  const producer = new Producer({ ...common });
  await producer.startup();
  let sent = 0;
  let failed = 0;
  for (let i = 0; i < count; i++) {
    try {
      await producer.send({ topic: opt.topic, tag: 'compat', keys: [ `k${i}` ], body: Buffer.from(`${run}${i}`) });
      sent++;
    } catch (e) {
      failed++;
      error(`send ${i}`, e);
    }
  }
  const sentAt = Date.now() - t0;
  deadline = Date.now() + 1000 * Number(opt.timeout || 60);
  let simpleAt = -1;
  let pushAt = -1;
  while (Date.now() < deadline) {
    if (simpleAt < 0 && simpleSeen.size >= count) simpleAt = Date.now() - t0;
    if (pushAt < 0 && pushSeen.size >= count) pushAt = Date.now() - t0;
    if (simpleAt >= 0 && pushAt >= 0) break;
    await sleep(100);
  }
  void receiving;
  console.log(JSON.stringify({ sent, sendFailed: failed, simpleDistinct: simpleSeen.size, simpleTotal,
    pushDistinct: pushSeen.size, pushTotal, errors, consumersStartedMs: started, sentMs: sentAt,
    simpleDoneMs: simpleAt, pushDoneMs: pushAt }));
  // Without shutting the clients down (their long polls would hold the exit): nothing here needs it.
  process.exit(sent === count && simpleSeen.size === count && pushSeen.size === count ? 0 : 1);
}

main().catch(e => { console.error(e && e.stack || e); process.exit(2); });
