// Tables: create, list (with filters and paging), duplicate, delete.
import { test } from "node:test";
import assert from "node:assert/strict";
import { odata } from "@azure/data-tables";
import {
  collect,
  expectRestError,
  rawResponse,
  serviceClient,
  tableClient,
  uniqueName,
} from "./helpers.mjs";

test("create, list with filter, delete a table", async () => {
  const svc = serviceClient();
  const name = uniqueName("jstbl");
  const created = rawResponse();
  await svc.createTable(name, { onResponse: created.cb });
  assert.ok([201, 204].includes(created.last.status), `create status ${created.last.status}`);

  const found = await collect(svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } }));
  assert.deepEqual(found.map((t) => t.name), [name]);

  await svc.deleteTable(name);
  const after = await collect(svc.listTables({ queryOptions: { filter: odata`TableName eq ${name}` } }));
  assert.deepEqual(after, []);
});

test("creating an existing table gives 409 TableAlreadyExists (swallowed by the SDK)", async (t) => {
  const svc = serviceClient();
  const name = uniqueName("jsdup");
  await svc.createTable(name);
  t.after(() => svc.deleteTable(name));

  // The SDK hides a 409 TableAlreadyExists from createTable but reports the
  // response to onResponse.
  const dup = rawResponse();
  await svc.createTable(name, { onResponse: dup.cb });
  assert.equal(dup.last.status, 409);
  assert.equal(dup.last.headers.get("x-ms-error-code"), "TableAlreadyExists");
  assert.equal(dup.last.parsedBody?.odataError?.code, "TableAlreadyExists");

  // Table names are case-insensitive.
  const dupCase = rawResponse();
  await svc.createTable(name.toUpperCase(), { onResponse: dupCase.cb });
  assert.equal(dupCase.last.status, 409);
  assert.equal(dupCase.last.headers.get("x-ms-error-code"), "TableAlreadyExists");

  // Same through TableClient.createTable.
  const dup2 = rawResponse();
  await tableClient(name).createTable({ onResponse: dup2.cb });
  assert.equal(dup2.last.status, 409);
});

test("list tables with a prefix filter and paging", async (t) => {
  const svc = serviceClient();
  const prefix = uniqueName("jspfx");
  const names = [];
  for (let i = 0; i < 7; i++) names.push(`${prefix}n${i}`);
  // Names just outside the prefix range must not show up.
  // (prefix ends in a hex digit, so "…z" sorts after every "prefix…" name.)
  const outside = [prefix.slice(0, -1), `${prefix.slice(0, -1)}z`];
  for (const n of [...names, ...outside]) await svc.createTable(n);
  t.after(async () => {
    for (const n of [...names, ...outside]) await svc.deleteTable(n);
  });

  const filter = odata`TableName ge ${prefix} and TableName lt ${prefix + "~"}`;
  const all = await collect(svc.listTables({ queryOptions: { filter } }));
  assert.deepEqual(all.map((x) => x.name).sort(), names);
  assert.ok(!all.some((x) => outside.includes(x.name)));

  const pages = [];
  for await (const page of svc.listTables({ queryOptions: { filter } }).byPage({ maxPageSize: 3 })) {
    assert.ok(page.length <= 3, `page of ${page.length} > maxPageSize 3`);
    pages.push(page.map((x) => x.name));
  }
  assert.deepEqual(pages.flat().sort(), names, `pages: ${JSON.stringify(pages)}`);
  assert.ok(pages.length >= 3, `expected at least 3 pages, got ${pages.length}`);
});

test("deleting a missing table gives 404 ResourceNotFound", async () => {
  const svc = serviceClient();
  const name = uniqueName("jsgone");
  // The SDK swallows the 404 of deleteTable; check the raw response.
  const r = rawResponse();
  await svc.deleteTable(name, { onResponse: r.cb });
  assert.equal(r.last?.status, 404);
  assert.equal(r.last.headers.get("x-ms-error-code"), "ResourceNotFound");
});

test("invalid table names are rejected", async () => {
  const svc = serviceClient();
  await expectRestError(svc.createTable("1nvalid"), 400, "InvalidResourceName");
  await expectRestError(svc.createTable("ab"), 400, "OutOfRangeInput");
});
