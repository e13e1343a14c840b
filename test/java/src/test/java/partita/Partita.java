package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.azure.core.credential.AzureNamedKeyCredential;
import com.azure.core.exception.HttpResponseException;
import com.azure.core.http.policy.ExponentialBackoffOptions;
import com.azure.core.http.policy.RetryOptions;
import com.azure.data.tables.TableClient;
import com.azure.data.tables.TableServiceClient;
import com.azure.data.tables.TableServiceClientBuilder;
import com.azure.data.tables.models.TableServiceException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.function.Executable;

/**
 * Where the partita under test is and how to reach it. TestJavaSDK (e2e/java_test.go) starts the
 * real binary on a random port and passes its base URL (http://127.0.0.1:PORT) in PARTITA_URL.
 */
final class Partita {
  static final String ACCOUNT = "devstoreaccount1";
  static final String KEY =
      "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

  private static final AtomicLong SEQ = new AtomicLong();

  private Partita() {}

  /** The server's base URL; a run without it is a failure, not a skip. */
  static String url() {
    String u = System.getenv("PARTITA_URL");
    if (u == null || u.isEmpty()) {
      throw new IllegalStateException(
          "PARTITA_URL is not set: run these tests through `go test ./e2e -run TestJavaSDK`");
    }
    return u.endsWith("/") ? u.substring(0, u.length() - 1) : u;
  }

  /** The path-style service endpoint of the development account. */
  static String endpoint() {
    return url() + "/" + ACCOUNT;
  }

  static String connectionString() {
    return "DefaultEndpointsProtocol=http;AccountName=" + ACCOUNT + ";AccountKey=" + KEY
        + ";TableEndpoint=" + endpoint() + ";";
  }

  /** Few, quick retries: a test that provokes an error should see it at once. */
  static RetryOptions retries() {
    return new RetryOptions(new ExponentialBackoffOptions().setMaxRetries(2)
        .setBaseDelay(Duration.ofMillis(50)).setMaxDelay(Duration.ofMillis(500)));
  }

  static TableServiceClient service() {
    return new TableServiceClientBuilder().connectionString(connectionString())
        .retryOptions(retries()).buildClient();
  }

  static TableServiceClient serviceWithKey() {
    return new TableServiceClientBuilder().endpoint(endpoint())
        .credential(new AzureNamedKeyCredential(ACCOUNT, KEY)).retryOptions(retries())
        .buildClient();
  }

  /** A table name no other test uses: prefix (letters) plus a counter and the time. */
  static String tableName(String prefix) {
    return prefix + System.nanoTime() + SEQ.incrementAndGet();
  }

  /** Creates a fresh table and returns its client. */
  static TableClient newTable(String prefix) {
    return service().createTable(tableName(prefix));
  }

  /**
   * Runs op, which must fail with this status and error code. Most calls throw
   * TableServiceException; listing calls throw an HttpResponseException of the SDK's
   * implementation package instead, so the status and the x-ms-error-code header are checked on
   * any HttpResponseException, and the parsed error code too when the SDK gives one.
   */
  static HttpResponseException assertServiceError(int status, String code, Executable op) {
    HttpResponseException e = assertThrows(HttpResponseException.class, op);
    assertNotNull(e.getResponse(), "no HTTP response: " + e);
    assertEquals(status, e.getResponse().getStatusCode(), "status: " + e.getMessage());
    assertEquals(code, e.getResponse().getHeaderValue("x-ms-error-code"), "x-ms-error-code: " + e.getMessage());
    if (e instanceof TableServiceException) {
      TableServiceException te = (TableServiceException) e;
      assertNotNull(te.getValue(), "error body: " + e.getMessage());
      assertEquals(code, String.valueOf(te.getValue().getErrorCode()), "error code: " + e.getMessage());
    } else {
      assertTrue(e.getMessage().contains(code), "error body: " + e.getMessage());
    }
    return e;
  }
}
