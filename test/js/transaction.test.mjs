// submitTransaction ($batch, docs/COMPATIBILITY.md §8): every action type, all-or-nothing
// failures with the failing index, the entity group rules and special keys.
//
// SDK notes (@azure/data-tables 13.3.2):
// * A failed transaction rejects with a RestError built from the failed
//   sub-response: statusCode and code are the sub-response's, and the
//   message is odata.error.message.value verbatim, so the failing index is
//   only available as the "N:" prefix of err.message (the JS SDK does not
//   parse it into a property, unlike .NET's FailedTransactionActionIndex).
// * The SDK refuses actions on different partition keys on the client side
//   (a plain Error, nothing is sent), so the server's check is reached by
//   rewriting the multipart body on its way out (see rewriteBatchBody).
// * ["delete", entity] always sends If-Match: * (the action tuple carries no
//   options for delete); ["upsert", ...] never sends If-Match.
import { test } from "node:test";
import assert from "node:assert/strict";
import { TableClient, TableTransaction } from "@azure/data-tables";
import { collect, credential, endpoint, expectRestError, newTable, userProps } from "./helpers.mjs";

// snapshot returns every entity of the table keyed by rowKey, with etag and
// timestamp, to check that a failed transaction changed nothing.
async function snapshot(c) {
  return Object.fromEntries((await collect(c.listEntities())).map((e) => [`${e.partitionKey}|${e.rowKey}`, e]));
}

test("submitTransaction: creates", async (t) => {
  const c = await newTable(t);
  const actions = [];
  for (let i = 0; i < 10; i++) actions.push(["create", { partitionKey: "p", rowKey: `r${i}`, N: i }]);
  const res = await c.submitTransaction(actions);
  assert.equal(res.status, 202);
  assert.equal(res.subResponses.length, 10);
  for (const s of res.subResponses) {
    assert.equal(s.status, 204);
    assert.ok(s.etag, "sub-response etag");
  }
  const all = await collect(c.listEntities());
  assert.deepEqual(all.map((e) => e.N), [...Array(10).keys()]);
  // Each insert's sub-response etag is the stored entity's etag.
  for (const e of all) assert.equal(res.getResponseForEntity(e.rowKey)?.etag, e.etag, `etag of ${e.rowKey}`);
});

test("submitTransaction: mixed actions with TableTransaction", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "p", rowKey: "del", V: 0 });
  await c.createEntity({ partitionKey: "p", rowKey: "merge", A: 1 });
  await c.createEntity({ partitionKey: "p", rowKey: "replace", A: 1 });
  const tx = new TableTransaction();
  tx.createEntity({ partitionKey: "p", rowKey: "new", V: 1 });
  tx.deleteEntity("p", "del");
  tx.updateEntity({ partitionKey: "p", rowKey: "merge", B: 2 }, "Merge");
  tx.updateEntity({ partitionKey: "p", rowKey: "replace", B: 2 }, "Replace");
  tx.upsertEntity({ partitionKey: "p", rowKey: "upsert", C: 3 }, "Merge");
  const res = await c.submitTransaction(tx.actions);
  assert.equal(res.status, 202);
  assert.equal(res.subResponses.length, 5);
  const got = Object.fromEntries(
    (await collect(c.listEntities())).map((e) => [e.rowKey, userProps(e)]),
  );
  assert.deepEqual(got, {
    merge: { A: 1, B: 2 },
    new: { V: 1 },
    replace: { B: 2 },
    upsert: { C: 3 },
  });
});

