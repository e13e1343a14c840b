package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static partita.Partita.assertServiceError;

import com.azure.data.tables.TableClient;
import com.azure.data.tables.TableClientBuilder;
import com.azure.data.tables.TableServiceClient;
import com.azure.data.tables.TableServiceClientBuilder;
import com.azure.data.tables.models.ListEntitiesOptions;
import com.azure.data.tables.models.ListTablesOptions;
import com.azure.data.tables.models.TableAccessPolicies;
import com.azure.data.tables.models.TableAccessPolicy;
import com.azure.data.tables.models.TableEntity;
import com.azure.data.tables.models.TableItem;
import com.azure.data.tables.models.TableSignedIdentifier;
import com.azure.data.tables.models.TableTransactionAction;
import com.azure.data.tables.models.TableTransactionActionType;
import com.azure.data.tables.sas.TableAccountSasPermission;
import com.azure.data.tables.sas.TableAccountSasResourceType;
import com.azure.data.tables.sas.TableAccountSasService;
import com.azure.data.tables.sas.TableAccountSasSignatureValues;
import com.azure.data.tables.sas.TableSasIpRange;
import com.azure.data.tables.sas.TableSasPermission;
import com.azure.data.tables.sas.TableSasProtocol;
import com.azure.data.tables.sas.TableSasSignatureValues;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Table SAS (with key ranges and stored access policies) and account SAS made by the SDK. */
class SasTest {
  private final TableClient t = Partita.newTable("jsas");

  @AfterEach
  void drop() {
    t.deleteTable();
  }

  private static OffsetDateTime inOneHour() {
    return OffsetDateTime.now(ZoneOffset.UTC).plusHours(1).truncatedTo(ChronoUnit.SECONDS);
  }

  private TableClient withSas(String sas) {
    return new TableClientBuilder().endpoint(Partita.endpoint()).tableName(t.getTableName())
        .sasToken(sas).retryOptions(Partita.retries()).buildClient();
  }

  private static List<String> keys(TableClient c, String filter) {
    return c.listEntities(new ListEntitiesOptions().setFilter(filter), null, null).stream()
        .map(e -> e.getPartitionKey() + "/" + e.getRowKey()).collect(Collectors.toList());
  }

  private void fill() {
    for (String pk : List.of("a", "b", "c", "d", "e")) {
      for (String rk : List.of("1", "2", "3")) {
        t.createEntity(new TableEntity(pk, rk).addProperty("V", pk + rk));
      }
    }
  }

  /** A SAS failure: 403 with one of the codes the service gives for it. */
  private static void assertForbidden(String code, Executable op) {
    assertServiceError(403, code, op);
  }

