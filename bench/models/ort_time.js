// ONNX Runtime's side of bench/models (bench_models runs it once per model):
//   node ort_time.js MODEL.onnx INPUT.bin D0xD1x... OUTPUT.bin
// with ORT_DIR naming the folder whose node_modules holds onnxruntime-node (scripts/bench
// installs it into the build tree). One thread (intra and inter op), all graph optimisations.
// Times the model the way bench_models times tether (warm-up, calls per round for >= 50 ms, 15
// rounds, median per call), interleaved with an Identity model of the same input whose time is
// the binding's own per-call cost; prints {"ms":M,"net_ms":N} (N: the median per-round
// difference, the model's own time) and writes the output.
'use strict';
const path = require('path');
const fs = require('fs');
const ort = require(path.join(process.env.ORT_DIR || '.', 'node_modules', 'onnxruntime-node'));

const ROUNDS = 15;

// The model and an Identity model of the same input, the same number of calls per round
// (enough for >= 50 ms of the model), interleaved round by round; medians of the model's time
// per call and of the per-round difference (the model's own time, without the binding's cost).
async function timeBoth(session, feeds, id, idFeeds) {
  let out;
  for (let i = 0; i < 5; i++) {
    out = await session.run(feeds);
    await id.run(idFeeds);
  }
  let calls = 0;
  const start = process.hrtime.bigint();
  do {
    await session.run(feeds);
    calls++;
  } while (Number(process.hrtime.bigint() - start) < 50e6);
  const times = [], diffs = [];
  for (let r = 0; r < ROUNDS; r++) {
    let t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await session.run(feeds);
    const tm = Number(process.hrtime.bigint() - t0) / 1e6 / calls;
    t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await id.run(idFeeds);
    const ti = Number(process.hrtime.bigint() - t0) / 1e6 / calls;
    times.push(tm);
    diffs.push(tm - ti);
  }
  const med = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
  return { ms: med(times), net: med(diffs), out };
}

// A one-node Identity model (ONNX protobuf written by hand: ir_version 8, opset 17).
function identityModel(shape) {
  const varint = (n) => {
    const b = [];
    do {
      let x = n & 0x7f;
      n = Math.floor(n / 128);
      if (n) x |= 0x80;
      b.push(x);
    } while (n);
    return Buffer.from(b);
  };
  const field = (num, payload) => Buffer.concat([varint(num * 8 + 2), varint(payload.length), payload]);
  const str = (num, s) => field(num, Buffer.from(s));
  const intf = (num, v) => Buffer.concat([varint(num * 8), varint(v)]);
  const dims = Buffer.concat(shape.map((d) => field(1, intf(1, d))));
  const valueInfo = (name) => Buffer.concat([str(1, name),
    field(2, field(1, Buffer.concat([intf(1, 1), field(2, dims)])))]);
  const node = Buffer.concat([str(1, 'x'), str(2, 'y'), str(3, 'id'), str(4, 'Identity')]);
  const graph = Buffer.concat([field(1, node), str(2, 'g'), field(11, valueInfo('x')), field(12, valueInfo('y'))]);
  return Buffer.concat([intf(1, 8), field(7, graph), field(8, intf(2, 17))]);
}

(async () => {
  const [model, input, shapeArg, output] = process.argv.slice(2);
  const shape = shapeArg.split('x').map(Number);
  const buf = fs.readFileSync(input);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  const opts = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all' };
  const session = await ort.InferenceSession.create(model, opts);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, shape) };
  const id = await ort.InferenceSession.create(identityModel(shape), opts);
  const r = await timeBoth(session, feeds, id, { x: new ort.Tensor('float32', data, shape) });
  const y = r.out[session.outputNames[0]].data;
  fs.writeFileSync(output, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
  console.log(JSON.stringify({ ms: r.ms, net_ms: r.net }));
})().catch((e) => {
  console.error('ort_time.js: ' + e.message);
  process.exit(1);
});
