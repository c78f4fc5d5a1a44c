// Median latency of one ONNX model in ONNX Runtime (onnxruntime-node), the reference runtime:
//   node bench/ort/ort_bench.js MODEL.onnx INPUT.npy THREADS ITERATIONS [OUTPUT.npy]
// Prints "median_ms=<x>". Inputs/outputs are float32 .npy files.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', off, off + hlen);
  if (!header.includes("'<f4'")) throw new Error(`${path}: only float32 is supported`);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + off + hlen, buf.byteOffset + buf.length));
  return { shape, data };
}

function writeNpy(path, shape, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

async function main() {
  const [model, input, threads, iters, out] = process.argv.slice(2);
  if (!iters) {
    console.error('usage: ort_bench.js MODEL.onnx INPUT.npy THREADS ITERATIONS [OUTPUT.npy]');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
  });
  const x = readNpy(input);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  let result;
  const times = [];
  for (let i = 0; i < Number(iters) + 2; ++i) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds);
    const t1 = process.hrtime.bigint();
    if (i >= 2) times.push(Number(t1 - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  if (out) {
    const y = result[session.outputNames[0]];
    writeNpy(out, y.dims, y.data);
  }
  console.log(`median_ms=${times[Math.floor(times.length / 2)].toFixed(4)}`);
}

main().catch((e) => {
  console.error(e.message || e);
  process.exit(1);
});
