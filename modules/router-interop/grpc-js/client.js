#!/usr/bin/env node
// kvrouter interoperability client on @grpc/grpc-js: a client that is not ours, loading the repository's proto/
// with @grpc/proto-loader. It makes unary calls described in JSON and answers each with a JSON result.
//
//   node client.js '<call>'        one call (an object) or several (an array), run in order; prints the result(s)
//   node client.js --stdin         one call per input line, one result line per call; exits when stdin closes.
//                                  A line holding an array runs its calls concurrently (on the same channel) and
//                                  answers one line with the array of their results
//
// A call:   {"id": "...", "target": "127.0.0.1:50051", "service": "Router", "method": "Select",
//            "request": {...proto3 JSON, proto field names...}, "metadata": {"x-key": "text", "x-key-bin": "<base64>"},
//            "timeout_ms": 10000}
// A result: {"id": "...", "code": 0, "code_name": "OK", "details": "", "reason": <kvrouter-reason trailer or null>,
//            "headers": {...response headers...}, "trailers": {...}, "response": {...} or null, "elapsed_ms": 12}
//
// It can never hang: every call has a deadline (10 s unless given), a call that still has not finished 5 s after its
// deadline is reported as a local failure, and the whole process exits after KVROUTER_INTEROP_HARD_TIMEOUT_MS
// (default 300000) whatever it is doing.
'use strict';

const path = require('path');
const readline = require('readline');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const HARD_TIMEOUT_MS = Number(process.env.KVROUTER_INTEROP_HARD_TIMEOUT_MS || 300000);
const DEFAULT_CALL_TIMEOUT_MS = 10000;
const CALL_GRACE_MS = 5000;
const PROTO_DIR = process.env.KVROUTER_PROTO_DIR || path.resolve(__dirname, '..', '..', '..', 'proto');

const hardTimer = setTimeout(() => {
  process.stderr.write(`grpc-js client: hard timeout of ${HARD_TIMEOUT_MS} ms, exiting\n`);
  process.exit(124);
}, HARD_TIMEOUT_MS);
hardTimer.unref();

const definition = protoLoader.loadSync(
  ['kvrouter/v1/router.proto', 'kvrouter/v1/workers.proto', 'kvrouter/v1/admin.proto'],
  {
    includeDirs: [PROTO_DIR],
    keepCase: true, // proto field names, as protobuf's JSON printer with preservingProtoFieldNames
    longs: String, // 64-bit integers as decimal strings, as proto3 JSON
    enums: String,
    defaults: true,
    oneofs: true,
  });
const kvrouter = grpc.loadPackageDefinition(definition).kvrouter.v1;

const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([name, code]) => [code, name]));
const clients = new Map();

function clientFor(target, service) {
  const key = `${target}|${service}`;
  let client = clients.get(key);
  if (!client) {
    const Service = kvrouter[service];
    if (typeof Service !== 'function') {
      throw new Error(`unknown service '${service}'`);
    }
    client = new Service(target, grpc.credentials.createInsecure());
    clients.set(key, client);
  }
  return client;
}

function toMetadata(entries) {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(entries || {})) {
    metadata.add(key, key.endsWith('-bin') ? Buffer.from(String(value), 'base64') : String(value));
  }
  return metadata;
}

function fromMetadata(metadata) {
  const out = {};
  if (!metadata) {
    return out;
  }
  for (const [key, value] of Object.entries(metadata.getMap())) {
    out[key] = Buffer.isBuffer(value) ? value.toString('base64') : value;
  }
  return out;
}

function localFailure(call, started, message) {
  return {
    id: call.id === undefined ? null : call.id,
    code: -1,
    code_name: 'LOCAL_FAILURE',
    details: message,
    reason: null,
    headers: {},
    trailers: {},
    response: null,
    elapsed_ms: Date.now() - started,
  };
}

/** Makes one unary call; resolves (never rejects) once both its answer and its final status (trailers) arrived. */
function runCall(call) {
  const started = Date.now();
  return new Promise((resolve) => {
    let client;
    try {
      client = clientFor(call.target, call.service);
      if (typeof client[call.method] !== 'function') {
        throw new Error(`unknown method '${call.service}.${call.method}'`);
      }
    } catch (e) {
      resolve(localFailure(call, started, String(e && e.message ? e.message : e)));
      return;
    }
    const timeoutMs = Number(call.timeout_ms || DEFAULT_CALL_TIMEOUT_MS);
    let answer = null; // {error} or {response}
    let status = null;
    let headers = null;
    let done = false;
    const finish = (result) => {
      if (!done) {
        done = true;
        clearTimeout(guard);
        resolve(result);
      }
    };
    const guard = setTimeout(() => finish(localFailure(call, started,
      `no status ${CALL_GRACE_MS} ms after the ${timeoutMs} ms deadline`)), timeoutMs + CALL_GRACE_MS);
    const maybeFinish = () => {
      if (answer === null || status === null) {
        return;
      }
      const error = answer.error;
      finish({
        id: call.id === undefined ? null : call.id,
        code: error ? error.code : status.code,
        code_name: CODE_NAMES[error ? error.code : status.code] || 'UNKNOWN_CODE',
        details: error ? error.details : status.details,
        reason: (status.metadata && status.metadata.get('kvrouter-reason')[0]) || null,
        headers: fromMetadata(headers),
        trailers: fromMetadata(status.metadata),
        response: error ? null : answer.response,
        elapsed_ms: Date.now() - started,
      });
    };
    try {
      const pending = client[call.method](call.request || {}, toMetadata(call.metadata),
        { deadline: new Date(started + timeoutMs) },
        (error, response) => {
          answer = error ? { error } : { response };
          maybeFinish();
        });
      pending.on('metadata', (m) => {
        headers = m;
      });
      pending.on('status', (s) => {
        status = s;
        maybeFinish();
      });
    } catch (e) {
      finish(localFailure(call, started, String(e && e.message ? e.message : e)));
    }
  });
}

async function runArgument(text) {
  const parsed = JSON.parse(text);
  const calls = Array.isArray(parsed) ? parsed : [parsed];
  const results = [];
  for (const call of calls) {
    results.push(await runCall(call));
  }
  process.stdout.write(JSON.stringify(Array.isArray(parsed) ? results : results[0]) + '\n');
}

async function runStdin() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') {
      continue;
    }
    let result;
    try {
      const parsed = JSON.parse(line);
      result = Array.isArray(parsed) ? await Promise.all(parsed.map(runCall)) : await runCall(parsed);
    } catch (e) {
      result = localFailure({}, Date.now(), `bad input line: ${e && e.message ? e.message : e}`);
    }
    process.stdout.write(JSON.stringify(result) + '\n');
  }
}

async function main() {
  const arg = process.argv[2];
  if (arg === undefined || arg === '--help') {
    process.stderr.write("usage: node client.js '<call JSON or array>' | node client.js --stdin\n");
    process.exit(arg === undefined ? 2 : 0);
  }
  if (arg === '--stdin') {
    await runStdin();
  } else {
    await runArgument(arg);
  }
  for (const client of clients.values()) {
    client.close();
  }
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`grpc-js client: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