  @Test
  void tableSasWithPartitionKeyRange() {
    fill();
    String sas = t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("raud"))
        .setStartPartitionKey("b").setStartRowKey("0").setEndPartitionKey("d").setEndRowKey("~"));
    // The SDK wants a row key whenever it has a partition key; "0" and "~" are below and above
    // every row key used here, so the range is partitions b to d.
    assertTrue(sas.contains("spk=b&srk=0&epk=d&erk=%7E&"), sas);
    TableClient c = withSas(sas);

    // Queries are clipped to the range.
    assertEquals(List.of("b/1", "b/2", "b/3", "c/1", "c/2", "c/3", "d/1", "d/2", "d/3"), keys(c, null));
    assertEquals(List.of("b/2", "c/2", "d/2"), keys(c, "RowKey eq '2'"));

    // Point reads and writes inside the range work, outside they are forbidden.
    assertEquals("c2", c.getEntity("c", "2").getProperty("V"));
    c.createEntity(new TableEntity("c", "new"));
    c.updateEntity(new TableEntity("d", "1").addProperty("W", 1));
    c.deleteEntity("b", "1");
    assertForbidden("AuthorizationFailure", () -> c.getEntity("a", "1"));
    assertForbidden("AuthorizationFailure", () -> c.getEntity("e", "1"));
    assertForbidden("AuthorizationFailure", () -> c.createEntity(new TableEntity("e", "new")));
    assertForbidden("AuthorizationFailure", () -> c.createEntity(new TableEntity("a", "new")));
    assertForbidden("AuthorizationFailure", () -> c.updateEntity(new TableEntity("a", "1").addProperty("W", 1)));
    assertForbidden("AuthorizationFailure", () -> c.deleteEntity("e", "1"));

    // The owner sees exactly what the SAS client did.
    assertEquals("c/new", keys(t, "RowKey eq 'new'").stream().collect(Collectors.joining(",")));
    assertEquals(1, t.getEntity("d", "1").getProperty("W"));
    assertEquals(List.of("b/2", "b/3"), keys(t, "PartitionKey eq 'b'"));
    assertEquals(List.of(), keys(t, "W eq 1 and PartitionKey ne 'd'"));
  }

  @Test
  void tableSasWithRowKeyRange() {
    fill();
    String sas = t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("ra"))
        .setStartPartitionKey("b").setStartRowKey("2").setEndPartitionKey("d").setEndRowKey("2"));
    TableClient c = withSas(sas);
    assertEquals(List.of("b/2", "b/3", "c/1", "c/2", "c/3", "d/1", "d/2"), keys(c, null));
    assertEquals("b2", c.getEntity("b", "2").getProperty("V"));
    assertEquals("d2", c.getEntity("d", "2").getProperty("V"));
    assertForbidden("AuthorizationFailure", () -> c.getEntity("b", "1"));
    assertForbidden("AuthorizationFailure", () -> c.getEntity("d", "3"));
    c.createEntity(new TableEntity("c", "0"));
    assertForbidden("AuthorizationFailure", () -> c.createEntity(new TableEntity("d", "3x")));

    // In a transaction every action must be inside the range: the whole batch is refused.
    assertForbidden("AuthorizationFailure", () -> c.submitTransaction(List.of(
        new TableTransactionAction(TableTransactionActionType.CREATE, new TableEntity("b", "5")),
        new TableTransactionAction(TableTransactionActionType.CREATE, new TableEntity("b", "0")))));
    assertServiceError(404, "ResourceNotFound", () -> t.getEntity("b", "5"));
    c.submitTransaction(List.of(
        new TableTransactionAction(TableTransactionActionType.CREATE, new TableEntity("b", "5")),
        new TableTransactionAction(TableTransactionActionType.CREATE, new TableEntity("b", "6"))));
    assertEquals(List.of("b/5", "b/6"), keys(t, "PartitionKey eq 'b' and RowKey ge '5'"));
  }

  @Test
  void tableSasPermissions() {
    t.createEntity(new TableEntity("p", "r"));
    TableClient reader = withSas(t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("r"))));
    assertEquals("r", reader.getEntity("p", "r").getRowKey());
    assertForbidden("AuthorizationPermissionMismatch", () -> reader.createEntity(new TableEntity("p", "x")));
    assertForbidden("AuthorizationPermissionMismatch", () -> reader.deleteEntity("p", "r"));
    assertForbidden("AuthorizationPermissionMismatch",
        () -> reader.updateEntity(new TableEntity("p", "r").addProperty("V", 1)));

    TableClient adder = withSas(t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("a"))));
    adder.createEntity(new TableEntity("p", "x"));
    assertForbidden("AuthorizationPermissionMismatch", () -> adder.getEntity("p", "x"));
    // Upsert needs both add and update.
    assertForbidden("AuthorizationPermissionMismatch", () -> adder.upsertEntity(new TableEntity("p", "y")));

    // An expired SAS fails authentication.
    TableClient expired = withSas(t.generateSas(new TableSasSignatureValues(
        OffsetDateTime.now(ZoneOffset.UTC).minusMinutes(20), TableSasPermission.parse("r"))
        .setStartTime(OffsetDateTime.now(ZoneOffset.UTC).minusHours(1))));
    assertForbidden("AuthenticationFailed", () -> expired.getEntity("p", "r"));

    // A SAS that is not valid yet fails authentication too.
    TableClient early = withSas(t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("r"))
        .setStartTime(OffsetDateTime.now(ZoneOffset.UTC).plusMinutes(30))));
    assertForbidden("AuthenticationFailed", () -> early.getEntity("p", "r"));

    // HTTPS only, used over HTTP; and a source IP range that excludes 127.0.0.1.
    TableClient httpsOnly = withSas(t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("r"))
        .setProtocol(TableSasProtocol.HTTPS_ONLY)));
    assertForbidden("AuthorizationProtocolMismatch", () -> httpsOnly.getEntity("p", "r"));
    TableClient elsewhere = withSas(t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("r"))
        .setSasIpRange(TableSasIpRange.parse("10.0.0.1-10.0.0.9"))));
    assertForbidden("AuthorizationSourceIPMismatch", () -> elsewhere.getEntity("p", "r"));
    TableClient here = withSas(t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("r"))
        .setSasIpRange(TableSasIpRange.parse("127.0.0.1")).setProtocol(TableSasProtocol.HTTPS_HTTP)));
    assertEquals("r", here.getEntity("p", "r").getRowKey());

    // A table SAS is for its own table only.
    String other = Partita.tableName("jsasother");
    TableClient otherTable = Partita.service().createTable(other);
    try {
      TableClient wrong = new TableClientBuilder().endpoint(Partita.endpoint()).tableName(other)
          .sasToken(t.generateSas(new TableSasSignatureValues(inOneHour(), TableSasPermission.parse("r"))))
          .retryOptions(Partita.retries()).buildClient();
      assertForbidden("AuthorizationFailure", () -> wrong.listEntities().stream().count());
    } finally {
      otherTable.deleteTable();
    }
  }

  @Test
  void storedAccessPolicies() {
    t.createEntity(new TableEntity("p", "r"));
    OffsetDateTime start = OffsetDateTime.parse("2020-01-01T00:00:00Z");
    OffsetDateTime expiry = inOneHour();
    t.setAccessPolicies(List.of(
        new TableSignedIdentifier("readers").setAccessPolicy(new TableAccessPolicy()
            .setStartsOn(start).setExpiresOn(expiry).setPermissions("r")),
        new TableSignedIdentifier("writers").setAccessPolicy(new TableAccessPolicy()
            .setExpiresOn(expiry).setPermissions("raud"))));

    TableAccessPolicies got = t.getAccessPolicies();
    assertEquals(2, got.getIdentifiers().size());
    TableSignedIdentifier readers = got.getIdentifiers().stream()
        .filter(i -> i.getId().equals("readers")).findFirst().orElseThrow();
    assertEquals("r", readers.getAccessPolicy().getPermissions());
    assertEquals(start.toInstant(), readers.getAccessPolicy().getStartsOn().toInstant());
    assertEquals(expiry.toInstant(), readers.getAccessPolicy().getExpiresOn().toInstant());
    TableSignedIdentifier writers = got.getIdentifiers().stream()
        .filter(i -> i.getId().equals("writers")).findFirst().orElseThrow();
    assertEquals("raud", writers.getAccessPolicy().getPermissions());

    // A SAS that names the policy takes its permissions and times from it.
    TableClient reader = withSas(t.generateSas(new TableSasSignatureValues("readers")));
    assertEquals("r", reader.getEntity("p", "r").getRowKey());
    assertForbidden("AuthorizationPermissionMismatch", () -> reader.createEntity(new TableEntity("p", "x")));
    TableClient writer = withSas(t.generateSas(new TableSasSignatureValues("writers")));
    writer.createEntity(new TableEntity("p", "w"));

    // Removing the policies revokes the SAS that named them.
    t.setAccessPolicies(List.of());
    // (The SDK gives null rather than an empty list when there are none.)
    List<TableSignedIdentifier> left = t.getAccessPolicies().getIdentifiers();
    assertTrue(left == null || left.isEmpty(), "policies left: " + left);
    assertForbidden("AuthenticationFailed", () -> reader.getEntity("p", "r"));
    assertForbidden("AuthenticationFailed", () -> writer.createEntity(new TableEntity("p", "w2")));
  }

  @Test
  void accountSas() {
    TableServiceClient owner = Partita.service();
    String sas = owner.generateAccountSas(new TableAccountSasSignatureValues(inOneHour(),
        TableAccountSasPermission.parse("rwdlacu"), TableAccountSasService.parse("t"),
        TableAccountSasResourceType.parse("sco")));
    TableServiceClient svc = new TableServiceClientBuilder().endpoint(Partita.endpoint()).sasToken(sas)
        .retryOptions(Partita.retries()).buildClient();
    String name = Partita.tableName("jacct");
    TableClient c = svc.createTable(name);
    try {
      c.createEntity(new TableEntity("p", "r").addProperty("V", 1));
      assertEquals(1, c.getEntity("p", "r").getProperty("V"));
      List<String> names = svc.listTables(new ListTablesOptions().setFilter("TableName eq '" + name + "'"), null, null)
          .stream().map(TableItem::getName).collect(Collectors.toList());
      assertEquals(List.of(name), names);
      svc.getProperties();

      // The same token in a connection string.
      TableServiceClient fromCs = new TableServiceClientBuilder()
          .connectionString("TableEndpoint=" + Partita.endpoint() + ";SharedAccessSignature=" + sas)
          .retryOptions(Partita.retries()).buildClient();
      assertEquals(1, fromCs.getTableClient(name).getEntity("p", "r").getProperty("V"));

      // Read and list only: no create, no writes.
      String ro = owner.generateAccountSas(new TableAccountSasSignatureValues(inOneHour(),
          TableAccountSasPermission.parse("rl"), TableAccountSasService.parse("t"),
          TableAccountSasResourceType.parse("sco")));
      TableServiceClient roSvc = new TableServiceClientBuilder().endpoint(Partita.endpoint()).sasToken(ro)
          .retryOptions(Partita.retries()).buildClient();
      assertEquals(1, roSvc.getTableClient(name).getEntity("p", "r").getProperty("V"));
      assertForbidden("AuthorizationPermissionMismatch", () -> roSvc.createTable(Partita.tableName("jro")));
      assertForbidden("AuthorizationPermissionMismatch",
          () -> roSvc.getTableClient(name).createEntity(new TableEntity("p", "x")));

      // Objects only: listing tables (a container operation) is the wrong resource type.
      String objects = owner.generateAccountSas(new TableAccountSasSignatureValues(inOneHour(),
          TableAccountSasPermission.parse("rl"), TableAccountSasService.parse("t"),
          TableAccountSasResourceType.parse("o")));
      TableServiceClient objSvc = new TableServiceClientBuilder().endpoint(Partita.endpoint()).sasToken(objects)
          .retryOptions(Partita.retries()).buildClient();
      assertEquals(1, objSvc.getTableClient(name).getEntity("p", "r").getProperty("V"));
      assertForbidden("AuthorizationResourceTypeMismatch", () -> objSvc.listTables().stream().count());

      // A SAS for the blob service only does not open the table service.
      String blob = owner.generateAccountSas(new TableAccountSasSignatureValues(inOneHour(),
          TableAccountSasPermission.parse("rl"), TableAccountSasService.parse("b"),
          TableAccountSasResourceType.parse("sco")));
      TableServiceClient blobSvc = new TableServiceClientBuilder().endpoint(Partita.endpoint()).sasToken(blob)
          .retryOptions(Partita.retries()).buildClient();
      assertEquals(403, org.junit.jupiter.api.Assertions.assertThrows(
          com.azure.core.exception.HttpResponseException.class,
          () -> blobSvc.getTableClient(name).getEntity("p", "r")).getResponse().getStatusCode());
    } finally {
      owner.deleteTable(name);
    }
  }
}
