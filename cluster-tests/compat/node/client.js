'use strict';
// The ali-ons (pure JavaScript, remoting version 121, legacy route JSON) producer/consumer of the
// nsrvd compatibility suite.
//
//   node client.js produce --ns A --topic T --count N [--group G]
//   node client.js consume --ns A --topic T --count N --group G [--timeout S]
//   node client.js pulse   --ns A --topic T --interval MS --duration S [--poll MS]
//
// Output lines match the Java and Go programs: "PRODUCE ok=.. failed=..", "CONSUME distinct=..",
// "PULSE epochMillis OK brokerName" / "PULSE epochMillis FAIL reason".

const httpclient = require('urllib');
const { Producer, Consumer, Message } = require('ali-ons');

function parseArgs(argv) {
  const opt = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error('bad argument ' + a);
    if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) opt[a.slice(2)] = argv[++i];
    else opt[a.slice(2)] = 'true';
  }
  return opt;
}

// ali-ons logs through console by default; keep stdout for results only.
const quietLogger = {
  info() {}, debug() {}, log() {},
  warn(...a) { console.error('warn', ...a); },
  error(...a) { console.error('error', ...a); },
};

function oneLine(err) {
  return String(err && err.message || err).replace(/\s+/g, ' ').slice(0, 300);
}

function newProducer(opt) {
  return new Producer({
    httpclient,
    nameSrv: opt.ns,
    producerGroup: opt.group || ('NODE_PG_' + opt.topic),
    instanceName: 'compat-' + process.pid + '-' + Date.now(),
    pollNameServerInteval: Number(opt.poll || 30000),
    sendMsgTimeout: 6000,
    retryTimesWhenSendFailed: 2,
    logger: quietLogger,
  });
}

async function produce(opt) {
  const count = Number(opt.count || 1000);
  const producer = newProducer(opt);
  await producer.ready();
  let ok = 0;
  let failed = 0;
  let firstError = null;
  const perBroker = {};
  let retries = 0;
  for (let i = 0; i < count; i++) {
    // a send that fails on a loaded test box is retried (up to 3 attempts), and counted
    let sent = false;
    for (let attempt = 0; attempt < 3 && !sent; attempt++) {
      if (attempt > 0) retries++;
      try {
        const r = await producer.send(new Message(opt.topic, 'TagA', 'm-' + i));
        if (r.sendStatus === 'SEND_OK') {
          sent = true;
          const b = r.messageQueue.brokerName;
          perBroker[b] = (perBroker[b] || 0) + 1;
        } else if (!firstError) {
          firstError = r.sendStatus;
        }
      } catch (err) {
        if (!firstError) firstError = oneLine(err);
      }
    }
    if (sent) ok++;
    else failed++;
  }
  console.log(`PRODUCE ok=${ok} failed=${failed} brokers=${JSON.stringify(perBroker)} retries=${retries}`);
  if (firstError) console.log('FIRST_ERROR ' + firstError);
  return ok === count ? 0 : 1;
}

async function consume(opt) {
  const count = Number(opt.count || 1000);
  const timeout = Number(opt.timeout || 120);
  const consumer = new Consumer({
    httpclient,
    nameSrv: opt.ns,
    consumerGroup: opt.group,
    instanceName: 'compat-' + process.pid + '-' + Date.now(),
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    rebalanceInterval: 2000,
    logger: quietLogger,
  });
  const seen = new Set();
  let total = 0;
  let finish;
  const done = new Promise(resolve => { finish = resolve; });
  consumer.subscribe(opt.topic, '*', async msg => {
    total++;
    seen.add(msg.body.toString());
    if (seen.size >= count) finish(true);
  });
  consumer.on('error', err => console.error('consumer error', oneLine(err)));
  await consumer.ready();
  const all = await Promise.race([ done, new Promise(r => setTimeout(() => r(false), timeout * 1000)) ]);
  console.log(`CONSUME distinct=${seen.size} total=${total}`);
  return all ? 0 : 1;
}

async function pulse(opt) {
  const interval = Number(opt.interval || 200);
  const until = Date.now() + 1000 * Number(opt.duration || 60);
  const producer = newProducer(opt);
  await producer.ready();
  for (let i = 0; Date.now() < until; i++) {
    const t = Date.now();
    try {
      const r = await producer.send(new Message(opt.topic, 'TagA', 'p-' + i));
      console.log(`PULSE ${t} ${r.sendStatus === 'SEND_OK' ? 'OK' : 'NOTOK'} ${r.messageQueue.brokerName}`);
    } catch (err) {
      console.log(`PULSE ${t} FAIL ${oneLine(err)}`);
    }
    const d = interval - (Date.now() - t);
    if (d > 0) await new Promise(r => setTimeout(r, d));
  }
  return 0;
}

async function main() {
  const cmd = process.argv[2];
  const opt = parseArgs(process.argv.slice(3));
  const fn = { produce, consume, pulse }[cmd];
  if (!fn) {
    console.error('usage: node client.js produce|consume|pulse --ns ADDR --topic T ...');
    return 2;
  }
  return fn(opt);
}

main().then(rc => process.exit(rc), err => {
  console.log('ERROR ' + oneLine(err));
  process.exit(1);
});
