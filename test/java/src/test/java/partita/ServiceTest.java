package partita;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.azure.core.credential.AzureNamedKeyCredential;
import com.azure.data.tables.TableServiceClient;
import com.azure.data.tables.TableServiceClientBuilder;
import com.azure.data.tables.models.TableServiceCorsRule;
import com.azure.data.tables.models.TableServiceGeoReplicationStatus;
import com.azure.data.tables.models.TableServiceLogging;
import com.azure.data.tables.models.TableServiceMetrics;
import com.azure.data.tables.models.TableServiceProperties;
import com.azure.data.tables.models.TableServiceRetentionPolicy;
import com.azure.data.tables.models.TableServiceStatistics;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Service properties (set, read back, restore) and service statistics. */
class ServiceTest {
  private final TableServiceClient svc = Partita.service();

  @Test
  void propertiesRoundTrip() {
    TableServiceProperties original = svc.getProperties();
    try {
      TableServiceProperties p = new TableServiceProperties()
          .setLogging(new TableServiceLogging().setAnalyticsVersion("1.0").setReadLogged(true)
              .setWriteLogged(false).setDeleteLogged(true)
              .setRetentionPolicy(new TableServiceRetentionPolicy().setEnabled(true).setDaysToRetain(7)))
          .setHourMetrics(new TableServiceMetrics().setVersion("1.0").setEnabled(true).setIncludeApis(true)
              .setRetentionPolicy(new TableServiceRetentionPolicy().setEnabled(true).setDaysToRetain(3)))
          .setMinuteMetrics(new TableServiceMetrics().setVersion("1.0").setEnabled(false)
              .setRetentionPolicy(new TableServiceRetentionPolicy().setEnabled(false)))
          .setCorsRules(List.of(new TableServiceCorsRule().setAllowedOrigins("https://a.example,https://b.example")
              .setAllowedMethods("GET,PUT").setAllowedHeaders("x-ms-*").setExposedHeaders("x-ms-request-id")
              .setMaxAgeInSeconds(120)));
      svc.setProperties(p);

      TableServiceProperties got = svc.getProperties();
      TableServiceLogging l = got.getLogging();
      assertEquals("1.0", l.getAnalyticsVersion());
      assertTrue(l.isReadLogged());
      assertEquals(false, l.isWriteLogged());
      assertTrue(l.isDeleteLogged());
      assertTrue(l.getRetentionPolicy().isEnabled());
      assertEquals(7, l.getRetentionPolicy().getDaysToRetain());
      TableServiceMetrics h = got.getHourMetrics();
      assertTrue(h.isEnabled());
      assertEquals(true, h.isIncludeApis());
      assertEquals(3, h.getTableServiceRetentionPolicy().getDaysToRetain());
      TableServiceMetrics m = got.getMinuteMetrics();
      assertEquals(false, m.isEnabled());
      assertEquals(false, m.getTableServiceRetentionPolicy().isEnabled());
      assertEquals(1, got.getCorsRules().size());
      TableServiceCorsRule r = got.getCorsRules().get(0);
      assertEquals("https://a.example,https://b.example", r.getAllowedOrigins());
      assertEquals("GET,PUT", r.getAllowedMethods());
      assertEquals("x-ms-*", r.getAllowedHeaders());
      assertEquals("x-ms-request-id", r.getExposedHeaders());
      assertEquals(120, r.getMaxAgeInSeconds());
    } finally {
      // An absent element leaves the setting as it is, so the original "no rules" is restored
      // with an explicit empty list. (The SDK reads no rules as null.)
      if (original.getCorsRules() == null) {
        original.setCorsRules(new ArrayList<>());
      }
      svc.setProperties(original);
    }
    List<TableServiceCorsRule> after = svc.getProperties().getCorsRules();
    assertEquals(original.getCorsRules().size(), after == null ? 0 : after.size());
  }

  /**
   * Service stats exist only on the secondary endpoint (account name + "-secondary"), as on the
   * service; the SDK asks the endpoint it was built with, so build it with the secondary one.
   */
  @Test
  void statistics() {
    TableServiceClient secondary = new TableServiceClientBuilder()
        .endpoint(Partita.url() + "/" + Partita.ACCOUNT + "-secondary")
        .credential(new AzureNamedKeyCredential(Partita.ACCOUNT, Partita.KEY))
        .retryOptions(Partita.retries()).buildClient();
    TableServiceStatistics s = secondary.getStatistics();
    assertNotNull(s.getGeoReplication());
    assertEquals(TableServiceGeoReplicationStatus.LIVE, s.getGeoReplication().getStatus());
    OffsetDateTime last = s.getGeoReplication().getLastSyncTime();
    assertNotNull(last);
    assertTrue(Duration.between(last, OffsetDateTime.now()).abs().toMinutes() < 60, "LastSyncTime " + last);
  }
}
