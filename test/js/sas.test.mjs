// Shared access signatures built with the SDK's own builders
// (generateTableSas, generateAccountSas; docs/COMPATIBILITY.md §10).
//
// SDK notes (@azure/data-tables 13.3.2):
// * generateTableSas(tableName, credential, { permissions, startsOn,
//   expiresOn, protocol, ipRange, identifier, startPartitionKey, startRowKey,
//   endPartitionKey, endRowKey, version }) supports key ranges: it signs
//   spk/srk/epk/erk and also puts them in the query string (unlike the Go
//   SDK, docs/COMPATIBILITY.md §10), so no hand-built parameters are needed.
// * generateAccountSas(credential, { permissions, resourceTypes, services,
//   startsOn, expiresOn, protocol, ipRange, version }); permissions take the
//   letters r w d l a u only (no "c"); resourceTypes is a string ("sco");
//   services is an AccountSasServices object ({ table: true }, the default):
//   a string such as "t" is silently turned into an empty ss, and the
//   token is then refused with 403 AuthenticationFailed.
// * Both sign sv=2019-02-02 and truncate times to whole seconds.
// * With new AzureSASCredential(sas) the SAS is appended to every request
//   URL, including /$batch; with the SAS in the account URL
//   (`${endpoint}?${sas}`, no credential) the SDK moves it after $batch.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  AzureSASCredential,
  TableClient,
  TableServiceClient,
  TableTransaction,
  generateAccountSas,
  generateTableSas,
  odata,
} from "@azure/data-tables";
import {
  collect,
  compareKeys,
  credential,
  endpoint,
  expectRestError,
  newTable,
  serviceClient,
  tableClient,
  uniqueName,
  userProps,
} from "./helpers.mjs";

const clientOptions = { retryOptions: { maxRetries: 0 } };
const minute = 60 * 1000;

function sasTableClient(tableName, sas) {
  return new TableClient(endpoint, tableName, new AzureSASCredential(sas), clientOptions);
}

function sasServiceClient(sas) {
  return new TableServiceClient(endpoint, new AzureSASCredential(sas), clientOptions);
}

function tableSas(tableName, opts) {
  return generateTableSas(tableName, credential, {
    startsOn: new Date(Date.now() - 5 * minute),
    expiresOn: new Date(Date.now() + 60 * minute),
    protocol: "https",
    ...opts,
  });
}

function accountSas(opts) {
  return generateAccountSas(credential, {
    services: { table: true },
    startsOn: new Date(Date.now() - 5 * minute),
    expiresOn: new Date(Date.now() + 60 * minute),
    protocol: "https",
    ...opts,
  });
}

// snapshot: every entity of the table (with etag and timestamp), by key.
async function snapshot(c) {
  return Object.fromEntries((await collect(c.listEntities())).map((e) => [`${e.partitionKey}|${e.rowKey}`, e]));
}

test("read-only table SAS: get and list work, writes get 403 AuthorizationPermissionMismatch", async (t) => {
  const owner = await newTable(t, "jssas");
  await owner.createEntity({ partitionKey: "p", rowKey: "r1", V: 1 });
  await owner.createEntity({ partitionKey: "p", rowKey: "r2", V: 2 });
  const before = await snapshot(owner);

  const sas = tableSas(owner.tableName, { permissions: { query: true } });
  const q = new URLSearchParams(sas);
  assert.equal(q.get("sp"), "r");
  assert.equal(q.get("tn"), owner.tableName);
  assert.equal(q.get("spr"), "https");
  assert.ok(q.get("sig") && q.get("se") && q.get("st") && q.get("sv"), sas);

  const c = sasTableClient(owner.tableName, sas);
  const got = await c.getEntity("p", "r1");
  assert.equal(got.V, 1);
  assert.equal(got.etag, before["p|r1"].etag);
  const all = await collect(c.listEntities());
  assert.deepEqual(all.map((e) => [e.rowKey, e.V]), [["r1", 1], ["r2", 2]]);
  const filtered = await collect(c.listEntities({ queryOptions: { filter: odata`V gt ${1}` } }));
  assert.deepEqual(filtered.map((e) => e.rowKey), ["r2"]);

  const denied = "AuthorizationPermissionMismatch";
  await expectRestError(c.createEntity({ partitionKey: "p", rowKey: "new" }), 403, denied);
  await expectRestError(c.updateEntity({ partitionKey: "p", rowKey: "r1", V: 9 }, "Merge"), 403, denied);
  await expectRestError(c.updateEntity({ partitionKey: "p", rowKey: "r1", V: 9 }, "Replace", { etag: got.etag }), 403, denied);
  await expectRestError(c.upsertEntity({ partitionKey: "p", rowKey: "r1", V: 9 }, "Merge"), 403, denied);
  await expectRestError(c.upsertEntity({ partitionKey: "p", rowKey: "up", V: 9 }, "Replace"), 403, denied);
  await expectRestError(c.deleteEntity("p", "r2"), 403, denied);

  // The same token in the URL form (no credential object).
  const viaUrl = new TableClient(`${endpoint}?${sas}`, owner.tableName, clientOptions);
  assert.equal((await viaUrl.getEntity("p", "r2")).V, 2);
  await expectRestError(viaUrl.deleteEntity("p", "r2"), 403, denied);

  assert.deepEqual(await snapshot(owner), before, "nothing was written");
});

