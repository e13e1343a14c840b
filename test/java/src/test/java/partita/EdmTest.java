package partita;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static partita.Partita.assertServiceError;

import com.azure.data.tables.TableClient;
import com.azure.data.tables.models.ListEntitiesOptions;
import com.azure.data.tables.models.TableEntity;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Every EDM type at its edges, written by the SDK, read back by point read and by query. */
class EdmTest {
  private final TableClient t = Partita.newTable("jedm");

  @AfterEach
  void drop() {
    t.deleteTable();
  }

  static final UUID GUID = UUID.fromString("0f8fad5b-d9cb-469f-a165-70867728950e");
  static final OffsetDateTime DT7 = OffsetDateTime.parse("2024-02-29T23:59:59.1234567Z");
  static final OffsetDateTime DT_MIN = OffsetDateTime.parse("1601-01-01T00:00:00Z");
  static final OffsetDateTime DT_MAX = OffsetDateTime.parse("9999-12-31T23:59:59.9999999Z");

  private static byte[] allBytes() {
    byte[] b = new byte[256];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) i;
    }
    return b;
  }

  private static TableEntity edges(String pk, String rk) {
    return new TableEntity(pk, rk)
        .addProperty("I32Min", Integer.MIN_VALUE)
        .addProperty("I32Max", Integer.MAX_VALUE)
        .addProperty("I64Min", Long.MIN_VALUE)
        .addProperty("I64Max", Long.MAX_VALUE)
        .addProperty("I64Small", 1L)
        // The SDK writes non-finite doubles as the bare strings "NaN", "Infinity" and
        // "-Infinity", which the service stores as Edm.String; the annotation makes them doubles.
        .addProperty("DNaN", Double.NaN)
        .addProperty("DNaN@odata.type", "Edm.Double")
        .addProperty("DPosInf", Double.POSITIVE_INFINITY)
        .addProperty("DPosInf@odata.type", "Edm.Double")
        .addProperty("DNegInf", Double.NEGATIVE_INFINITY)
        .addProperty("DNegInf@odata.type", "Edm.Double")
        .addProperty("DMax", Double.MAX_VALUE)
        .addProperty("DMinPos", Double.MIN_VALUE)
        .addProperty("DWhole", 2.0)
        .addProperty("DFrac", -0.1)
        .addProperty("BTrue", true)
        .addProperty("BFalse", false)
        .addProperty("DT7", DT7)
        .addProperty("DTMin", DT_MIN)
        .addProperty("DTMax", DT_MAX)
        .addProperty("G", GUID)
        .addProperty("Bin", allBytes())
        .addProperty("BinEmpty", new byte[0])
        .addProperty("SEmpty", "")
        .addProperty("SUnicode", "ü é 中文 😀 \u0001 \"q\" 'a' \\ / ? #")
        .addProperty("SLong", "ß".repeat(32 * 1024));
  }

  private static void assertEdges(TableEntity e) {
    assertEquals(Integer.MIN_VALUE, e.getProperty("I32Min"));
    assertEquals(Integer.MAX_VALUE, e.getProperty("I32Max"));
    assertEquals(Long.MIN_VALUE, e.getProperty("I64Min"));
    assertEquals(Long.MAX_VALUE, e.getProperty("I64Max"));
    // A small Int64 stays an Int64 (Long), not an Int32.
    assertEquals(1L, e.getProperty("I64Small"));
    assertInstanceOf(Double.class, e.getProperty("DNaN"));
    assertTrue(Double.isNaN((Double) e.getProperty("DNaN")));
    assertEquals(Double.POSITIVE_INFINITY, e.getProperty("DPosInf"));
    assertEquals(Double.NEGATIVE_INFINITY, e.getProperty("DNegInf"));
    assertEquals(Double.MAX_VALUE, e.getProperty("DMax"));
    assertEquals(Double.MIN_VALUE, e.getProperty("DMinPos"));
    // A whole Double stays a Double, not an Int32.
    assertEquals(2.0, e.getProperty("DWhole"));
    assertEquals(-0.1, e.getProperty("DFrac"));
    assertEquals(true, e.getProperty("BTrue"));
    assertEquals(false, e.getProperty("BFalse"));
    assertEquals(DT7, e.getProperty("DT7"));
    assertEquals(DT_MIN, e.getProperty("DTMin"));
    assertEquals(DT_MAX, e.getProperty("DTMax"));
    assertEquals(GUID, e.getProperty("G"));
    assertArrayEquals(allBytes(), (byte[]) e.getProperty("Bin"));
    assertArrayEquals(new byte[0], (byte[]) e.getProperty("BinEmpty"));
    assertEquals("", e.getProperty("SEmpty"));
    assertEquals("ü é 中文 😀 \u0001 \"q\" 'a' \\ / ? #", e.getProperty("SUnicode"));
    assertEquals("ß".repeat(32 * 1024), e.getProperty("SLong"));
  }

  @Test
  void everyTypeAtItsEdges() {
    t.createEntity(edges("p", "r"));
    assertEdges(t.getEntity("p", "r"));
    List<TableEntity> all = t.listEntities().stream().collect(Collectors.toList());
    assertEquals(1, all.size());
    assertEdges(all.get(0));
  }

  @Test
  void unannotatedNonFiniteDoublesAreStrings() {
    // What the SDK sends for a bare Double.NaN is a JSON string without a type, so the service
    // (and partita) store an Edm.String: it reads back as the String "NaN".
    t.createEntity(new TableEntity("p", "bare").addProperty("N", Double.NaN)
        .addProperty("I", Double.POSITIVE_INFINITY));
    TableEntity e = t.getEntity("p", "bare");
    assertEquals("NaN", e.getProperty("N"));
    assertEquals("Infinity", e.getProperty("I"));
    // A filter sees them as strings too.
    List<TableEntity> found = t.listEntities(
        new ListEntitiesOptions().setFilter("N eq 'NaN' and I eq 'Infinity'"), null, null)
        .stream().collect(Collectors.toList());
    assertEquals(1, found.size());
  }

  @Test
  void unicodeAndQuoteBearingKeys() {
    String[][] keys = {
      {"O'Brien", "it''s"},
      {"\"double\"", "ü é 中文 😀"},
      {"'", "''"},
      {"sp ace", "tab\u00a0nbsp"},
    };
    for (String[] k : keys) {
      t.createEntity(edges(k[0], k[1]));
    }
    for (String[] k : keys) {
      TableEntity e = t.getEntity(k[0], k[1]);
      assertEquals(k[0], e.getPartitionKey());
      assertEquals(k[1], e.getRowKey());
      assertEdges(e);
      // The same keys in a filter, with quotes doubled.
      String filter = "PartitionKey eq '" + k[0].replace("'", "''") + "' and RowKey eq '"
          + k[1].replace("'", "''") + "'";
      List<TableEntity> found = t.listEntities(new ListEntitiesOptions().setFilter(filter), null, null)
          .stream().collect(Collectors.toList());
      assertEquals(1, found.size(), filter);
      assertEquals(k[1], found.get(0).getRowKey());
      // Update and delete address the entity by the same keys in the URL.
      t.updateEntity(new TableEntity(k[0], k[1]).addProperty("Extra", 1));
      assertEquals(1, t.getEntity(k[0], k[1]).getProperty("Extra"));
      t.deleteEntity(k[0], k[1]);
      assertServiceError(404, "ResourceNotFound", () -> t.getEntity(k[0], k[1]));
    }
  }

  @Test
  void outOfRangeValuesAreRejected() {
    // Before 1601 is outside the service's DateTime range.
    assertServiceError(400, "OutOfRangeInput",
        () -> t.createEntity(new TableEntity("p", "old").addProperty("D",
            OffsetDateTime.parse("1600-12-31T23:59:59Z"))));
    // Binary values are limited to 64 KiB.
    assertServiceError(400, "PropertyValueTooLarge",
        () -> t.createEntity(new TableEntity("p", "big").addProperty("B", new byte[64 * 1024 + 1])));
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("p", "old"));
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("p", "big"));
  }
}
