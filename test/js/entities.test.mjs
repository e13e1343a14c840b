// Entity CRUD: create, get, update (Merge/Replace), upsert (both modes),
// delete, ETags and the 404/409/412 errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { collect, expectRestError, newTable, rawResponse, tableClient, uniqueName, userProps } from "./helpers.mjs";

test("createEntity / getEntity", async (t) => {
  const c = await newTable(t);
  const created = await c.createEntity({ partitionKey: "p", rowKey: "r", Name: "Ann", Age: 23, Ok: true });
  assert.ok(created.etag, "createEntity returns an etag");
  const got = await c.getEntity("p", "r");
  assert.equal(got.partitionKey, "p");
  assert.equal(got.rowKey, "r");
  assert.equal(got.etag, created.etag);
  assert.equal(typeof got.timestamp, "string");
  assert.ok(!Number.isNaN(Date.parse(got.timestamp)), `timestamp ${got.timestamp}`);
  assert.deepEqual(userProps(got), { Name: "Ann", Age: 23, Ok: true });

  await expectRestError(c.createEntity({ partitionKey: "p", rowKey: "r", Name: "again" }), 409, "EntityAlreadyExists");
});

test("getEntity with select", async (t) => {
  const c = await newTable(t);
  await c.createEntity({ partitionKey: "p", rowKey: "r", A: 1, B: "two", C: true });
  const got = await c.getEntity("p", "r", { queryOptions: { select: ["B", "Missing"] } });
  assert.equal(got.B, "two");
  assert.equal(got.A, undefined);
  assert.equal(got.C, undefined);
  assert.ok(got.Missing === null || got.Missing === undefined, `Missing = ${got.Missing}`);
  assert.ok(got.etag, "etag is returned with $select");
});

test("updateEntity Merge keeps other properties, Replace drops them", async (t) => {
  const c = await newTable(t);
  const e0 = await c.createEntity({ partitionKey: "p", rowKey: "r", A: "a", B: 1 });

  const m = await c.updateEntity({ partitionKey: "p", rowKey: "r", B: 2, C: "c" }, "Merge", { etag: e0.etag });
  assert.ok(m.etag && m.etag !== e0.etag, `merge returns a new etag (${e0.etag} -> ${m.etag})`);
  let got = await c.getEntity("p", "r");
  assert.deepEqual(userProps(got), { A: "a", B: 2, C: "c" });
  assert.equal(got.etag, m.etag);

  // Default mode is Merge and default etag is "*".
  await c.updateEntity({ partitionKey: "p", rowKey: "r", D: 4 });
  got = await c.getEntity("p", "r");
  assert.deepEqual(userProps(got), { A: "a", B: 2, C: "c", D: 4 });

  const r = await c.updateEntity({ partitionKey: "p", rowKey: "r", Z: "only" }, "Replace");
  got = await c.getEntity("p", "r");
  assert.deepEqual(userProps(got), { Z: "only" });
  assert.equal(got.etag, r.etag);
});

test("upsertEntity inserts and updates, in both modes", async (t) => {
  const c = await newTable(t);
  // Merge-upsert of a missing entity inserts it.
  await c.upsertEntity({ partitionKey: "p", rowKey: "m", A: 1 }, "Merge");
  assert.deepEqual(userProps(await c.getEntity("p", "m")), { A: 1 });
  await c.upsertEntity({ partitionKey: "p", rowKey: "m", B: 2 }, "Merge");
  assert.deepEqual(userProps(await c.getEntity("p", "m")), { A: 1, B: 2 });

  // Replace-upsert of a missing entity inserts it; of an existing one replaces.
  await c.upsertEntity({ partitionKey: "p", rowKey: "r", A: 1, B: 2 }, "Replace");
  assert.deepEqual(userProps(await c.getEntity("p", "r")), { A: 1, B: 2 });
  await c.upsertEntity({ partitionKey: "p", rowKey: "r", C: 3 }, "Replace");
  assert.deepEqual(userProps(await c.getEntity("p", "r")), { C: 3 });

  // Default mode is Merge.
  await c.upsertEntity({ partitionKey: "p", rowKey: "r", D: 4 });
  assert.deepEqual(userProps(await c.getEntity("p", "r")), { C: 3, D: 4 });
});

test("deleteEntity, with and without etag", async (t) => {
  const c = await newTable(t);
  const e1 = await c.createEntity({ partitionKey: "p", rowKey: "1" });
  await c.createEntity({ partitionKey: "p", rowKey: "2" });
  const del = rawResponse();
  await c.deleteEntity("p", "1", { etag: e1.etag, onResponse: del.cb });
  assert.equal(del.last.status, 204);
  await c.deleteEntity("p", "2"); // If-Match: *
  await expectRestError(c.getEntity("p", "1"), 404, "ResourceNotFound");
  await expectRestError(c.getEntity("p", "2"), 404, "ResourceNotFound");
  await expectRestError(c.deleteEntity("p", "1"), 404, "ResourceNotFound");
});

test("stale etag: 412 UpdateConditionNotSatisfied on update and delete", async (t) => {
  const c = await newTable(t);
  const e0 = await c.createEntity({ partitionKey: "p", rowKey: "r", V: 1 });
  const e1 = await c.updateEntity({ partitionKey: "p", rowKey: "r", V: 2 }, "Merge", { etag: e0.etag });
  assert.notEqual(e1.etag, e0.etag);

  await expectRestError(
    c.updateEntity({ partitionKey: "p", rowKey: "r", V: 3 }, "Merge", { etag: e0.etag }),
    412,
    "UpdateConditionNotSatisfied",
  );
  await expectRestError(
    c.updateEntity({ partitionKey: "p", rowKey: "r", V: 3 }, "Replace", { etag: e0.etag }),
    412,
    "UpdateConditionNotSatisfied",
  );
  await expectRestError(c.deleteEntity("p", "r", { etag: e0.etag }), 412, "UpdateConditionNotSatisfied");
  // Nothing changed.
  const got = await c.getEntity("p", "r");
  assert.equal(got.V, 2);
  assert.equal(got.etag, e1.etag);

  // The etag from a query works for a conditional update too.
  const [listed] = await collect(c.listEntities());
  assert.equal(listed.etag, e1.etag);
  await c.updateEntity({ partitionKey: "p", rowKey: "r", V: 4 }, "Merge", { etag: listed.etag });
});

test("404s: ResourceNotFound for a missing entity, TableNotFound for a missing table", async (t) => {
  const c = await newTable(t);
  await expectRestError(c.getEntity("p", "nope"), 404, "ResourceNotFound");
  await expectRestError(
    c.updateEntity({ partitionKey: "p", rowKey: "nope", A: 1 }, "Merge", { etag: "*" }),
    404,
    "ResourceNotFound",
  );
  await expectRestError(
    c.updateEntity({ partitionKey: "p", rowKey: "nope", A: 1 }, "Replace", { etag: "*" }),
    404,
    "ResourceNotFound",
  );
  await expectRestError(c.deleteEntity("p", "nope"), 404, "ResourceNotFound");

  const missing = tableClient(uniqueName("jsnotable"));
  await expectRestError(missing.getEntity("p", "r"), 404, "TableNotFound");
  await expectRestError(missing.createEntity({ partitionKey: "p", rowKey: "r" }), 404, "TableNotFound");
  await expectRestError(missing.upsertEntity({ partitionKey: "p", rowKey: "r", A: 1 }), 404, "TableNotFound");
  await expectRestError(collect(missing.listEntities()), 404, "TableNotFound");
});