test("table SAS: only entity operations, only on its own table", async (t) => {
  const owner = await newTable(t, "jssas");
  const other = await newTable(t, "jssas");
  await other.createEntity({ partitionKey: "p", rowKey: "r" });
  const sas = tableSas(owner.tableName, { permissions: { query: true, add: true, update: true, delete: true } });

  // Full permissions work on the named table...
  const c = sasTableClient(owner.tableName, sas);
  await c.createEntity({ partitionKey: "p", rowKey: "r", V: 1 });
  await c.upsertEntity({ partitionKey: "p", rowKey: "r", W: 2 }, "Merge");
  await c.updateEntity({ partitionKey: "p", rowKey: "r", V: 3 }, "Replace");
  assert.deepEqual(userProps(await c.getEntity("p", "r")), { V: 3 });
  await c.deleteEntity("p", "r");
  assert.deepEqual(await collect(owner.listEntities()), []);

  // ...but not on another table (docs/COMPATIBILITY.md §10: 403 AuthorizationFailure).
  const wrong = sasTableClient(other.tableName, sas);
  await expectRestError(wrong.getEntity("p", "r"), 403, "AuthorizationFailure");
  await expectRestError(collect(wrong.listEntities()), 403, "AuthorizationFailure");
  await expectRestError(wrong.createEntity({ partitionKey: "p", rowKey: "x" }), 403, "AuthorizationFailure");

  // Table-level operations are not allowed with a table SAS.
  await expectRestError(collect(sasServiceClient(sas).listTables()), 403);
  await expectRestError(c.deleteTable(), 403);
  assert.equal((await collect(serviceClient().listTables({ queryOptions: { filter: odata`TableName eq ${owner.tableName}` } }))).length, 1);
});

test("expired or not-yet-valid SAS gets 403 AuthenticationFailed", async (t) => {
  const owner = await newTable(t, "jssas");
  await owner.createEntity({ partitionKey: "p", rowKey: "r" });
  const perms = { query: true, add: true, update: true, delete: true };

  const expired = sasTableClient(
    owner.tableName,
    tableSas(owner.tableName, {
      permissions: perms,
      startsOn: new Date(Date.now() - 20 * minute),
      expiresOn: new Date(Date.now() - 2 * minute),
    }),
  );
  await expectRestError(expired.getEntity("p", "r"), 403, "AuthenticationFailed");
  await expectRestError(collect(expired.listEntities()), 403, "AuthenticationFailed");
  await expectRestError(expired.createEntity({ partitionKey: "p", rowKey: "x" }), 403, "AuthenticationFailed");

  const early = sasTableClient(
    owner.tableName,
    tableSas(owner.tableName, {
      permissions: perms,
      startsOn: new Date(Date.now() + 10 * minute),
      expiresOn: new Date(Date.now() + 60 * minute),
    }),
  );
  await expectRestError(early.getEntity("p", "r"), 403, "AuthenticationFailed");

  // Account SAS too.
  const expiredAccount = sasServiceClient(
    accountSas({
      permissions: { query: true, list: true },
      resourceTypes: "sco",
      startsOn: new Date(Date.now() - 20 * minute),
      expiresOn: new Date(Date.now() - 2 * minute),
    }),
  );
  await expectRestError(collect(expiredAccount.listTables()), 403, "AuthenticationFailed");

  // A valid token with a tampered signature.
  const good = tableSas(owner.tableName, { permissions: perms });
  const q = new URLSearchParams(good);
  const sig = q.get("sig");
  q.set("sig", (sig[0] === "A" ? "B" : "A") + sig.slice(1));
  await expectRestError(sasTableClient(owner.tableName, q.toString()).getEntity("p", "r"), 403, "AuthenticationFailed");
  // The untampered token works (so the failures above are not about the token's shape).
  assert.equal((await sasTableClient(owner.tableName, good).getEntity("p", "r")).rowKey, "r");

  assert.equal((await collect(owner.listEntities())).length, 1, "nothing was written");
});