test("submitTransaction: every action type in one transaction", async (t) => {
  const c = await newTable(t);
  const pk = "p";
  const seed = {};
  for (const rk of ["upsertMerge", "upsertReplace", "updMerge", "updMergeEtag", "updReplace", "updReplaceEtag", "del"]) {
    seed[rk] = await c.createEntity({ partitionKey: pk, rowKey: rk, Old: rk, Keep: 1 });
  }
  const tx = new TableTransaction();
  tx.createEntity({ partitionKey: pk, rowKey: "create", New: "c" });
  tx.upsertEntity({ partitionKey: pk, rowKey: "upsertMerge", New: "um" }, "Merge");
  tx.upsertEntity({ partitionKey: pk, rowKey: "upsertReplace", New: "ur" }, "Replace");
  tx.upsertEntity({ partitionKey: pk, rowKey: "upsertMergeNew", New: "umn" }, "Merge");
  tx.upsertEntity({ partitionKey: pk, rowKey: "upsertReplaceNew", New: "urn" }, "Replace");
  tx.updateEntity({ partitionKey: pk, rowKey: "updMerge", New: "m" }, "Merge");
  tx.updateEntity({ partitionKey: pk, rowKey: "updMergeEtag", New: "me" }, "Merge", { etag: seed.updMergeEtag.etag });
  tx.updateEntity({ partitionKey: pk, rowKey: "updReplace", New: "r" }, "Replace");
  tx.updateEntity({ partitionKey: pk, rowKey: "updReplaceEtag", New: "re" }, "Replace", { etag: seed.updReplaceEtag.etag });
  tx.deleteEntity(pk, "del");
  assert.equal(tx.actions.length, 10);

  const res = await c.submitTransaction(tx.actions);
  assert.equal(res.status, 202);
  assert.equal(res.subResponses.length, tx.actions.length, "one sub-response per action, in order");
  for (const [i, s] of res.subResponses.entries()) {
    assert.equal(s.status, 204, `sub-response ${i} status`);
    if (i < 9) assert.ok(s.etag, `sub-response ${i} (${tx.actions[i][0]}) carries an etag`);
    else assert.equal(s.etag, undefined, "the delete sub-response has no etag");
  }

  const all = await collect(c.listEntities());
  const got = Object.fromEntries(all.map((e) => [e.rowKey, userProps(e)]));
  assert.deepEqual(got, {
    create: { New: "c" },
    upsertMerge: { Old: "upsertMerge", Keep: 1, New: "um" },
    upsertReplace: { New: "ur" },
    upsertMergeNew: { New: "umn" },
    upsertReplaceNew: { New: "urn" },
    updMerge: { Old: "updMerge", Keep: 1, New: "m" },
    updMergeEtag: { Old: "updMergeEtag", Keep: 1, New: "me" },
    updReplace: { New: "r" },
    updReplaceEtag: { New: "re" },
  });
  // Sub-response etags, in request order, are the stored etags, and every
  // written entity got a new one.
  const etagOf = Object.fromEntries(all.map((e) => [e.rowKey, e.etag]));
  for (const [i, [, entity]] of tx.actions.entries()) {
    if (entity.rowKey === "del") continue;
    assert.equal(res.subResponses[i].etag, etagOf[entity.rowKey], `etag of action ${i} (${entity.rowKey})`);
    if (seed[entity.rowKey]) assert.notEqual(etagOf[entity.rowKey], seed[entity.rowKey].etag, `${entity.rowKey} has a new etag`);
  }
});

test("submitTransaction: a failing action rolls back the whole batch", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "p", rowKey: "exists" });
  const err = await expectRestError(
    c.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "a" }],
      ["create", { partitionKey: "p", rowKey: "exists" }],
      ["create", { partitionKey: "p", rowKey: "b" }],
    ]),
    409,
    "EntityAlreadyExists",
  );
  assert.match(err.message, /^1:/, "the error names the failing action index");
  const all = await collect(c.listEntities());
  assert.deepEqual(all.map((e) => e.rowKey), ["exists"]);
});

