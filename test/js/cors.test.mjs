// CORS (docs/COMPATIBILITY.md §11): rules set with TableServiceClient.setProperties,
// preflights with raw fetch (they are not authenticated), and the CORS
// headers on actual SDK requests that carry an Origin.
//
// The rules are account-wide state on the shared server: this file sets
// them once, runs its checks as subtests, and restores the original
// service properties afterwards (no other test file sends an Origin or
// touches the service properties).
import { test } from "node:test";
import assert from "node:assert/strict";
import { newTable, rawResponse, serviceClient, endpoint } from "./helpers.mjs";

const appOrigin = "https://app.example";
const rules = [
  {
    allowedOrigins: `${appOrigin},https://other.example`,
    allowedMethods: "GET,PUT,MERGE",
    allowedHeaders: "x-ms-*,content-type",
    exposedHeaders: "x-ms-request-id,etag",
    maxAgeInSeconds: 600,
  },
  {
    allowedOrigins: "*",
    allowedMethods: "DELETE",
    allowedHeaders: "*",
    exposedHeaders: "x-ms-*",
    maxAgeInSeconds: 30,
  },
];

// preflight sends an unauthenticated OPTIONS request.
function preflight(url, headers) {
  return fetch(url, { method: "OPTIONS", headers });
}

// The service properties as setProperties takes them (no response fields).
function propsOf(p) {
  const { logging, hourMetrics, minuteMetrics, cors } = p;
  return { logging, hourMetrics, minuteMetrics, cors: cors ?? [] };
}

async function assertPreflightFails(url, headers, what) {
  const r = await preflight(url, headers);
  const body = await r.text();
  assert.equal(r.status, 403, `${what}: status (${body})`);
  assert.equal(r.headers.get("x-ms-error-code"), "CorsPreflightFailure", `${what}: x-ms-error-code`);
  assert.match(body, /CorsPreflightFailure/, `${what}: body`);
  assert.equal(r.headers.get("access-control-allow-origin"), null, `${what}: no Access-Control-Allow-Origin`);
  assert.equal(r.headers.get("access-control-allow-methods"), null, `${what}: no Access-Control-Allow-Methods`);
}

