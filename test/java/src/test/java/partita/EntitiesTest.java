package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static partita.Partita.assertServiceError;

import com.azure.core.http.rest.Response;
import com.azure.data.tables.TableClient;
import com.azure.data.tables.models.TableEntity;
import com.azure.data.tables.models.TableEntityUpdateMode;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Entity CRUD with every update and upsert mode, conditional writes and the 404/409/412 errors. */
class EntitiesTest {
  private final TableClient t = Partita.newTable("jent");

  @AfterEach
  void drop() {
    t.deleteTable();
  }

  /**
   * The custom properties of an entity. The SDK reads entities in fullmetadata and keeps the
   * odata.* entries and the type annotations (P@odata.type) among the properties; drop those.
   */
  private static Map<String, Object> custom(TableEntity e) {
    Map<String, Object> m = new java.util.TreeMap<>(e.getProperties());
    m.keySet().removeIf(k -> k.equals("PartitionKey") || k.equals("RowKey") || k.equals("Timestamp")
        || k.startsWith("odata.") || k.endsWith("@odata.type"));
    return m;
  }

  @Test
  void createGetDelete() {
    Response<Void> created = t.createEntityWithResponse(
        new TableEntity("p", "r").addProperty("S", "v").addProperty("N", 1), null, null);
    assertEquals(204, created.getStatusCode());
    String etag = created.getHeaders().getValue("ETag");
    assertTrue(etag != null && etag.startsWith("W/\"datetime'"), "ETag " + etag);

    TableEntity got = t.getEntity("p", "r");
    assertEquals("p", got.getPartitionKey());
    assertEquals("r", got.getRowKey());
    assertEquals(Map.of("S", "v", "N", 1), custom(got));
    // The SDK's TableScrubEtagPolicy strips the closing quote of the ETag header; the body's
    // odata.etag is whole. Both name the same version.
    assertTrue(got.getETag().startsWith("W/\"datetime'") && got.getETag().endsWith("'\""), got.getETag());
    assertEquals(got.getETag(), etag.endsWith("\"") ? etag : etag + "\"");
    OffsetDateTime ts = got.getTimestamp();
    assertNotNull(ts);
    assertTrue(Math.abs(ts.toEpochSecond() - OffsetDateTime.now().toEpochSecond()) < 600, "Timestamp " + ts);

    assertServiceError(409, "EntityAlreadyExists", () -> t.createEntity(new TableEntity("p", "r")));

    t.deleteEntity("p", "r");
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("p", "r"));
    // Deleting a missing entity: the SDK swallows the 404, but the raw status shows it.
    assertEquals(404, t.deleteEntityWithResponse(new TableEntity("p", "r"), false, null, null).getStatusCode());
  }

  @Test
  void updateMergeAndReplace() {
    t.createEntity(new TableEntity("p", "r").addProperty("A", "a").addProperty("B", 2));

    t.updateEntity(new TableEntity("p", "r").addProperty("C", true), TableEntityUpdateMode.MERGE);
    assertEquals(Map.of("A", "a", "B", 2, "C", true), custom(t.getEntity("p", "r")));

    t.updateEntity(new TableEntity("p", "r").addProperty("D", 4L), TableEntityUpdateMode.REPLACE);
    assertEquals(Map.of("D", 4L), custom(t.getEntity("p", "r")));

    // updateEntity(entity) is a merge.
    t.updateEntity(new TableEntity("p", "r").addProperty("E", "e"));
    assertEquals(Map.of("D", 4L, "E", "e"), custom(t.getEntity("p", "r")));

    // Update needs the entity to exist, in both modes.
    for (TableEntityUpdateMode mode : TableEntityUpdateMode.values()) {
      assertServiceError(404, "ResourceNotFound",
          () -> t.updateEntity(new TableEntity("p", "missing").addProperty("X", 1), mode));
    }
  }

  @Test
  void upsertMergeAndReplace() {
    // Upsert inserts when absent, in both modes.
    t.upsertEntityWithResponse(new TableEntity("p", "m").addProperty("A", "a"),
        TableEntityUpdateMode.MERGE, null, null);
    t.upsertEntityWithResponse(new TableEntity("p", "x").addProperty("A", "a"),
        TableEntityUpdateMode.REPLACE, null, null);
    assertEquals(Map.of("A", "a"), custom(t.getEntity("p", "m")));
    assertEquals(Map.of("A", "a"), custom(t.getEntity("p", "x")));

    // On an existing entity MERGE keeps the other properties, REPLACE drops them.
    t.upsertEntityWithResponse(new TableEntity("p", "m").addProperty("B", 2),
        TableEntityUpdateMode.MERGE, null, null);
    t.upsertEntityWithResponse(new TableEntity("p", "x").addProperty("B", 2),
        TableEntityUpdateMode.REPLACE, null, null);
    assertEquals(Map.of("A", "a", "B", 2), custom(t.getEntity("p", "m")));
    assertEquals(Map.of("B", 2), custom(t.getEntity("p", "x")));

    // upsertEntity(entity) is a merge.
    t.upsertEntity(new TableEntity("p", "x").addProperty("C", "c"));
    assertEquals(Map.of("B", 2, "C", "c"), custom(t.getEntity("p", "x")));
  }

  @Test
  void conditionalWritesAndPreconditionFailed() {
    t.createEntity(new TableEntity("p", "r").addProperty("V", 1));
    TableEntity first = t.getEntity("p", "r");

    // A write conditioned on the current ETag succeeds and changes the ETag.
    first.addProperty("V", 2);
    t.updateEntityWithResponse(first, TableEntityUpdateMode.REPLACE, true, null, null);
    TableEntity second = t.getEntity("p", "r");
    assertEquals(2, second.getProperty("V"));
    assertNotEquals(first.getETag(), second.getETag());

    // The old ETag no longer matches: 412 for update (both modes) and delete, nothing changes.
    first.addProperty("V", 3);
    for (TableEntityUpdateMode mode : TableEntityUpdateMode.values()) {
      assertServiceError(412, "UpdateConditionNotSatisfied",
          () -> t.updateEntityWithResponse(first, mode, true, null, null));
    }
    assertServiceError(412, "UpdateConditionNotSatisfied",
        () -> t.deleteEntityWithResponse(first, true, null, null));
    assertEquals(2, t.getEntity("p", "r").getProperty("V"));

    // Unconditional (If-Match: *) writes ignore the ETag.
    t.updateEntityWithResponse(first, TableEntityUpdateMode.MERGE, false, null, null);
    assertEquals(3, t.getEntity("p", "r").getProperty("V"));
    // A delete conditioned on the current ETag succeeds.
    TableEntity current = t.getEntity("p", "r");
    assertEquals(204, t.deleteEntityWithResponse(current, true, null, null).getStatusCode());
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("p", "r"));
  }

  @Test
  void getWithSelect() {
    t.createEntity(new TableEntity("p", "r").addProperty("A", "a").addProperty("B", 2).addProperty("C", 3.5));
    TableEntity e = t.getEntityWithResponse("p", "r", List.of("A", "C", "Missing"), null, null).getValue();
    assertEquals("a", e.getProperty("A"));
    assertEquals(3.5, e.getProperty("C"));
    assertFalse(e.getProperties().containsKey("B"), "B was not selected: " + e.getProperties());
    // A selected property the entity lacks comes back as null.
    assertTrue(e.getProperties().containsKey("Missing"), "Missing: " + e.getProperties());
    assertEquals(null, e.getProperty("Missing"));
  }

  @Test
  void propertyCountAndEntitySizeLimits() {
    TableEntity most = new TableEntity("p", "most");
    for (int i = 0; i < 252; i++) {
      most.addProperty("P" + i, i);
    }
    t.createEntity(most);
    assertEquals(252, custom(t.getEntity("p", "most")).size());
    most.addProperty("P252", 252);
    assertServiceError(400, "TooManyProperties", () -> t.updateEntity(most, TableEntityUpdateMode.REPLACE));
    assertServiceError(400, "TooManyProperties",
        () -> t.createEntity(new TableEntity("p", "more").setProperties(most.getProperties())));

    // Seventeen 64 KiB binaries are more than 1 MiB.
    TableEntity big = new TableEntity("p", "big");
    for (int i = 0; i < 17; i++) {
      big.addProperty("B" + i, new byte[64 * 1024]);
    }
    assertServiceError(400, "EntityTooLarge", () -> t.createEntity(big));
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("p", "big"));
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("p", "more"));
  }

  @Test
  void invalidKeysAndProperties() {
    assertServiceError(400, "OutOfRangeInput",
        () -> t.createEntity(new TableEntity("p", "a/b")));
    assertServiceError(400, "PropertyNameInvalid",
        () -> t.createEntity(new TableEntity("p", "r").addProperty("1bad", 1)));
    assertServiceError(400, "PropertyValueTooLarge",
        () -> t.createEntity(new TableEntity("p", "r").addProperty("S", "x".repeat(32 * 1024 + 1))));
  }
}
