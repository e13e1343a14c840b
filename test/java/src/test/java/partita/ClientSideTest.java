package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.azure.data.tables.TableClient;
import com.azure.data.tables.TableClientBuilder;
import com.azure.data.tables.TableServiceClient;
import com.azure.data.tables.TableServiceClientBuilder;
import com.azure.data.tables.sas.TableSasPermission;
import com.azure.data.tables.sas.TableSasSignatureValues;
import java.time.OffsetDateTime;
import org.junit.jupiter.api.Test;

/**
 * What the SDK does on its own, without a server, that the other tests rely on. It is also the
 * class scripts/test runs to prefetch every dependency (surefire fetches its JUnit provider only
 * when it runs a test), so that TestJavaSDK can run Maven offline.
 */
class ClientSideTest {
  @Test
  void useDevelopmentStorageMeansPartitasDefaultAddress() {
    TableServiceClient svc = new TableServiceClientBuilder()
        .connectionString("UseDevelopmentStorage=true").buildClient();
    assertEquals("http://127.0.0.1:10002/devstoreaccount1", svc.getServiceEndpoint());
    // The flag takes no other value.
    assertThrows(IllegalArgumentException.class, () -> new TableServiceClientBuilder()
        .connectionString("UseDevelopmentStorage=false").buildClient());
  }

  @Test
  void tableSasCarriesTheKeyRange() {
    // Unlike the Go SDK (docs/COMPATIBILITY.md §10), the Java SDK puts the key range in the token.
    TableClient t = new TableClientBuilder().connectionString("UseDevelopmentStorage=true")
        .tableName("mytable").buildClient();
    String sas = t.generateSas(new TableSasSignatureValues(
        OffsetDateTime.parse("2030-01-01T00:00:00Z"), TableSasPermission.parse("raud"))
        .setStartPartitionKey("p1").setStartRowKey("r1").setEndPartitionKey("p9").setEndRowKey("r9"));
    for (String part : new String[] {"tn=mytable", "sp=raud", "spk=p1", "srk=r1", "epk=p9", "erk=r9", "sig="}) {
      assertTrue(sas.contains(part), part + " in " + sas);
    }
  }
}