test("CORS rules: preflights and actual requests", async (t) => {
  const svc = serviceClient();
  const original = propsOf(await svc.getProperties());
  const table = await newTable(t, "jscors");
  await table.createEntity({ partitionKey: "p", rowKey: "r", V: 1 });
  const entityUrl = `${endpoint}/${table.tableName}(PartitionKey='p',RowKey='r')`;

  // Before any rule is set (if the account had none), preflights fail.
  if (original.cors.length === 0) {
    await assertPreflightFails(endpoint, { Origin: appOrigin, "Access-Control-Request-Method": "GET" }, "no rules");
  }

  await svc.setProperties({ cors: rules });
  try {
    const stored = (await svc.getProperties()).cors;
    assert.deepEqual(stored, rules, "the rules read back as set");

    await t.test("matching preflight to the account URL gets 200 with the CORS headers", async () => {
      const r = await preflight(endpoint, { Origin: appOrigin, "Access-Control-Request-Method": "GET" });
      assert.equal(r.status, 200, await r.text());
      assert.equal(r.headers.get("access-control-allow-origin"), appOrigin);
      assert.match(r.headers.get("access-control-allow-methods") ?? "", /\bGET\b/);
      assert.equal(r.headers.get("access-control-max-age"), "600");
      assert.equal(r.headers.get("access-control-allow-credentials"), "true");
    });

    await t.test("the second origin of the rule, a table path and an entity path", async () => {
      for (const url of [`${endpoint}/Tables`, `${endpoint}/${table.tableName}`, entityUrl]) {
        const r = await preflight(url, { Origin: "https://other.example", "Access-Control-Request-Method": "PUT" });
        assert.equal(r.status, 200, `${url}: ${await r.text()}`);
        assert.equal(r.headers.get("access-control-allow-origin"), "https://other.example", url);
        assert.match(r.headers.get("access-control-allow-methods") ?? "", /\bPUT\b/, url);
        assert.equal(r.headers.get("access-control-max-age"), "600", url);
      }
    });

    await t.test("requested headers are checked against AllowedHeaders", async () => {
      const ok = await preflight(endpoint, {
        Origin: appOrigin,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-ms-date,x-ms-version,content-type",
      });
      assert.equal(ok.status, 200, await ok.text());
      const allowed = (ok.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/\s*,\s*/);
      for (const h of ["x-ms-date", "x-ms-version", "content-type"]) assert.ok(allowed.includes(h), `${h} in ${allowed}`);

      await assertPreflightFails(
        endpoint,
        { Origin: appOrigin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-ms-date,x-custom" },
        "a header outside AllowedHeaders",
      );
    });

    await t.test("non-matching preflights get 403 CorsPreflightFailure", async () => {
      await assertPreflightFails(endpoint, { Origin: "https://evil.example", "Access-Control-Request-Method": "GET" }, "unknown origin");
      await assertPreflightFails(endpoint, { Origin: "https://APP.example", "Access-Control-Request-Method": "GET" }, "origin differs in case");
      await assertPreflightFails(entityUrl, { Origin: appOrigin, "Access-Control-Request-Method": "POST" }, "method not allowed");
    });

    await t.test("a wildcard-origin rule answers Access-Control-Allow-Origin: *", async () => {
      const r = await preflight(entityUrl, { Origin: "https://anyone.example", "Access-Control-Request-Method": "DELETE" });
      assert.equal(r.status, 200, await r.text());
      assert.equal(r.headers.get("access-control-allow-origin"), "*");
      assert.match(r.headers.get("access-control-allow-methods") ?? "", /\bDELETE\b/);
      assert.equal(r.headers.get("access-control-max-age"), "30");
      assert.equal(r.headers.get("access-control-allow-credentials"), null);
    });

    await t.test("a preflight without Access-Control-Request-Method gets 400", async () => {
      const r = await preflight(endpoint, { Origin: appOrigin });
      assert.equal(r.status, 400, await r.text());
      assert.equal(r.headers.get("x-ms-error-code"), "InvalidHeaderValue");
    });

    await t.test("an authenticated GET with a matching Origin carries the CORS headers", async () => {
      const resp = rawResponse();
      const e = await table.getEntity("p", "r", {
        requestOptions: { customHeaders: { Origin: appOrigin } },
        onResponse: resp.cb,
      });
      assert.equal(e.V, 1);
      assert.equal(resp.last.status, 200);
      assert.equal(resp.last.request.headers.get("origin"), appOrigin, "the SDK sent the Origin header");
      const h = resp.last.headers;
      assert.equal(h.get("access-control-allow-origin"), appOrigin);
      assert.match(h.get("vary") ?? "", /\bOrigin\b/i, `Vary: ${h.get("vary")}`);
      assert.equal(h.get("access-control-expose-headers"), rules[0].exposedHeaders);
      assert.equal(h.get("access-control-allow-credentials"), "true");

      // Listing through the SDK (GET too).
      const list = rawResponse();
      const page = await table.listEntities({ requestOptions: { customHeaders: { Origin: appOrigin } }, onResponse: list.cb }).byPage().next();
      assert.equal(page.value.length, 1);
      assert.equal(list.last.headers.get("access-control-allow-origin"), appOrigin);
    });

    await t.test("actual requests without a matching rule succeed without CORS headers", async () => {
      // Unknown origin.
      const other = rawResponse();
      await table.getEntity("p", "r", { requestOptions: { customHeaders: { Origin: "https://evil.example" } }, onResponse: other.cb });
      assert.equal(other.last.status, 200);
      assert.equal(other.last.headers.get("access-control-allow-origin"), undefined);
      // Allowed origin, method (POST) not in its rule.
      const post = rawResponse();
      await table.createEntity(
        { partitionKey: "p", rowKey: "posted" },
        { requestOptions: { customHeaders: { Origin: appOrigin } }, onResponse: post.cb },
      );
      assert.equal(post.last.status, 204);
      assert.equal(post.last.headers.get("access-control-allow-origin"), undefined);
      // Both still vary by Origin: another origin could get CORS headers.
      assert.match(other.last.headers.get("vary") ?? "", /\bOrigin\b/i, "no matching rule: Vary: Origin");
      assert.match(post.last.headers.get("vary") ?? "", /\bOrigin\b/i, "no matching rule: Vary: Origin");
      // No Origin at all, while rules exist and no "*" rule allows GET: no
      // CORS headers, but Vary: Origin (the service's Vary table).
      const plain = rawResponse();
      await table.getEntity("p", "r", { onResponse: plain.cb });
      assert.equal(plain.last.headers.get("access-control-allow-origin"), undefined);
      assert.match(plain.last.headers.get("vary") ?? "", /\bOrigin\b/i);
    });

    await t.test("an actual DELETE under the wildcard rule gets Access-Control-Allow-Origin: *", async () => {
      const del = rawResponse();
      await table.deleteEntity("p", "posted", { requestOptions: { customHeaders: { Origin: "https://anyone.example" } }, onResponse: del.cb });
      assert.equal(del.last.status, 204);
      assert.equal(del.last.headers.get("access-control-allow-origin"), "*");
      assert.equal(del.last.headers.get("access-control-allow-credentials"), undefined);
      // The answer is the same for every origin: no Vary (the service's
      // Vary table).
      assert.doesNotMatch(del.last.headers.get("vary") ?? "", /\bOrigin\b/i);
    });

    await t.test("an actual DELETE without an Origin under the wildcard rule gets Access-Control-Allow-Origin: *", async () => {
      await table.createEntity({ partitionKey: "p", rowKey: "posted2" });
      const del = rawResponse();
      await table.deleteEntity("p", "posted2", { onResponse: del.cb });
      assert.equal(del.last.status, 204);
      assert.equal(del.last.request.headers.get("origin"), undefined, "the SDK sent no Origin");
      assert.equal(del.last.headers.get("access-control-allow-origin"), "*");
      // The rule's "x-ms-*" comes back as the names it covers: a browser
      // reads the header as a list of names, so "x-ms-*" would expose none.
      const exposed = (del.last.headers.get("access-control-expose-headers") ?? "").split(",");
      for (const name of ["x-ms-request-id", "x-ms-version", "x-ms-continuation-NextPartitionKey"]) {
        assert.ok(exposed.includes(name), `${name} in ${exposed}`);
      }
      assert.ok(exposed.every((n) => n.toLowerCase().startsWith("x-ms-") && !n.endsWith("*")), `${exposed}`);
      assert.doesNotMatch(del.last.headers.get("vary") ?? "", /\bOrigin\b/i);
    });
  } finally {
    await svc.setProperties(original);
  }

  // Restored: the properties read back as before, and (if there were no
  // rules before) the preflight that passed now fails again.
  assert.deepEqual(propsOf(await svc.getProperties()), original);
  if (original.cors.length === 0) {
    await assertPreflightFails(endpoint, { Origin: appOrigin, "Access-Control-Request-Method": "GET" }, "after restore");
  }
});
