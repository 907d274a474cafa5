package io.kvrouter.epp;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvrouter.core.error.RoutingError;
import org.junit.jupiter.api.Test;

/** Router-core's rejections as the picker answers them: GIE's 503 for no endpoint, 429 for overload. */
class RefusalsTest {
  @Test
  void overloadIs429NoEndpointIs503AndBadInputKeepsItsStatus() {
    assertThat(Refusals.of(new RoutingError(RoutingError.Code.UNAVAILABLE, RoutingError.ALL_WORKERS_OVERLOADED,
        "all busy"), 1).status()).isEqualTo(429);
    assertThat(Refusals.of(new RoutingError(RoutingError.Code.RESOURCE_EXHAUSTED, RoutingError.QUEUE_LIMIT,
        "full"), 1).status()).isEqualTo(429);
    assertThat(Refusals.of(new RoutingError(RoutingError.Code.DEADLINE_EXCEEDED,
        RoutingError.QUEUE_DEADLINE_EXCEEDED, "waited"), 1)).satisfies(e -> {
          assertThat(e.status()).isEqualTo(429);
          assertThat(e.retryAfterSeconds()).isEqualTo(1);
        });
    assertThat(Refusals.of(new RoutingError(RoutingError.Code.UNAVAILABLE, RoutingError.NO_ENDPOINTS, "none"), 1)
        .status()).isEqualTo(503);
    assertThat(Refusals.of(new RoutingError(RoutingError.Code.DEADLINE_EXCEEDED, RoutingError.ADMISSION_TIMEOUT,
        "no answer"), 1).status()).isEqualTo(503);
    assertThat(Refusals.of(RoutingError.unknownModel("m"), 1).status()).isEqualTo(404);
    assertThat(Refusals.of(new RoutingError(RoutingError.Code.INVALID_ARGUMENT, RoutingError.FIELD_TOO_LONG, "x"), 1)
        .status()).isEqualTo(400);
  }
}
