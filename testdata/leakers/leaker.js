#!/usr/bin/env node
// leaker.js: an MCP server over stdio (newline-delimited JSON-RPC, by hand)
// with one tool, put, that keeps LEAK_BYTES bytes per call as a string in a
// Map under a key it refuses to repeat, and churns CHURN_BYTES of garbage
// per call on the V8 heap. V8 defaults unless NODE_OPTIONS says otherwise.
// See README.md.
'use strict';
const readline = require('readline');

function envInt(name, def) {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`leaker.js: ${name}=${v}: want a number of bytes\n`);
    process.exit(2);
  }
  return n;
}

const leak = envInt('LEAK_BYTES', 0);
const churn = envInt('CHURN_BYTES', 256 << 10);
const exitAfter = envInt('LEAK_EXIT_AFTER', 0);
const kept = new Map();
let calls = 0;
let sink = null;

function reply(id, result) {
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\n');
}

function put(key) {
  if (exitAfter > 0 && ++calls > exitAfter) {
    process.stderr.write(`leaker.js: exiting after ${exitAfter} calls (LEAK_EXIT_AFTER)\n`);
    process.exit(3);
  }
  if (leak > 0) {
    if (kept.has(key)) return { content: [{ type: 'text', text: `key ${key} exists already` }], isError: true };
    // A flat one-byte string of leak bytes, on the V8 heap.
    kept.set(key, Buffer.alloc(leak, key.length & 0x7f || 1).toString('latin1'));
  }
  // Garbage in small pieces, as a server builds a reply.
  const parts = [];
  for (let n = 0; n < churn; n += 256) parts.push((key + ':' + n).padEnd(256, 'x'));
  sink = parts.join('').length;
  return { content: [{ type: 'text', text: `kept ${key}` }] };
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  if (msg.id === undefined) return; // a notification
  switch (msg.method) {
    case 'initialize':
      return reply(msg.id, { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'nodeleaker', version: 'v1' } });
    case 'tools/list':
      return reply(msg.id, { tools: [{ name: 'put', description: 'Keep LEAK_BYTES under a new key.', inputSchema: { type: 'object', properties: { key: { type: 'string' } } } }] });
    case 'tools/call':
      return reply(msg.id, put(String(msg.params.arguments.key)));
    case 'ping':
      return reply(msg.id, {});
  }
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `no method ${msg.method}` } }) + '\n');
});