test("submitTransaction: an insert of an existing entity mid-batch fails with its index and changes nothing", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "p", rowKey: "upd", V: 1 });
  await c.createEntity({ partitionKey: "p", rowKey: "ups", V: 1 });
  await c.createEntity({ partitionKey: "p", rowKey: "exists", V: 1 });
  await c.createEntity({ partitionKey: "p", rowKey: "del", V: 1 });
  const before = await snapshot(c);
  assert.equal(Object.keys(before).length, 4);

  const err = await expectRestError(
    c.submitTransaction([
      ["update", { partitionKey: "p", rowKey: "upd", V: 2 }, "Replace"],
      ["upsert", { partitionKey: "p", rowKey: "ups", V: 2 }, "Merge"],
      ["create", { partitionKey: "p", rowKey: "new1", V: 2 }],
      ["create", { partitionKey: "p", rowKey: "exists", V: 2 }],
      ["delete", { partitionKey: "p", rowKey: "del" }],
      ["create", { partitionKey: "p", rowKey: "new2", V: 2 }],
    ]),
    409,
    "EntityAlreadyExists",
  );
  // The outer response is a 202; the SDK builds the error from the only
  // sub-response, the failed one.
  assert.equal(err.response?.status, 202, "outer status of a failed batch");
  assert.match(err.message, /^3:/, `the message starts with the failing index 3: ${err.message}`);
  assert.equal(err.message.match(/^(\d+):/)?.[1], "3");

  // Nothing was applied: same entities, same properties, same etags and timestamps.
  assert.deepEqual(await snapshot(c), before);
});

test("submitTransaction: update with a stale etag fails with 412", async (t) => {
  const c = await newTable(t);
  const e0 = await c.createEntity({ partitionKey: "p", rowKey: "r", V: 1 });
  await c.updateEntity({ partitionKey: "p", rowKey: "r", V: 2 });
  await expectRestError(
    c.submitTransaction([["update", { partitionKey: "p", rowKey: "r", V: 3 }, "Merge", { etag: e0.etag }]]),
    412,
    "UpdateConditionNotSatisfied",
  );
  assert.equal((await c.getEntity("p", "r")).V, 2);
});

test("submitTransaction: a single failing operation has no index prefix (docs/COMPATIBILITY.md §8)", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "p", rowKey: "exists" });
  const err = await expectRestError(
    c.submitTransaction([["create", { partitionKey: "p", rowKey: "exists" }]]),
    409,
    "EntityAlreadyExists",
  );
  assert.doesNotMatch(err.message, /^\d+:/, err.message);
  assert.match(err.message, /^The specified entity already exists\./);
});

// rewriteBatchBody returns a TableClient for the same table whose $batch
// bodies are passed through fn on the way out (SharedKeyLite does not sign
// the body), and a counter of rewritten bodies.
function rewriteBatchBody(c, fn) {
  const stats = { rewritten: 0 };
  const policy = {
    name: "rewriteBatchBody",
    async sendRequest(req, next) {
      if (typeof req.body === "string" && new URL(req.url).pathname.endsWith("/$batch")) {
        const body = fn(req.body);
        if (body !== req.body) stats.rewritten++;
        req.body = body;
      }
      return next(req);
    },
  };
  const client = new TableClient(endpoint, c.tableName, credential, {
    retryOptions: { maxRetries: 0 },
    additionalPolicies: [{ policy, position: "perCall" }],
  });
  return { client, stats };
}

test("submitTransaction: different partitions give 400 CommandsInBatchActOnDifferentPartitions", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "p", rowKey: "keep", V: 1 });
  const before = await snapshot(c);

  // The SDK refuses this itself, before sending anything.
  await assert.rejects(
    c.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "a" }],
      ["create", { partitionKey: "q", rowKey: "b" }],
    ]),
    (e) => e.name !== "RestError" && /same partitionKey/.test(e.message),
  );

  // Let the SDK build a one-partition batch, then move action 2 to another
  // partition on the wire.
  const { client, stats } = rewriteBatchBody(c, (body) =>
    body.replace('{"PartitionKey":"p","RowKey":"b"', '{"PartitionKey":"q","RowKey":"b"'),
  );
  const err = await expectRestError(
    client.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "a" }],
      ["update", { partitionKey: "p", rowKey: "keep", V: 2 }],
      ["create", { partitionKey: "p", rowKey: "b" }],
    ]),
    400,
    "CommandsInBatchActOnDifferentPartitions",
  );
  assert.equal(stats.rewritten, 1, "the batch body was rewritten");
  assert.match(err.message, /^2:/, `the message names the first operation on another partition: ${err.message}`);
  assert.deepEqual(await snapshot(c), before);
});

