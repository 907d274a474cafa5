package io.kvrouter.server.metrics;

import static io.kvrouter.server.TestRouter.failure;
import static io.kvrouter.server.TestRouter.join;
import static io.kvrouter.server.TestRouter.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.kvrouter.api.v1.Booking;
import io.kvrouter.api.v1.BookingRef;
import io.kvrouter.api.v1.KvEvent;
import io.kvrouter.api.v1.KvEventBatch;
import io.kvrouter.api.v1.KvStored;
import io.kvrouter.api.v1.ModelStateRequest;
import io.kvrouter.api.v1.RouteRequest;
import io.kvrouter.api.v1.SetPolicyRequest;
import io.kvrouter.core.testkit.TestPolicies;
import io.kvrouter.api.v1.StoredBlock;
import io.kvrouter.api.v1.WorkerKey;
import io.kvrouter.server.TestRouter;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code GET /metrics} on a running node: after registered workers, Selects, Books, Releases, KV events and
 * rejections, the Prometheus text holds exactly those counts; an unknown model's calls add no model series; a model's
 * series go once its workers are deregistered.
 */
class MetricsRouteTest {
  private static final String MODEL = "org/metrics-a";
  private static TestRouter router;

  @BeforeAll
  static void start() {
    router = TestRouter.start();
  }

  @AfterAll
  static void stop() {
    router.close();
  }

