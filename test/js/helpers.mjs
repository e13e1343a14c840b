// Shared setup for the @azure/data-tables tests against partita.
//
// Environment:
//   PARTITA_URL          https://127.0.0.1:PORT (required); the tests use the
//                        path-style endpoint `${PARTITA_URL}/devstoreaccount1`.
//   NODE_EXTRA_CA_CERTS  the CA that signed partita's certificate.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import {
  AzureNamedKeyCredential,
  TableClient,
  TableServiceClient,
} from "@azure/data-tables";

export const account = "devstoreaccount1";
export const accountKey =
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const base = process.env.PARTITA_URL;
if (!base) {
  throw new Error("PARTITA_URL is not set (e.g. https://127.0.0.1:PORT); run through e2e/js_test.go");
}
export const endpoint = `${base.replace(/\/+$/, "")}/${account}`;
export const credential = new AzureNamedKeyCredential(account, accountKey);

// No retries: a failing request must surface at once, not after back-off.
const clientOptions = { retryOptions: { maxRetries: 0 } };

export function serviceClient() {
  return new TableServiceClient(endpoint, credential, clientOptions);
}

export function tableClient(name) {
  return new TableClient(endpoint, name, credential, clientOptions);
}

// uniqueName returns a valid, unused table name with the given prefix.
export function uniqueName(prefix = "js") {
  return `${prefix}${Date.now().toString(36)}${randomBytes(4).toString("hex")}`;
}

// newTable creates a fresh table, returns its TableClient, and registers
// its deletion with the test context t (if given).
export async function newTable(t, prefix = "js") {
  const name = uniqueName(prefix);
  const client = tableClient(name);
  await client.createTable();
  if (t?.after) {
    t.after(() => client.deleteTable().catch(() => {}));
  }
  return client;
}

// expectRestError asserts that promise rejects with a RestError carrying
// the given HTTP status and service error code.
export async function expectRestError(promise, status, code) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${status} ${code}, but the call succeeded`);
  assert.equal(err.name, "RestError", `expected a RestError, got ${err.stack ?? err}`);
  // Where the error code lives depends on the call: plain operations
  // leave err.code unset and the code is in the odata.error body and the
  // x-ms-error-code header; submitTransaction sets err.code from the failed
  // sub-response (the outer response is a 202).
  const bodyCode = err.response?.parsedBody?.odataError?.code;
  const headerCode = err.response?.headers?.get("x-ms-error-code");
  const details = `${err.statusCode} (err.code ${err.code}, odata.error.code ${bodyCode}, x-ms-error-code ${headerCode}): ${err.message}`;
  assert.equal(err.statusCode, status, `status: ${details}`);
  if (code !== undefined) {
    if (err.code !== undefined) {
      assert.equal(err.code, code, `err.code: ${details}`);
    } else {
      assert.equal(bodyCode, code, `odata.error.code: ${details}`);
      assert.equal(headerCode, code, `x-ms-error-code header: ${details}`);
    }
  }
  return err;
}

// rawResponse captures the raw HTTP response of one SDK call (for checks
// of the wire format). Usage: const r = rawResponse(); await x({onResponse: r.cb}); r.last
export function rawResponse() {
  const r = {
    last: undefined,
    all: [],
    cb: (resp) => {
      r.last = resp;
      r.all.push(resp);
    },
  };
  return r;
}

// userProps drops the system keys (partitionKey, rowKey, etag, timestamp)
// and the odata.* keys (getEntity passes odata.metadata through) of an
// SDK entity, leaving the user properties.
export function userProps(e) {
  const { partitionKey, rowKey, etag, timestamp, ...rest } = e;
  for (const k of Object.keys(rest)) if (k.startsWith("odata.")) delete rest[k];
  return rest;
}

// collect drains an async iterable into an array.
export async function collect(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

// runLimited runs fn(item) for every item with at most `limit` calls in flight.
export async function runLimited(items, limit, fn) {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  });
  await Promise.all(workers);
}

// compareKeys orders entities by (partitionKey, rowKey) with JS string
// comparison, i.e. ordinal on UTF-16 code units (docs/COMPATIBILITY.md §12).
export function compareKeys(a, b) {
  if (a.partitionKey !== b.partitionKey) return a.partitionKey < b.partitionKey ? -1 : 1;
  if (a.rowKey !== b.rowKey) return a.rowKey < b.rowKey ? -1 : 1;
  return 0;
}
