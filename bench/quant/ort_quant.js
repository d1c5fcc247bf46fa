// ONNX Runtime's side of bench/quant (bench_quant runs it once per model):
//   node ort_quant.js MODEL.onnx INPUT.bin D0xD1x... OUTPUT.bin
// with ORT_DIR naming the folder whose node_modules holds onnxruntime-node (scripts/bench
// installs it into the build tree). One thread, all graph optimisations (ORT fuses QDQ
// patterns into its integer kernels, as it does for a quantized model in production); the
// input is raw float32, the first output is written as raw float32.
'use strict';
const path = require('path');
const fs = require('fs');
const ort = require(path.join(process.env.ORT_DIR || '.', 'node_modules', 'onnxruntime-node'));

(async () => {
  const [model, input, shapeArg, output] = process.argv.slice(2);
  const shape = shapeArg.split('x').map(Number);
  const buf = fs.readFileSync(input);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  const opts = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all' };
  const session = await ort.InferenceSession.create(model, opts);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, shape) };
  const out = await session.run(feeds);
  const y = out[session.outputNames[0]].data;
  fs.writeFileSync(output, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
})().catch((e) => {
  console.error('ort_quant.js: ' + e.message);
  process.exit(1);
});