  @Test
  void scrapeCountsTheCallsMade() throws Exception {
    join(router.workers.register(worker(MODEL, "w1").build()));
    join(router.workers.register(worker(MODEL, "w2").build()));
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("least_in_flight").build()));
    for (int i = 0; i < 5; i++) {
      join(router.router.select(request(MODEL, "s" + i)));
    }
    List<Booking> bookings = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      bookings.add(join(router.router.book(request(MODEL, "b" + i))));
    }
    join(router.router.release(ref(bookings.get(0))));
    join(router.router.release(ref(bookings.get(1))));
    join(router.router.release(BookingRef.newBuilder().setModel(MODEL).setRequestId("never-booked").setAttempt(7)
        .build()));
    join(router.workers.publishKvEvents(KvEventBatch.newBuilder().setModel(MODEL).setWorkerId("w1").setDpRank(0)
        .addEvents(stored(1, 11, 101)).addEvents(stored(2, 12, 102)).build()));
    failure(router.router.select(request("", "bad")));
    failure(router.router.select(request("nobody", "x")));
    failure(router.router.book(request("nobody", "y")));
    assertThat(join(router.router.release(BookingRef.newBuilder().setModel("nobody").setRequestId("z")
        .setAttempt(1).build())).getApplied()).isFalse();
    // Workers and Admin calls answered with an error are counted too
    failure(router.workers.register(worker(MODEL, "").build()));
    failure(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(MODEL).setPolicy("fastest").build()));
    failure(router.admin.getModelState(ModelStateRequest.newBuilder().setModel("nobody").build()));

    Scrape scrape = scrape();

    Map<String, String> model = Map.of("model", MODEL);
    Map<String, String> policy = Map.of("model", MODEL, "policy", "least_in_flight");
    assertThat(scrape.value("kvrouter_select_duration_seconds_count", policy)).isEqualTo(5);
    assertThat(scrape.value("kvrouter_book_duration_seconds_count", policy)).isEqualTo(3);
    assertThat(scrape.value("kvrouter_books_total", model)).isEqualTo(3);
    // queue waits are labelled by the queue class each Book was booked in: without queueing, default
    assertThat(scrape.value("kvrouter_book_queue_wait_seconds_count", Map.of("model", MODEL, "class", "default")))
        .isEqualTo(3);
    assertThat(scrape.value("kvrouter_releases_total", Map.of("model", MODEL, "applied", "true"))).isEqualTo(2);
    assertThat(scrape.value("kvrouter_releases_total", Map.of("model", MODEL, "applied", "false"))).isEqualTo(1);
    assertThat(scrape.value("kvrouter_bookings_live", model)).isEqualTo(1);
    assertThat(scrape.value("kvrouter_queue_depth", model)).isEqualTo(0);
    assertThat(scrape.value("kvrouter_bookings_expired_total", model)).isEqualTo(0);
    assertThat(scrape.value("kvrouter_kv_events_applied_total", model)).isEqualTo(2);
    assertThat(scrape.value("kvrouter_kv_event_gaps_total", model)).isEqualTo(0);
    assertThat(scrape.value("kvrouter_kv_events_held", model)).isEqualTo(0);
    // the node hosts the model's admission actor: its view lags nothing
    assertThat(scrape.value("kvrouter_view_lag_updates", model)).isEqualTo(0);
    assertThat(scrape.value("kvrouter_view_age_seconds", model)).isEqualTo(0);
    assertThat(scrape.value("kvrouter_view_version", model)).isPositive();
    assertThat(scrape.value("kvrouter_rejections_total",
        Map.of("method", "Select", "status", "INVALID_ARGUMENT", "reason", "EMPTY_MODEL"))).isEqualTo(1);
    assertThat(scrape.value("kvrouter_rejections_total",
        Map.of("method", "Select", "status", "NOT_FOUND", "reason", "UNKNOWN_MODEL"))).isEqualTo(1);
    assertThat(scrape.value("kvrouter_rejections_total",
        Map.of("method", "Book", "status", "NOT_FOUND", "reason", "UNKNOWN_MODEL"))).isEqualTo(1);
    assertThat(scrape.value("kvrouter_rejections_total",
        Map.of("method", "Register", "status", "INVALID_ARGUMENT", "reason", "EMPTY_WORKER_ID"))).isEqualTo(1);
    assertThat(scrape.value("kvrouter_rejections_total",
        Map.of("method", "GetModelState", "status", "NOT_FOUND", "reason", "UNKNOWN_MODEL"))).isEqualTo(1);
    assertThat(scrape.lines()).anyMatch(line -> line.startsWith("kvrouter_rejections_total")
        && line.contains("method=\"SetPolicy\"") && line.contains("status=\"INVALID_ARGUMENT\""));
    // a Release of an unknown model is answered (applied = false), not rejected, and adds no model series
    assertThat(scrape.lines()).noneMatch(line -> line.contains("nobody"));
    assertThat(scrape.value("kvrouter_cluster_members", Map.of("region", "default", "status", "up"))).isEqualTo(1);
    assertThat(scrape.value("kvrouter_cluster_unreachable_members", Map.of("region", "default"))).isEqualTo(0);
    // one pool may be empty at the scrape (Eden right after a young collection); the heap as a whole is not
    assertThat(scrape.value("jvm_memory_used_bytes", Map.of("area", "heap", "id", "G1 Eden Space")))
        .isGreaterThanOrEqualTo(0);
    assertThat(scrape.sum("jvm_memory_used_bytes", Map.of("area", "heap"))).isPositive();
    assertThat(scrape.names()).contains("jvm_gc_memory_allocated_bytes_total", "jvm_threads_live_threads",
        "process_cpu_usage", "process_uptime_seconds");
    // bounded buckets: the configured boundaries plus +Inf, all Selects at or below +Inf
    assertThat(scrape.series("kvrouter_select_duration_seconds_bucket", policy))
        .hasSize(ModelMeters.LATENCY_BUCKETS.length + 1);
    Map<String, String> infinity = new TreeMap<>(policy);
    infinity.put("le", "+Inf");
    assertThat(scrape.value("kvrouter_select_duration_seconds_bucket", infinity)).isEqualTo(5);
  }

  /** A custom policy's calls carry its wire name as the policy label (one of the registry's, fixed at startup). */
  @Test
  void aPluginPolicysCallsAreLabelledWithItsName() throws Exception {
    String model = "org/metrics-plugin";
    join(router.workers.register(worker(model, "w1").build()));
    join(router.admin.setPolicy(SetPolicyRequest.newBuilder().setModel(model).setPolicy(TestPolicies.SERIAL)
        .build()));
    join(router.router.select(request(model, "s1")));
    join(router.router.select(request(model, "s2")));
    join(router.router.book(request(model, "b1")));
    Scrape scrape = scrape();
    Map<String, String> labels = Map.of("model", model, "policy", TestPolicies.SERIAL);
    assertThat(scrape.value("kvrouter_select_duration_seconds_count", labels)).isEqualTo(2);
    assertThat(scrape.value("kvrouter_book_duration_seconds_count", labels)).isEqualTo(1);
  }

  @Test
  void aForgottenModelsSeriesGo() throws Exception {
    String model = "org/metrics-gone";
    join(router.workers.register(worker(model, "w1").build()));
    join(router.router.select(request(model, "s")));
    assertThat(scrape().value("kvrouter_select_duration_seconds_count",
        Map.of("model", model, "policy", "kv"))).isEqualTo(1);

    join(router.workers.deregister(WorkerKey.newBuilder().setModel(model).setWorkerId("w1").build()));

    await().atMost(Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(scrape().lines()).noneMatch(line -> line.contains(model)));
  }

  private static RouteRequest request(String model, String requestId) {
    return RouteRequest.newBuilder().setModel(model).setRequestId(requestId).addTokenIds(1).addTokenIds(2).build();
  }

  private static BookingRef ref(Booking booking) {
    return BookingRef.newBuilder().setModel(MODEL).setRequestId(booking.getRequestId())
        .setAttempt(booking.getAttempt()).build();
  }

  private static KvEvent stored(long eventId, long blockHash, long tokensHash) {
    return KvEvent.newBuilder().setEventId(eventId).setStored(KvStored.newBuilder()
        .addBlocks(StoredBlock.newBuilder().setBlockHash(blockHash).setTokensHash(tokensHash))).build();
  }

  private static Scrape scrape() throws Exception {
    HttpResponse<String> response = router.managementGet("/metrics");
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(
        type -> assertThat(type).startsWith("text/plain"));
    return new Scrape(response.body());
  }

  /** The samples of a Prometheus text exposition, by name and label set. */
  private record Scrape(String body) {
    List<String> lines() {
      return body.lines().filter(line -> !line.startsWith("#") && !line.isBlank()).toList();
    }

    List<String> names() {
      return lines().stream().map(line -> line.split("[{ ]", 2)[0]).toList();
    }

    /** The samples named {@code name} whose labels include {@code labels}, as their full label sets. */
    List<Map<String, String>> series(String name, Map<String, String> labels) {
      return matching(name, labels).stream().map(Sample::labels).toList();
    }

    /** The sum over every sample of {@code name} whose labels include {@code labels}. */
    double sum(String name, Map<String, String> labels) {
      return matching(name, labels).stream().mapToDouble(Sample::value).sum();
    }

    private List<Sample> matching(String name, Map<String, String> labels) {
      return lines().stream().map(Sample::parse)
          .filter(sample -> sample.name().equals(name) && sample.labels().entrySet().containsAll(labels.entrySet()))
          .toList();
    }

    /** The value of the one sample with exactly this name and label set. */
    double value(String name, Map<String, String> labels) {
      Double found = null;
      for (String line : lines()) {
        Sample sample = Sample.parse(line);
        if (sample.name().equals(name) && sample.labels().equals(new TreeMap<>(labels))) {
          assertThat(found).as("one sample " + name + labels).isNull();
          found = sample.value();
        }
      }
      assertThat(found).as("sample " + name + labels + " in\n" + body).isNotNull();
      return found;
    }
  }

  private record Sample(String name, Map<String, String> labels, double value) {
    static Sample parse(String line) {
      int brace = line.indexOf('{');
      int space = line.lastIndexOf(' ');
      Map<String, String> labels = new TreeMap<>();
      String name;
      if (brace >= 0 && brace < space) {
        name = line.substring(0, brace);
        String inside = line.substring(brace + 1, line.lastIndexOf('}'));
        for (String pair : inside.split(",(?=[a-zA-Z_]+=\")")) {
          int eq = pair.indexOf('=');
          if (eq > 0) {
            labels.put(pair.substring(0, eq), pair.substring(eq + 2, pair.length() - 1));
          }
        }
      } else {
        name = line.substring(0, space);
      }
      return new Sample(name, labels, Double.parseDouble(line.substring(space + 1)));
    }
  }
}