test("submitTransaction: the same row twice gives 400 InvalidDuplicateRow", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "p", rowKey: "dup", V: 1 });
  const before = await snapshot(c);
  const err = await expectRestError(
    c.submitTransaction([
      ["create", { partitionKey: "p", rowKey: "a" }],
      ["update", { partitionKey: "p", rowKey: "dup", V: 2 }, "Merge"],
      ["create", { partitionKey: "p", rowKey: "b" }],
      ["delete", { partitionKey: "p", rowKey: "dup" }],
    ]),
    400,
    "InvalidDuplicateRow",
  );
  assert.match(err.message, /^3:/, `the message names the repeated operation: ${err.message}`);
  assert.deepEqual(await snapshot(c), before);
});

test("submitTransaction: keys with quotes, commas and non-ASCII", async (t) => {
  const c = await newTable(t);
  const pk = "part 'ü', \"日本\" 😀";
  const rks = [
    "O'Brien",
    "''",
    "it's, 'quoted' ''twice''",
    'double "quotes", comma',
    "a,b,c",
    "ключ, ß",
    "日本語キー",
    "emoji 😀 key",
    "paren(1),comma=eq;semi",
    "RowKey='x'",
  ];
  const created = await c.submitTransaction(rks.map((rk, i) => ["create", { partitionKey: pk, rowKey: rk, I: i }]));
  assert.equal(created.subResponses.length, rks.length);
  for (const [i, rk] of rks.entries()) {
    const got = await c.getEntity(pk, rk);
    assert.equal(got.partitionKey, pk);
    assert.equal(got.rowKey, rk);
    assert.equal(got.I, i);
    assert.equal(got.etag, created.subResponses[i].etag, `etag of ${JSON.stringify(rk)}`);
  }

  // Every other action type on the same keys.
  const tx = new TableTransaction();
  tx.updateEntity({ partitionKey: pk, rowKey: rks[0], M: "merged" }, "Merge");
  tx.updateEntity({ partitionKey: pk, rowKey: rks[1], R: "replaced" }, "Replace", {
    etag: created.subResponses[1].etag,
  });
  tx.upsertEntity({ partitionKey: pk, rowKey: rks[2], U: "um" }, "Merge");
  tx.upsertEntity({ partitionKey: pk, rowKey: rks[3], U: "ur" }, "Replace");
  tx.deleteEntity(pk, rks[4]);
  tx.deleteEntity(pk, rks[5]);
  tx.upsertEntity({ partitionKey: pk, rowKey: "new 'ü', x", U: "new" }, "Replace");
  const res = await c.submitTransaction(tx.actions);
  assert.equal(res.subResponses.length, 7);
  assert.ok(res.subResponses.every((s) => s.status === 204));

  const all = await collect(c.listEntities());
  assert.ok(all.every((e) => e.partitionKey === pk));
  const got = Object.fromEntries(all.map((e) => [e.rowKey, userProps(e)]));
  assert.deepEqual(got, {
    [rks[0]]: { I: 0, M: "merged" },
    [rks[1]]: { R: "replaced" },
    [rks[2]]: { I: 2, U: "um" },
    [rks[3]]: { U: "ur" },
    [rks[6]]: { I: 6 },
    [rks[7]]: { I: 7 },
    [rks[8]]: { I: 8 },
    [rks[9]]: { I: 9 },
    "new 'ü', x": { U: "new" },
  });

  // A failure on a special key reports that key's operation.
  const err = await expectRestError(
    c.submitTransaction([
      ["update", { partitionKey: pk, rowKey: rks[6], Z: 1 }],
      ["create", { partitionKey: pk, rowKey: rks[7] }],
    ]),
    409,
    "EntityAlreadyExists",
  );
  assert.match(err.message, /^1:/);
  assert.equal((await c.getEntity(pk, rks[6])).Z, undefined, "the failed batch did not apply its update");
});