test("key-ranged table SAS", async (t) => {
  const owner = await newTable(t, "jssas");
  const entities = [];
  for (let p = 0; p < 5; p++) for (let r = 0; r < 5; r++) entities.push({ partitionKey: `p${p}`, rowKey: `r${r}`, P: p, R: r });
  for (let p = 0; p < 5; p++) {
    await owner.submitTransaction(entities.filter((e) => e.P === p).map((e) => ["create", e]));
  }
  const key = (e) => `${e.partitionKey}/${e.rowKey}`;
  const range = { startPartitionKey: "p1", startRowKey: "r2", endPartitionKey: "p3", endRowKey: "r1" };
  const inRange = (e) =>
    (e.partitionKey > range.startPartitionKey ||
      (e.partitionKey === range.startPartitionKey && e.rowKey >= range.startRowKey)) &&
    (e.partitionKey < range.endPartitionKey ||
      (e.partitionKey === range.endPartitionKey && e.rowKey <= range.endRowKey));
  const expected = entities.filter(inRange).sort(compareKeys).map(key);
  // p1/r2..r4, all of p2, p3/r0..r1.
  assert.equal(expected.length, 10);

  const sas = tableSas(owner.tableName, {
    permissions: { query: true, add: true, update: true, delete: true },
    ...range,
  });
  const q = new URLSearchParams(sas);
  assert.deepEqual(
    [q.get("spk"), q.get("srk"), q.get("epk"), q.get("erk")],
    ["p1", "r2", "p3", "r1"],
    "the SDK puts the key range in the query string",
  );
  const c = sasTableClient(owner.tableName, sas);

  await t.test("listing returns exactly the range, across pages of 2", async () => {
    const pages = [];
    for await (const page of c.listEntities().byPage({ maxPageSize: 2 })) {
      assert.ok(page.length <= 2, `page of ${page.length}`);
      pages.push(page.map(key));
    }
    assert.deepEqual(pages.flat(), expected);
    assert.ok(pages.length >= 5, `${pages.length} pages`);
  });

  await t.test("a filter reaching outside the range is clipped to it", async () => {
    const got = await collect(c.listEntities({ queryOptions: { filter: odata`R ge ${1} and R le ${2}` } }));
    assert.deepEqual(
      got.map(key),
      expected.filter((k) => /\/r[12]$/.test(k)),
    );
    const none = await collect(c.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${"p0"}` } }));
    assert.deepEqual(none, []);
  });

  await t.test("point reads inside the range work, outside get 403 AuthorizationFailure", async () => {
    for (const [pk, rk] of [["p1", "r2"], ["p2", "r0"], ["p2", "r4"], ["p3", "r1"]]) {
      const e = await c.getEntity(pk, rk);
      assert.equal(key(e), `${pk}/${rk}`);
    }
    for (const [pk, rk] of [["p0", "r4"], ["p1", "r1"], ["p3", "r2"], ["p4", "r0"]]) {
      await expectRestError(c.getEntity(pk, rk), 403, "AuthorizationFailure");
    }
    // A missing entity inside the range is a plain 404.
    await expectRestError(c.getEntity("p2", "zz"), 404, "ResourceNotFound");
  });

  await t.test("writes outside the range get 403, inside succeed", async () => {
    const before = await snapshot(owner);
    await expectRestError(c.createEntity({ partitionKey: "p1", rowKey: "r0x" }), 403, "AuthorizationFailure");
    await expectRestError(c.updateEntity({ partitionKey: "p3", rowKey: "r3", X: 1 }), 403, "AuthorizationFailure");
    await expectRestError(c.deleteEntity("p0", "r0"), 403, "AuthorizationFailure");
    assert.deepEqual(await snapshot(owner), before);

    await c.createEntity({ partitionKey: "p2", rowKey: "r9", New: true });
    await c.deleteEntity("p2", "r9");
    assert.deepEqual(await snapshot(owner), before);
  });

  await t.test("partition-only range (spk/epk)", async () => {
    const pc = sasTableClient(
      owner.tableName,
      tableSas(owner.tableName, { permissions: { query: true }, startPartitionKey: "p1", endPartitionKey: "p2" }),
    );
    const pages = [];
    for await (const page of pc.listEntities().byPage({ maxPageSize: 2 })) pages.push(page.map(key));
    assert.deepEqual(
      pages.flat(),
      entities.filter((e) => e.P === 1 || e.P === 2).map(key),
    );
    await expectRestError(pc.getEntity("p3", "r0"), 403, "AuthorizationFailure");
    await expectRestError(pc.getEntity("p0", "r4"), 403, "AuthorizationFailure");
    assert.equal((await pc.getEntity("p2", "r4")).R, 4);
  });
});

test("account SAS with full permissions: create/list tables, entity operations", async (t) => {
  const sas = accountSas({
    permissions: { query: true, write: true, delete: true, list: true, add: true, update: true },
    resourceTypes: "sco",
  });
  const q = new URLSearchParams(sas);
  assert.equal(q.get("sp"), "rwdlau");
  assert.equal(q.get("srt"), "sco");
  assert.equal(q.get("ss"), "t");

  const svc = sasServiceClient(sas);
  const name = uniqueName("jsacct");
  t.after(() => tableClient(name).deleteTable().catch(() => {}));
  await svc.createTable(name);
  const listed = await collect(svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } }));
  assert.deepEqual(listed.map((x) => x.name), [name]);

  const c = sasTableClient(name, sas);
  await c.createEntity({ partitionKey: "p", rowKey: "r", V: 1 });
  await c.upsertEntity({ partitionKey: "p", rowKey: "u", V: 2 }, "Replace");
  await c.updateEntity({ partitionKey: "p", rowKey: "r", W: 3 }, "Merge");
  assert.deepEqual(userProps(await c.getEntity("p", "r")), { V: 1, W: 3 });
  const res = await c.submitTransaction([
    ["create", { partitionKey: "p", rowKey: "t1" }],
    ["delete", { partitionKey: "p", rowKey: "u" }],
  ]);
  assert.equal(res.status, 202);
  assert.deepEqual((await collect(c.listEntities())).map((e) => e.rowKey), ["r", "t1"]);
  await c.deleteEntity("p", "r");
  // Cross-check with the account key.
  assert.deepEqual((await collect(tableClient(name).listEntities())).map((e) => e.rowKey), ["t1"]);

  await svc.deleteTable(name);
  assert.deepEqual(await collect(serviceClient().listTables({ queryOptions: { filter: odata`TableName eq ${name}` } })), []);
});

test("account SAS without resource type o refuses entity operations (403 AuthorizationResourceTypeMismatch)", async (t) => {
  const owner = await newTable(t, "jssas");
  await owner.createEntity({ partitionKey: "p", rowKey: "r", V: 1 });
  const before = await snapshot(owner);
  const all = { query: true, write: true, delete: true, list: true, add: true, update: true };
  const sas = accountSas({ permissions: all, resourceTypes: "sc" });
  assert.equal(new URLSearchParams(sas).get("srt"), "sc");

  // Table-level operations are allowed...
  const listed = await collect(
    sasServiceClient(sas).listTables({ queryOptions: { filter: odata`TableName eq ${owner.tableName}` } }),
  );
  assert.deepEqual(listed.map((x) => x.name), [owner.tableName]);

  // ...entity operations are not.
  const c = sasTableClient(owner.tableName, sas);
  const code = "AuthorizationResourceTypeMismatch";
  await expectRestError(c.getEntity("p", "r"), 403, code);
  await expectRestError(collect(c.listEntities()), 403, code);
  await expectRestError(c.createEntity({ partitionKey: "p", rowKey: "x" }), 403, code);
  await expectRestError(c.updateEntity({ partitionKey: "p", rowKey: "r", V: 2 }), 403, code);
  await expectRestError(c.deleteEntity("p", "r"), 403, code);
  await expectRestError(c.submitTransaction([["create", { partitionKey: "p", rowKey: "y" }]]), 403, code);
  assert.deepEqual(await snapshot(owner), before);

  // And "o" alone does not allow table operations.
  const objOnly = accountSas({ permissions: all, resourceTypes: "o" });
  await expectRestError(sasServiceClient(objOnly).createTable(uniqueName("jsnot")), 403, code);
  assert.equal((await sasTableClient(owner.tableName, objOnly).getEntity("p", "r")).V, 1);
});

test("transactions through a SAS need every operation's permission", async (t) => {
  const owner = await newTable(t, "jssas");
  await owner.createEntity({ partitionKey: "p", rowKey: "a", V: 1 });
  await owner.createEntity({ partitionKey: "p", rowKey: "b", V: 1 });
  const before = await snapshot(owner);
  const actions = [
    ["update", { partitionKey: "p", rowKey: "a", V: 2 }, "Merge"],
    ["delete", { partitionKey: "p", rowKey: "b" }],
    ["create", { partitionKey: "p", rowKey: "c", V: 2 }],
  ];

  // Table SAS without "a", as a credential and in the URL.
  const noAdd = tableSas(owner.tableName, { permissions: { query: true, update: true, delete: true } });
  const e1 = await expectRestError(
    sasTableClient(owner.tableName, noAdd).submitTransaction(actions),
    403,
    "AuthorizationPermissionMismatch",
  );
  assert.equal(e1.response?.status, 403, "refused at the top level, not as a sub-response");
  await expectRestError(
    new TableClient(`${endpoint}?${noAdd}`, owner.tableName, clientOptions).submitTransaction(actions),
    403,
    "AuthorizationPermissionMismatch",
  );
  // An upsert needs "a" as well as "u".
  await expectRestError(
    sasTableClient(owner.tableName, noAdd).submitTransaction([["upsert", { partitionKey: "p", rowKey: "a", V: 3 }, "Merge"]]),
    403,
    "AuthorizationPermissionMismatch",
  );
  // Account SAS without "a".
  const acctNoAdd = accountSas({ permissions: { query: true, write: true, delete: true, list: true, update: true }, resourceTypes: "sco" });
  await expectRestError(
    sasTableClient(owner.tableName, acctNoAdd).submitTransaction(actions),
    403,
    "AuthorizationPermissionMismatch",
  );
  assert.deepEqual(await snapshot(owner), before, "no refused transaction wrote anything");

  // With "a" the same transaction goes through.
  const full = tableSas(owner.tableName, { permissions: { query: true, add: true, update: true, delete: true } });
  const res = await sasTableClient(owner.tableName, full).submitTransaction(actions);
  assert.equal(res.status, 202);
  assert.deepEqual(
    (await collect(owner.listEntities())).map((e) => [e.rowKey, e.V]),
    [["a", 2], ["c", 2]],
  );
});

test("a transaction through a key-ranged SAS must stay inside the range", async (t) => {
  const owner = await newTable(t, "jssas");
  await owner.createEntity({ partitionKey: "p", rowKey: "m", V: 1 });
  const before = await snapshot(owner);
  const sas = tableSas(owner.tableName, {
    permissions: { query: true, add: true, update: true, delete: true },
    startPartitionKey: "p",
    startRowKey: "k",
    endPartitionKey: "p",
    endRowKey: "n",
  });
  const c = sasTableClient(owner.tableName, sas);
  await expectRestError(
    c.submitTransaction([
      ["update", { partitionKey: "p", rowKey: "m", V: 2 }],
      ["create", { partitionKey: "p", rowKey: "z" }],
    ]),
    403,
    "AuthorizationFailure",
  );
  assert.deepEqual(await snapshot(owner), before);
  const tx = new TableTransaction();
  tx.updateEntity({ partitionKey: "p", rowKey: "m", V: 2 });
  tx.createEntity({ partitionKey: "p", rowKey: "n" });
  await c.submitTransaction(tx.actions);
  assert.deepEqual((await collect(owner.listEntities())).map((e) => [e.rowKey, e.V]), [["m", 2], ["n", undefined]]);
});
